package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// objectsRepo is a repository with a file in a folder, an executable, a symbolic link and
// a file whose name has a space.
func objectsRepo(t *testing.T) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	for rel, text := range map[string]string{"a.txt": "one\n", "sub/deep/b.txt": "two\n", "run.sh": "#!/bin/sh\n", "with space.txt": "three\n"} {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	os.Symlink("a.txt", filepath.Join(dir, "link"))
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, gitT(t, dir, "rev-parse", "HEAD")
}

// TestListTree: the tree read through the long-lived reader is `git ls-tree -r`'s.
func TestListTree(t *testing.T) {
	r, head := objectsRepo(t)
	files, err := r.listTree(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.mode+" "+f.kind+" "+f.id+"\t"+f.path)
	}
	want := gitT(t, r.Root, "ls-tree", "-r", "--full-tree", head)
	if strings.Join(got, "\n") != want {
		t.Errorf("listTree:\n%s\nls-tree:\n%s", strings.Join(got, "\n"), want)
	}
}

// TestObjectsReader: files, trees and parents are read through one git process, which is
// started again when something ended it (a reaper of orphans), and a name that names no
// object is an error, not the end of the reader.
func TestObjectsReader(t *testing.T) {
	r, head := objectsRepo(t)
	ctx := context.Background()
	b, err := r.Show(ctx, head, "with space.txt")
	if err != nil || string(b) != "three\n" {
		t.Fatalf("Show = %q, %v", b, err)
	}
	if _, err := r.Show(ctx, head, "nope.txt"); !errors.Is(err, errMissing) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := r.Parent(ctx, head); err == nil {
		t.Error("the first commit has a parent")
	}
	pids := r.Helpers()
	if len(pids) != 1 {
		t.Fatalf("helpers %v, want the reader", pids)
	}
	syscall.Kill(pids[0], syscall.SIGKILL)
	tree, err := r.Tree(ctx, head)
	if err != nil || tree != gitT(t, r.Root, "rev-parse", head+"^{tree}") {
		t.Fatalf("after the reader was killed: Tree = %q, %v", tree, err)
	}
	if got := r.Helpers(); len(got) != 1 || got[0] == pids[0] {
		t.Errorf("helpers after a restart: %v (was %v)", got, pids)
	}
	if r.Ref(ctx, "refs/heads/main") != head {
		t.Error("Ref of the branch")
	}
}
