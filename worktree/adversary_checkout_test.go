package worktree

// Adversarial tests of the orchestrator's own checkout (checkout.go), index (gitindex.go)
// and tree writing (writetree.go): an agent, or the code of its tests, spoils a slot as it
// likes, and the next Reset must leave the slot as git's reset and clean would (and better
// where git's own is weak), writing nothing outside it; Commit's tree must be the one
// `git add -A` and `git write-tree` make of the same files from a fresh index.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// advReset resets s to commit as Reset does, reporting whether the orchestrator's own
// checkout did it (false: git did).
func advReset(t *testing.T, s *Slot, commit string) bool {
	t.Helper()
	ctx := context.Background()
	if err := WriteGitFile(s.Dir, s.admin); err != nil {
		t.Fatal(err)
	}
	ok, err := s.checkout(ctx, commit)
	if err == nil && ok {
		return true
	}
	t.Logf("left to git (%v, %v)", ok, err)
	if err := s.Reset(ctx, commit); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	return false
}

// advCompare resets two slots to from, spoils both, resets ours with Reset's own
// checkout and theirs with git's reset and clean, and fails the test where they differ.
func advCompare(t *testing.T, r *Repo, from, commit string, spoil func(t *testing.T, s *Slot)) (ours, theirs *Slot) {
	t.Helper()
	ours = resetSlot(t, r, "ours", from)
	theirs = resetSlot(t, r, "theirs", from)
	spoil(t, ours)
	spoil(t, theirs)
	advReset(t, ours, commit)
	gitReset(t, theirs, commit)
	if got, want := safeContents(t, ours.Dir), safeContents(t, theirs.Dir); !maps.Equal(got, want) {
		t.Errorf("checkout left\n%v\ngit left\n%v", got, want)
	}
	if st := slotGit(t, ours, "status", "--porcelain", "--ignored", "-uall"); st != "" {
		t.Errorf("git status after the checkout:\n%s", st)
	}
	return ours, theirs
}

// freshTree is the tree `git add -A` and `git write-tree` make of the slot's files from
// a fresh index of base.
func freshTree(t *testing.T, s *Slot, base string) string {
	t.Helper()
	fresh := filepath.Join(t.TempDir(), "index")
	cmd := exec.Command("sh", "-c", "git read-tree "+base+" && git add -A && git write-tree")
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.env(fresh)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// safeContents is contents, but a FIFO, socket or device is described, never opened.
func safeContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	odd := false
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&(os.ModeNamedPipe|os.ModeSocket|os.ModeDevice|os.ModeCharDevice) != 0 {
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = "special " + d.Type().String()
			odd = true
		}
		return nil
	})
	if odd {
		return out
	}
	return contents(t, dir)
}

func inode(t *testing.T, p string) (ino uint64, nlink uint64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino, uint64(st.Nlink)
}

// Attack: a tracked file replaced by a sparse file of half a gigabyte (it costs no disk).
// Git sees its size differs and writes the blob; a checkout that reads the whole file to
// hash it allocates its size: a file of a terabyte would crash the orchestrator.
func TestAdversaryHugeSparseFile(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	p := filepath.Join(s.Dir, "calc.go")
	os.Remove(p)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	const huge = 512 << 20
	if err := f.Truncate(huge); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if !advReset(t, s, head) {
		t.Fatal("expected the orchestrator's checkout")
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the checkout allocated %d MiB to look at a sparse file of %d MiB (a file of a terabyte would kill the orchestrator)", grew>>20, huge>>20)
	}
	if got := read(t, s.Dir, "calc.go"); !strings.HasPrefix(got, "package calc") {
		t.Errorf("calc.go: %.40q", got)
	}
}

