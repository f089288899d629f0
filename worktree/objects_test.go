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
	if _, err := r.Show(ctx, head, "nope.txt"); !errors.Is(err, ErrMissing) {
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

// TestCommitAndFile: Commit reads a commit's own parents and takes nothing else for a
// commit (a tree, a tag of the commit, a name that names nothing); File reads an entry's
// mode and bytes, ErrMissing where the tree has no such entry.
func TestCommitAndFile(t *testing.T) {
	r, first := objectsRepo(t)
	ctx := context.Background()
	os.WriteFile(filepath.Join(r.Root, "a.txt"), []byte("changed\n"), 0o644)
	gitT(t, r.Root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "second")
	head := gitT(t, r.Root, "rev-parse", "HEAD")
	gitT(t, r.Root, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "-m", "a tag", "v1", head)
	tag := gitT(t, r.Root, "rev-parse", "v1")
	if parents, ok, err := r.Commit(ctx, head); err != nil || !ok || len(parents) != 1 || parents[0] != first {
		t.Errorf("Commit(head) = %v, %v, %v; want [%s]", parents, ok, err, first)
	}
	if parents, ok, err := r.Commit(ctx, first); err != nil || !ok || len(parents) != 0 {
		t.Errorf("Commit(first) = %v, %v, %v; want no parent", parents, ok, err)
	}
	tree := gitT(t, r.Root, "rev-parse", head+"^{tree}")
	for _, name := range []string{tag, tree, strings.Repeat("0", len(head)), "HEAD"} {
		if _, ok, err := r.Commit(ctx, name); ok || err != nil {
			t.Errorf("Commit(%s) = %v, %v; want not a commit", name, ok, err)
		}
	}
	for _, tt := range []struct{ path, mode, body string }{
		{"a.txt", "100644", "changed\n"}, {"sub/deep/b.txt", "100644", "two\n"},
		{"run.sh", "100755", "#!/bin/sh\n"}, {"link", "120000", "a.txt"}, {"sub/deep", "40000", ""},
	} {
		mode, body, err := r.File(ctx, head, tt.path)
		if err != nil || mode != tt.mode || string(body) != tt.body {
			t.Errorf("File(%s) = %s %q %v; want %s %q", tt.path, mode, body, err, tt.mode, tt.body)
		}
	}
	for _, p := range []string{"nope", "sub/nope", "nope/b.txt", "a.txt/b"} {
		if _, _, err := r.File(ctx, head, p); !errors.Is(err, ErrMissing) {
			t.Errorf("File(%s): %v, want ErrMissing", p, err)
		}
	}
}
