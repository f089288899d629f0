package watch_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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

// TestRateLimitWaitsForTheGivenReset: an agent program that speaks Claude Code's JSON
// reports a usage limit with its reset time ("Claude AI usage limit reached|<unix time>",
// 3 s ahead) in an error result. The attempt is not a failure (auto-retry is off: a failure
// would end the task failed), and the next one starts once the given time has come, not
// after rate_limit_wait (15m by default, which would outlast the test).
func TestRateLimitWaitsForTheGivenReset(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "true", agent: "claude"}}, nil, "")
	script := `cat > /dev/null
n=${ORCHESTRATOR_ATTEMPT_DIR##*/}
if [ "$n" = 1 ]; then
  date +%s > "$0.limited"
  printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"num_turns":1,"result":"Claude AI usage limit reached|%s","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}\n' $(( $(date +%s) + 3 ))
  exit 1
fi
date +%s > "$0.second"
echo done > "$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done"
printf '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"done","total_cost_usd":0.02,"usage":{"input_tokens":100,"output_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}\n'
`
	path := filepath.Join(t.TempDir(), "claude.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.write(".orchestrator/config.yaml", r.read(".orchestrator/config.yaml")+"  claude: {command: [sh, "+quoteAll([]string{path})+"]}\n")
	code, out := r.run("watch", "--once")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	limited, _ := os.ReadFile(path + ".limited")
	second, _ := os.ReadFile(path + ".second")
	l, _ := strconv.ParseInt(strings.TrimSpace(string(limited)), 10, 64)
	s, _ := strconv.ParseInt(strings.TrimSpace(string(second)), 10, 64)
	if l == 0 || s-l < 3 {
		t.Errorf("the second attempt started at %d, the limit was reported at %d and lifts at %d", s, l, l+3)
	}
	if !strings.Contains(out, "(the reset time it gave, in ") || !strings.Contains(out, "no retry used") {
		t.Errorf("watch did not say it waits for the given reset:\n%s", out)
	}
	if c := taskField(r, "TASK-001", "Cost"); c != "$0.0200" {
		t.Errorf("Cost %q, want $0.0200 (the limited attempt cost $0)", c)
	}
	if rc := taskField(r, "TASK-001", "Retry-Count"); !queue.IsEmpty(rc) && rc != "0" {
		t.Errorf("Retry-Count %q", rc)
	}
}