// Attack: a tracked file made a hard link to a file outside the slot holding the same
// bytes (unsandboxed, or any place on the slot's mount the attacker can still write
// later). A checkout that keeps the file because its bytes are right keeps the inode the
// attacker shares: a write outside, during the next gate run, changes the gate's file.
func TestAdversaryHardLinkOutside(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	outside := filepath.Join(filepath.Dir(r.slotsDir()), "outside-"+filepath.Base(t.TempDir()))
	os.MkdirAll(outside, 0o755)
	t.Cleanup(func() { os.RemoveAll(outside) })
	var evil string
	ours, theirs := advCompare(t, r, head, head, func(t *testing.T, s *Slot) {
		p := filepath.Join(s.Dir, "calc.go")
		b, _ := os.ReadFile(p)
		evil = filepath.Join(outside, s.Name)
		os.WriteFile(evil, b, 0o644)
		os.Remove(p)
		if err := os.Link(evil, p); err != nil {
			t.Skipf("hard link to outside the slot: %v", err)
		}
	})
	for _, s := range []*Slot{ours, theirs} {
		os.WriteFile(filepath.Join(outside, s.Name), []byte("package calc\n\nfunc Add(a, b int) int { return a - b }\n"), 0o644)
	}
	if got := read(t, theirs.Dir, "calc.go"); !strings.Contains(got, "a + b") {
		t.Logf("git's reset keeps the shared inode too: %q", got)
	}
	if got := read(t, ours.Dir, "calc.go"); !strings.Contains(got, "a + b") {
		t.Errorf("after Reset, a write outside the slot changed calc.go: %q", got)
	}
}

// Attack: two tracked files of the same bytes made one inode (a hard link inside the
// slot). After Reset a write to one must not change the other.
func TestAdversaryHardLinkInside(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	write(t, dir, "copy.md", "calc\n") // README.md's bytes
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "copy")
	head, _ := r.Head(ctx)
	ours, theirs := advCompare(t, r, head, head, func(t *testing.T, s *Slot) {
		os.Remove(filepath.Join(s.Dir, "copy.md"))
		if err := os.Link(filepath.Join(s.Dir, "README.md"), filepath.Join(s.Dir, "copy.md")); err != nil {
			t.Fatal(err)
		}
	})
	if _, n := inode(t, filepath.Join(theirs.Dir, "copy.md")); n != 1 {
		t.Logf("git's reset leaves the two files one inode (%d links)", n)
	}
	if _, n := inode(t, filepath.Join(ours.Dir, "copy.md")); n != 1 {
		t.Errorf("after Reset copy.md has %d links: a write to README.md changes it", n)
	}
}

// The same edit, of a file the checkout kept, is in the candidate Commit makes: git
// add -A compares the change time only to the second unless built with USE_NSEC, and the
// entry is not smudged (its mtime is old).
func TestAdversaryKeptFileEditInCommit(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	baseTree, _ := r.Tree(ctx, head)
	s := resetSlot(t, r, "job-1", head)
	p := filepath.Join(s.Dir, "calc.go")
	old := time.Now().Add(-time.Hour)
	for i := range 5 {
		// Start well inside a second, so that both changes fall in it.
		for time.Now().Nanosecond() > 500e6 {
			time.Sleep(10 * time.Millisecond)
		}
		os.Chtimes(p, old, old)
		if err := s.Reset(ctx, head); err != nil {
			t.Fatal(err)
		}
		f, _ := os.OpenFile(p, os.O_WRONLY, 0)
		f.WriteAt([]byte("P"), 0)
		f.Close()
		os.Chtimes(p, old, old)
		c, err := s.Commit(ctx, head, "", "candidate")
		if err != nil {
			t.Fatal(err)
		}
		tree, _ := r.Tree(ctx, c)
		if want := freshTree(t, s, head); tree != want || tree == baseTree {
			t.Fatalf("round %d: the candidate's tree %.12s (base's %.12s), a fresh index's %.12s: the edit is not in the candidate", i, tree, baseTree, want)
		}
		if err := s.Reset(ctx, head); err != nil {
			t.Fatal(err)
		}
	}
}

