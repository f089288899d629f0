package worktree

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWriteTreeAsGitDoes: the orchestrator's tree of an index is git's, whatever the index
// holds and however much of its cache of tree names is still valid: a fresh index with no
// cache, one whose cache a few edits invalidated, new and removed folders, executable
// files, links and a submodule; and the objects it wrote are ones git reads and fsck
// accepts.
func TestWriteTreeAsGitDoes(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	rng := rand.New(rand.NewSource(1))
	names := []string{"a", "a.b", "a0", "b", "c-d", "z"}
	randPath := func() string {
		var parts []string
		for range 1 + rng.Intn(4) {
			parts = append(parts, names[rng.Intn(len(names))])
		}
		return strings.Join(parts, "/") + ".txt"
	}
	head, _ := r.Head(ctx)
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	index := filepath.Join(r.Common, "index")
	for round := range 12 {
		for range 1 + rng.Intn(6) {
			p := randPath()
			switch rng.Intn(4) {
			case 0:
				os.Remove(filepath.Join(dir, p))
			case 1:
				write(t, dir, p, fmt.Sprint(round, p))
				os.Chmod(filepath.Join(dir, p), 0o755)
			case 2:
				os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
				os.Symlink("target", filepath.Join(dir, p+".link"))
			default:
				write(t, dir, p, fmt.Sprint(round, p))
			}
		}
		// Folders where files were and back: git add -A sorts them out, or refuses.
		if out, err := exec.Command("git", "-C", dir, "add", "-A").CombinedOutput(); err != nil {
			t.Logf("git add: %v: %s", err, out)
			continue
		}
		if round%3 == 0 {
			// A fresh index of the same entries, without any cache.
			gitT(t, dir, "read-tree", "--empty")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
		}
		got, ok, err := r.writeTree(ctx, dir, index, nil)
		if err != nil || !ok {
			t.Fatalf("round %d: writeTree: %v, %v", round, ok, err)
		}
		copyIndex := filepath.Join(t.TempDir(), "index")
		b, _ := os.ReadFile(index)
		os.WriteFile(copyIndex, b, 0o644)
		cmd := exec.Command("git", "write-tree")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+copyIndex)
		want, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got != strings.TrimSpace(string(want)) {
			t.Fatalf("round %d: tree %s, git writes %s", round, got, want)
		}
		if round%2 == 0 {
			gitT(t, dir, "write-tree") // the cache whole again, for the next edits
		}
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--no-dangling", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

// TestWriteTreeLeavesToGit: an index with a conflict, or one marked intent-to-add, is
// left to git.
func TestWriteTreeLeavesToGit(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	index := filepath.Join(r.Common, "index")
	write(t, dir, "later.txt", "x\n")
	gitT(t, dir, "add", "-N", "later.txt")
	if _, ok, err := r.writeTree(ctx, dir, index, nil); ok || err != nil {
		t.Errorf("intent-to-add: %v, %v; want it left to git", ok, err)
	}
	gitT(t, dir, "reset", "-q")
	blob := gitT(t, dir, "hash-object", "-w", "calc.go")
	cmd := exec.Command("git", "update-index", "--index-info")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("100644 " + blob + " 1\tcalc.go\n100644 " + blob + " 2\tcalc.go\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok, err := r.writeTree(ctx, dir, index, nil); ok || err != nil {
		t.Errorf("a conflict: %v, %v; want it left to git", ok, err)
	}
}

// TestWriteCommitAsGitDoes: the commit the orchestrator writes is, byte for byte, the one
// `git commit-tree` makes of the same tree, parent, message and time, with the identity
// git would use (the orchestrator's own without one configured, the configuration's, an
// author's or committer's own setting, the environment's); and where git would decide
// something it does not (signing, an encoding, dates from the environment, a name git
// cleans up, a parent by name), it leaves the commit to git.
func TestWriteCommitAsGitDoes(t *testing.T) {
	ctx := context.Background()
	dir, _ := newGitRepo(t)
	open := func(t *testing.T) *Repo {
		r, err := Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	r := open(t)
	head, _ := r.Head(ctx)
	tree, _ := r.Tree(ctx, head)
	now := time.Unix(1795800000, 0)
	gitCommit := func(t *testing.T, r *Repo, message string) string {
		t.Helper()
		at := fmt.Sprintf("@%d %s", now.Unix(), now.Format("-0700"))
		out, err := run(ctx, r.Root, append(slices.Clone(r.identity), "GIT_AUTHOR_DATE="+at, "GIT_COMMITTER_DATE="+at), []byte(message), "commit-tree", tree, "-p", head, "-F", "-")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"the orchestrator's identity", func(t *testing.T) {}},
		{"the configuration's", func(t *testing.T) {
			gitT(t, dir, "config", "user.name", "Ada Lovelace")
			gitT(t, dir, "config", "user.email", "ada@example.com")
		}},
		{"an author's own setting", func(t *testing.T) {
			gitT(t, dir, "config", "author.name", "Grace Hopper")
		}},
		{"the environment's", func(t *testing.T) {
			t.Setenv("GIT_COMMITTER_NAME", "Edsger Dijkstra")
			t.Setenv("GIT_COMMITTER_EMAIL", "ewd@example.com")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			r := open(t)
			for _, message := range []string{"one line\n", "no newline", "subject\n\nbody\n\nOrchestrator-Task: TASK-001\n", "ünïcode ✓\n", ""} {
				got, ok, err := r.writeCommit(ctx, tree, head, message, now)
				if err != nil || !ok {
					t.Fatalf("writeCommit: %v, %v", ok, err)
				}
				if want := gitCommit(t, r, message); got != want {
					t.Errorf("%q: commit %s, git makes %s:\n%s\ngit's:\n%s", message, got, want,
						gitT(t, dir, "cat-file", "-p", got), gitT(t, dir, "cat-file", "-p", want))
				}
			}
		})
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--no-dangling", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T)
		parent string
	}{
		{"signing", func(t *testing.T) { gitT(t, dir, "config", "commit.gpgSign", "true") }, head},
		{"an encoding", func(t *testing.T) { gitT(t, dir, "config", "i18n.commitEncoding", "ISO-8859-1") }, head},
		{"dates from the environment", func(t *testing.T) { t.Setenv("GIT_AUTHOR_DATE", "@1 +0000") }, head},
		{"a name git cleans up", func(t *testing.T) { gitT(t, dir, "config", "user.name", "Ada L.") }, head},
		{"a parent by name", func(t *testing.T) {}, "refs/heads/main"},
	} {
		t.Run("left to git: "+tc.name, func(t *testing.T) {
			tc.setup(t)
			t.Cleanup(func() {
				exec.Command("git", "-C", dir, "config", "--unset", "commit.gpgSign").Run()
				exec.Command("git", "-C", dir, "config", "--unset", "i18n.commitEncoding").Run()
				gitT(t, dir, "config", "user.name", "Ada Lovelace")
			})
			if _, ok, err := open(t).writeCommit(ctx, tree, tc.parent, "x\n", now); ok || err != nil {
				t.Errorf("writeCommit: %v, %v; want it left to git", ok, err)
			}
		})
	}
}
