package watch_test

import (
	"strings"
	"testing"
	"time"
)

// TestOwedTests: landing a TEST task's RED breaks its package's build on purpose (cart's
// existing tests no longer compile). Those baseline tests are owed by the BUILD task that
// depends on that TEST task: an unrelated BUILD task that lands meanwhile is not blamed for
// them (one GREEN run of the whole suite, the owed tests excused), and the BUILD task that
// completes the RED must make them pass again. The baseline only grows: after the run it
// holds cart's tests and the new RED test.
func TestOwedTests(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
		// Before TASK-001 in the file: it runs while cart does not compile.
		{id: "TASK-002", category: "backend", agent: "other", exempt: true},
		{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
	}, map[string][]string{
		"writer":  slowAgent("test-writer", 100*time.Millisecond, 0, files(t, goRedFiles)),
		"other":   slowAgent("implementer", 100*time.Millisecond, 0, files(t, map[string]string{"money/round.go": "package money\n\n// Round is a no-op kept for a later task.\nfunc Round(c int) int { return c }\n"})),
		"builder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, goGreenFiles)),
	}, "")
	code, out := r.run("watch", "--once")
	if code != 0 {
		t.Fatalf("exit %d, want 0%s%s%s\n%s", code, r.describeAttempts("TASK-T01"), r.describeAttempts("TASK-002"), r.describeAttempts("TASK-001"), out)
	}
	for _, id := range []string{"TASK-T01", "TASK-002", "TASK-001"} {
		if n := len(r.attemptDirs(id)); n != 1 {
			t.Errorf("%s: %d attempts, want 1 (nothing blamed on it that it did not do)%s", id, n, r.describeAttempts(id))
		}
	}
	// TASK-002 landed before TASK-001: its GREEN run had cart's tests failing to build.
	order := r.git("log", "--format=%s", "--reverse", "main")
	if i, j := strings.Index(order, "TASK-002"), strings.Index(order, "TASK-001"); i < 0 || j < 0 || i > j {
		t.Fatalf("landing order:\n%s\nwant TASK-002 before TASK-001", order)
	}
	b := r.read(".orchestrator/baseline.json")
	for _, want := range []string{"example.com/shop/cart.", "example.com/shop/money.", "UNIT_001"} {
		if !strings.Contains(b, want) {
			t.Errorf("the baseline lacks %s tests:\n%s", want, b)
		}
	}
}
