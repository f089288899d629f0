package worktree

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDiffAgreesWithGit: Diff, read without a git process where no rename can be, lists
// what `git diff-tree -r -M --raw` lists, in its order, for every kind of change an agent
// can make, the ones a walk of blob names alone would miss first: a file that becomes a
// symbolic link to its own bytes (the same blob), a mode changed and nothing else, a file
// that becomes a folder of the same name. Where a rename may be (a path added and another
// deleted), or a submodule changes, git answers. Trees written byte by byte, as a worker may
// send them, agree too: a file and an empty folder of one name swapped, modes git reads as
// their canonical ones, a file and a folder of one name side by side; entries out of order
// or twice are git's to read. Every row runs in a SHA-1 and a SHA-256 repository.
func TestDiffAgreesWithGit(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, dir string)
		// inProcess says that the walk answers without git.
		inProcess bool
		// craft, when set, makes the two commits itself, from trees written byte by byte
		// (edit is then nil): trees no git command writes, as a worker may send.
		craft func(t *testing.T, dir string) (base, head string)
	}{
		{"cheat: a file becomes a symbolic link to its own bytes", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "target"))
			if err := os.Symlink("x", filepath.Join(dir, "target")); err != nil {
				t.Fatal(err)
			}
		}, true, nil},
		{"cheat: the execute bit alone", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true, nil},
		{"cheat: a file becomes a folder of the same name", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "a.txt"))
			write(t, dir, "a.txt/inner", "one\n")
		}, false, nil},
		{"cheat: a folder becomes a file of the same name", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "d"))
			write(t, dir, "d", "now a file\n")
		}, false, nil},
		{"honest: an edit", func(t *testing.T, dir string) {
			write(t, dir, "d/e/deep.txt", "deeper\n")
		}, true, nil},
		{"honest: files added, in git's order around names that sort by their slash", func(t *testing.T, dir string) {
			write(t, dir, "d.txt", "beside the folder\n")
			write(t, dir, "d/e.go", "inside\n")
			write(t, dir, "d-e", "dash\n")
			write(t, dir, "new/folder/file", "new\n")
		}, true, nil},
		{"honest: a whole folder deleted", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "d"))
		}, true, nil},
		{"honest: nothing", func(t *testing.T, dir string) {}, true, nil},
		{"git's: a rename", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "long.txt"), filepath.Join(dir, "moved.txt"))
		}, false, nil},
		{"git's: a submodule added", func(t *testing.T, dir string) {
			gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+gitT(t, dir, "rev-parse", "HEAD")+",sub")
		}, false, nil},
		{"honest: names around the slash and beyond ASCII, every one edited", func(t *testing.T, dir string) {
			for _, name := range []string{"a-b", "a.go", "a/b", "a0", "a!", "a\x01", "a\x7f", "a\xc3\xa9", "a b", "a\tb", "a\nb", "A"} {
				write(t, dir, name, "edited\n")
			}
		}, true, nil},
		{"crafted: a file becomes an empty folder of the same name", nil, true, func(t *testing.T, dir string) (string, string) {
			x := blobT(t, dir, "x\n")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x, "100644 b", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "40000 a", emptyTreeT(t, dir), "100644 b", x))
		}},
		{"crafted: an empty folder becomes a file of the same name", nil, true, func(t *testing.T, dir string) (string, string) {
			x := blobT(t, dir, "x\n")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "40000 a", emptyTreeT(t, dir), "100644 b", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x, "100644 b", x))
		}},
		{"crafted: a file and a folder of one name side by side", nil, true, func(t *testing.T, dir string) (string, string) {
			x, y := blobT(t, dir, "x\n"), blobT(t, dir, "y\n")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", y, "100644 a-b", x, "40000 a", rawTreeT(t, dir, "100644 f", x)))
		}},
		{"crafted: a symbolic link's mode alone", nil, true, func(t *testing.T, dir string) (string, string) {
			x := blobT(t, dir, "x")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "120000 l", x, "100644 m", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "120755 l", x, "100664 m", x))
		}},
		{"crafted: modes git canonicalizes, the execute bit among them", nil, true, func(t *testing.T, dir string) (string, string) {
			x := blobT(t, dir, "x")
			sub := rawTreeT(t, dir, "100644 f", x)
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x, "100664 b", x, "40000 d", sub)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "100744 a", x, "100600 b", x, "40755 d", sub))
		}},
		{"crafted: a file whose mode has no type, a submodule to git", nil, false, func(t *testing.T, dir string) (string, string) {
			x := blobT(t, dir, "x")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "644 a", x))
		}},
		{"crafted: entries out of order", nil, false, func(t *testing.T, dir string) (string, string) {
			x, y := blobT(t, dir, "x\n"), blobT(t, dir, "y\n")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x, "100644 b", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 b", y, "100644 a", x))
		}},
		{"crafted: an entry twice", nil, false, func(t *testing.T, dir string) (string, string) {
			x, y := blobT(t, dir, "x\n"), blobT(t, dir, "y\n")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x, "100644 b", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x, "100644 b", x, "100644 b", y))
		}},
		{"crafted: a folder and a file of one name, the folder first", nil, false, func(t *testing.T, dir string) (string, string) {
			x, y := blobT(t, dir, "x\n"), blobT(t, dir, "y\n")
			return commitTreeT(t, dir, "", rawTreeT(t, dir, "100644 a", x)),
				commitTreeT(t, dir, "", rawTreeT(t, dir, "40000 a", rawTreeT(t, dir, "100644 f", x), "100644 a", y))
		}},
	}
	for _, format := range []string{"sha1", "sha256"} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				diffAgrees(t, format, tt.name, tt.edit, tt.craft, tt.inProcess)
			})
		}
	}
}

