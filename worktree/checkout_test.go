package worktree

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// contents describes every file under dir as a checkout leaves it: path → kind, mode and
// bytes (a link's target), symbolic links not followed; the slot's .git file left out.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %q", fi.Mode().Perm()&0o100 != 0, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// slotGit runs git in the slot as the orchestrator does: its admin folder, its working
// tree, the orchestrator's index of it.
func slotGit(t *testing.T, s *Slot, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.env(s.index)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestCheckoutAsGitDoes: the orchestrator's own checkout leaves a slot as git's reset and
// clean leave another, from whatever an agent (or a gate's tests) did to it: the same
// files, bytes, modes and links, nothing else, and an index git finds clean and whose
// cache of tree names is right (a later `git add -A` and `git write-tree` make the tree a
// fresh index makes). Each case checks the checkout was the orchestrator's, not git's.
func TestCheckoutAsGitDoes(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	write(t, dir, "bin/run.sh", "#!/bin/sh\necho run\n")
	os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755)
	os.Symlink("calc.go", filepath.Join(dir, "link.go"))
	os.Symlink("a/target", filepath.Join(dir, "dirlink"))
	write(t, dir, "a/b/c/deep.txt", "deep\n")
	write(t, dir, "a.b", "sorts before a/\n")
	write(t, dir, "a0", "sorts after a/\n")
	write(t, dir, "x", "a file that becomes a folder\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "shapes")
	first, _ := r.Head(ctx)
	gitT(t, dir, "rm", "-q", "x", "a/b/c/deep.txt")
	write(t, dir, "x/inside.txt", "now a folder\n")
	write(t, dir, "a/b/moved.txt", "deep\n")
	write(t, dir, "calc.go", "package calc\n\nfunc Add(a, b int) int { return b + a }\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "second")
	second, _ := r.Head(ctx)
	outside := t.TempDir()
	write(t, outside, "keep.txt", "not the slot's\n")

	cases := []struct {
		name   string
		commit string
		spoil  func(t *testing.T, s *Slot)
	}{
		{"nothing changed", first, func(t *testing.T, s *Slot) {}},
		{"another commit", second, func(t *testing.T, s *Slot) {}},
		{"a file edited, its size and time put back", first, func(t *testing.T, s *Slot) {
			p := filepath.Join(s.Dir, "calc.go")
			fi, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "a + b", "a - b", 1)), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}},
		{"files removed, added, ignored, a nested repository", second, func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "calc_test.go"))
			os.RemoveAll(filepath.Join(s.Dir, "a"))
			write(t, s.Dir, "new/deep/f.txt", "x")
			write(t, s.Dir, "debug.log", "ignored")
			if out, err := exec.Command("git", "init", "-q", filepath.Join(s.Dir, "nested")).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		}},
		{"executable bit flipped both ways", first, func(t *testing.T, s *Slot) {
			os.Chmod(filepath.Join(s.Dir, "bin/run.sh"), 0o644)
			os.Chmod(filepath.Join(s.Dir, "calc.go"), 0o755)
		}},
		{"links retargeted and replaced", first, func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "link.go"))
			os.Symlink("README.md", filepath.Join(s.Dir, "link.go"))
			os.Remove(filepath.Join(s.Dir, "dirlink"))
			write(t, s.Dir, "dirlink", "a file now\n")
		}},
		{"a folder replaced by a link to outside", first, func(t *testing.T, s *Slot) {
			os.RemoveAll(filepath.Join(s.Dir, "a"))
			os.Symlink(outside, filepath.Join(s.Dir, "a"))
		}},
		{"a file replaced by a link to outside", second, func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "README.md"))
			os.Symlink(filepath.Join(outside, "keep.txt"), filepath.Join(s.Dir, "README.md"))
		}},
		{"a folder where a file was", first, func(t *testing.T, s *Slot) {
			os.Remove(filepath.Join(s.Dir, "README.md"))
			write(t, s.Dir, "README.md/inner.txt", "a folder now\n")
		}},
		{"a file where a folder was", second, func(t *testing.T, s *Slot) {
			os.RemoveAll(filepath.Join(s.Dir, "vendor"))
			write(t, s.Dir, "vendor", "not a folder\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := first
			if tc.commit == first {
				from = second
			}
			ours := resetSlot(t, r, "ours", from)
			theirs := resetSlot(t, r, "theirs", from)
			// The slot as an earlier checkout left it, then as the agent left it.
			if ok, err := ours.checkout(ctx, tc.commit); err != nil || !ok {
				t.Fatalf("checkout to the commit: %v, %v", ok, err)
			}
			tc.spoil(t, ours)
			tc.spoil(t, theirs)
			if ok, err := ours.checkout(ctx, from); err != nil || !ok {
				t.Fatalf("checkout back: %v, %v", ok, err)
			}
			tc.spoil(t, ours)
			if ok, err := ours.checkout(ctx, tc.commit); err != nil || !ok {
				t.Fatalf("checkout: %v, %v", ok, err)
			}
			gitReset(t, theirs, tc.commit)
			if got, want := contents(t, ours.Dir), contents(t, theirs.Dir); !maps.Equal(got, want) {
				t.Errorf("checkout left\n%v\ngit left\n%v", got, want)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "keep.txt")); err != nil || string(b) != "not the slot's\n" {
				t.Errorf("outside the slot: %q, %v", b, err)
			}
			if st := slotGit(t, ours, "status", "--porcelain", "--ignored", "-uall"); st != "" {
				t.Errorf("git status after the checkout:\n%s", st)
			}
			if got, want := slotGit(t, ours, "ls-files", "-s"), lsTree(t, r, tc.commit); got != want {
				t.Errorf("index:\n%s\nthe commit:\n%s", got, want)
			}
			if err := ours.CheckCheckout(ctx, tc.commit); err != nil {
				t.Error(err)
			}
			// The cache of tree names: what git writes after an edit is what it writes
			// from a fresh index of the same files.
			write(t, ours.Dir, "a/b/edited.txt", "new\n")
			slotGit(t, ours, "add", "-A")
			got := slotGit(t, ours, "write-tree")
			if want := freshTree(t, ours, tc.commit); got != want {
				t.Errorf("tree after an edit: %s, from a fresh index %s", got, want)
			}
		})
	}
}

