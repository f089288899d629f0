package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/seal"
)

// TestVerifiedMarkSealed: a mark MarkVerified wrote verifies; one written by anyone else
// (a forged mark, an edited one, one copied from another task, or one of before seals) is
// not evidence and is named.
func TestVerifiedMarkSealed(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	if err := r.MarkVerified("TASK-001", head); err != nil {
		t.Fatal(err)
	}
	if !r.IsVerified("TASK-001", head) {
		t.Fatal("honest mark: not verified")
	}
	if r.IsVerified("TASK-001", "0123456789abcdef0123456789abcdef01234567") {
		t.Error("verified at another commit")
	}
	if errs := r.EditedMarks(nil); len(errs) != 0 {
		t.Errorf("honest mark reported edited: %v", errs)
	}
	dir := filepath.Join(r.State(), "verified")
	good, _ := os.ReadFile(filepath.Join(dir, "TASK-001"))
	tests := []struct {
		name, task, body string
		want             error
	}{
		{name: "forged without a seal", task: "TASK-002", body: head + "\n", want: seal.ErrUnsealed},
		{name: "forged seal", task: "TASK-002", body: head + "\nseal: " + strings.Repeat("ab", 32) + "\n", want: seal.ErrBroken},
		{name: "copied from another task", task: "TASK-003", body: string(good), want: seal.ErrBroken},
		{name: "commit edited", task: "TASK-004", body: strings.Replace(string(good), head[:4], "ffff", 1), want: seal.ErrBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.task)
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			commit, _, _ := strings.Cut(tt.body, "\n")
			ok, err := r.Verified(tt.task, commit)
			var ee *seal.EditedError
			if ok || !errors.As(err, &ee) || ee.Record != path || !errors.Is(err, tt.want) {
				t.Errorf("Verified = %v, %v; want false, %v naming %s", ok, err, tt.want, path)
			}
			if r.IsVerified(tt.task, commit) {
				t.Error("IsVerified says yes")
			}
			if errs := r.EditedMarks(nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), path) {
				t.Errorf("EditedMarks = %v, want the one naming %s", errs, path)
			}
		})
	}
}