// diffAgrees makes a repository of format, and two commits: the base below and what edit
// makes of it, or craft's; and compares Diff with git's list.
func diffAgrees(t *testing.T, format, name string, edit func(*testing.T, string), craft func(*testing.T, string) (string, string), inProcess bool) {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main", "--object-format="+format)
	write(t, dir, "a.txt", "one\n")
	write(t, dir, "target", "x")
	write(t, dir, "d/e/deep.txt", "deep\n")
	write(t, dir, "d/f.txt", "f\n")
	write(t, dir, "long.txt", "a file that only moves, long enough to be found as a rename\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "base")
	base := gitT(t, dir, "rev-parse", "HEAD")
	var head string
	if craft != nil {
		base, head = craft(t, dir)
	} else {
		edit(t, dir)
		if name != "git's: a submodule added" {
			gitT(t, dir, "add", "-A")
		}
		gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "change")
		head = gitT(t, dir, "rev-parse", "HEAD")
	}
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
	if _, ok, err := r.treeDiff(ctx, base, head); err != nil || ok != inProcess {
		t.Errorf("answered without git: %v (%v), want %v", ok, err, inProcess)
	}
}

// blobT writes a blob of text to the repository at dir.
func blobT(t *testing.T, dir, text string) string {
	t.Helper()
	return hashObjectT(t, dir, "blob", []byte(text))
}

// emptyTreeT writes the empty tree.
func emptyTreeT(t *testing.T, dir string) string {
	t.Helper()
	return hashObjectT(t, dir, "tree", nil)
}

// rawTreeT writes a tree object byte by byte, its entries in the order given: each a
// "mode name" and an object, as no git command that writes trees would.
func rawTreeT(t *testing.T, dir string, entries ...string) string {
	t.Helper()
	var body []byte
	for i := 0; i+1 < len(entries); i += 2 {
		id, err := hex.DecodeString(entries[i+1])
		if err != nil {
			t.Fatal(err)
		}
		body = append(append(body, entries[i]+"\x00"...), id...)
	}
	return hashObjectT(t, dir, "tree", body)
}

func hashObjectT(t *testing.T, dir, kind string, body []byte) string {
	t.Helper()
	c := exec.Command("git", "hash-object", "-w", "-t", kind, "--literally", "--stdin")
	c.Dir, c.Stdin = dir, bytes.NewReader(body)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("git hash-object: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// commitTreeT makes a commit of tree, on parent ("" for none).
func commitTreeT(t *testing.T, dir, parent, tree string) string {
	t.Helper()
	args := []string{"commit-tree", tree, "-m", "crafted"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return gitT(t, dir, args...)
}
