package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Profile is what one sandboxed command may see and do. The file system is the host's,
// read-only, with these changes, applied in this order:
//
//   - a private /tmp, and empty /run and /var/run (host UNIX sockets are not visible);
//   - each folder of Hide replaced by an empty one (the person's tree, the repository's git
//     folder, the orchestrator's state, the home folder);
//   - each path of ReadOnly bound read-only at its own path, visible again inside a hidden
//     folder (a toolchain or module cache under the home folder);
//   - each path of Writable bound writable (the gate's checkout, the runners' caches);
//   - each path of Fixed bound read-only at its own path, inside what was bound writable:
//     a file the command may read but not change, replace or remove (the .git file of a
//     checkout, which the orchestrator writes again at each reset: a link put there would
//     have it write through the link, outside the sandbox);
//   - each folder of Mask replaced by an empty one, inside what was bound (the git folder
//     of a working tree that is itself writable).
//
// The command gets exactly Env as its environment, runs in Dir, in PID, IPC and UTS
// namespaces of its own whose init is a shell that ends them when the command exits, and
// without the network unless Network is set.
type Profile struct {
	Hide     []string
	ReadOnly []string
	Writable []string
	Fixed    []string
	Mask     []string
	// Over puts files of the caller's, read-only, at other paths inside: each {source,
	// target}, bound after Fixed (an agent's .git file that names its own git folder).
	Over [][2]string
	// Dir is where the command starts.
	Dir string
	// Env is the whole environment inside, NAME=value.
	Env []string
	// Network shares the host's network (config gate_network: host).
	Network bool
	// Outlive leaves out --die-with-parent: the sandbox runs on when the process that
	// started it dies. An agent's does, so that a restarted orchestrator can adopt it
	// (SPEC §7.1); a test run is run again instead.
	Outlive bool
	// StartedFD is a descriptor the command inherits (3 and up) to which the sandbox's init
	// writes one byte, and which it closes, just before it starts the command: a caller
	// that reads nothing there knows that the sandbox itself did not start. 0: none.
	StartedFD int
}

// With returns a copy of p that also makes readOnly readable and writable writable.
func (p Profile) With(readOnly, writable []string) Profile {
	p.ReadOnly = append(slices.Clone(p.ReadOnly), readOnly...)
	p.Writable = append(slices.Clone(p.Writable), writable...)
	return p
}

// Wrap returns the command line that runs argv in the sandbox:
//
//	bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run
//	      --tmpfs HIDDEN ...                      each of Hide
//	      --ro-bind-try R R ...                   each of ReadOnly
//	      --bind W W ...                          each of Writable
//	      --ro-bind-try F F ...                   each of Fixed
//	      --ro-bind SRC DST ...                   each of Over
//	      --tmpfs MASKED ...                      each of Mask
//	      --unshare-pid --unshare-ipc --unshare-uts [--unshare-net]
//	      [--die-with-parent] --as-pid-1 --chdir DIR
//	      --clearenv --setenv NAME VALUE ...
//	      -- /bin/sh -c '"$@"; exit $?' sh argv...
//
// The shell is the namespace's init: when it exits, with the command's status, the kernel
// ends every process the command left behind (a daemon, a double fork), before bwrap sees
// it exit. --die-with-parent ends the sandbox when the orchestrator dies, unless Outlive: a
// test run, unlike an agent, is never adopted by a restarted orchestrator, it is run again.
func (p Profile) Wrap(argv []string) []string {
	w := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}
	for _, d := range []string{"/run", "/var/run"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			w = append(w, "--tmpfs", d)
		}
	}
	for _, d := range outermost(p.Hide) {
		w = append(w, "--tmpfs", d)
	}
	for _, d := range p.ReadOnly {
		w = append(w, "--ro-bind-try", d, d)
	}
	for _, d := range p.Writable {
		w = append(w, "--bind", d, d)
	}
	for _, f := range p.Fixed {
		w = append(w, "--ro-bind-try", f, f)
	}
	for _, o := range p.Over {
		w = append(w, "--ro-bind", o[0], o[1])
	}
	for _, d := range outermost(p.Mask) {
		w = append(w, "--tmpfs", d)
	}
	w = append(w, "--unshare-pid", "--unshare-ipc", "--unshare-uts")
	if !p.Network {
		w = append(w, "--unshare-net")
	}
	if !p.Outlive {
		w = append(w, "--die-with-parent")
	}
	w = append(w, "--as-pid-1")
	if p.Dir != "" {
		w = append(w, "--chdir", p.Dir)
	}
	w = append(w, "--clearenv")
	for _, kv := range p.Env {
		name, value, _ := strings.Cut(kv, "=")
		if name == "" {
			continue
		}
		w = append(w, "--setenv", name, value)
	}
	script := initScript
	if p.StartedFD > 0 {
		script = fmt.Sprintf("printf . >&%[1]d; exec %[1]d>&-\n%[2]s", p.StartedFD, initScript)
	}
	w = append(w, "--", "/bin/sh", "-c", script, "sh")
	return append(w, argv...)
}

// outermost returns the folders of dirs that exist and are not inside another of them,
// cleaned, shortest first: hiding a folder hides what is in it, and bwrap could not mount
// over a path the first hiding removed. The root folder and the system's own folders are
// never hidden: that would hide the programs the command needs.
func outermost(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if systemDirs[d] {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b string) int { return len(a) - len(b) })
	var keep []string
	for _, d := range out {
		inside := false
		for _, k := range keep {
			if d == k || strings.HasPrefix(d, k+"/") {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, d)
		}
	}
	return keep
}

// Hidden reports whether path is in one of the folders of hide that Wrap replaces with an
// empty one: there, the sandbox may put files of its own (Over) where none exist outside.
func Hidden(hide []string, path string) bool {
	path = filepath.Clean(path)
	for _, d := range outermost(hide) {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// systemDirs are folders a Profile never hides.
var systemDirs = map[string]bool{
	"/": true, "/usr": true, "/bin": true, "/sbin": true, "/lib": true, "/lib64": true, "/etc": true,
	"/opt": true, "/usr/local": true, "/usr/bin": true, "/usr/lib": true, "/var": true, "/dev": true, "/proc": true,
}

// initScript is the sandbox's init: it runs the command (its arguments) and exits with the
// command's status. It is not the command itself, which as PID 1 would ignore every signal
// it has no handler for, SIGTERM included.
const initScript = `"$@"
exit $?`

// Available reports whether bubblewrap runs here, by running `true` in a sandbox like
// Wrap's once; the answer is kept for the life of the program. The error says why not:
// not Linux, bwrap not installed, or bwrap's own complaint (no user namespaces, no
// permission to mount).
func Available() error { return available() }

var available = sync.OnceValue(Check)

// Check is Available without the memory: it tries again each time.
func Check() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("bubblewrap runs on Linux only, not on %s", runtime.GOOS)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		return errors.New("bubblewrap is not installed (no bwrap on PATH)")
	}
	argv := Profile{Env: []string{"PATH=/usr/bin:/bin"}}.Wrap([]string{"true"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("bubblewrap does not work here: %s", msg)
	}
	return nil
}
