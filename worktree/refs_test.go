package worktree

import (
	"context"
	"errors"
	"testing"
)

// TestUpdateRef: the long-lived writer of refs keeps git's compare-and-swap: an update
// whose old value is stale (the branch moved meanwhile) is refused with git's message and
// moves nothing, and the updates after it, in a process started again, go through; so do
// updates after the process was ended from outside between two of them.
func TestUpdateRef(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	one := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
	two := gitT(t, dir, "rev-parse", "HEAD")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	ref := "refs/orchestrator/attempts/TASK-1/1"

	// The cheat: a swap from a value the ref no longer holds.
	err = r.updateRef(ctx, "refs/heads/main", one, one)
	var ge *Error
	if !errors.As(err, &ge) || ge.Stderr == "" {
		t.Fatalf("stale compare-and-swap: %v, want git's refusal", err)
	}
	if got := gitT(t, dir, "rev-parse", "main"); got != two {
		t.Errorf("main is at %s after a refused swap, want %s", got, two)
	}

	// The honest twin, in a process started again.
	if err := r.updateRef(ctx, "refs/heads/main", one, two); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRef(ctx, ref, two); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "rev-parse", "main", ref); got != one+"\n"+two {
		t.Errorf("refs:\n%s\nwant %s and %s", got, one, two)
	}

	// Its process ended between two updates: the next starts another.
	pid := r.refs.pid()
	if pid == 0 {
		t.Fatal("no long-lived writer")
	}
	r.refs.mu.Lock()
	r.refs.cmd.Process.Kill()
	r.refs.mu.Unlock()
	if err := r.SetRef(ctx, ref, one); err != nil {
		t.Fatalf("update after the writer was killed: %v", err)
	}
	if got := gitT(t, dir, "rev-parse", ref); got != one {
		t.Errorf("%s at %s, want %s", ref, got, one)
	}
	if p := r.refs.pid(); p == 0 || p == pid {
		t.Errorf("writer pid %d, want a new one (was %d)", p, pid)
	}
}
