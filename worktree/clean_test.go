package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestResetCleans: Reset leaves the slot holding what the commit tracks and nothing else,
// as `git clean -ffdx` would: untracked and ignored files, new folders, a nested
// repository and a symbolic link to a folder outside are removed (the link itself, never
// what it points at); a tracked file an agent changed is put back; the .git file stays.
func TestResetCleans(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	want := files(t, s.Dir)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("not the slot's\n"), 0o644)
	for rel, text := range map[string]string{
		"untracked.txt": "x", "build.log": "ignored", "newdir/deep/f.txt": "x", "nested/a.txt": "x",
	} {
		p := filepath.Join(s.Dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o644)
	}
	if out, err := exec.Command("git", "init", "-q", filepath.Join(s.Dir, "nested")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	os.Symlink(outside, filepath.Join(s.Dir, "out"))
	os.WriteFile(filepath.Join(s.Dir, "calc.go"), []byte("package calc\n"), 0o644)
	if err := s.Reset(ctx, head); err != nil {
		t.Fatal(err)
	}
	if got := files(t, s.Dir); !slices.Equal(got, want) {
		t.Errorf("after Reset: %v, want %v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep.txt")); err != nil || string(b) != "not the slot's\n" {
		t.Errorf("the folder a link pointed at lost its file: %q, %v", b, err)
	}
	if err := s.CheckCheckout(ctx, head); err != nil {
		t.Error(err)
	}
}

// files lists the paths under dir, symbolic links not followed, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(out)
	return out
}

// TestUntracked: the files an attempt left under a folder that its candidate does not
// hold (.gitignore kept them out) are listed as `git ls-files --others` lists them, and the
// files it added that the candidate holds are not; a folder the commit has no file of is
// read from the disk alone.
func TestUntracked(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	write(t, dir, ".orchestrator/task_queue.md", "# queue\n")
	write(t, dir, ".orchestrator/.gitignore", "runs/\n*.tmp\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "queue")
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	for p, text := range map[string]string{
		".orchestrator/runs/TASK-001/1/x.log": "ignored", ".orchestrator/half.tmp": "ignored",
		".orchestrator/notes.md": "added", "elsewhere.tmp": "not under the folder",
	} {
		write(t, s.Dir, p, text)
	}
	c, err := s.Commit(ctx, head, "", "candidate")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Untracked(ctx, c, ".orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{".orchestrator/half.tmp", ".orchestrator/runs/TASK-001/1/x.log"}
	if !slices.Equal(got, want) {
		t.Errorf("Untracked = %v, want %v", got, want)
	}
	if got, err := s.Untracked(ctx, c, "nowhere"); err != nil || len(got) != 0 {
		t.Errorf("a folder that is not there: %v, %v", got, err)
	}
}
