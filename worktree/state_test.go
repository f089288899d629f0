package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStateSeesEveryChange: a reader that writes, removes or touches any file of a
// checkout, tracked, untracked or ignored, shows in the next State; a reader that only
// reads does not.
func TestStateSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		change func(dir string) error
		want   string
	}{
		{"nothing", func(string) error { return nil }, ""},
		{"a tracked file's bytes", func(dir string) error { return os.WriteFile(filepath.Join(dir, "a.txt"), []byte("ONE\n"), 0o644) }, "a.txt"},
		{"a tracked file removed", func(dir string) error { return os.Remove(filepath.Join(dir, "sub", "deep", "b.txt")) }, "sub/deep/b.txt"},
		{"a new file", func(dir string) error { return os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644) }, "new.txt"},
		{"an ignored file", func(dir string) error { return os.WriteFile(filepath.Join(dir, "build.log"), []byte("x"), 0o644) }, "build.log"},
		{"an untracked file's time, same bytes", func(dir string) error {
			return os.Chtimes(filepath.Join(dir, "scratch.txt"), time.Now(), time.Now().Add(time.Hour))
		}, "scratch.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := objectsRepo(t)
			dir := r.Root
			os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("*.log\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "scratch.txt"), []byte("s"), 0o644)
			before, err := StateOf(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.change(dir); err != nil {
				t.Fatal(err)
			}
			after, err := StateOf(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := before.Changed(after); got != tt.want {
				t.Errorf("Changed = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStateChangedListsTen(t *testing.T) {
	before, after := State{}, State{}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		after[p] = "?? 1 1"
	}
	if got, want := before.Changed(after), "a, b, c, d, e, f, g, h, i, j, and 2 more"; got != want {
		t.Errorf("Changed = %q, want %q", got, want)
	}
}
