package ownfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenWritesOnlyItsOwn: Make leaves what is there; Open writes into a file made ahead
// (the same file), and never through what is not a plain file of its own: a symbolic link, a
// second name of another file, another user's file. Those are removed; with create the file
// is made anew, without Open says so.
func TestOpenWritesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".f.tmp")
	Make(path, 0o644)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("in use"), 0o644); err != nil {
		t.Fatal(err)
	}
	Make(path, 0o644) // a file there stays as it is
	if b, _ := os.ReadFile(path); string(b) != "in use" {
		t.Fatalf("Make touched a file that was there: %q", b)
	}
	f, err := Open(path, true, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := f.Stat()
	f.Close()
	if !os.SameFile(before, after) || after.Size() != 0 {
		t.Errorf("Open did not write into the file made ahead, emptied")
	}

	other := filepath.Join(dir, "other")
	for name, plant := range map[string]func() error{
		"symbolic link": func() error { return os.Symlink(other, path) },
		"hard link":     func() error { return os.Link(other, path) },
		"another's":     func() error { return errors.Join(os.WriteFile(path, nil, 0o666), os.Chown(path, 4242, 4242)) },
	} {
		for _, create := range []bool{true, false} {
			if err := os.WriteFile(other, []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(path)
			if err := plant(); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, create, 0o644)
			if create {
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				f.WriteString("ours")
				f.Close()
				if b, _ := os.ReadFile(path); string(b) != "ours" {
					t.Errorf("%s: the file made anew holds %q", name, b)
				}
				if fi, err := os.Lstat(path); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() {
					t.Errorf("%s: what was written is not a file of its own", name)
				}
			} else if !errors.Is(err, ErrNotOwn) {
				t.Errorf("%s, without create: %v, want ErrNotOwn", name, err)
			} else if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s, without create: left in place", name)
			}
			if b, _ := os.ReadFile(other); string(b) != "keep me" {
				t.Errorf("%s: written through into another file: %q", name, b)
			}
		}
	}
	os.Remove(path)
	if _, err := Open(path, false, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of nothing, without create: %v", err)
	}
}
