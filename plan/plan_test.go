package plan_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
)

// calcPlan is a small test plan: eight tests in three categories, one a line.
const calcPlan = `{"tests": {
  "unit": [
    {"id": "UNIT-001", "name": "adds", "category": "unit", "priority": "high", "steps": []},
    {"id": "UNIT-002", "name": "multiplies", "category": "unit", "priority": "high", "steps": []},
    {"id": "UNIT-003", "name": "divides", "category": "unit", "priority": "high", "steps": []},
    {"id": "UNIT-004", "name": "refuses division by zero", "category": "unit", "priority": "critical", "steps": []}
  ],
  "integration": [
    {"id": "INT-001", "name": "command line adds", "category": "integration", "priority": "medium", "steps": []},
    {"id": "INT-002", "name": "command line divides", "category": "integration", "priority": "medium", "steps": []}
  ],
  "edge_cases": [
    {"id": "EDGE-001", "name": "overflow is reported", "category": "edge_cases", "priority": "critical", "steps": []},
    {"id": "EDGE-002", "name": "minimum integer divided by -1", "category": "edge_cases", "priority": "critical", "steps": []}
  ]
}}
`

// task returns a task record.
func task(id, title string, fields ...string) string {
	var b strings.Builder
	b.WriteString("### " + id + ": " + title + "\n\n| Field | Value |\n|-------|-------|\n")
	for _, f := range fields {
		name, value, _ := strings.Cut(f, "=")
		b.WriteString("| " + name + " | " + value + " |\n")
	}
	b.WriteString("\n**Objective:** " + title + ".\n\n")
	return b.String()
}

func testTask(id, ids string, deps ...string) string {
	f := []string{"Status=pending", "Category=testing", "Mode=write", "Test IDs=" + ids}
	if len(deps) > 0 {
		f = append(f, "Depends On="+strings.Join(deps, ", "))
	}
	return task(id, "Tests "+ids, f...)
}

func buildTask(id string, deps ...string) string {
	f := []string{"Status=pending", "Category=backend", "Complexity=normal"}
	if len(deps) > 0 {
		f = append(f, "Depends On="+strings.Join(deps, ", "))
	}
	return task(id, "Build "+id, f...)
}

// The planner's outputs for calcPlan: right; with three test IDs dropped; with every ID
// mapped but a BUILD task ordered before its TEST task.
var (
	calcGood = testTask("TASK-T01", "UNIT-001, UNIT-002") + testTask("TASK-T02", "UNIT-003, UNIT-004, INT-001") +
		testTask("TASK-T03", "INT-002, EDGE-001, EDGE-002") +
		buildTask("TASK-001", "TASK-T01") + buildTask("TASK-002", "TASK-T02", "TASK-001") + buildTask("TASK-003", "TASK-T03")
	calcDrop = testTask("TASK-T01", "UNIT-001, UNIT-002") + testTask("TASK-T02", "UNIT-003, INT-001") +
		testTask("TASK-T03", "INT-002") +
		buildTask("TASK-001", "TASK-T01") + buildTask("TASK-002", "TASK-T02", "TASK-001") + buildTask("TASK-003", "TASK-T03")
	calcMisorder = testTask("TASK-T01", "UNIT-001, UNIT-002") + testTask("TASK-T02", "UNIT-003, UNIT-004, INT-001") +
		buildTask("TASK-003") + testTask("TASK-T03", "INT-002, EDGE-001, EDGE-002", "TASK-003") +
		buildTask("TASK-001", "TASK-T01") + buildTask("TASK-002", "TASK-T02", "TASK-001")
)

func (r *repo) fixtures(t *testing.T, files map[string]string) {
	t.Helper()
	for name, text := range files {
		r.write(t, filepath.Join("fixtures", name), text)
	}
}

