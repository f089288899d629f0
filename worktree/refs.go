package worktree

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// refWriter moves refs through one long-lived `git update-ref --stdin` (SPEC §7.7 git
// overhead): each update is a transaction of its own (start, update, prepare, commit),
// four lines written and three read, where each was a git process of its own. Git does
// the writing, so its locks, its ref store (files or reftable), its reflogs and its
// compare-and-swap are as a git update-ref's. A transaction git refuses ends the process
// (it dies with its message): the update fails with that message, and the next one starts
// a process again.
type refWriter struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// updateRef points ref at commit, if old is not "" only while ref points at old (git's
// compare-and-swap). A ref or an object name git could not take on its line is passed to
// a git process of its own.
func (r *Repo) updateRef(ctx context.Context, ref, commit, old string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	args := []string{"update-ref", ref, commit}
	if old != "" {
		args = append(args, old)
	}
	if strings.ContainsFunc(ref+commit+old, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		_, err := r.git(ctx, r.Root, nil, args...)
		return err
	}
	line := "update " + ref + " " + commit
	if old != "" {
		line += " " + old
	}
	w := &r.refs
	w.mu.Lock()
	defer w.mu.Unlock()
	for try := 0; ; try++ {
		begun, err := w.update(r.Root, line)
		if err == nil {
			return nil
		}
		if begun || try == 1 {
			return w.fail(args, err)
		}
		// The process was gone before the transaction began (it died, or was ended
		// between two updates): nothing was written, and a new one tries it once more.
		w.stop()
	}
}

// update runs one transaction of line in the process, started in dir if none runs. begun
// says that git began the transaction; w.mu is held.
func (w *refWriter) update(dir, line string) (begun bool, err error) {
	if w.cmd == nil {
		if err := w.start(dir); err != nil {
			return false, err
		}
	}
	if _, err := io.WriteString(w.in, "start\n"+line+"\nprepare\ncommit\n"); err != nil {
		return false, err
	}
	for i, want := range []string{"start: ok\n", "prepare: ok\n", "commit: ok\n"} {
		got, err := w.out.ReadString('\n')
		if err != nil {
			return i > 0, err
		}
		if got != want {
			return true, fmt.Errorf("unexpected answer %q", got)
		}
	}
	return false, nil
}

// start starts the process in dir; w.mu is held.
func (w *refWriter) start(dir string) error {
	w.stderr = &bytes.Buffer{}
	cmd, in, out, err := startHelper(dir, w.stderr, "update-ref", "--stdin")
	if err != nil {
		return err
	}
	w.cmd, w.in, w.out = cmd, in, bufio.NewReader(out)
	return nil
}

// fail ends the process after a transaction that did not commit, and returns the error of
// the update args, with git's message when it gave one; w.mu is held.
func (w *refWriter) fail(args []string, err error) error {
	w.stop()
	if msg := strings.TrimSpace(w.stderr.String()); msg != "" {
		return &Error{Args: args, Stderr: msg, Err: err}
	}
	return &Error{Args: args, Err: err}
}

// stop ends the process, if there is one; w.mu is held. Its input closed mid-transaction,
// git aborts the transaction: nothing half-done is left.
func (w *refWriter) stop() {
	if w.cmd == nil {
		return
	}
	stopHelper(w.cmd, w.in)
	w.cmd, w.in, w.out = nil, nil, nil
}

// pid returns the process's ID, 0 when none runs.
func (w *refWriter) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return 0
	}
	return w.cmd.Process.Pid
}