// Attack: permissions. A tracked file made read-only, unreadable or set-user-ID, a
// tracked folder made read-only with an untracked file in it, or unreadable: after Reset
// the slot holds the commit's files with the modes of a fresh checkout, so that one
// candidate's tests cannot make the next candidate's fail (git's own reset keeps such
// modes, and as a user other than root fails on the unreadable folder).
func TestAdversaryPermissions(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	perms := func(t *testing.T, dir string) map[string]os.FileMode {
		out := map[string]os.FileMode{}
		for rel := range contents(t, dir) {
			fi, err := os.Lstat(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			out[rel] = fi.Mode()
		}
		return out
	}
	pristine := resetSlot(t, r, "pristine", head)
	s := resetSlot(t, r, "ours", head)
	write(t, s.Dir, "vendor/dep/untracked.go", "package dep\n")
	os.Chmod(filepath.Join(s.Dir, "vendor/dep"), 0o555)
	os.Chmod(filepath.Join(s.Dir, "a/target"), 0o000)
	os.Chmod(filepath.Join(s.Dir, "README.md"), 0o000)
	os.Chmod(filepath.Join(s.Dir, "calc_test.go"), 0o444)
	os.Chmod(filepath.Join(s.Dir, "calc.go"), 0o644|os.ModeSetuid)
	if !advReset(t, s, head) {
		t.Error("left to git")
	}
	if got, want := contents(t, s.Dir), contents(t, pristine.Dir); !maps.Equal(got, want) {
		t.Errorf("Reset left\n%v\nwant\n%v", got, want)
	}
	if got, want := perms(t, s.Dir), perms(t, pristine.Dir); !maps.Equal(got, want) {
		t.Errorf("modes after Reset %v, a fresh checkout's %v", got, want)
	}
}

// Attack: a FIFO and a socket where tracked files are, and a FIFO where none is. A
// checkout that opened one would hang. (Git's clean leaves an untracked FIFO; Reset's own
// clean removes it, so the slot is a fresh checkout's rather than git's here.)
func TestAdversaryFIFOAndSocket(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	want := contents(t, resetSlot(t, r, "pristine", head).Dir)
	s := resetSlot(t, r, "ours", head)
	for _, rel := range []string{"calc.go", "stray.fifo", "vendor/dep/dep.go", "newdir/f.fifo"} {
		os.MkdirAll(filepath.Dir(filepath.Join(s.Dir, rel)), 0o755)
		os.Remove(filepath.Join(s.Dir, rel))
		if err := syscall.Mkfifo(filepath.Join(s.Dir, rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(s.Dir, "README.md")
	os.Remove(p)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	done := make(chan bool)
	go func() { done <- advReset(t, s, head) }()
	select {
	case ok := <-done:
		if !ok {
			t.Error("left to git")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Reset hangs on a FIFO")
	}
	if got := safeContents(t, s.Dir); !maps.Equal(got, want) {
		t.Errorf("Reset left\n%v\nwant\n%v", got, want)
	}
}

// Attack: folders on the way to tracked files made links to outside, holding files of
// the commit's bytes (or other bytes): nothing outside changes, the slot is git's.
func TestAdversarySymlinkedParents(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	outside := t.TempDir()
	write(t, outside, "dep/dep.go", "package dep\n")       // the blob's bytes
	write(t, outside, "target/keep.txt", "poisoned\n")     // other bytes
	write(t, outside, "vendor2/dep/dep.go", "package x\n") // other bytes
	before := contents(t, outside)
	for name, spoil := range map[string]func(t *testing.T, s *Slot){
		"a leaf folder": func(t *testing.T, s *Slot) {
			os.RemoveAll(filepath.Join(s.Dir, "vendor/dep"))
			os.Symlink(filepath.Join(outside, "dep"), filepath.Join(s.Dir, "vendor/dep"))
		},
		"an inner folder": func(t *testing.T, s *Slot) {
			os.RemoveAll(filepath.Join(s.Dir, "vendor"))
			os.Symlink(filepath.Join(outside, "vendor2"), filepath.Join(s.Dir, "vendor"))
		},
		"a relative link escaping": func(t *testing.T, s *Slot) {
			os.RemoveAll(filepath.Join(s.Dir, "a/target"))
			rel, _ := filepath.Rel(filepath.Join(s.Dir, "a"), filepath.Join(outside, "target"))
			os.Symlink(rel, filepath.Join(s.Dir, "a/target"))
		},
		"a file a link to an outside file of its bytes": func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "vendor/dep/dep.go"))
			os.Symlink(filepath.Join(outside, "dep/dep.go"), filepath.Join(s.Dir, "vendor/dep/dep.go"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			advCompare(t, r, head, head, spoil)
			if after := contents(t, outside); !maps.Equal(after, before) {
				t.Errorf("outside the slot:\n%v\nwas\n%v", after, before)
			}
		})
	}
}

// Odd names an agent can make, in a candidate (Commit) and in the gate's checkout of it:
// line breaks, bytes that are not UTF-8, tabs, backslashes, leading dashes and spaces, a
// long name, a deep path. The candidate's tree is git's; the gate's slot is git's after
// the agent spoils each file.
func TestAdversaryOddNames(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	names := []string{
		"new\nline.txt", "bad\xff\xfe.txt", "tab\there.txt", "back\\slash.txt", "-dash.txt",
		" lead space.txt", "trailing space.txt ", "quote\"d.txt", "\u00fcn\u00efcode.txt",
		"a/\x01ctl.txt", strings.Repeat("L", 255), strings.Repeat("d/", 60) + "deep.txt",
		"odd\ndir/inner.txt", "a.b/x", "a0/x", "a/target/keep.txt.new",
	}
	job := resetSlot(t, r, "job-1", head)
	for _, n := range names {
		write(t, job.Dir, n, "content of "+n)
	}
	os.Chmod(filepath.Join(job.Dir, names[0]), 0o755)
	os.Symlink("new\nline.txt", filepath.Join(job.Dir, "link\xff"))
	c, err := job.Commit(ctx, head, "", "odd names")
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := r.Tree(ctx, c)
	if want := freshTree(t, job, head); tree != want {
		t.Fatalf("the candidate's tree %s, git's %s", tree, want)
	}
	if got := gitT(t, r.Root, "ls-tree", "-r", "-z", "--name-only", c); strings.Count(got, "\x00") < len(names) {
		t.Fatalf("the candidate lacks files: %q", got)
	}
	advCompare(t, r, head, c, func(t *testing.T, s *Slot) {})
	advCompare(t, r, c, c, func(t *testing.T, s *Slot) {
		for _, n := range names {
			p := filepath.Join(s.Dir, n)
			fi, _ := os.Lstat(p)
			os.WriteFile(p, []byte(strings.Repeat("X", int(fi.Size()))), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}
	})
}

// Attack: untracked folders nested deeper than a path can name (PATH_MAX) inside a
// tracked folder: Reset removes them and succeeds (git's clean may not).
func TestAdversaryDeepNesting(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	fd, err := syscall.Open(filepath.Join(s.Dir, "vendor/dep"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2100 { // 2 bytes a level: 4200 bytes, past PATH_MAX
		if err := syscall.Mkdirat(fd, "x", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := syscall.Openat(fd, "x", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
		fd = next
	}
	if f, err := syscall.Openat(fd, "deep.go", syscall.O_CREAT|syscall.O_WRONLY, 0o644); err == nil {
		syscall.Close(f)
	}
	syscall.Close(fd)
	if err := s.Reset(ctx, head); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, "vendor/dep/x")); err == nil {
		t.Error("the deep folder survived Reset")
	}
}

// Commit's tree is git's for shapes a candidate can take: nothing left, only deletions,
// executable bits flipped both ways, a file become a link and a link a file, a file
// become a folder, an embedded repository (a submodule's entry).
func TestAdversaryCommitShapes(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	write(t, dir, "bin/run.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755)
	os.Symlink("calc.go", filepath.Join(dir, "link.go"))
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "shapes")
	head, _ := r.Head(ctx)
	for name, edit := range map[string]func(t *testing.T, s *Slot){
		"nothing changed": func(t *testing.T, s *Slot) {},
		"everything removed": func(t *testing.T, s *Slot) {
			entries, _ := os.ReadDir(s.Dir)
			for _, e := range entries {
				if e.Name() != ".git" {
					os.RemoveAll(filepath.Join(s.Dir, e.Name()))
				}
			}
		},
		"only deletions": func(t *testing.T, s *Slot) {
			os.RemoveAll(filepath.Join(s.Dir, "vendor"))
			os.Remove(filepath.Join(s.Dir, "a/target/keep.txt"))
		},
		"executable bits flipped": func(t *testing.T, s *Slot) {
			os.Chmod(filepath.Join(s.Dir, "bin/run.sh"), 0o644)
			os.Chmod(filepath.Join(s.Dir, "vendor/dep/dep.go"), 0o755)
		},
		"file and link swapped": func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "link.go"))
			write(t, s.Dir, "link.go", "calc.go")
			os.Remove(filepath.Join(s.Dir, "README.md"))
			os.Symlink("calc\n", filepath.Join(s.Dir, "README.md"))
		},
		"a file become a folder": func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "README.md"))
			write(t, s.Dir, "README.md/inner", "x")
		},
		"an embedded repository": func(t *testing.T, s *Slot) {
			sub := filepath.Join(s.Dir, "vendor/sub")
			write(t, sub, "f.txt", "x")
			gitT(t, sub, "init", "-q")
			gitT(t, sub, "add", "-A")
			gitT(t, sub, "commit", "-q", "-m", "sub")
		},
		"a file in an ignored-looking place": func(t *testing.T, s *Slot) {
			write(t, s.Dir, "deep/er/x.log", "ignored")
			write(t, s.Dir, "deep/er/x.txt", "kept")
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := resetSlot(t, r, "job-1", head)
			edit(t, s)
			c, err := s.Commit(ctx, head, "", "candidate")
			if err != nil {
				t.Fatal(err)
			}
			tree, _ := r.Tree(ctx, c)
			if want := freshTree(t, s, head); tree != want {
				t.Errorf("the candidate's tree %s, git's %s", tree, want)
			}
			if out, err := exec.Command("git", "-C", r.Root, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
				t.Errorf("fsck: %v\n%s", err, out)
			}
		})
	}
}