// TestPlanDropThenMisorderThenRight is the decomposition of the RFC's story: a planner that
// drops test IDs, then orders a BUILD task before its TEST task, then gets it right. The
// first two outputs are rejected, each with validate's findings and nothing else in the
// next prompt; the third is appended to the queue with a matrix at 100%.
func TestPlanDropThenMisorderThenRight(t *testing.T) {
	t.Parallel()
	r := newRepo(t, calcPlan)
	r.fixtures(t, map[string]string{"drop.md": calcDrop, "misorder.md": calcMisorder, "good.md": calcGood})
	before := r.read(t, ".orchestrator/task_queue.md")
	out, code := r.orch(t, planner("fixtures/drop.md", "fixtures/misorder.md", "fixtures/good.md"), "plan", "--prd", "docs/requirements.md", "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	p := decode(t, out)
	if p.Outcome != "written" || len(p.Rounds) != 3 {
		t.Fatalf("outcome %q after %d rounds, want written after 3", p.Outcome, len(p.Rounds))
	}

	// Round 1: the three dropped IDs, each at its line of the plan, in plan order.
	planPath := filepath.Join(r.root, "projectspec", "test-plan-output.json")
	var want1 []string
	for _, id := range []string{"UNIT-004", "EDGE-001", "EDGE-002"} {
		cat := map[byte]string{'U': "unit", 'E': "edge_cases"}[id[0]]
		want1 = append(want1, queue.Finding{Path: planPath, Line: lineOf(t, calcPlan, `"`+id+`"`), ID: id, Severity: queue.Error,
			Message: "not mapped: no TEST task lists it in Test IDs (" + cat + ")"}.String())
	}
	if got := findingTexts(p.Rounds[0].Findings); !reflect.DeepEqual(got, want1) || p.Rounds[0].Accepted {
		t.Errorf("round 1 findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want1, "\n"))
	}
	// Round 2: the TEST task that depends on a BUILD task, and the BUILD task with no TEST
	// task before it, at their lines of the candidate queue.
	cand := filepath.Join(r.root, ".orchestrator", "runs", "plan", "1", "2", "task_queue.md")
	candText := r.read(t, cand[len(r.root)+1:])
	want2 := []string{
		queue.Finding{Path: cand, Line: lineOf(t, candText, "### TASK-003"), ID: "TASK-003", Severity: queue.Error,
			Message: "BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)"}.String(),
		queue.Finding{Path: cand, Line: lineOf(t, candText, "| Depends On | TASK-003 |"), ID: "TASK-T03", Severity: queue.Error,
			Message: "TEST task depends on BUILD task TASK-003: tests come before the code they test"}.String(),
	}
	if got := findingTexts(p.Rounds[1].Findings); !reflect.DeepEqual(got, want2) || p.Rounds[1].Accepted {
		t.Errorf("round 2 findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want2, "\n"))
	}
	if !p.Rounds[2].Accepted || len(p.Rounds[2].Findings) != 0 {
		t.Errorf("round 3: accepted %v, findings %v", p.Rounds[2].Accepted, p.Rounds[2].Findings)
	}

	// Each retry's prompt is the first prompt with the findings added, verbatim, and
	// nothing else.
	p1, p2, p3 := r.promptOf(t, 1), r.promptOf(t, 2), r.promptOf(t, 3)
	if strings.Contains(p1, "rejected") {
		t.Error("the first prompt speaks of a rejection")
	}
	if want := withFindings(p1, strings.Join(want1, "\n")+"\n"); p2 != want {
		t.Errorf("round 2 prompt is not the first one with round 1's findings:\n%s", p2)
	}
	if want := withFindings(p1, strings.Join(want2, "\n")+"\n"); p3 != want {
		t.Errorf("round 3 prompt is not the first one with round 2's findings:\n%s", p3)
	}

	// The queue: what was there, byte for byte, then the tasks, then the matrix at 100%.
	after := r.read(t, ".orchestrator/task_queue.md")
	if !strings.HasPrefix(after, before) {
		t.Errorf("the queue's former bytes changed:\n%s", after)
	}
	if !strings.Contains(after, strings.TrimSpace(calcGood)) {
		t.Errorf("the queue does not hold the planner's tasks as written:\n%s", after)
	}
	if !strings.HasSuffix(after, "**Coverage: 100% (8/8)**\n") || p.Coverage == nil || p.Coverage.Percent != 100 {
		t.Errorf("coverage %+v; queue ends:\n%s", p.Coverage, after[max(0, len(after)-400):])
	}
	if want := []string{"TASK-T01", "TASK-T02", "TASK-T03", "TASK-001", "TASK-002", "TASK-003"}; !reflect.DeepEqual(p.New, want) {
		t.Errorf("new tasks %v, want %v", p.New, want)
	}
	if out, code := r.orch(t, nil, "validate"); code != 0 || out != "" {
		t.Errorf("validate after plan: exit %d\n%s", code, out)
	}
}

// TestPlanNeverRight: a planner that never gets it right halts after its budget (3 retries,
// 4 rounds) with a report of what is still wrong, exit 3, and the queue is untouched.
func TestPlanNeverRight(t *testing.T) {
	t.Parallel()
	r := newRepo(t, calcPlan)
	r.fixtures(t, map[string]string{"drop.md": calcDrop, "misorder.md": calcMisorder})
	qpath := filepath.Join(r.root, ".orchestrator", "task_queue.md")
	before, _ := os.ReadFile(qpath)
	info0, _ := os.Stat(qpath)
	out, code := r.orch(t, planner("fixtures/drop.md", "fixtures/misorder.md"), "plan", "--prd", "docs/requirements.md")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (halted)\n%s", code, out)
	}
	for _, want := range []string{"round 4 rejected", "# Halt: plan", "rejected 4 times (retries allowed: 3)",
		"TASK-T03: TEST task depends on BUILD task TASK-003", "TASK-003: BUILD task depends on no TEST task"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(r.root, ".orchestrator", "runs", "plan", "1", "5")); err == nil {
		t.Error("a fifth round ran")
	}
	after, _ := os.ReadFile(qpath)
	info1, _ := os.Stat(qpath)
	if !bytes.Equal(before, after) || !os.SameFile(info0, info1) || !info0.ModTime().Equal(info1.ModTime()) {
		t.Error("the queue file was touched")
	}
	reports, _ := filepath.Glob(filepath.Join(r.root, ".orchestrator", "reports", "plan-*.json"))
	if len(reports) != 1 {
		t.Fatalf("reports: %v", reports)
	}
	var rep struct {
		FinalState string          `json:"final_state"`
		StillWrong []queue.Finding `json:"still_wrong"`
		Rounds     []any           `json:"rounds"`
	}
	b, _ := os.ReadFile(reports[0])
	if err := decodeJSON(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FinalState != "Halt" || len(rep.Rounds) != 4 || len(rep.StillWrong) != 2 {
		t.Errorf("report: %s", b)
	}
}

// TestPlanExtendsQueue: an existing queue with completed tasks, hand formatting and a stale
// matrix is extended: the new tasks are appended before the matrix, every byte of what was
// there before the matrix stays, and a first output that reuses an existing ID is rejected.
func TestPlanExtendsQueue(t *testing.T) {
	t.Parallel()
	r := newRepo(t, calcPlan)
	existing := "# Task Queue\n\nHand-written notes   \n<!-- keep me -->\n\n## Project Commands\n\n| Command | Value |\n|---------|-------|\n| Test | go test ./... |\n\n" +
		"### TASK-T01: Tests for adding\n\n| Field      | Value     |\n|------------|-----------|\n| Status     | completed |\n| Category   | testing   |\n| Mode       | write     |\n| Test IDs   | UNIT-001, UNIT-002 |\n| Commit     | 8da04b2f7d53a26e92b2fe7033fc085867f5db3a |\n\n" +
		"### TASK-001: Adding\n\n| Field | Value |\n|-------|-------|\n| Status | completed |\n| Category | backend |\n| Depends On | TASK-T01 |\n| Retry-Count | 1 |\n| Commit | f6772e4a7d53a26e92b2fe7033fc085867f5db3a |\n\n" +
		"## Test Coverage Matrix\n\n| Category | Plan Count | Mapped Count | Missing IDs |\n|---|---|---|---|\n| unit | 2 | 2 | - |\n\n**Coverage: 100% (2/2)**\n"
	r.write(t, ".orchestrator/task_queue.md", existing)
	rest := testTask("TASK-T02", "UNIT-003, UNIT-004, INT-001") + testTask("TASK-T03", "INT-002, EDGE-001, EDGE-002") +
		buildTask("TASK-002", "TASK-T02", "TASK-001") + buildTask("TASK-003", "TASK-T03")
	reused := testTask("TASK-T01", "UNIT-003, UNIT-004, INT-001") + testTask("TASK-T03", "INT-002, EDGE-001, EDGE-002") +
		buildTask("TASK-002", "TASK-T01") + buildTask("TASK-003", "TASK-T03")
	r.fixtures(t, map[string]string{"reused.md": reused, "rest.md": rest})
	out, code := r.orch(t, planner("fixtures/reused.md", "fixtures/rest.md"), "plan", "--prd", "docs/requirements.md", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	p := decode(t, out)
	scratch := filepath.Join(r.root, ".orchestrator", "runs", "plan", "1", "scratch", "plan.md")
	queuePath := filepath.Join(r.root, ".orchestrator", "task_queue.md")
	want1 := []string{queue.Finding{Path: scratch, Line: 1, ID: "TASK-T01", Severity: queue.Error,
		Message: "duplicate ID: the queue has a task TASK-T01 already (" + queuePath + ":12); give new tasks new IDs"}.String()}
	if got := findingTexts(p.Rounds[0].Findings); !reflect.DeepEqual(got, want1) {
		t.Errorf("round 1 findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want1, "\n"))
	}
	if len(p.Rounds) != 2 || !p.Rounds[1].Accepted {
		t.Fatalf("rounds: %+v", p.Rounds)
	}
	// The prompt told the planner what the queue has and what is mapped already.
	if p1 := r.promptOf(t, 1); !strings.Contains(p1, "It has 2 tasks. Your tasks may depend on them; do not reuse their IDs:\nTASK-T01, TASK-001.") ||
		!strings.Contains(p1, "2 of its test IDs are in the queue's testing tasks already") || strings.Contains(p1, "- UNIT-001") {
		t.Errorf("first prompt:\n%s", p1)
	}
	after := r.read(t, ".orchestrator/task_queue.md")
	keep := existing[:strings.Index(existing, "## Test Coverage Matrix")]
	if !strings.HasPrefix(after, keep) {
		t.Errorf("the queue's former bytes changed:\n%s", after)
	}
	if got := after[len(keep):]; !strings.HasPrefix(got, strings.TrimSpace(rest)+"\n\n## Test Coverage Matrix") || !strings.HasSuffix(got, "**Coverage: 100% (8/8)**\n") {
		t.Errorf("after the former tasks:\n%s", got)
	}
	d, err := queue.Parse("q", []byte(after), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"TASK-T01": "completed", "TASK-001": "completed", "TASK-T02": "pending", "TASK-003": "pending"} {
		rec, _ := d.Record(id)
		if got := d.Task(rec).Status; got != want {
			t.Errorf("%s: Status %s, want %s", id, got, want)
		}
	}
}