// gitReset resets the slot with git alone, as Reset did before the orchestrator's own
// checkout.
func gitReset(t *testing.T, s *Slot, commit string) {
	t.Helper()
	slotGit(t, s, "reset", "-q", "--hard", commit)
	slotGit(t, s, "clean", "-ffdxq", "-e", "/.git")
}

// lsTree lists commit's files as `git ls-files -s` lists an index of them.
func lsTree(t *testing.T, r *Repo, commit string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(gitT(t, r.Root, "ls-tree", "-r", commit), "\n") {
		meta, path, _ := strings.Cut(l, "\t")
		f := strings.Fields(meta)
		lines = append(lines, f[0]+" "+f[2]+" 0\t"+path)
	}
	return strings.Join(lines, "\n")
}

// TestCheckoutSeesRacyEdits: a file changed right after the checkout wrote it, to the same
// size, with its time put back, is in the same tick of the file system's clock as the
// index: the next checkout compares its bytes and puts the blob's back. So is one whose
// time an attacker set back an hour before the checkout kept it (its entry is then not
// racy by its modification time: only the change time tells).
func TestCheckoutSeesRacyEdits(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		rounds int
		back   bool // the file's time set an hour back before each checkout
	}{
		{"times as the checkout left them", 20, false},
		{"times set back an hour", 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := newGitRepo(t)
			head, _ := r.Head(ctx)
			s := resetSlot(t, r, "job-1", head)
			p := filepath.Join(s.Dir, "calc.go")
			old := time.Now().Add(-time.Hour)
			for i := range tc.rounds {
				if tc.back {
					os.Chtimes(p, old, old)
				}
				if ok, err := s.checkout(ctx, head); err != nil || !ok {
					t.Fatalf("checkout: %v, %v", ok, err)
				}
				fi, _ := os.Lstat(p)
				f, err := os.OpenFile(p, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteAt([]byte("P"), 0)
				f.Close()
				os.Chtimes(p, fi.ModTime(), fi.ModTime())
				if ok, err := s.checkout(ctx, head); err != nil || !ok {
					t.Fatalf("checkout: %v, %v", ok, err)
				}
				if got := read(t, s.Dir, "calc.go"); !strings.HasPrefix(got, "package") {
					t.Fatalf("round %d: the edit survived: %q", i, got)
				}
			}
		})
	}
}

// TestCheckoutLeavesToGit: what the orchestrator's checkout does not do itself, it leaves
// untouched to git (Reset then runs git's reset and clean, and the slot is still the
// commit's): attributes that change a checkout's bytes, a submodule, a folder where the
// commit has a file, an index it does not read, a person's attributes file.
func TestCheckoutLeavesToGit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string, r *Repo, s *Slot) string // returns the commit
	}{
		{"attributes in the tree", func(t *testing.T, dir string, r *Repo, s *Slot) string {
			write(t, dir, ".gitattributes", "*.txt eol=crlf\n")
			write(t, dir, "notes.txt", "one\ntwo\n")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "attributes")
			return gitT(t, dir, "rev-parse", "HEAD")
		}},
		{"a submodule", func(t *testing.T, dir string, r *Repo, s *Slot) string {
			head := gitT(t, dir, "rev-parse", "HEAD")
			gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
			gitT(t, dir, "commit", "-q", "-m", "submodule")
			return gitT(t, dir, "rev-parse", "HEAD")
		}},
		{"an index it does not read", func(t *testing.T, dir string, r *Repo, s *Slot) string {
			os.WriteFile(s.index, []byte("DIRC not an index"), 0o644)
			return gitT(t, dir, "rev-parse", "HEAD")
		}},
		{"the repository's attributes file", func(t *testing.T, dir string, r *Repo, s *Slot) string {
			write(t, r.Common, "info/attributes", "*.md ident\n")
			return gitT(t, dir, "rev-parse", "HEAD")
		}},
		{"a symlinks setting", func(t *testing.T, dir string, r *Repo, s *Slot) string {
			gitT(t, dir, "config", "core.symlinks", "false")
			return gitT(t, dir, "rev-parse", "HEAD")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, r := newGitRepo(t)
			head, _ := r.Head(ctx)
			s := resetSlot(t, r, "job-1", head)
			commit := tc.setup(t, dir, r, s)
			before := contents(t, s.Dir)
			if ok, err := s.checkout(ctx, commit); ok || err != nil {
				t.Fatalf("checkout: %v, %v; want it left to git", ok, err)
			}
			if after := contents(t, s.Dir); !maps.Equal(after, before) {
				t.Errorf("what it left to git, it changed:\n%v\nwas\n%v", after, before)
			}
			if err := s.Reset(ctx, commit); err != nil {
				t.Fatal(err)
			}
			theirs := resetSlot(t, r, "theirs", head)
			gitReset(t, theirs, commit)
			if got, want := contents(t, s.Dir), contents(t, theirs.Dir); !maps.Equal(got, want) {
				t.Errorf("Reset left\n%v\ngit left\n%v", got, want)
			}
		})
	}
}

