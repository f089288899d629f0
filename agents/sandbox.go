package agents

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/sandbox"
)

// A Sandbox is the bubblewrap jail of one agent run (SPEC §15.2 item 2), least privilege:
// the system read-only; the agent's worktree writable, its marker folder and a private
// /tmp; an empty home in place of the person's; the person's tree, the repository's git
// folder and the orchestrator's state hidden, and host sockets (/run); the agent program's
// own state in a private folder of the run (Config), seeded with what the program needs
// to log in and thrown away after; an environment cleared of everything but what the
// agent needs (AgentEnv); a PID namespace of its own, so that every process the agent
// starts ends when it ends; the orchestrator's network. Give it to Start in
// StartOptions.Sandbox.
type Sandbox struct {
	// Dir is the agent's working folder, its worktree: writable, and where it starts.
	// Start uses StartOptions.Dir when it is "".
	Dir string
	// ReadOnlyDir makes Dir read-only too: the agent starts there and reads it, and writes
	// only what Writable names. (The planner of `orchestrator plan` works so in the
	// person's tree: it may write its one scratch file and nothing else.)
	ReadOnlyDir bool
	// Writable are the other folders the agent may write: its own marker folder, and what
	// the config's sandbox_writable adds; a file may be named too, which makes that one
	// file writable. Each must exist (bwrap refuses to start otherwise).
	Writable []string
	// ReadOnly are more files or folders the agent may read that would be hidden
	// otherwise (in /tmp, in the home folder or in a folder of Hide): the toolchains of the
	// home folder, the repository's objects its own git folder borrows, config
	// sandbox_readable. Bound read-only, before Dir and Writable, which stay writable
	// inside them.
	ReadOnly []string
	// Hide are the folders the agent must not see: the person's tree, the repository's
	// git folder, the orchestrator's state. Each is replaced by an empty folder, and what
	// Dir, ReadOnly and Writable name inside it is bound in again.
	Hide []string
	// Home is the person's home folder: an empty one takes its place inside (HOME names
	// it still), writable and thrown away with the sandbox, so that nothing the agent
	// writes there (~/.claude/settings.json, ~/.bashrc, go env -w) reaches the person. ""
	// leaves the home folder as it is, read-only.
	Home string
	// Config is the private folder of the agent program's own state for this run (SPEC
	// §15.2): Start makes it, seeds it with the login of Program (SeedConfig), and points
	// the program at it (CLAUDE_CONFIG_DIR, CODEX_HOME); it is removed once the agent has
	// ended. It must not exist yet, nor be under /tmp (Codex does not install its helper
	// programs there). "" for none.
	Config string
	// Program is the agent program, as ProgramOf names it: claude, codex, or another. It
	// decides what Config is seeded with and which of the program's variables pass
	// (AgentEnv).
	Program string
	// Pass names more variables of the environment that pass in (config agent_env).
	Pass []string
	// Sessions, if set, is a folder outside the sandbox that keeps Claude Code's sessions
	// (its projects/ folder: transcripts) from run to run of a task, so that a later run
	// can resume one (ResumeCommand): copied into Config before the start, and back once
	// the agent has ended. Nothing else of Config outlives the run.
	Sessions string
	// Env holds NAME=value settings for inside, on top of the environment that AgentEnv
	// keeps; TMPDIR is /tmp inside unless Env sets it.
	Env []string
	// Git, if set, gives the agent a git folder of its own for its worktree (Dir).
	Git *OwnGit
}

// OwnGit is an agent's own git folder (SPEC §15.2): the repository's git folder is hidden
// from the agent, yet Claude Code and Codex run git status, diff, log, add, commit, stash
// and checkout as a matter of course. Start makes the folder: its objects borrow the
// repository's (read-only, through git's alternates), its HEAD and index are Base, and
// what the agent commits, stashes or checks out is written there only. Inside, the
// worktree's .git file names it. It is removed once the agent has ended; the candidate is
// what the worktree holds, as without it.
type OwnGit struct {
	// Dir is the folder to make; a crashed run's is removed first.
	Dir string
	// Objects is the repository's objects folder, readable inside.
	Objects string
	// Base is the commit the worktree was reset to.
	Base string
	// Index, if set, is an index of the worktree that the orchestrator keeps (its slot's,
	// worktree.Slot.Index), read only: Make starts the agent's index from a copy of it,
	// whose file times spare git reading every file of the worktree again to find it
	// clean. "" builds the index from Base alone.
	Index string
	// IndexIsBase says that Index is Base's exactly (its worktree was just reset to Base
	// with it): the copy is the agent's index as it is, with no read-tree to make it so.
	IndexIsBase bool
}

// gitFile is the .git file that names the own git folder, beside it (not in it: the agent
// may write its git folder, never this file).
func (g *OwnGit) gitFile() string { return g.Dir + ".gitfile" }

