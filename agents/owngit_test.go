package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxOwnGit: inside the sandbox the repository's git folder is hidden, yet the
// agent's git works in its worktree, on a git folder of its own that borrows the
// repository's objects: status starts clean, diff shows its edit, add, commit, stash,
// checkout and log work. None of it reaches the repository: no new commit, ref, object or
// index there, its worktree's .git file untouched, and the agent's git folder is gone
// after the run. Without the own git folder (the twin), git in the same sandbox finds no
// repository at all.
func TestSandboxOwnGit(t *testing.T) {
	requireBwrap(t)
	base := outsideTmp(t)
	root := filepath.Join(base, "repo")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644)
	git(root, "init", "-q", "-b", "main")
	git(root, "add", "main.go")
	git(root, "commit", "-q", "-m", "first")
	head := git(root, "rev-parse", "HEAD")
	wt := filepath.Join(base, "slots", "job-1")
	git(root, "worktree", "add", "-q", "--detach", wt)
	gitFile, _ := os.ReadFile(filepath.Join(wt, ".git"))
	before := git(root, "for-each-ref") + git(root, "count-objects", "-v")
	runs := filepath.Join(root, ".git", "orchestrator", "runs", "TASK-1", "1")
	e := env{root: wt, markerDir: filepath.Join(runs, "complete"), attemptDir: runs}
	for _, d := range []string{e.markerDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := `set -e
echo "status:[$(git status --porcelain)]"
echo 'package main // edited' > main.go
git diff --stat | tail -1
git add main.go && git commit -q -m "the agent's own commit" && echo committed
echo wip > wip.txt && git add wip.txt && git stash -q && echo stashed && git stash list | wc -l
git checkout -q HEAD~1 -- main.go && git checkout -q HEAD -- main.go && echo checked-out
git log --format=%s | tr '\n' '|'
echo
echo 'package main // the work' > main.go
`
	own := &OwnGit{Dir: filepath.Join(runs, "agent-git"), Objects: filepath.Join(root, ".git", "objects"), Base: head}
	for _, withGit := range []bool{true, false} {
		sb := Sandbox{Dir: wt, Hide: []string{root, filepath.Join(base, "slots")}}
		if withGit {
			sb.Git = own
		}
		p := startSandboxed(t, e, sb, []string{"sh", "-c", script})
		waitDone(t, p)
		out := p.Stdout()
		if !withGit {
			if strings.Contains(out, "committed") || !strings.Contains(out, "not a git repository") {
				t.Errorf("without its own git folder, git worked in the sandbox: the twin shows nothing\n%s", out)
			}
			continue
		}
		if p.ExitCode() != 0 {
			t.Fatalf("the agent's git failed (exit %d):\n%s", p.ExitCode(), out)
		}
		for _, want := range []string{"status:[]", "1 file changed", "committed", "stashed\n1", "checked-out", "the agent's own commit|first|"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in the agent's output:\n%s", want, out)
			}
		}
		if after := git(root, "for-each-ref") + git(root, "count-objects", "-v"); after != before {
			t.Errorf("the agent's git wrote the repository:\nbefore %s\nafter  %s", before, after)
		}
		if b, _ := os.ReadFile(filepath.Join(wt, ".git")); string(b) != string(gitFile) {
			t.Errorf("the worktree's .git file is now %q, was %q", b, gitFile)
		}
		if _, err := os.Stat(own.Dir); err == nil {
			t.Error("the agent's git folder outlived the agent")
		}
		if got := git(wt, "status", "--porcelain"); got != "M main.go" {
			t.Errorf("the worktree as the orchestrator sees it: %q, want main.go changed", got)
		}
		if b, _ := os.ReadFile(filepath.Join(wt, "main.go")); string(b) != "package main // the work\n" {
			t.Errorf("the work in the worktree: %q", b)
		}
		git(wt, "checkout", "-q", "--", "main.go")
	}
}
