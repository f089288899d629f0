package worktree

import (
	"context"
	"testing"
)

// TestReuseSeesSameSizeEdit: a slot reused for the next attempt, where the previous agent
// wrote a file that has since landed: an edit of the same size right after the reset is
// part of the next candidate.
func TestReuseSeesSameSizeEdit(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	for i := 0; i < 20; i++ {
		head, _ := r.Head(ctx)
		one := commitIn(t, r, "job-1", head, map[string]string{"shared.txt": "one"})
		landed, err := r.Land(ctx, one, "one\n")
		if err != nil {
			t.Fatal(err)
		}
		two := commitIn(t, r, "job-1", landed, map[string]string{"shared.txt": "two"})
		if two == landed {
			t.Fatalf("round %d: the edit of shared.txt from one to two was missed", i)
		}
		if _, err := r.Land(ctx, two, "two\n"); err != nil {
			t.Fatal(err)
		}
	}
}