// Make writes the git folder for the worktree work: HEAD detached at Base, the alternates,
// a config with an identity (the agent's commits are its own, never landed as they are),
// and an index of Base whose file times are the worktree's, so that git status starts
// clean and fast. Start calls it; it is exported for the benchmark of its cost (package
// worktree).
//
// The index is a copy of Index made Base's by a one-tree read-tree -m, which keeps the
// file times of every entry whose content is Base's: on 10,000 files this is a third of
// the cost of building the index from Base, whose entries have no file times, and
// refreshing it, which reads and hashes every file. Entries that differ from Base (a
// worktree that holds an earlier attempt's work) get no file times, so that git compares
// their content and shows the difference. Without Index, or when git cannot use it, the
// index is built and refreshed.
func (g *OwnGit) Make(work string) error {
	_ = g.Remove()
	for _, d := range []string{"objects/info", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(g.Dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"HEAD":                    g.Base + "\n",
		"objects/info/alternates": g.Objects + "\n",
		"config":                  "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfilemode = true\n[user]\n\tname = agent\n\temail = agent@localhost\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(g.Dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(g.gitFile(), []byte("gitdir: "+g.Dir+"\n"), 0o444); err != nil {
		return err
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"--git-dir=" + g.Dir, "--work-tree=" + work, "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		return cmd.CombinedOutput()
	}
	index := filepath.Join(g.Dir, "index")
	if g.Index != "" {
		if err := copyIndex(g.Index, index); err == nil {
			if g.IndexIsBase {
				return nil
			}
			if _, err := git("read-tree", "-m", g.Base); err == nil {
				return nil
			}
		}
		os.Remove(index)
	}
	if out, err := git("read-tree", g.Base); err != nil {
		return fmt.Errorf("read-tree %s: %v: %s", g.Base, err, out)
	}
	_, _ = git("update-index", "-q", "--refresh") // exits 1 when the worktree differs
	return nil
}

// copyIndex copies the index file src to dst with src's modification time: git takes an
// entry whose file time is not older than the index file's as "racily clean" and compares
// its content, which a later time on the copy would stop.
func copyIndex(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// Remove removes the git folder and its .git file.
func (g *OwnGit) Remove() error {
	os.Remove(g.gitFile())
	return os.RemoveAll(g.Dir)
}

// baseEnv are the variables, by name or prefix (ending in "_"), that every agent gets from
// the orchestrator's environment (SPEC §15.2): the path, the home folder, the locale, the
// terminal, and the orchestrator's own.
var baseEnv = []string{"PATH", "HOME", "LANG", "LANGUAGE", "LC_", "TZ", "TERM", "ORCHESTRATOR_"}

// netEnv are the variables an agent program needs to reach its model's API where a proxy
// or a private certificate authority stands between: passed to claude and codex.
var netEnv = []string{"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "no_proxy", "all_proxy",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// programEnv are the variables each agent program gets, by name or prefix: the adapter's
// list. Claude Code reads ANTHROPIC_* (the API key, the base URL, the model) and CLAUDE_*
// and its DISABLE_* switches; Codex reads OPENAI_* and CODEX_*, and the variable its
// config.toml names as a model provider's env_key (SeedConfig finds it).
var programEnv = map[string][]string{
	Claude: append([]string{"ANTHROPIC_", "CLAUDE_", "DISABLE_", "MAX_THINKING_TOKENS", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "IS_SANDBOX"}, netEnv...),
	Codex:  append([]string{"OPENAI_", "CODEX_", "RUST_LOG"}, netEnv...),
}

// AgentEnv returns what an agent of program gets of env (SPEC §15.2): baseEnv, the
// program's own list (programEnv), and the names of pass (config agent_env, and the
// variables SeedConfig found the program needs). Everything else is cleared: cloud keys,
// tokens, SSH_AUTH_SOCK, the person's editor. The program's state folder variables
// (CLAUDE_CONFIG_DIR, CODEX_HOME) are not passed: Start sets them to the private folder.
func AgentEnv(program string, env, pass []string) []string {
	keep := append(slices.Clone(baseEnv), programEnv[program]...)
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || name == "CLAUDE_CONFIG_DIR" || name == "CODEX_HOME" {
			continue
		}
		if slices.Contains(pass, name) || keptBy(keep, name) {
			out = append(out, kv)
		}
	}
	return out
}

func keptBy(keep []string, name string) bool {
	for _, k := range keep {
		if name == k || strings.HasSuffix(k, "_") && strings.HasPrefix(name, k) {
			return true
		}
	}
	return false
}

// ProgramOf names the agent program that the adapter called adapter runs with argv:
// Claude or Codex for those adapters, or for a configured command whose program is one of
// them (through env(1) too); else the adapter's name.
func ProgramOf(adapter string, argv []string) string {
	if adapter == Claude || adapter == Codex {
		return adapter
	}
	for i, arg := range argv {
		if i == 0 && filepath.Base(arg) == "env" || strings.Contains(arg, "=") && !strings.HasPrefix(arg, "-") {
			continue
		}
		if b := filepath.Base(arg); b == Claude || b == Codex {
			return b
		}
		break
	}
	return adapter
}

// configFiles are the files of a person's configuration that each program needs to log in,
// as the program itself copies them into a private configuration folder (Claude Code
// 2.1.197 does so for its own background runs: .credentials.json and .claude.json):
// relative to the program's configuration folder, or with "~" to the folder that holds
// Claude Code's global .claude.json (the home folder, or CLAUDE_CONFIG_DIR).
var configFiles = map[string][]string{
	Claude: {".credentials.json", "settings.json", "~/.claude.json"},
	Codex:  {"auth.json", "config.toml"},
}

// configVar is the variable that points each program at its configuration folder.
var configVar = map[string]string{Claude: "CLAUDE_CONFIG_DIR", Codex: "CODEX_HOME"}

// envKey finds the variables Codex's config.toml names for its model providers' keys.
var envKey = lazyre.New(`(?m)^\s*env_key\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)"`)

// SeedConfig makes dir, the private configuration folder of one run of program, and copies
// into it what the program needs to log in from the person's folder as env names it
// (CLAUDE_CONFIG_DIR or ~/.claude and ~/.claude.json for Claude Code, CODEX_HOME or
// ~/.codex for Codex; see configFiles). Files that do not exist are left out; a symbolic
// link is followed (a person may keep them elsewhere). It returns the NAME=value that
// points the program at dir, and the names of more variables the program needs (the
// env_key of Codex's model providers). A program it does not know gets an empty folder.
func SeedConfig(program string, env []string, dir string) (setting string, needs []string, err error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("agent state: %w", err)
	}
	v := configVar[program]
	if v == "" {
		return "", nil, nil
	}
	home, _ := lookup(env, "HOME")
	src, _ := lookup(env, v)
	global := src
	if src == "" {
		src = filepath.Join(home, "."+program)
		global = home
	}
	for _, f := range configFiles[program] {
		from, to := filepath.Join(src, f), filepath.Join(dir, f)
		if rel, ok := strings.CutPrefix(f, "~/"); ok {
			from, to = filepath.Join(global, rel), filepath.Join(dir, rel)
		}
		if home == "" && !filepath.IsAbs(from) {
			continue
		}
		b, err := copyRegular(from, to)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("agent state: %w", err)
		}
		if program == Codex && f == "config.toml" {
			for _, m := range envKey().FindAllStringSubmatch(string(b), -1) {
				needs = append(needs, m[1])
			}
		}
	}
	return v + "=" + dir, needs, nil
}

