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
	"slices"
	"strings"
	"sync"

	"github.com/orchestrator/orchestrator/internal/ownfile"
	"github.com/orchestrator/orchestrator/internal/ownproc"

	"github.com/orchestrator/orchestrator/seal"
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
	// key seals and checks the evidence the orchestrator keeps (Key), loaded on first use.
	keyOnce sync.Once
	key     *seal.Key
	keyErr  error
	// format is the repository's object format, sha1 or sha256 (objectFormat).
	format string
	// objects is the long-lived reader of objects and names (objects.go), refs the
	// long-lived writer of refs (refs.go).
	objects objects
	refs    refWriter
	// audit is the last audit of the landings' seals (EditedLandings).
	audit landingAudit
	// listings are the last trees listed (listTree).
	listings listings
	// prints are the hashes of the configuration's files, by their stamps (ConfigPrint).
	prints printCache
}

// Key returns the person's key, which seals the orchestrator's evidence (package seal). It
// is read, or made, on first use.
func (r *Repo) Key() (*seal.Key, error) {
	r.keyOnce.Do(func() { r.key, r.keyErr = seal.User() })
	return r.key, r.keyErr
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

// Head returns the commit the integration branch points at: read from its ref file when
// git keeps it as one (git replaces the file whole when it moves the branch), else from
// git (a packed ref, another ref store).
func (r *Repo) Head(ctx context.Context) (string, error) {
	if b, err := os.ReadFile(filepath.Join(r.Common, "refs", "heads", filepath.FromSlash(r.Branch))); err == nil {
		if id := strings.TrimSpace(string(b)); IsObjectID(id) {
			return id, nil
		}
	}
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
// fsmonitor, no automatic gc, no line-ending conversion, so that nothing written in the
// repository (by an agent, say) runs as the orchestrator, nothing slow starts behind its
// back, and the bytes git writes in a checkout are the commit's. Filter drivers are turned
// off command by command (filtersOff); diffs are made with --no-textconv and
// --no-ext-diff.
var safe = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.autocrlf=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.detachedHead=false",
}

// noFilter are the git commands of the orchestrator's that never run a filter driver (they
// read refs and objects only). Every other runs with every driver off (filtersOff).
var noFilter = map[string]bool{
	"rev-parse": true, "update-ref": true, "symbolic-ref": true, "log": true, "cat-file": true,
	"commit-tree": true, "ls-tree": true, "config": true, "merge-base": true,
}

// run runs git with the safe settings in dir. Variables that point git elsewhere are taken
// from env only, never inherited. On failure the error holds git's message.
func run(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	pre := safe
	if len(args) > 0 && !noFilter[args[0]] {
		off, err := filtersOff(ctx, dir, env)
		if err != nil {
			return "", err
		}
		pre = append(slices.Clone(safe), off...)
	}
	cmd := exec.CommandContext(ctx, "git", append(slices.Clone(pre), args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process, which the reaper of agents' orphans leaves alone: the patch's git
	// runs beside the loop.
	if err := ownproc.Run(cmd); err != nil {
		return stdout.String(), &Error{Args: args, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.String(), nil
}

// filtersOff returns the settings that turn off every filter driver the configuration
// seen from dir defines (filter.<name>.clean, smudge, process): each is set to nothing,
// which git takes as no filter, and made not required, so that nothing an agent wrote in
// .git/config (or any config git reads) runs when the orchestrator checks files out or in,
// and the bytes are the blobs'. The configuration is as it is now (readConfig): an attempt
// may have added a driver since the last command.
func filtersOff(ctx context.Context, dir string, env []string) ([]string, error) {
	entries, err := readConfig(ctx, dir, env)
	if err != nil {
		return nil, err
	}
	var off []string
	seen := map[string]bool{}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.key, "filter.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 || seen[rest[:i]] {
			continue
		}
		name := rest[:i]
		seen[name] = true
		for _, v := range []string{"clean=", "smudge=", "process=", "required=false"} {
			off = append(off, "-c", "filter."+name+"."+v)
		}
	}
	return off, nil
}

// GitCommand returns a git command in dir with the orchestrator's settings (no hooks, no
// fsmonitor, no filter driver, no line-ending conversion) and environment, for packages
// that run git themselves (spot checks). Diffs still need --no-textconv and --no-ext-diff.
func GitCommand(ctx context.Context, dir string, args ...string) (*exec.Cmd, error) {
	off, err := filtersOff(ctx, dir, nil)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "git", append(append(slices.Clone(safe), off...), args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(nil)
	return cmd, nil
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
// field alone, which anyone can write, does not make a task verified. The mark is sealed
// (package seal): its first line is the commit, its second the seal of task and commit.
func (r *Repo) MarkVerified(task, commit string) error {
	k, err := r.Key()
	if err != nil {
		return err
	}
	dir := filepath.Join(r.state, "verified")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	commit = strings.TrimSpace(commit)
	body := commit + "\nseal: " + k.Sum(seal.KindVerified, verifiedContent(task, commit)) + "\n"
	path := filepath.Join(dir, task)
	tmp := filepath.Join(dir, "."+task+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// MarkAhead makes the temp file that MarkVerified writes task's mark into, ahead of it:
// making a file is finding a free inode, which costs up to a millisecond on a file system
// that many files were removed from, and the mark is written on the path from an agent's
// end to its task's status. One that is there is left as it is; a task that never
// completes keeps its one empty temp file.
func (r *Repo) MarkAhead(task string) {
	dir := filepath.Join(r.state, "verified")
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	ownfile.Make(filepath.Join(dir, "."+task+".tmp"), 0o644)
}

// verifiedContent is what a verified mark's seal covers: the task and the commit.
func verifiedContent(task, commit string) []byte { return []byte(task + "\x00" + commit) }

// IsVerified reports whether task was verified at commit (MarkVerified). A mark whose seal
// fails is not evidence: see Verified.
func (r *Repo) IsVerified(task, commit string) bool {
	ok, _ := r.Verified(task, commit)
	return ok
}

// Verified reports whether task was verified at commit (MarkVerified). A mark that is there
// but whose seal is missing or does not match is not evidence: false, with an
// *seal.EditedError naming it.
func (r *Repo) Verified(task, commit string) (bool, error) {
	commit = strings.TrimSpace(commit)
	path := filepath.Join(r.state, "verified", task)
	b, err := os.ReadFile(path)
	if err != nil || commit == "" {
		return false, nil
	}
	got, err := r.openVerified(task, path, b)
	if err != nil {
		return false, err
	}
	return got == commit, nil
}

// openVerified checks the verified mark of task at path, whose bytes are b, and returns
// the commit it names.
func (r *Repo) openVerified(task, path string, b []byte) (string, error) {
	k, err := r.Key()
	if err != nil {
		return "", err
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	sum, ok := strings.CutPrefix(strings.TrimSpace(rest), "seal: ")
	if !ok {
		return "", seal.Edited(path, seal.ErrUnsealed)
	}
	if !k.Check(seal.KindVerified, verifiedContent(task, first), sum) {
		return "", seal.Edited(path, seal.ErrBroken)
	}
	return first, nil
}

// EditedMarks returns the verified marks whose seal is missing or does not match, as
// *seal.EditedError values naming them.
func (r *Repo) EditedMarks(audit *seal.Audit) []error {
	entries, err := os.ReadDir(filepath.Join(r.state, "verified"))
	if err != nil {
		return nil
	}
	var out []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(r.state, "verified", e.Name())
		if err := audit.Check(path, func() error {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil // unreadable, or gone meanwhile: not a mark to judge (as before)
			}
			_, err = r.openVerified(e.Name(), path, b)
			return err
		}); err != nil {
			out = append(out, err)
		}
	}
	return out
}

// IsObjectID reports whether s is a full object name, SHA-1 or SHA-256, as git writes it:
// 40 or 64 lower-case hexadecimal digits.
func IsObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