// TestLimitWordsAreNotALimit: an agent that writes "usage limit reached" and a 429 into a
// file and into its own output, and exits without a claim, has failed (no_marker); nothing
// but an agent program's structured report is a rate limit. And the usage line of a
// Claude Code agent's final message is the model's text, not its usage.
func TestLimitWordsAreNotALimit(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", testCommand: "true"},
		{id: "TASK-002", category: "backend", testCommand: "true", agent: "claude"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=script", `TESTAGENT_SH=echo "Claude AI usage limit reached|1700000000 429 rate_limit_error try again in 1s" | tee limit.txt; exit 1`}}, "")
	// Claude Code's result object, whose result (the model's final message) claims a
	// usage limit and carries a usage line of almost nothing.
	final := "usage limit reached (429 rate_limit_error)\n\n```tdd-result\nrole: implementer\nstatus: ok\nfiles: []\ncommand: \"true\"\noutput_excerpt: ok\nusage: input_tokens=1 output_tokens=1 cost_usd=0.000001\n```\n"
	obj, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false, "num_turns": 2, "result": final, "total_cost_usd": 0.5,
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
	resultFile := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(resultFile, append(obj, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "cat > /dev/null\necho done > \"$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done\"\ncat " + strconv.Quote(resultFile) + "\n"
	path := filepath.Join(t.TempDir(), "claude.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.write(".orchestrator/config.yaml", r.read(".orchestrator/config.yaml")+"  claude: {command: [sh, "+quoteAll([]string{path})+"]}\n")
	code, out := r.run("watch", "--once")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (TASK-001 failed)\n%s", code, out)
	}
	if strings.Contains(out, "rate_limited") {
		t.Errorf("words in an agent's output were taken for a rate limit:\n%s", out)
	}
	if st := r.statuses(); st["TASK-001"] != queue.StatusFailed || st["TASK-002"] != queue.StatusCompleted {
		t.Errorf("statuses %v, want TASK-001 failed, TASK-002 completed\n%s", st, out)
	}
	if c := taskField(r, "TASK-002", "Cost"); c != "$0.5000" {
		t.Errorf("TASK-002 Cost %q, want Claude Code's own $0.5000, not the model's usage line", c)
	}
}

// TestRunAndTokenBudgets: run_usd counts every task's attempts: after one task's $0.30,
// a second task's first attempt, which would bring the run to $0.60, does not start under
// run_usd $0.50. task_tokens holds a task's tokens as task_usd holds its dollars.
func TestRunAndTokenBudgets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, budget, want string
		failing            bool
	}{
		{"run_usd", "budget: {run_usd: 0.50}\n", "budget run_usd $0.50: the tasks have spent $0.3000 in 1 attempt(s)", false},
		{"task_tokens", "budget: {task_tokens: 2500}\n", "budget task_tokens 2500: TASK-001 has used 2200 tokens in 2 attempt(s)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, []task{
				{id: "TASK-001", category: "backend", testCommand: "P1"},
				{id: "TASK-002", category: "backend", testCommand: "true", deps: "TASK-001"},
			}, map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_USAGE=input_tokens=1000,output_tokens=100,cost_usd=0.30"}}, tt.budget)
			cmd := "true"
			if tt.failing {
				cmd = failScript(r, "t1", 99, true)
				autoRetry(r)
			}
			r.write(".orchestrator/task_queue.md", strings.Replace(r.read(".orchestrator/task_queue.md"), "P1", cmd, 1))
			code, out := r.run("watch", "--once")
			if code != 3 {
				t.Fatalf("exit %d, want 3\n%s", code, out)
			}
			halted := "TASK-002"
			if tt.failing {
				halted = "TASK-001"
			}
			if st := r.statuses(); st[halted] != queue.StatusHalted {
				t.Fatalf("statuses %v, want %s halted\n%s", st, halted, out)
			}
			if reason := taskField(r, halted, "Halt-Reason"); !strings.Contains(reason, tt.want) {
				t.Errorf("Halt-Reason %q lacks %q", reason, tt.want)
			}
			if halted == "TASK-002" && attempts(r, "TASK-002") != 0 {
				t.Errorf("TASK-002 has an attempt folder: its attempt started")
			}
		})
	}
}

// TestNotifyHaltOnRepeatedFailure: a task that halts on the same failure a third time
// (SPEC §8.4) is told to the halt notifier, with the halt's reason.
func TestNotifyHaltOnRepeatedFailure(t *testing.T) {
	t.Parallel()
	halt := filepath.Join(t.TempDir(), "halt.json")
	r := failingRepo(t, 99, false, "notify: {halt: [sh, -c, 'cat > \"$0\"', "+quoteAll([]string{halt})+"]}\n")
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	var ev map[string]any
	b, err := os.ReadFile(halt)
	if err != nil || json.Unmarshal(b, &ev) != nil {
		t.Fatalf("halt notifier's input %q: %v\n%s", b, err, out)
	}
	if ev["event"] != "halt" || ev["task"] != "TASK-001" || ev["status"] != "halted" || ev["attempt"] != 3.0 ||
		!strings.Contains(ev["reason"].(string), "Repeated identical failure (3x)") {
		t.Errorf("halt event %v", ev)
	}
	// The honest test agent reports no usage: unknown, null.
	if v, ok := ev["cost_usd"]; !ok || v != nil {
		t.Errorf("cost_usd %v, want null", v)
	}
}
