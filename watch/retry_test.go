package watch_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// failScript makes a test command that fails its first n runs and then passes. With vary,
// each failure prints a different error (so each gets a different signature).
func failScript(r *repo, name string, n int, vary bool) string {
	msg := `echo "calc_test.go:12: Add(2, 3) = 4, want 5"`
	if vary {
		msg = `echo "calc_test.go:12: Add(2, 3) = $c, want 5"`
	}
	// The counter is in the person's tree, by absolute path: the command runs in the gate's
	// checkout, which is made afresh for every run.
	count := strconv.Quote(filepath.Join(r.root, name+".count"))
	script := "c=$(cat " + count + " 2>/dev/null || echo 0)\nc=$((c+1))\necho $c > " + count + "\n" +
		"if [ $c -le " + strconv.Itoa(n) + " ]; then\n  " + msg + "\n  echo '--- FAIL: TestAdd (0.00s)'\n  exit 1\nfi\necho ok\n"
	r.write(name+".sh", script)
	return "sh " + name + ".sh"
}

// failingRepo makes a repository with one task whose test command fails its first n runs
// (each time differently with vary), with auto-retry on.
func failingRepo(t *testing.T, n int, vary bool, config string) *repo {
	t.Helper()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "PLACEHOLDER"}}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, config)
	cmd := failScript(r, "t1", n, vary)
	r.write(".orchestrator/task_queue.md", strings.Replace(r.read(".orchestrator/task_queue.md"), "PLACEHOLDER", cmd, 1))
	autoRetry(r)
	return r
}

func autoRetry(r *repo) {
	r.t.Helper()
	if err := os.Remove(filepath.Join(r.root, ".orchestrator", "no_auto_retry")); err != nil {
		r.t.Fatal(err)
	}
}

func attempts(r *repo, id string) int {
	entries, _ := os.ReadDir(filepath.Join(r.root, ".orchestrator", "runs", id))
	return len(entries)
}

// TestRetryIdenticalFailureHalts: the same failure three times halts the task on the third,
// with exit 3, the fields of SPEC §8.4 on task and issue, and a halt report.
func TestRetryIdenticalFailureHalts(t *testing.T) {
	t.Parallel()
	r := failingRepo(t, 99, false, "")
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	if n := attempts(r, "TASK-001"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	q := r.read(".orchestrator/task_queue.md")
	for _, want := range []string{"| Status | halted |", "| Halted | true |", "| Halt-Reason | Repeated identical failure (3x) |", "| Retry-Count | 2 |", "| Remediation | ISSUE-"} {
		if !strings.Contains(q, want) {
			t.Errorf("task queue lacks %q:\n%s", want, q)
		}
	}
	iq := r.read(".orchestrator/issue_queue.md")
	for _, want := range []string{"| Source Task | TASK-001 |", "| Halted | true |", "| Auto-Retry | false |", "| Halt-Reason | Repeated identical failure (3x) |", "**Failure Details:**", "Add(2, 3) = 4, want 5"} {
		if !strings.Contains(iq, want) {
			t.Errorf("issue queue lacks %q:\n%s", want, iq)
		}
	}
	if strings.Count(iq, "| Source Task | TASK-001 |") != 1 {
		t.Errorf("want one issue for the task, updated in place:\n%s", iq)
	}
	reports, _ := filepath.Glob(filepath.Join(r.root, ".orchestrator", "reports", "halt-TASK-001-*"))
	if len(reports) != 2 {
		t.Errorf("halt reports: %v, want a markdown file and its JSON twin", reports)
	}
	if !strings.Contains(out, "Repeated identical failure (3x)") {
		t.Errorf("the halt report is not printed:\n%s", out)
	}
	r.noneLeft()
}

// TestRetryDifferentFailuresUpToMaxRetries: a task failing differently each time is retried
// until Max-Retries, then halts. (Max-Retries is 2 here: with the default 10, an agent that
// claims done each time halts first on its third false success, SPEC §10.3.)
func TestRetryDifferentFailuresUpToMaxRetries(t *testing.T) {
	t.Parallel()
	r := failingRepo(t, 99, true, "retries: {max_retries: 2}\n")
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	if n := attempts(r, "TASK-001"); n != 3 {
		t.Errorf("%d attempts, want 3 (the first and 2 retries)", n)
	}
	if q := r.read(".orchestrator/task_queue.md"); !strings.Contains(q, "Max retries reached (2)") {
		t.Errorf("task queue:\n%s", q)
	}
}

// TestRetryThenSuccess: a task that fails once and then passes ends completed, and its issue
// completed.
func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	r := failingRepo(t, 1, false, "")
	if code, out := r.run("watch", "--once"); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := r.statuses()["TASK-001"]; got != "completed" {
		t.Errorf("status %q", got)
	}
	if iq := r.read(".orchestrator/issue_queue.md"); !strings.Contains(iq, "| Status | completed |") {
		t.Errorf("issue not completed:\n%s", iq)
	}
	// The retry's prompt holds the failed gate's raw output.
	if p := r.read(".orchestrator/runs/TASK-001/2/prompt.md"); !strings.Contains(p, "Add(2, 3) = 4, want 5") {
		t.Errorf("retry prompt lacks the raw output:\n%s", p)
	}
}

// TestRetryGlobalCap: the run's cap on auto-retries stops them across tasks.
func TestRetryGlobalCap(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", testCommand: "P1"},
		{id: "TASK-002", category: "backend", testCommand: "P2"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, "retries: {global_cap: 2}\n")
	q := r.read(".orchestrator/task_queue.md")
	q = strings.Replace(q, "P1", failScript(r, "t1", 99, true), 1)
	q = strings.Replace(q, "P2", failScript(r, "t2", 99, true), 1)
	r.write(".orchestrator/task_queue.md", q)
	autoRetry(r)
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	if total := attempts(r, "TASK-001") + attempts(r, "TASK-002"); total != 4 {
		t.Errorf("%d attempts in all, want 4 (2 first attempts and 2 auto-retries)", total)
	}
	if s := r.read(".orchestrator/session_state.md"); !strings.Contains(s, "| total_auto_retries | 2 |") {
		t.Errorf("session state:\n%s", s)
	}
	if q := r.read(".orchestrator/task_queue.md"); !strings.Contains(q, "Global auto-retry cap reached (2)") {
		t.Errorf("task queue:\n%s", q)
	}
}

// TestNoAutoRetry: with .orchestrator/no_auto_retry a failure is final.
func TestNoAutoRetry(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "false"}}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, "")
	if code, out := r.run("watch", "--once"); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	if n := attempts(r, "TASK-001"); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	if got := r.statuses()["TASK-001"]; got != "failed" {
		t.Errorf("status %q, want failed", got)
	}
}

// TestPersonRevivesHaltedTask: setting Halted false and Status pending by hand on a halted
// task makes it run again.
func TestPersonRevivesHaltedTask(t *testing.T) {
	t.Parallel()
	r := failingRepo(t, 3, false, "")
	if code, out := r.run("watch", "--once"); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	if code, out := r.run("set", "TASK-001", "Halted=false", "Status=pending"); code != 0 {
		t.Fatalf("set: %s", out)
	}
	if code, out := r.run("watch", "--once"); code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if n := attempts(r, "TASK-001"); n != 4 {
		t.Errorf("%d attempts, want 4", n)
	}
	if got := r.statuses()["TASK-001"]; got != "completed" {
		t.Errorf("status %q", got)
	}
}