// An index whose cache of tree names lies (only an unsandboxed agent can write it): a
// Reset writes the index anew, and the next candidate's tree is its files'.
func TestAdversaryLyingTreeCache(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	write(t, dir, "vendor/dep/dep.go", "package dep // other\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "other vendor")
	other, _ := r.Head(ctx)
	otherVendor := gitT(t, dir, "rev-parse", other+":vendor")
	s := resetSlot(t, r, "job-1", head)
	size, _ := r.idSize(ctx)
	idx, err := readIndex(s.index, size)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range idx.tree.subs {
		if sub.name == "vendor" {
			sub.id = otherVendor
		}
	}
	b, _ := idx.encode(size)
	os.WriteFile(s.index, b, 0o644)
	if err := s.Reset(ctx, head); err != nil {
		t.Fatal(err)
	}
	write(t, s.Dir, "new.txt", "x")
	c, err := s.Commit(ctx, head, "", "candidate")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gitT(t, dir, "rev-parse", c+":vendor"), gitT(t, dir, "rev-parse", head+":vendor"); got != want {
		t.Errorf("the candidate's vendor is %s, its files' %s", got, want)
	}
}

// A tree no git command makes (index-pack --strict refuses it from a worker): a link "a"
// to a folder outside and a name "a/pwn.txt" beside it, or a folder "a" beside the link.
// Whatever the checkout does with it, nothing outside the slot is written.
func TestAdversaryCraftedTree(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	outside := t.TempDir()
	mk := func(t *testing.T, kind string, body []byte) string {
		cmd := exec.Command("git", "hash-object", "-w", "--literally", "-t", kind, "--stdin")
		cmd.Dir = dir
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	raw := func(id string) []byte {
		b := make([]byte, 20)
		fmt.Sscanf(id, "%x", &b)
		return b
	}
	link := mk(t, "blob", []byte(outside))
	pwn := mk(t, "blob", []byte("written outside\n"))
	entry := func(mode, name, id string) []byte {
		return append([]byte(mode+" "+name+"\x00"), raw(id)...)
	}
	inner := mk(t, "tree", entry("100644", "pwn.txt", pwn))
	for name, tree := range map[string][]byte{
		"a slash in a name": bytes.Join([][]byte{entry("120000", "a", link), entry("100644", "a/pwn.txt", pwn)}, nil),
		"a duplicate name":  bytes.Join([][]byte{entry("120000", "a", link), entry("40000", "a", inner)}, nil),
	} {
		t.Run(name, func(t *testing.T) {
			treeID := mk(t, "tree", tree)
			c := gitT(t, dir, "commit-tree", treeID, "-m", "crafted")
			s := resetSlot(t, r, "job-1", head)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("the checkout of a crafted tree panics: %v", p)
					}
				}()
				ok, err := s.checkout(ctx, c)
				t.Logf("checkout: %v, %v", ok, err)
			}()
			if _, err := os.Lstat(filepath.Join(outside, "pwn.txt")); err == nil {
				t.Errorf("the checkout of a crafted tree wrote %s, outside the slot", filepath.Join(outside, "pwn.txt"))
				os.Remove(filepath.Join(outside, "pwn.txt"))
			}
		})
	}
}