// TestIndexRoundTrip: an index git wrote, in each version it writes, reads as `git
// ls-files --debug` lists it, and the index written from it is one git reads back the
// same; the cache of tree names comes through whole, invalid folders included.
func TestIndexRoundTrip(t *testing.T) {
	dir, r := newGitRepo(t)
	size, err := r.idSize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A name past the 12 bits of an entry's name length: in the index only (no file
	// system takes such a path).
	long := strings.Repeat("long-name/", 420) + "file.txt"
	blob := gitT(t, dir, "hash-object", "-w", "calc.go")
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+long)
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			gitT(t, dir, "update-index", "--index-version", version)
			gitT(t, dir, "write-tree")                // a whole cache
			write(t, dir, "vendor/dep/dep.go", "x\n") // one folder invalid
			gitT(t, dir, "add", "vendor")
			p := filepath.Join(r.Common, "index")
			idx, err := readIndex(p, size)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range idx.entries {
				got = append(got, fmt.Sprintf("%o %s 0\t%s", e.mode, e.id, e.path))
			}
			if want := gitT(t, dir, "ls-files", "-s"); strings.Join(got, "\n") != want {
				t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), want)
			}
			if idx.tree == nil || idx.tree.count != -1 {
				t.Fatalf("cache of tree names: %+v", idx.tree)
			}
			b, err := idx.encode(size)
			if err != nil {
				t.Fatal(err)
			}
			mine := filepath.Join(t.TempDir(), "index")
			os.WriteFile(mine, b, 0o644)
			cmd := exec.Command("git", "ls-files", "-s", "--debug")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+mine)
			ours, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, ours)
			}
			theirs := gitT(t, dir, "ls-files", "-s", "--debug")
			if strings.TrimSpace(string(ours)) != theirs {
				t.Errorf("git reads our index as\n%s\nand its own as\n%s", ours, theirs)
			}
			again, err := parseIndex(b, size)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(again.entries, idx.entries) {
				t.Error("the written index reads back differently")
			}
			if treeString(again.tree) != treeString(idx.tree) {
				t.Errorf("cache of tree names: %s, was %s", treeString(again.tree), treeString(idx.tree))
			}
		})
	}
}

func treeString(t *cacheTree) string {
	if t == nil {
		return "nil"
	}
	s := fmt.Sprintf("%q %d %s [", t.name, t.count, t.id)
	for _, sub := range t.subs {
		s += treeString(sub) + " "
	}
	return s + "]"
}

// FuzzParseIndex: no index file, however broken, makes the reader panic, and one it reads
// it writes back the same.
func FuzzParseIndex(f *testing.F) {
	dir := f.TempDir()
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.name", "t"}, {"config", "user.email", "t@t"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			f.Fatalf("%v: %s", err, out)
		}
	}
	os.MkdirAll(filepath.Join(dir, "d/e"), 0o755)
	os.WriteFile(filepath.Join(dir, "d/e/f"), []byte("f"), 0o644)
	os.WriteFile(filepath.Join(dir, "g"), []byte("g"), 0o644)
	for _, v := range []string{"2", "4"} {
		exec.Command("git", "-C", dir, "add", "-A").Run()
		exec.Command("git", "-C", dir, "update-index", "--index-version", v).Run()
		exec.Command("git", "-C", dir, "write-tree").Run()
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := parseIndex(b, 20)
		if err != nil {
			return
		}
		out, err := idx.encode(20)
		if err != nil {
			return // an entry's name the format cannot hold, say
		}
		again, err := parseIndex(out, 20)
		if err != nil {
			t.Fatalf("the index written does not read: %v", err)
		}
		if !slices.Equal(again.entries, idx.entries) || treeString(again.tree) != treeString(idx.tree) {
			t.Fatal("the index written reads back differently")
		}
	})
}
