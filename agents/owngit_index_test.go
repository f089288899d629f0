package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnGitIndex: the agent's own git folder made from the slot's index (OwnGit.Index)
// tells the truth about the worktree, as the one built from the base does: clean when the
// worktree is the base, the difference when it holds later work (a re-emit attempt's
// worktree holds the attempt before's candidate), and when the index is unusable (missing,
// not an index) the index is built from the base instead. An index said to be the base's
// (OwnGit.IndexIsBase: a worker's lane just reset to it) is taken as it is, and an agent's
// change to the worktree still shows.
func TestOwnGitIndex(t *testing.T) {
	root := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		// Trailing space only: git status --porcelain starts a line with one.
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(root, "init", "-q", "-b", "main")
	write("main.go", "package main\n")
	write("lib.go", "package main\n\nfunc f() {}\n")
	git(root, "add", "-A")
	git(root, "commit", "-q", "-m", "base")
	base := git(root, "rev-parse", "HEAD")
	write("main.go", "package main // later\n")
	write("new.go", "package main\n")
	git(root, "add", "-A")
	git(root, "commit", "-q", "-m", "later")
	later := git(root, "rev-parse", "HEAD")
	garbage := filepath.Join(t.TempDir(), "index")
	os.WriteFile(garbage, []byte("not an index"), 0o644)

	tests := []struct {
		name   string
		at     string // the commit the worktree and its index hold
		index  string
		isBase bool
		want   string
	}{
		{"slot index at the base", base, filepath.Join(root, ".git", "index"), false, ""},
		{"slot index said to be the base's", base, filepath.Join(root, ".git", "index"), true, ""},
		{"slot index at later work", later, filepath.Join(root, ".git", "index"), false, " M main.go\n?? new.go"},
		{"no index", base, "", false, ""},
		{"missing index", base, filepath.Join(root, "nothing"), false, ""},
		{"not an index", later, garbage, false, " M main.go\n?? new.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git(root, "checkout", "-q", "--detach", tt.at)
			git(root, "update-index", "-q", "--refresh")
			g := &OwnGit{Dir: filepath.Join(t.TempDir(), "agent-git"), Objects: filepath.Join(root, ".git", "objects"), Base: base, Index: tt.index, IndexIsBase: tt.isBase}
			if err := g.Make(root); err != nil {
				t.Fatal(err)
			}
			defer g.Remove()
			if got := git(root, "--git-dir="+g.Dir, "--work-tree="+root, "status", "--porcelain"); got != tt.want {
				t.Errorf("the agent's git status:\n%s\nwant:\n%s", got, tt.want)
			}
			if got := git(root, "--git-dir="+g.Dir, "rev-parse", "HEAD"); got != base {
				t.Errorf("the agent's HEAD is %s, want the base %s", got, base)
			}
			if tt.want == "" {
				// The agent's own change, seen by its git however its index was made.
				write("lib.go", "package main\n\nfunc f() { println() }\n")
				got := git(root, "--git-dir="+g.Dir, "--work-tree="+root, "status", "--porcelain")
				git(root, "checkout", "-q", "--", "lib.go")
				if got != " M lib.go" {
					t.Errorf("after the agent's change, its git status:\n%s\nwant:\n M lib.go", got)
				}
			}
		})
	}
	if b, _ := os.ReadFile(garbage); string(b) != "not an index" {
		t.Errorf("the slot's index was written: %q", b)
	}
}
