package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A Repo is the person's repository as the orchestrator uses it: its working tree, its git
// folder, and the integration branch.
type Repo struct {
	// Root is the top of the person's working tree.
	Root string
	// Common is the repository's git folder (shared by all its worktrees), absolute.
	Common string
	// gitDir is the git folder of the person's working tree (Common, unless their tree is
	// itself a linked worktree).
	gitDir string
	// Branch is the integration branch, the short name of the branch HEAD was on.
	Branch string
	// state is the orchestrator's folder inside Common: the slots' indexes, evidence.
	state string
	// slots is the folder of the slots' working trees (slotsDir).
	slots string
	// identity is the author and committer the orchestrator's commits get when the
	// repository's config names none.
	identity []string
}

// ErrNotRepository means watch was started outside a git repository, or on a detached
// HEAD, or before the first commit. Its message says what to run.
var ErrNotRepository = errors.New("not a git repository on a branch")

// Open finds the git repository whose working tree holds dir, and its integration branch:
// the branch HEAD is on. It fails with an error matching ErrNotRepository, naming the
// commands that fix it, when dir is not in a repository, HEAD is detached, or the branch
// has no commit yet.
func Open(ctx context.Context, dir string) (*Repo, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	out, err := run(ctx, dir, nil, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--git-dir")
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not in a git repository; watch lands verified work as commits on a branch:\n  git -C %s init && git -C %s add -A && git -C %s commit -m 'Start'",
			ErrNotRepository, dir, dir, dir, dir)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("git rev-parse in %s: unexpected output %q", dir, out)
	}
	r := &Repo{Root: lines[0], Common: lines[1], gitDir: lines[2]}
	r.state = filepath.Join(r.Common, "orchestrator")
	r.slots = slotsFolder(r.Root, r.Common)
	branch, err := run(ctx, r.Root, nil, nil, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("%w: HEAD of %s is detached; watch lands verified work on the branch HEAD is on:\n  git -C %s switch -c main",
			ErrNotRepository, r.Root, r.Root)
	}
	r.Branch = strings.TrimSpace(branch)
	if _, err := r.Head(ctx); err != nil {
		return nil, fmt.Errorf("%w: branch %s of %s has no commit yet; agents start from the branch's last commit:\n  git -C %s add -A && git -C %s commit -m 'Start'",
			ErrNotRepository, r.Branch, r.Root, r.Root, r.Root)
	}
	if email, _ := r.git(ctx, r.Root, nil, "config", "user.email"); strings.TrimSpace(email) == "" {
		r.identity = []string{
			"GIT_AUTHOR_NAME=orchestrator", "GIT_AUTHOR_EMAIL=orchestrator@localhost",
			"GIT_COMMITTER_NAME=orchestrator", "GIT_COMMITTER_EMAIL=orchestrator@localhost",
		}
	}
	return r, os.MkdirAll(r.state, 0o755)
}

// slotsFolder returns the folder for the slots of the repository whose git folder is
// common: $ORCHESTRATOR_WORKTREES if set, else the user's cache folder (the temporary
// folder without one), then a folder named after the repository and a hash of its path.
func slotsFolder(root, common string) string {
	base := os.Getenv("ORCHESTRATOR_WORKTREES")
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		base = filepath.Join(cache, "orchestrator", "worktrees")
	}
	sum := sha256.Sum256([]byte(common))
	return filepath.Join(base, fmt.Sprintf("%s-%x", filepath.Base(root), sum[:6]))
}

// Head returns the commit the integration branch points at.
func (r *Repo) Head(ctx context.Context) (string, error) {
	out, err := r.git(ctx, r.Root, nil, "rev-parse", "--verify", "-q", "refs/heads/"+r.Branch+"^{commit}")
	return strings.TrimSpace(out), err
}

// State returns the orchestrator's folder in the repository's git folder: outside every
// working tree, and read-only to a sandboxed agent.
func (r *Repo) State() string { return r.state }

// git runs git in dir with the orchestrator's settings and extra environment.
func (r *Repo) git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return run(ctx, dir, env, nil, args...)
}

// safe are the settings every git command of the orchestrator runs with: no hook, no
// fsmonitor, no automatic gc, so that nothing written in the repository (by an agent, say)
// runs as the orchestrator, and nothing slow starts behind its back.
var safe = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.detachedHead=false",
}

// run runs git with the safe settings in dir. Variables that point git elsewhere are taken
// from env only, never inherited. On failure the error holds git's message.
func run(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, safe...), args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &Error{Args: args, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.String(), nil
}

// gitEnv is the environment of a git command: ours without the variables that would send
// git to another repository, index or work tree, in the C locale (git's messages are
// parsed), with prompts off, plus extra.
func gitEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "LC_ALL", "LANG":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0"), extra...)
}

// An Error is a git command that failed.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// exitCode returns the exit code of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// MarkVerified records, in the orchestrator's state (outside every working tree, out of an
// agent's reach in the sandbox), that task was verified at commit: the queue's Commit
// field alone, which anyone can write, does not make a task verified.
func (r *Repo) MarkVerified(task, commit string) error {
	dir := filepath.Join(r.state, "verified")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, task), []byte(commit+"\n"), 0o644)
}

// IsVerified reports whether task was verified at commit (MarkVerified).
func (r *Repo) IsVerified(task, commit string) bool {
	b, err := os.ReadFile(filepath.Join(r.state, "verified", task))
	return err == nil && commit != "" && strings.TrimSpace(string(b)) == strings.TrimSpace(commit)
}
