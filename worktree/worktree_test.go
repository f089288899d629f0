package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gitT runs git in dir for a test, failing it on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newGitRepo makes a repository on branch main with a few files in one commit; initArgs are
// more arguments of its `git init` (--object-format=sha256).
func newGitRepo(t *testing.T, initArgs ...string) (string, *Repo) {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, append([]string{"init", "-q", "-b", "main"}, initArgs...)...)
	write(t, dir, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	write(t, dir, "calc_test.go", "package calc\n")
	write(t, dir, "README.md", "calc\n")
	write(t, dir, "vendor/dep/dep.go", "package dep\n")
	write(t, dir, "a/target/keep.txt", "kept\n")
	write(t, dir, ".gitignore", "*.log\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "start")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	plain := t.TempDir()
	if _, err := Open(ctx, plain); !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "git -C "+plain+" init") {
		t.Errorf("outside a repository: %v", err)
	}
	empty := t.TempDir()
	gitT(t, empty, "init", "-q", "-b", "main")
	if _, err := Open(ctx, empty); !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "has no commit yet") {
		t.Errorf("no commit: %v", err)
	}
	dir, _ := newGitRepo(t)
	gitT(t, dir, "checkout", "-q", "--detach")
	if _, err := Open(ctx, dir); !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "switch -c") {
		t.Errorf("detached: %v", err)
	}
	gitT(t, dir, "switch", "-q", "main")
	r, err := Open(ctx, filepath.Join(dir, "vendor"))
	if err != nil || r.Branch != "main" || r.Root != dir {
		t.Errorf("Open from a subfolder: %+v, %v", r, err)
	}
}