// TestLandingSealed: a commit whose trailers claim a landing but that the orchestrator did
// not seal (made with git by anyone, or a landing whose trailers were rewritten) is not a
// landing; the orchestrator's own is.
func TestLandingSealed(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	cand := commitIn(t, r, "job-1", head, map[string]string{"mul.go": "package calc\n"})
	landed, err := r.Land(ctx, cand, "TASK-001: Mul\n\nOrchestrator-Task: TASK-001\nOrchestrator-Attempt: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.LastLanding(ctx, "TASK-001"); got != landed {
		t.Fatalf("LastLanding = %q, want the sealed landing %s", got, landed)
	}
	// An audit now: the commits made below by others are audited again, not taken from it.
	if errs := r.EditedLandings(ctx); len(errs) != 0 {
		t.Fatalf("EditedLandings = %v, want none", errs)
	}
	// A forged landing of TASK-002, and a copy of the real one's message on another tree.
	write(t, dir, "forged.go", "package calc\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "TASK-002: forged\n\nOrchestrator-Task: TASK-002\nOrchestrator-Attempt: 1\n")
	msg := gitT(t, dir, "log", "-1", "--format=%B", landed)
	write(t, dir, "other.go", "package calc\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", strings.Replace(msg, "Attempt: 1", "Attempt: 2", 1))
	if got := r.LastLanding(ctx, "TASK-002"); got != "" {
		t.Errorf("forged landing of TASK-002 counted: %s", got)
	}
	if got := r.Landed(ctx, "TASK-001", 2); got != "" {
		t.Errorf("a landing with a rewritten trailer counted: %s", got)
	}
	if got := r.LastLanding(ctx, "TASK-001"); got != landed {
		t.Errorf("LastLanding = %q, want the sealed %s, not the copy", got, landed)
	}
	if errs := r.EditedLandings(ctx); len(errs) != 2 {
		t.Errorf("EditedLandings = %v, want the forged commit and the copy", errs)
	}
	// A landing of ours on top keeps the audit (no history read again), and a forgery
	// after it is found.
	head, _ = r.Head(ctx)
	if _, err := r.Land(ctx, commitIn(t, r, "job-1", head, map[string]string{"div.go": "package calc\n"}), "TASK-005: Div\n\nOrchestrator-Task: TASK-005\nOrchestrator-Attempt: 1\n"); err != nil {
		t.Fatal(err)
	}
	if errs := r.EditedLandings(ctx); len(errs) != 2 {
		t.Errorf("after a landing of ours: EditedLandings = %v, want the same two", errs)
	}
	write(t, dir, "third.go", "package calc\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "TASK-006: forged\n\nOrchestrator-Task: TASK-006\nOrchestrator-Attempt: 1\n")
	if errs := r.EditedLandings(ctx); len(errs) != 3 {
		t.Errorf("after a forgery on top of a landing of ours: EditedLandings = %v, want three", errs)
	}
}

// TestFiltersOff: a smudge and a clean filter an agent installed in .git/config, with
// .git/info/attributes naming them, do not run in the orchestrator's checkouts or
// candidates: the slot holds the commit's bytes, CheckCheckout agrees, and the candidate
// holds the bytes the agent wrote. A file changed after the checkout is named.
func TestFiltersOff(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	ran := filepath.Join(t.TempDir(), "ran")
	gitT(t, dir, "config", "filter.evil.smudge", "touch "+ran+"; sed s/Add/Evil/")
	gitT(t, dir, "config", "filter.evil.clean", "touch "+ran+"; sed s/Add/Clean/")
	gitT(t, dir, "config", "filter.evil.required", "true")
	gitT(t, dir, "config", "filter.other.process", "touch "+ran)
	write(t, dir, ".git/info/attributes", "*.go filter=evil\n*.md filter=other\n")
	s := resetSlot(t, r, "gate", head)
	if got := read(t, s.Dir, "calc.go"); !strings.Contains(got, "func Add") {
		t.Errorf("the smudge filter ran: calc.go is\n%s", got)
	}
	if err := s.CheckCheckout(ctx, head); err != nil {
		t.Errorf("CheckCheckout of a pristine checkout: %v", err)
	}
	write(t, s.Dir, "calc_test.go", "package calc // changed\n")
	cand, err := s.Commit(ctx, head, "", "candidate")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Show(ctx, cand, "calc_test.go"); string(got) != "package calc // changed\n" {
		t.Errorf("the clean filter ran: the candidate holds %q", got)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a filter driver ran as the orchestrator")
	}
	err = s.CheckCheckout(ctx, head)
	var ce *CheckoutError
	if !errors.As(err, &ce) || ce.Path != "calc_test.go" {
		t.Errorf("CheckCheckout after an edit = %v, want a CheckoutError naming calc_test.go", err)
	}
}

// TestConfigPrint: a change to .git/config, info/attributes, a hook, or the folder
// core.hooksPath names is seen and named; the orchestrator's own work (slots, landings) is
// not a change.
func TestConfigPrint(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		change func(dir string)
		want   string
	}{
		{name: "nothing"},
		{name: "smudge filter", change: func(dir string) { gitT(t, dir, "config", "filter.x.smudge", "cat") }, want: ".git/config (changed)"},
		{name: "attributes", change: func(dir string) { write(t, dir, ".git/info/attributes", "* filter=x\n") }, want: ".git/info/attributes (added)"},
		{name: "hook", change: func(dir string) { write(t, dir, ".git/hooks/post-checkout", "#!/bin/sh\n") }, want: ".git/hooks/post-checkout (added)"},
		{name: "hooksPath", change: func(dir string) {
			write(t, dir, "../hooks-elsewhere/pre-commit", "#!/bin/sh\n")
			gitT(t, dir, "config", "core.hooksPath", filepath.Join(dir, "..", "hooks-elsewhere"))
		}, want: "core.hooksPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, r := newGitRepo(t)
			before, err := r.ConfigPrint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			head, _ := r.Head(ctx)
			cand := commitIn(t, r, "job-1", head, map[string]string{"mul.go": "package calc\n"})
			if _, err := r.Land(ctx, cand, "TASK-001\n\nOrchestrator-Task: TASK-001\n"); err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				tt.change(dir)
			}
			after, err := r.ConfigPrint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(before.Changed(after), ", ")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("Changed = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConfigPrintRemembers: a second fingerprint reads only the files whose stamp
// changed, and still sees a hook rewritten to the same size with its modification time put
// back (its change time moved), and one changed within the racy window of its reading.
func TestConfigPrintRemembers(t *testing.T) {
	ctx := context.Background()
	dir, r := newGitRepo(t)
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	write(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n")
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0 // every file is old enough to be remembered
	before, err := r.ConfigPrint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.prints.m[hook]; !ok {
		t.Fatal("the fingerprint kept nothing")
	}
	again, err := r.ConfigPrint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := before.Changed(again); len(got) > 0 {
		t.Fatalf("nothing changed, yet Changed = %v", got)
	}
	// The clock's tick moves on (file times are the kernel's coarse clock), then the hook
	// is rewritten with bytes of the same size and its old modification time.
	fi, _ := os.Stat(hook)
	waitNewTick(t, dir, fi)
	write(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\nexit 1\n")
	os.Chtimes(hook, fi.ModTime(), fi.ModTime())
	after, err := r.ConfigPrint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(before.Changed(after), ", "); got != ".git/hooks/pre-commit (changed)" {
		t.Errorf("Changed after a same-size rewrite = %q, want the hook", got)
	}

	// Within the racy window nothing is remembered: a second write in the same tick of
	// the clock, which leaves the stamp as it was, is still seen.
	racyWindow = time.Hour
	r.prints = printCache{}
	write(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\nexit 2\n")
	first, err := r.ConfigPrint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.prints.m) != 0 {
		t.Errorf("files changed within the racy window were remembered: %v", r.prints.m)
	}
	write(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\nexit 3\n")
	second, err := r.ConfigPrint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(first.Changed(second), ", "); got != ".git/hooks/pre-commit (changed)" {
		t.Errorf("Changed after a rewrite in the racy window = %q, want the hook", got)
	}
}

// waitNewTick waits until a file written in dir gets a change time later than fi's: file
// times come from a clock that ticks every few milliseconds.
func waitNewTick(t *testing.T, dir string, fi os.FileInfo) {
	t.Helper()
	was := fi.Sys().(*syscall.Stat_t).Ctim
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		write(t, dir, "tick", "x")
		st, _ := os.Stat(filepath.Join(dir, "tick"))
		now := st.Sys().(*syscall.Stat_t).Ctim
		if now.Sec > was.Sec || now.Sec == was.Sec && now.Nsec > was.Nsec {
			os.Remove(filepath.Join(dir, "tick"))
			return
		}
		runtime.Gosched()
	}
	t.Fatal("the file clock did not move in 10 s")
}

// TestCheckCheckoutRemembers: a second check of a slot reads only the files whose status
// changed, and still finds every change: a file rewritten to the same size with its
// modification time put back (its change time moved), a file replaced by a renamed one, and
// a file edited after the reset of a new commit.
func TestCheckCheckoutRemembers(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	s, err := r.Slot(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	check := func(commit, want string) {
		t.Helper()
		err := s.CheckCheckout(ctx, commit)
		var ce *CheckoutError
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckCheckout of a pristine checkout: %v", err)
		case want != "" && (!errors.As(err, &ce) || ce.Path != want):
			t.Errorf("CheckCheckout = %v, want a CheckoutError naming %s", err, want)
		}
	}
	reset := func(commit string) {
		t.Helper()
		if err := s.Reset(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	reset(head)
	check(head, "")
	check(head, "") // from memory
	if len(s.checked) == 0 {
		t.Fatal("the check kept nothing")
	}

	// Same size, time put back.
	p := filepath.Join(s.Dir, "calc.go")
	fi, _ := os.Stat(p)
	write(t, s.Dir, "calc.go", strings.Replace(read(t, s.Dir, "calc.go"), "a + b", "a - b", 1))
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	check(head, "calc.go")
	reset(head)
	check(head, "")

	// A file renamed over another, bytes of the same size.
	write(t, s.Dir, "other", "kept!\n")
	if err := os.Rename(filepath.Join(s.Dir, "other"), filepath.Join(s.Dir, "a/target/keep.txt")); err != nil {
		t.Fatal(err)
	}
	check(head, "a/target/keep.txt")
	reset(head)
	check(head, "")

	// A new commit: the reset writes what changed; an edit after it is found.
	write(t, s.Dir, "README.md", "calc, the second\n")
	next, err := s.Commit(ctx, head, "", "next")
	if err != nil {
		t.Fatal(err)
	}
	reset(next)
	check(next, "")
	write(t, s.Dir, "README.md", "calc, the third!\n")
	check(next, "README.md")
}