// copyRegular copies the regular file from (after links) to to, mode 0600, and returns its
// content.
func copyRegular(from, to string) ([]byte, error) {
	fi, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", from)
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	return b, os.WriteFile(to, b, 0o600)
}

func lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// Profile returns the sandbox profile of the run of argv with env, the whole environment
// inside (see prepare):
//
//   - hidden: Hide and Home (an empty folder in place of each), /run and /var/run, /tmp
//     private;
//   - read-only: ReadOnly, each absolute path of argv that the above would hide (the
//     program), where /etc/resolv.conf leads into /run, and Dir with ReadOnlyDir;
//   - writable: Dir, Config, Writable;
//
// in a PID namespace whose init ends every process when the agent exits, with the host's
// network, and outliving the orchestrator (an agent is adopted after a crash). See
// sandbox.Profile.Wrap for the command line.
func (s Sandbox) Profile(argv, env []string) sandbox.Profile {
	hidden := slices.Clone(s.Hide)
	if s.Home != "" {
		hidden = append(hidden, s.Home)
	}
	under := func(p string) bool {
		p = filepath.Clean(p)
		if strings.HasPrefix(p, "/tmp/") {
			return true
		}
		for _, h := range hidden {
			if h != "" && (p == filepath.Clean(h) || strings.HasPrefix(p, filepath.Clean(h)+"/")) {
				return true
			}
		}
		return false
	}
	var ro []string
	for _, arg := range argv {
		if filepath.IsAbs(arg) && under(arg) {
			ro = append(ro, arg)
		}
	}
	if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && (strings.HasPrefix(t, "/run/") || strings.HasPrefix(t, "/var/run/")) {
		ro = append(ro, t)
	}
	ro = append(ro, s.ReadOnly...)
	var rw []string
	switch {
	case s.Dir != "" && s.ReadOnlyDir:
		ro = append(ro, s.Dir)
	case s.Dir != "":
		rw = append(rw, s.Dir)
	}
	if s.Config != "" {
		rw = append(rw, s.Config)
	}
	var over [][2]string
	if s.Git != nil && s.Dir != "" {
		ro = append(ro, s.Git.Objects)
		rw = append(rw, s.Git.Dir)
		over = append(over, [2]string{s.Git.gitFile(), filepath.Join(s.Dir, ".git")})
	}
	rw = append(rw, s.Writable...)
	return sandbox.Profile{Hide: hidden, ReadOnly: ro, Writable: rw, Over: over, Dir: s.Dir, Env: env, Network: true, Outlive: true}
}

