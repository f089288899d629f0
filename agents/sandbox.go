package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/orchestrator/orchestrator/sandbox"
)

// A Sandbox is the bubblewrap jail of one attempt (SPEC §15.2 item 2): the whole file system
// read-only except the agent's worktree, its other writable folders, the agent programs'
// own state in the home folder and a private /tmp; a PID namespace of its own, so that
// every process the agent starts ends when it ends; the orchestrator's network. Give it to
// Start in StartOptions.Sandbox.
type Sandbox struct {
	// Dir is the agent's working folder, its worktree: writable, and where it starts.
	// Start uses StartOptions.Dir when it is "".
	Dir string
	// ReadOnlyDir makes Dir read-only too: the agent starts there and reads it, and writes
	// only what Writable names. (The planner of `orchestrator plan` works so in the
	// person's tree: it may write its one scratch file and nothing else.)
	ReadOnlyDir bool
	// Writable are the other folders the agent may write: its marker folder, and what the
	// config's sandbox_writable adds; a file may be named too, which makes that one file
	// writable. Each must exist (bwrap refuses to start otherwise).
	Writable []string
	// ReadOnly are more files or folders the agent may read that the private /tmp would
	// hide (everything else outside /tmp is readable anyway): bound read-only, before Dir
	// and Writable, which stay writable inside them.
	ReadOnly []string
	// Home is the home folder whose agent state (HomeState) stays writable; "" for none.
	Home string
	// Env holds NAME=value settings for inside, on top of the environment that Start
	// passes; TMPDIR is /tmp inside unless Env sets it. A tool whose cache in the home
	// folder must be writable can be pointed at /tmp here (a cold cache each time). Go
	// needs nothing: it builds with a read-only GOCACHE, using what is there and saving
	// nothing (measured with Go 1.26), so the agent cannot poison the cache either.
	Env []string
}

// HomeState lists the folders, relative to the home folder, that the agent programs write
// while they run, as measured with Claude Code 2.1.197 and the Codex CLI 0.169.0
// (sandbox_test.go, real_test.go): Claude Code keeps its sessions, transcripts, shell
// snapshots and credentials in .claude, Codex its databases, logs, shell snapshots and
// helper programs in .codex (its CODEX_HOME). They stay writable in the sandbox, and Start
// creates those that are missing. An agent whose state lives elsewhere (CODEX_HOME,
// CLAUDE_CONFIG_DIR) needs that folder in Sandbox.Writable.
//
// The rest of the home folder stays read-only: ~/.bashrc, ~/.gitconfig, go env -w's
// ~/.config/go/env are out of the agent's reach. That includes Claude Code's settings file
// ~/.claude.json, and binding it writable would not help: Claude Code saves it by writing
// a temporary file beside it, in the home folder, and renaming that over it; when the
// temporary file cannot be created it gives up (it falls back to writing in place only
// when the rename fails). It runs without saving it (start counters, tips, per-project
// history), and without it at all on a fresh home. Its credentials are in .claude.
var HomeState = []string{".claude", ".codex"}

