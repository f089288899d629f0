package watch_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
)

// taskField returns one field of a task in the repository's queue.
func taskField(r *repo, id, field string) string {
	r.t.Helper()
	d, err := queue.Load(filepath.Join(r.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		r.t.Fatal(err)
	}
	rec, ok := d.Record(id)
	if !ok {
		r.t.Fatalf("no task %s", id)
	}
	return d.Get(rec, field)
}

// attemptSpent reads the spent figures of an attempt's readable result.json.
func attemptSpent(r *repo, id, n string) map[string]any {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", id, n, "result.json"))
	if err != nil {
		r.t.Fatal(err)
	}
	var res struct {
		Usage []map[string]any `json:"usage"`
		Spent map[string]any   `json:"spent"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		r.t.Fatal(err)
	}
	if len(res.Usage) != 1 || res.Usage[0]["role"] != "implementer" {
		r.t.Errorf("%s attempt %s: usage runs %v, want one of the implementer", id, n, res.Usage)
	}
	return res.Spent
}

// TestBudgetHaltsBeforeTheAttempt: with retries on and a slow agent that reports $0.40 an
// attempt in its usage line, a task_usd budget of $1.00 lets two attempts run ($0.80) and
// halts the task before a third, which would pass it: exit 3, no third attempt folder, the
// halt report names the budget, and the halt notifier hears of it. A second task, whose
// agent reports no usage, is unknown, never $0, and is not held by the budget.
func TestBudgetHaltsBeforeTheAttempt(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", testCommand: "P1"},
		{id: "TASK-002", category: "backend", testCommand: "true", agent: "quiet"},
	}, map[string][]string{
		"honest": {"TESTAGENT_MODE=slow", "TESTAGENT_WORK=1s", "TESTAGENT_USAGE=input_tokens=30000,output_tokens=2000,cost_usd=0.40"},
		"quiet":  {"TESTAGENT_MODE=honest"},
	}, "budget: {task_usd: 1.00}\nnotify: {halt: [sh, -c, 'cat > \"$0\"', "+quoteAll([]string{filepath.Join(t.TempDir(), "halt.json")})+"]}\n")
	haltFile := strings.Split(r.read(".orchestrator/config.yaml"), "'cat > \"$0\"', \"")[1]
	haltFile = haltFile[:strings.Index(haltFile, "\"")]
	q := r.read(".orchestrator/task_queue.md")
	r.write(".orchestrator/task_queue.md", strings.Replace(q, "P1", failScript(r, "t1", 99, true), 1))
	autoRetry(r)

	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (halted on the budget)\n%s", code, out)
	}
	if n := attempts(r, "TASK-001"); n != 2 {
		t.Errorf("TASK-001: %d attempts, want 2 (the third would pass $1.00)\n%s", n, out)
	}
	st := r.statuses()
	if st["TASK-001"] != queue.StatusHalted || st["TASK-002"] != queue.StatusCompleted {
		t.Errorf("statuses %v, want TASK-001 halted, TASK-002 completed", st)
	}
	reason := taskField(r, "TASK-001", "Halt-Reason")
	if !strings.Contains(reason, "budget task_usd $1.00") || !strings.Contains(reason, "$0.8000 in 2 attempt(s)") {
		t.Errorf("Halt-Reason %q does not name the budget and what was spent", reason)
	}
	// Each failure decided a retry; the budget held the second one back before its agent
	// started.
	if got := taskField(r, "TASK-001", "Retry-Count"); got != "2" {
		t.Errorf("Retry-Count %q, want 2", got)
	}
	if c, tok := taskField(r, "TASK-001", "Cost"), taskField(r, "TASK-001", "Tokens"); c != "$0.8000" || tok != "64000" {
		t.Errorf("TASK-001 Cost %q, Tokens %q; want $0.8000 and 64000", c, tok)
	}
	// An agent that says nothing of its usage: unknown, not $0.
	if c, tok := taskField(r, "TASK-002", "Cost"), taskField(r, "TASK-002", "Tokens"); c != "?" || tok != "?" {
		t.Errorf("TASK-002 Cost %q, Tokens %q; want ? and ?", c, tok)
	}
	if sp := attemptSpent(r, "TASK-002", "1"); sp["cost_usd"] != nil || sp["input_tokens"] != nil {
		t.Errorf("TASK-002 result.json spent %v: want nulls", sp)
	}
	if sp := attemptSpent(r, "TASK-001", "2"); sp["cost_usd"] != 0.4 || sp["input_tokens"] != 30000.0 || sp["cost_source"] != "agent" {
		t.Errorf("TASK-001 attempt 2 spent %v", sp)
	}
	reports, _ := filepath.Glob(filepath.Join(r.root, ".orchestrator", "reports", "halt-TASK-001-*.md"))
	if len(reports) != 1 {
		t.Fatalf("halt reports %v, want one", reports)
	}
	rep, _ := os.ReadFile(reports[0])
	if !strings.Contains(string(rep), "budget task_usd $1.00") || !strings.Contains(string(out), "Budget reached") {
		t.Errorf("the halt report or the output does not name the budget:\n%s\n%s", rep, out)
	}
	// The halt notifier got the event as JSON on its standard input.
	var ev map[string]any
	b, err := os.ReadFile(haltFile)
	if err != nil || json.Unmarshal(b, &ev) != nil {
		t.Fatalf("halt notifier's input %q: %v", b, err)
	}
	if ev["event"] != "halt" || ev["task"] != "TASK-001" || ev["cost_usd"] != 0.8 || !strings.Contains(ev["reason"].(string), "task_usd") {
		t.Errorf("halt event %v", ev)
	}

	// `orchestrator cost` agrees: $0.80 rejected for TASK-001, TASK-002 verified but
	// unknown.
	code, out = r.run("cost", "--json")
	if code != 0 {
		t.Fatalf("cost --json: exit %d\n%s", code, out)
	}
	var rep2 struct {
		Tasks []struct {
			Task     string   `json:"task"`
			Verified *float64 `json:"verified_usd"`
			Rejected *float64 `json:"rejected_usd"`
			Attempts int      `json:"attempts"`
		} `json:"tasks"`
		Run struct {
			Total    *float64 `json:"total_usd"`
			Rejected *float64 `json:"rejected_usd"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(out), &rep2); err != nil {
		t.Fatalf("cost --json: %v\n%s", err, out)
	}
	if len(rep2.Tasks) != 2 || rep2.Tasks[0].Rejected == nil || *rep2.Tasks[0].Rejected != 0.8 || rep2.Tasks[0].Verified == nil || *rep2.Tasks[0].Verified != 0 ||
		rep2.Tasks[1].Verified != nil || rep2.Run.Total != nil || *rep2.Run.Rejected != 0.8 {
		t.Errorf("cost --json:\n%s", out)
	}
}

// TestNotifyDoneAndFailingNotifier: the done notifier hears of every verified task; a
// halt notifier that fails, and one that is not even a program, are warnings, and the loop
// goes on to finish every task.
func TestNotifyDoneAndFailingNotifier(t *testing.T) {
	t.Parallel()
	done := filepath.Join(t.TempDir(), "done.jsonl")
	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", testCommand: "true"},
		{id: "TASK-002", category: "backend", testCommand: "true"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=slow", "TESTAGENT_WORK=500ms", "TESTAGENT_USAGE=input_tokens=10,output_tokens=5,cost_usd=0.01"}},
		"notify: {done: [sh, -c, 'cat >> \"$0\"; echo notifier broke >&2; exit 7', "+quoteAll([]string{done})+"], halt: [/no/such/notifier]}\n")
	code, out := r.run("watch", "--once")
	if code != 0 {
		t.Fatalf("exit %d, want 0: a failing notifier is not fatal\n%s", code, out)
	}
	if st := r.statuses(); st["TASK-001"] != "completed" || st["TASK-002"] != "completed" {
		t.Fatalf("statuses %v", st)
	}
	b, _ := os.ReadFile(done)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("done notifier got %d events, want 2:\n%s", len(lines), b)
	}
	for i, line := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev["event"] != "done" || ev["status"] != "completed" || ev["cost_usd"] != 0.01 || ev["tokens"] != 15.0 || ev["commit"] == "" {
			t.Errorf("event %d: %v", i+1, ev)
		}
	}
	if !strings.Contains(out, "notify done: sh -c") || !strings.Contains(out, "exit status 7: notifier broke") {
		t.Errorf("the failing notifier was not logged:\n%s", out)
	}
}
