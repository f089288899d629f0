package worktree

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDiffPatch: the combined diff gives what Diff and Patch give apart: a change, a new
// file, a rename, a deletion, a binary file and a path with a space.
func TestDiffPatch(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "one\n")
	write("gone.txt", "bye\n")
	write("old name.txt", "a file that only moves, long enough to be found as a rename\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
	a := gitT(t, dir, "rev-parse", "HEAD")
	write("a.txt", "one\ntwo\n")
	write("new dir/b.bin", "\x00\x01\x02binary\x00")
	os.Remove(filepath.Join(dir, "gone.txt"))
	os.Rename(filepath.Join(dir, "old name.txt"), filepath.Join(dir, "new name.txt"))
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "change")
	b := gitT(t, dir, "rev-parse", "HEAD")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	changes, patch, err := r.DiffPatch(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges, err := r.Diff(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	wantPatch, err := r.Patch(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(changes, wantChanges) || len(changes) != 4 {
		t.Errorf("changes %+v, want %+v", changes, wantChanges)
	}
	if patch != wantPatch {
		t.Errorf("patch:\n%s\nwant:\n%s", patch, wantPatch)
	}
	if c, p, err := r.DiffPatch(ctx, a, a); err != nil || len(c) != 0 || p != "" {
		t.Errorf("no change: %v %q %v", c, p, err)
	}
}