// TestCandidateSeesEveryChange: what an agent does in its slot, git sees: additions,
// edits, a same-size edit with its time put back, deletions, renames, a symlink, a mode
// change, files under vendor/ and target/ at any depth; ignored files are not part of it.
func TestCandidateSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	if got := read(t, s.Dir, "calc.go"); !strings.Contains(got, "func Add") {
		t.Fatalf("slot not checked out: %q", got)
	}
	// The agent's work.
	info, _ := os.Stat(filepath.Join(s.Dir, "calc.go"))
	sameSize := strings.Replace(read(t, s.Dir, "calc.go"), "a + b", "a - b", 1)
	write(t, s.Dir, "calc.go", sameSize)
	os.Chtimes(filepath.Join(s.Dir, "calc.go"), info.ModTime(), info.ModTime())
	write(t, s.Dir, "mul.go", "package calc\n\nfunc Mul(a, b int) int { return a * b }\n")
	os.Remove(filepath.Join(s.Dir, "calc_test.go"))
	os.Rename(filepath.Join(s.Dir, "README.md"), filepath.Join(s.Dir, "README.txt"))
	os.Symlink("calc.go", filepath.Join(s.Dir, "link.go"))
	write(t, s.Dir, "vendor/dep/dep.go", "package dep // changed\n")
	write(t, s.Dir, "a/target/keep.txt", "changed\n")
	write(t, s.Dir, "run.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(s.Dir, "run.sh"), 0o755)
	write(t, s.Dir, "debug.log", "ignored\n")

	cand, err := s.Commit(ctx, head, "refs/orchestrator/attempts/TASK-001/1", "TASK-001 attempt 1")
	if err != nil {
		t.Fatal(err)
	}
	if cand == head {
		t.Fatal("no candidate commit")
	}
	if got := r.Ref(ctx, "refs/orchestrator/attempts/TASK-001/1"); got != cand {
		t.Errorf("ref %q, want %q", got, cand)
	}
	changes, err := r.Diff(ctx, head, cand)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range changes {
		got[c.Path] = c.Status + " " + c.NewMode
	}
	want := map[string]string{
		"calc.go": "M 100644", "mul.go": "A 100644", "calc_test.go": "D 000000", "README.txt": "R 100644",
		"link.go": "A 120000", "vendor/dep/dep.go": "M 100644", "a/target/keep.txt": "M 100644", "run.sh": "A 100755",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	if _, ok := got["debug.log"]; ok || len(got) != len(want) {
		t.Errorf("changes %v, want exactly %v", got, want)
	}
	if paths := Paths(changes); !slices.Contains(paths, "README.md") {
		t.Errorf("Paths %v lacks the rename's old path", paths)
	}

	// Nothing changed: the candidate is the base itself.
	if err := s.Reset(ctx, head); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Commit(ctx, head, "", "x"); err != nil || c != head {
		t.Errorf("empty change: %s, %v; want the base", c, err)
	}
}

// TestResetIsPristine: Reset undoes whatever the agent did, even when it spoiled the
// slot's own index and .git file and put a file's time back.
func TestResetIsPristine(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	p := filepath.Join(s.Dir, "calc.go")
	info, _ := os.Stat(p)
	time.Sleep(10 * time.Millisecond)
	write(t, s.Dir, "calc.go", strings.Replace(read(t, s.Dir, "calc.go"), "a + b", "a - b", 1))
	os.Chtimes(p, info.ModTime(), info.ModTime())
	// The agent refreshes the slot's index so that git would think calc.go unchanged, and
	// points the .git file elsewhere.
	gitT(t, s.Dir, "add", "calc.go")
	gitT(t, s.Dir, "update-index", "--refresh")
	write(t, s.Dir, "stray.go", "package calc\n")
	write(t, s.Dir, "build/out.bin", "x")
	write(t, s.Dir, "debug.log", "x")
	os.Remove(filepath.Join(s.Dir, "calc_test.go"))
	write(t, s.Dir, ".git", "gitdir: /nonexistent\n")

	// The next attempt starts from head again.
	s2, err := r.Slot(ctx, "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Reset(ctx, head); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s.Dir, "calc.go"); !strings.Contains(got, "a + b") {
		t.Errorf("calc.go not restored: %q", got)
	}
	for _, gone := range []string{"stray.go", "build", "debug.log"} {
		if _, err := os.Stat(filepath.Join(s.Dir, gone)); err == nil {
			t.Errorf("%s survived the reset", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "calc_test.go")); err != nil {
		t.Errorf("calc_test.go not restored: %v", err)
	}
	if st := gitT(t, s.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("git status in the slot after reset:\n%s", st)
	}
}

func TestRemoveSlots(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	for _, name := range []string{"job-1", "job-2", "gate"} {
		if _, err := r.Slot(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	// A slot whose folder a crash left half made.
	os.RemoveAll(filepath.Join(r.slotsDir(), "job-2"))
	if err := r.RemoveSlots(ctx); err != nil {
		t.Fatal(err)
	}
	if list := gitT(t, dir, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
}

// commitIn makes a candidate in a slot from files, on base.
func commitIn(t *testing.T, r *Repo, slot, base string, files map[string]string) string {
	t.Helper()
	ctx := context.Background()
	s, err := r.Slot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, base); err != nil {
		t.Fatal(err)
	}
	for p, text := range files {
		write(t, s.Dir, p, text)
	}
	c, err := s.Commit(ctx, base, "", "candidate")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLand: a landing is one commit on the branch; the person's tree follows and keeps
// their uncommitted changes; one that would overwrite them lands nothing and names them.
func TestLand(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	write(t, dir, "README.md", "calc, the person's edit\n") // uncommitted, not touched by the landing
	cand := commitIn(t, r, "job-1", head, map[string]string{"mul.go": "package calc\n"})
	msg := "TASK-001: Mul\n\nOrchestrator-Task: TASK-001\nOrchestrator-Attempt: 2\nOrchestrator-Gate: GREEN 1 passed, 0 failed\n"
	landed, err := r.Land(ctx, cand, msg)
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != landed {
		t.Errorf("HEAD %s, want the landed %s", got, landed)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD^"); got != head {
		t.Errorf("landed commit's parent %s, want %s", got, head)
	}
	if read(t, dir, "mul.go") != "package calc\n" || read(t, dir, "README.md") != "calc, the person's edit\n" {
		t.Error("the person's tree did not follow, or lost their edit")
	}
	if got := r.Landed(ctx, "TASK-001", 2); got != landed {
		t.Errorf("Landed = %q, want %q", got, landed)
	}
	if got := r.Landed(ctx, "TASK-001", 1); got != "" {
		t.Errorf("Landed(attempt 1) = %q, want none", got)
	}

	// A candidate based on the old head: moved.
	old := commitIn(t, r, "job-2", head, map[string]string{"sub.go": "package calc\n"})
	if _, err := r.Land(ctx, old, "x"); !errors.Is(err, ErrMoved) {
		t.Fatalf("stale candidate: %v, want ErrMoved", err)
	}
	rebased, err := r.Rebase(ctx, old, landed, "TASK-002")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Land(ctx, rebased, "TASK-002: Sub\n"); err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "sub.go") != "package calc\n" || read(t, dir, "mul.go") != "package calc\n" {
		t.Error("both landings should be in the tree")
	}

	// The person's uncommitted edit of a file the candidate changes: nothing lands.
	now, _ := r.Head(ctx)
	write(t, dir, "calc.go", "package calc // the person's\n")
	clash := commitIn(t, r, "job-1", now, map[string]string{"calc.go": "package calc // the agent's\n"})
	_, err = r.Land(ctx, clash, "TASK-003\n")
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Paths, []string{"calc.go"}) {
		t.Fatalf("landing over an uncommitted edit: %v, want a conflict naming calc.go", err)
	}
	if after, _ := r.Head(ctx); after != now || read(t, dir, "calc.go") != "package calc // the person's\n" {
		t.Error("a refused landing changed the branch or the person's file")
	}
}

// TestRebaseConflict: two candidates that change the same lines of one file cannot both
// land; the second's rebase names the file.
func TestRebaseConflict(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	a := commitIn(t, r, "job-1", head, map[string]string{"calc.go": "package calc // a\n"})
	b := commitIn(t, r, "job-2", head, map[string]string{"calc.go": "package calc // b\n"})
	landed, err := r.Land(ctx, a, "A\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Rebase(ctx, b, landed, "B\n")
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Paths, []string{"calc.go"}) {
		t.Fatalf("rebase: %v, want a conflict naming calc.go", err)
	}
}

// TestLandOtherBranch: when the person switched to another branch, only the integration
// branch moves.
func TestLandOtherBranch(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	gitT(t, dir, "switch", "-q", "-c", "experiment")
	cand := commitIn(t, r, "job-1", head, map[string]string{"mul.go": "package calc\n"})
	landed, err := r.Land(ctx, cand, "TASK-001\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "rev-parse", "main"); got != landed {
		t.Errorf("main at %s, want %s", got, landed)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("the person's branch moved")
	}
	if _, err := os.Stat(filepath.Join(dir, "mul.go")); err == nil {
		t.Error("the landing reached a tree on another branch")
	}
}

// TestSlotsParkedBetweenRuns: at the end of a run a slot leaves git's worktrees but its
// files are parked, and the next run's slot of the same name starts from them: the files
// the commit holds as they were are not written again (same inode), while whatever the last
// agent left (an edit, a stray file, a link out of the slot, a spoilt .git file) is undone
// as between two attempts.
func TestSlotsParkedBetweenRuns(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	inode := func(rel string) uint64 {
		t.Helper()
		fi, err := os.Stat(filepath.Join(s.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	before := inode("vendor/dep/dep.go")
	// The last agent's leftovers.
	write(t, s.Dir, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a * b }\n")
	write(t, s.Dir, "stray.txt", "x")
	outside := filepath.Join(t.TempDir(), "outside.txt")
	write(t, filepath.Dir(outside), "outside.txt", "not the slot's\n")
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(s.Dir, "out")); err != nil {
		t.Fatal(err)
	}
	write(t, s.Dir, ".git", "gitdir: /nonexistent\n")

	if err := r.RemoveSlots(ctx); err != nil {
		t.Fatal(err)
	}
	if list := gitT(t, dir, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
	if _, err := os.Stat(filepath.Join(r.parkedDir(), "job-1", "vendor", "dep", "dep.go")); err != nil {
		t.Fatalf("the slot's files were not parked: %v", err)
	}

	s = resetSlot(t, r, "job-1", head)
	if after := inode("vendor/dep/dep.go"); after != before {
		t.Errorf("an unchanged file was written again (inode %d, was %d)", after, before)
	}
	if got := read(t, s.Dir, "calc.go"); !strings.Contains(got, "a + b") {
		t.Errorf("calc.go not restored: %q", got)
	}
	for _, gone := range []string{"stray.txt", "out"} {
		if _, err := os.Lstat(filepath.Join(s.Dir, gone)); err == nil {
			t.Errorf("%s survived the reset", gone)
		}
	}
	if got := read(t, filepath.Dir(outside), "outside.txt"); got != "not the slot's\n" {
		t.Errorf("the file the link named: %q", got)
	}
	if st := gitT(t, s.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("git status in the slot:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(r.parkedDir(), "job-1")); err == nil {
		t.Error("the parked files are still parked")
	}
}

// resetSlot returns the slot called name, reset to commit.
func resetSlot(t *testing.T, r *Repo, name, commit string) *Slot {
	t.Helper()
	s, err := r.Slot(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(context.Background(), commit); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNamedSlotTouchesNothing: the desk of an attempt whose agent works on a worker is a
// slot by name alone: no worktree is made, git lists none, and each method that would
// read or write one fails rather than run git on what is not there.
func TestNamedSlotTouchesNothing(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head := gitT(t, dir, "rev-parse", "HEAD")
	s := r.NamedSlot("job-1")
	if s.Name != "job-1" || s.Dir == "" {
		t.Fatalf("named slot %+v", s)
	}
	for name, err := range map[string]error{
		"Reset":         s.Reset(ctx, head),
		"CheckCheckout": s.CheckCheckout(ctx, head),
		"Commit":        func() error { _, err := s.Commit(ctx, head, "", "x"); return err }(),
		"Untracked":     func() error { _, err := s.Untracked(ctx, head, "."); return err }(),
	} {
		if !errors.Is(err, ErrNoWorktree) {
			t.Errorf("%s: %v, want ErrNoWorktree", name, err)
		}
	}
	if _, err := os.Lstat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the named slot's folder %s: %v, want none", s.Dir, err)
	}
	if list := gitT(t, dir, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("git lists worktrees beside the repository's own:\n%s", list)
	}
	if r.HasSlot("job-1") {
		t.Error("HasSlot says the named slot exists")
	}
}