// Wrap returns the command line that runs argv inside the sandbox with env and Env, the
// whole environment inside (TMPDIR is /tmp unless Env sets it): see Profile and
// sandbox.Profile.Wrap.
//
// The sandbox's init (PID 1 of its PID namespace) is a shell: it runs the agent and exits
// with the agent's status, and when it exits the kernel ends every other process of the
// namespace, those that left the agent's process group or session included, before
// bwrap, Start's child, sees it exit. The shell, as PID 1, ignores the signals it has no
// handler for, such as SIGTERM: Stop's SIGTERM ends bwrap and the agent, then the shell
// exits; SIGKILL ends it all. The network is shared, for the agent's model API.
//
// Two options are left out on purpose. --die-with-parent: an agent must outlive a crash
// of the orchestrator, so that the restarted orchestrator can adopt it (SPEC §7.1).
// --new-session: bwrap would call setsid in the sandbox, which would then leave the
// process group that Process.Stop and StopGroup signal; SIGTERM would end bwrap alone and
// the sandbox would run on unseen. Start instead gives bwrap a session of its own, which
// takes the agent off the person's terminal just as well (no TIOCSTI into it) and keeps
// bwrap, the init and the agent in one process group.
func (s Sandbox) Wrap(argv, env []string) []string {
	inside := []string{"TMPDIR=/tmp"}
	for _, kv := range slices.Concat(env, s.Env) {
		name, _, _ := strings.Cut(kv, "=")
		if name == "TMPDIR" && !slices.Contains(s.Env, kv) {
			continue // the orchestrator's temporary folder is not the sandbox's
		}
		inside = slices.DeleteFunc(inside, func(old string) bool { return strings.HasPrefix(old, name+"=") })
		inside = append(inside, kv)
	}
	p := s.Profile(argv, inside)
	return p.Wrap(argv)
}

// prepare makes what the sandbox needs before Start runs bwrap, and returns the
// environment inside: the private configuration folder, seeded, with Claude Code's
// sessions copied in; AgentEnv of env, with the program's state folder pointed at it.
func (s Sandbox) prepare(env []string) ([]string, error) {
	if env == nil {
		env = os.Environ()
	}
	pass := slices.Clone(s.Pass)
	var set []string
	if s.Git != nil && s.Dir != "" {
		if err := s.Git.Make(s.Dir); err != nil {
			return nil, fmt.Errorf("agent git folder: %w", err)
		}
	}
	if s.Config != "" {
		setting, needs, err := SeedConfig(s.Program, env, s.Config)
		if err != nil {
			return nil, err
		}
		pass = append(pass, needs...)
		if setting != "" {
			set = append(set, setting)
		}
		if s.Sessions != "" && s.Program == Claude {
			if err := copyTree(s.Sessions, filepath.Join(s.Config, "projects")); err != nil {
				return nil, fmt.Errorf("agent state: %w", err)
			}
		}
	}
	return append(AgentEnv(s.Program, env, pass), set...), nil
}

// finish keeps Claude Code's sessions (Sessions) and removes the private configuration
// folder, once the agent has ended.
func (s Sandbox) finish() {
	if s.Git != nil {
		_ = s.Git.Remove()
	}
	if s.Config == "" {
		return
	}
	if s.Sessions != "" && s.Program == Claude {
		_ = copyTree(filepath.Join(s.Config, "projects"), s.Sessions)
	}
	_ = os.RemoveAll(s.Config)
}

// copyTree copies the regular files and folders of src into dst, making dst; links and
// other files are left out, so that a copy never reads outside src. A missing src copies
// nothing.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case d.Type().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			return err
		}
		return nil
	})
}

// BwrapAvailable reports whether bubblewrap runs here, by running `true` in a sandbox like
// Wrap's once; the answer is kept for the life of the program. The error says why not:
// not Linux, bwrap not installed, or bwrap's own complaint (no user namespaces, no
// permission to mount).
func BwrapAvailable() error { return bwrapAvailable() }

var bwrapAvailable = sync.OnceValue(checkBwrap)

// checkBwrap is BwrapAvailable without the memory: the sandbox package's check, which tries
// a sandbox like Wrap's with nothing to bind.
func checkBwrap() error { return sandbox.Check() }
