package worktree

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDiffAgreesWithGit: Diff, read without a git process where no rename can be, lists
// what `git diff-tree -r -M --raw` lists, in its order, for every kind of change an agent
// can make, the ones a walk of blob names alone would miss first: a file that becomes a
// symbolic link to its own bytes (the same blob), a mode changed and nothing else, a file
// that becomes a folder of the same name. Where a rename may be (a path added and another
// deleted), or a submodule changes, git answers.
func TestDiffAgreesWithGit(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, dir string)
		// inProcess says that the walk answers without git.
		inProcess bool
	}{
		{"cheat: a file becomes a symbolic link to its own bytes", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "target"))
			if err := os.Symlink("x", filepath.Join(dir, "target")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"cheat: the execute bit alone", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"cheat: a file becomes a folder of the same name", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "a.txt"))
			write(t, dir, "a.txt/inner", "one\n")
		}, false},
		{"cheat: a folder becomes a file of the same name", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "d"))
			write(t, dir, "d", "now a file\n")
		}, false},
		{"honest: an edit", func(t *testing.T, dir string) {
			write(t, dir, "d/e/deep.txt", "deeper\n")
		}, true},
		{"honest: files added, in git's order around names that sort by their slash", func(t *testing.T, dir string) {
			write(t, dir, "d.txt", "beside the folder\n")
			write(t, dir, "d/e.go", "inside\n")
			write(t, dir, "d-e", "dash\n")
			write(t, dir, "new/folder/file", "new\n")
		}, true},
		{"honest: a whole folder deleted", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "d"))
		}, true},
		{"honest: nothing", func(t *testing.T, dir string) {}, true},
		{"git's: a rename", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "long.txt"), filepath.Join(dir, "moved.txt"))
		}, false},
		{"git's: a submodule added", func(t *testing.T, dir string) {
			gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+gitT(t, dir, "rev-parse", "HEAD")+",sub")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			gitT(t, dir, "init", "-q", "-b", "main")
			write(t, dir, "a.txt", "one\n")
			write(t, dir, "target", "x")
			write(t, dir, "d/e/deep.txt", "deep\n")
			write(t, dir, "d/f.txt", "f\n")
			write(t, dir, "long.txt", "a file that only moves, long enough to be found as a rename\n")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-qm", "base")
			base := gitT(t, dir, "rev-parse", "HEAD")
			tt.edit(t, dir)
			if tt.name != "git's: a submodule added" {
				gitT(t, dir, "add", "-A")
			}
			gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "change")
			head := gitT(t, dir, "rev-parse", "HEAD")
			r, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			got, err := r.Diff(ctx, base, head)
			if err != nil {
				t.Fatal(err)
			}
			want, err := r.gitDiff(ctx, base, head)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Diff:\n%+v\ngit diff-tree:\n%+v", got, want)
			}
			if _, ok, err := r.treeDiff(ctx, base, head); err != nil || ok != tt.inProcess {
				t.Errorf("answered without git: %v (%v), want %v", ok, err, tt.inProcess)
			}
		})
	}
}
