package watch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/worktree"
)

// TestAuditorOffTheLoop: the audit of the records that each decision asks for runs beside
// the loop, and once a pause however many decisions ask meanwhile; what it finds reaches
// the loop, which warns of each edited record once; and a record edited after the
// auditor's last audit is named by the run's last audit, when the auditor stops. The
// cheat it must still catch is a sealed record rewritten by hand; the honest twin,
// records left alone, gives no warning.
func TestAuditorOffTheLoop(t *testing.T) {
	defer func(p time.Duration) { auditPause = p }(auditPause)
	ctx := context.Background()
	_, repo := newGitRepo(t)
	var out bytes.Buffer
	r := &runner{repo: repo, report: newReporter(&out, JSON, false)}
	edit := func(task string) string {
		d := filepath.Join(stateRuns(repo), task, "1")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "result.json"), []byte(`{"task":"`+task+`","outcome":"completed"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Join("runs", task, "1", "result.json")
	}
	named := func(rec string) int { return strings.Count(out.String(), rec) }

	// A pause longer than the test: after its first audit, the auditor makes no other.
	auditPause = time.Hour
	r.startAuditor(ctx)
	a := r.auditor
	for range 100 {
		r.wantAudit(ctx) // a hundred decisions at once
	}
	if found := awaitAudit(t, r); len(found) != 0 {
		t.Fatalf("records left alone reported as edited: %v", found)
	}
	first := edit("TASK-001")
	for range 100 {
		r.wantAudit(ctx)
	}
	r.stopAuditor(ctx)
	if n := a.runs.Load(); n != 1 {
		t.Errorf("the auditor made %d audits within one pause, want 1", n)
	}
	if n := named(first); n != 1 {
		t.Errorf("the run's last audit names %s %d times, want once:\n%s", first, n, out.String())
	}
	if r.auditor != nil || r.audited() != nil {
		t.Error("the auditor is still there after stopAuditor")
	}

	// No pause: an edit is found by the next audit a decision asks for, and what was
	// reported already is not reported again.
	auditPause = 0
	r.startAuditor(ctx)
	second := edit("TASK-002")
	r.wantAudit(ctx)
	for named(second) == 0 {
		r.reportRecords(awaitAudit(t, r))
		r.wantAudit(ctx)
	}
	r.stopAuditor(ctx)
	for _, rec := range []string{first, second} {
		if n := named(rec); n != 1 {
			t.Errorf("%s is named %d times, want once:\n%s", rec, n, out.String())
		}
	}
}

// Scaled returns a test's deadline d times ORCHESTRATOR_TEST_TIMESCALE (6 when unset), for
// the tests of both packages. The tests wait on events; a deadline only bounds how long a
// test that fails waits, and on a busy machine (two cores, other work) the events come
// late, never wrong.
func Scaled(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv("ORCHESTRATOR_TEST_TIMESCALE"), 64)
	if err != nil || f <= 0 {
		f = 6
	}
	return time.Duration(float64(d) * f)
}

// awaitAudit waits for what the auditor's next audit found.
func awaitAudit(t *testing.T, r *runner) []string {
	t.Helper()
	select {
	case found := <-r.audited():
		return found
	case <-time.After(Scaled(20 * time.Second)):
		t.Fatal("the auditor made no audit")
	}
	return nil
}

// newGitRepo makes a git repository with one empty commit on main, and opens it.
func newGitRepo(t *testing.T) (string, *worktree.Repo) {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo, err := worktree.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, repo
}