// Wrap returns the command line that runs argv inside the sandbox:
//
//	bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
//	      --ro-bind-try PROGRAM PROGRAM         argv[0], if absolute: visible even in /tmp
//	      --ro-bind-try R R                     each of ReadOnly
//	      --bind-try HOME/.claude HOME/.claude  each of HomeState, if Home is set
//	      --bind DIR DIR --bind W W             the worktree (--ro-bind with ReadOnlyDir),
//	                                            then each of Writable
//	      --unshare-pid --as-pid-1 --chdir DIR
//	      --setenv TMPDIR /tmp --setenv NAME VALUE ...
//	      -- /bin/sh -c '"$@"; exit $?' sh argv...
//
// The sandbox's init (PID 1 of its PID namespace) is that shell: it runs the agent and
// exits with the agent's status, and when it exits the kernel ends every other process of
// the namespace, those that left the agent's process group or session included, before
// bwrap, Start's child, sees it exit. bwrap's own init is not used (--as-pid-1) because it
// waits for every process of the namespace, so a process the agent left behind would keep
// the sandbox alive. The shell, as PID 1, ignores the signals it has no handler for, such
// as SIGTERM: Stop's SIGTERM ends bwrap and the agent, then the shell exits; SIGKILL ends
// it all. The network is shared, for the agent's model API.
//
// Two options are left out on purpose. --die-with-parent: an agent must outlive a crash
// of the orchestrator, so that the restarted orchestrator can adopt it (SPEC §7.1).
// --new-session: bwrap would call setsid in the sandbox, which would then leave the
// process group that Process.Stop and StopGroup signal; SIGTERM would end bwrap alone and
// the sandbox would run on unseen. Start instead gives bwrap a session of its own, which
// takes the agent off the person's terminal just as well (no TIOCSTI into it) and keeps
// bwrap, the init and the agent in one process group.
func (s Sandbox) Wrap(argv []string) []string {
	w := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}
	// The program, and any other absolute path on its command line (`env X=1 /tmp/agent`),
	// stays visible, read-only, even where it lives in /tmp, which is private inside.
	for _, arg := range argv {
		if filepath.IsAbs(arg) && strings.HasPrefix(filepath.Clean(arg), "/tmp/") {
			w = append(w, "--ro-bind-try", arg, arg)
		}
	}
	for _, p := range s.ReadOnly {
		w = append(w, "--ro-bind-try", p, p)
	}
	if s.Home != "" {
		for _, rel := range HomeState {
			p := filepath.Join(s.Home, rel)
			w = append(w, "--bind-try", p, p) // Start creates them; -try for other callers
		}
	}
	switch {
	case s.Dir != "" && s.ReadOnlyDir:
		// Bound all the same: a folder under /tmp would be hidden by the private /tmp.
		w = append(w, "--ro-bind", s.Dir, s.Dir)
	case s.Dir != "":
		w = append(w, "--bind", s.Dir, s.Dir)
	}
	for _, d := range s.Writable {
		w = append(w, "--bind", d, d)
	}
	w = append(w, "--unshare-pid", "--as-pid-1")
	if s.Dir != "" {
		w = append(w, "--chdir", s.Dir)
	}
	w = append(w, "--setenv", "TMPDIR", "/tmp")
	for _, kv := range s.Env {
		name, value, _ := strings.Cut(kv, "=")
		w = append(w, "--setenv", name, value)
	}
	w = append(w, "--", "/bin/sh", "-c", initScript, "sh")
	return append(w, argv...)
}

// initScript is the sandbox's init: it runs the agent (its arguments) and exits with the
// agent's status. It is not the agent itself, which as PID 1 would ignore every signal it
// has no handler for, SIGTERM included.
const initScript = `"$@"
exit $?`

// BwrapAvailable reports whether bubblewrap runs here, by running `true` in a sandbox like
// Wrap's once; the answer is kept for the life of the program. The error says why not:
// not Linux, bwrap not installed, or bwrap's own complaint (no user namespaces, no
// permission to mount).
func BwrapAvailable() error { return bwrapAvailable() }

var bwrapAvailable = sync.OnceValue(checkBwrap)

// checkBwrap is BwrapAvailable without the memory: the sandbox package's check, which tries
// a sandbox like Wrap's with nothing to bind.
func checkBwrap() error { return sandbox.Check() }

// makeHomeState creates the folders of HomeState that are missing in the home folder, as
// the agent programs would on their first run: bwrap can only bind what exists, and Claude
// Code cannot work without its folder. .claude.json is left alone; Claude Code does
// without it.
func (s Sandbox) makeHomeState() error {
	if s.Home == "" {
		return nil
	}
	for _, rel := range HomeState {
		p := filepath.Join(s.Home, rel)
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}