// Attack (unsandboxed: the slot's admin folder is hidden from agents and gate tests): a
// link planted where Reset writes its temporary files in the admin folder.
func TestAdversaryAdminTempLinks(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	write(t, dir, "more.txt", "x")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "more")
	next, _ := r.Head(ctx)
	for _, tmp := range []string{"HEAD.tmp", "index.tmp"} {
		t.Run(tmp, func(t *testing.T) {
			s := resetSlot(t, r, "job-1", head)
			victim := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(victim, []byte("precious\n"), 0o644)
			os.Symlink(victim, filepath.Join(s.admin, tmp))
			if err := s.Reset(ctx, next); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(s.admin, tmp))
			if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
				t.Errorf("Reset wrote through a link at %s in the admin folder: the victim holds %.60q", tmp, got)
			}
			if err := s.Reset(ctx, head); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Attack (as a user other than root; root reads and writes anyway): a gate's test makes
// a tracked folder unreadable, or read-only with an untracked file in it, so that every
// later Reset of the slot fails (the gate's slot is reused: each later candidate's gate
// fails). Reset must succeed and leave the commit's files.
func TestAdversaryUnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root reads and writes any folder: the test runs again as nobody.
		asNobody(t, "TestAdversaryUnreadableFolder")
		return
	}
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	for name, spoil := range map[string]func(t *testing.T, s *Slot){
		"an unreadable tracked folder": func(t *testing.T, s *Slot) {
			os.Chmod(filepath.Join(s.Dir, "a/target"), 0o000)
		},
		"a read-only folder with an untracked file": func(t *testing.T, s *Slot) {
			write(t, s.Dir, "vendor/dep/untracked.go", "package dep\n")
			os.Chmod(filepath.Join(s.Dir, "vendor/dep"), 0o555)
		},
		"a read-only folder with a changed file": func(t *testing.T, s *Slot) {
			write(t, s.Dir, "vendor/dep/dep.go", "package dep // poisoned\n")
			os.Chmod(filepath.Join(s.Dir, "vendor/dep"), 0o555)
		},
		"an unreadable untracked folder": func(t *testing.T, s *Slot) {
			write(t, s.Dir, "junk/deeper/x", "x")
			os.Chmod(filepath.Join(s.Dir, "junk"), 0o000)
		},
		"an unreadable tracked file": func(t *testing.T, s *Slot) {
			os.Chmod(filepath.Join(s.Dir, "calc.go"), 0o000)
		},
	} {
		t.Run(name, func(t *testing.T) {
			want := contents(t, resetSlot(t, r, "pristine", head).Dir)
			s := resetSlot(t, r, "job-1", head)
			spoil(t, s)
			err := s.Reset(ctx, head)
			t.Cleanup(func() {
				filepath.WalkDir(s.Dir, func(p string, d os.DirEntry, err error) error {
					if d != nil && d.IsDir() {
						os.Chmod(p, 0o755)
					}
					return nil
				})
			})
			if err != nil {
				t.Fatalf("Reset: %v", err)
			}
			if got := contents(t, s.Dir); !maps.Equal(got, want) {
				t.Errorf("Reset left\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// asNobody runs the test called name again in a copy of this test binary as the user and
// group nobody (65534), with a home and a temporary folder of that user's, and fails t
// with its output when it fails.
func asNobody(t *testing.T, name string) {
	t.Helper()
	if os.Getenv("WORKTREE_TEST_AS_NOBODY") != "" {
		t.Fatal("still root after the switch to nobody")
	}
	dir, err := os.MkdirTemp("", "as-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin, home := filepath.Join(dir, "worktree.test"), filepath.Join(dir, "home")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Chmod(dir, 0o755), os.Chown(home, 65534, 65534)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "WORKTREE_TEST_AS_NOBODY=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}
