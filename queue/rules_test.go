package queue

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// findingLines returns the findings as validate prints them.
func findingLines(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestCheckTDD(t *testing.T) {
	tests := []struct {
		name  string
		queue string
		want  string
	}{
		{"claudestrator order: T, then BUILD, then VERIFY, then QA",
			taskRecord("TASK-T01", "testing", "write", "", "") +
				taskRecord("TASK-001", "backend", "", "TASK-T01", "") +
				taskRecord("TASK-002", "frontend", "", "TASK-001", "") + // through another BUILD task
				taskRecord("TASK-V01", "test_verification", "", "TASK-T01, TASK-001", "") +
				taskRecord("TASK-003", "fullstack", "", "TASK-V01", "") + // through a VERIFY task
				taskRecord("TASK-99999", "qa", "", "TASK-V01", ""),
			""},
		{"a TEST task that depends on a BUILD task",
			taskRecord("TASK-001", "backend", "", "TASK-T00", "") +
				taskRecord("TASK-T00", "testing", "write", "", "") +
				taskRecord("TASK-T01", "testing", "write", "TASK-T00, TASK-001", ""),
			"task_queue.md:24: TASK-T01: TEST task depends on BUILD task TASK-001: tests come before the code they test\n"},
		{"a BUILD task with no TEST task",
			taskRecord("TASK-T01", "testing", "write", "", "") +
				taskRecord("TASK-001", "backend", "", "", "") +
				taskRecord("TASK-002", "backend", "", "TASK-001", ""),
			"task_queue.md:9: TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n" +
				"task_queue.md:22: TASK-002: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n"},
		{"devops, docs and TDD exempt are outside TDD",
			taskRecord("TASK-001", "devops", "", "", "") +
				taskRecord("TASK-002", "docs", "", "", "") +
				taskRecord("TASK-003", "backend", "", "", "", "| TDD | Exempt |") +
				taskRecord("TASK-T01", "testing", "write", "TASK-001, TASK-002, TASK-003", ""),
			""},
		{"a TDD-exempt TEST task may depend on BUILD tasks",
			taskRecord("TASK-T01", "testing", "write", "", "") +
				taskRecord("TASK-001", "backend", "", "TASK-T01", "") +
				taskRecord("TASK-T99", "testing", "", "TASK-001", "", "| TDD | exempt |"),
			""},
		{"testing with Mode verify is a VERIFY task, not a TEST task",
			taskRecord("TASK-T01", "testing", "verify", "", "") +
				taskRecord("TASK-001", "backend", "", "TASK-T01", ""),
			"task_queue.md:15: TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n"},
		{"a dependency that does not exist leads nowhere",
			taskRecord("TASK-001", "backend", "", "TASK-T01", ""),
			"task_queue.md:7: TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n"},
		{"a cycle of BUILD tasks",
			taskRecord("TASK-001", "backend", "", "TASK-002", "") +
				taskRecord("TASK-002", "backend", "", "TASK-001", ""),
			"task_queue.md:7: TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n" +
				"task_queue.md:15: TASK-002: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n"},
		{"dependencies from the prose line",
			"### TASK-T01\n\n| Field | Value |\n|-------|-------|\n| Category | testing |\n| Mode | write |\n\n" +
				"### TASK-001\n\n| Field | Value |\n|-------|-------|\n| Category | backend |\n\n**Dependencies:** TASK-T01\n",
			""},
		{"without a dependency row, the finding is at the heading",
			"### TASK-001\n\n| Field | Value |\n|-------|-------|\n| Category | backend |\n",
			"task_queue.md:1: TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := queueOf(t, tt.queue)
			if got := findingLines(CheckTDD(d)); got != tt.want {
				t.Errorf("got\n%swant\n%s\nqueue:\n%s", got, tt.want, numbered(tt.queue))
			}
		})
	}
}

// numbered returns text with line numbers, for failure messages.
func numbered(text string) string {
	var b strings.Builder
	for i, l := range strings.Split(text, "\n") {
		fmt.Fprintf(&b, "%3d %s\n", i+1, l)
	}
	return b.String()
}

func TestCheckCoverage(t *testing.T) {
	plan := planOf(t, "{\"tests\": {\n"+
		"\"unit\": [{\"id\": \"UNIT-001\"}, {\"id\": \"UNIT-002\"}, {\"id\": \"UNIT-003\"}],\n"+
		"\"e2e\": [],\n"+
		"\"security\": [\n{\"id\": \"SEC-001\"}]}}")
	matrix := func(unitMapped int, unitMissing string, secMapped int, secMissing, total string) string {
		return "## Test Coverage Matrix\n\n| Category | Plan Count | Mapped Count | Missing IDs |\n|----------|------------|--------------|-------------|\n" +
			fmt.Sprintf("| unit | 3 | %d | %s |\n| e2e | 0 | 0 | - |\n| security | 1 | %d | %s |\n\n**Coverage: %s**\n", unitMapped, unitMissing, secMapped, secMissing, total)
	}
	tests := []struct {
		name  string
		queue string
		want  string
	}{
		{"complete",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-001, UNIT-002") +
				taskRecord("TASK-T02", "testing", "write", "", "[UNIT-003, SEC-001]") + "\n" +
				matrix(3, "-", 1, "-", "100% (4/4)"),
			""},
		{"unmapped IDs are reported in the plan, in plan order; VERIFY and BUILD tasks map nothing",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-002") +
				taskRecord("TASK-V01", "test_verification", "", "TASK-T01", "UNIT-001, UNIT-002, UNIT-003, SEC-001") +
				taskRecord("TASK-001", "backend", "", "TASK-T01", "UNIT-001") + "\n" +
				matrix(1, "UNIT-001, UNIT-003", 0, "SEC-001", "25% (1/4)"),
			"plan.json:2: UNIT-001: not mapped: no TEST task lists it in Test IDs (unit)\n" +
				"plan.json:2: UNIT-003: not mapped: no TEST task lists it in Test IDs (unit)\n" +
				"plan.json:5: SEC-001: not mapped: no TEST task lists it in Test IDs (security)\n"},
		{"an ID mapped twice is an error at the second task; twice in one task is not",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-001, UNIT-002, UNIT-002") +
				taskRecord("TASK-T02", "testing", "write", "", "UNIT-003, SEC-001, UNIT-001") +
				taskRecord("TASK-T03", "testing:integration", "", "", "UNIT-001") + "\n" +
				matrix(3, "-", 1, "-", "100% (4/4)"),
			"task_queue.md:17: TASK-T02: test ID UNIT-001 is also mapped by TASK-T01 (line 1): map each test ID to one TEST task\n" +
				"task_queue.md:25: TASK-T03: test ID UNIT-001 is also mapped by TASK-T01 (line 1): map each test ID to one TEST task\n"},
		{"an ID that is not in the plan is a warning, in any task",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-001, UNIT-002, UNIT-003, SEC-001, UNIT-999") +
				taskRecord("TASK-V01", "test_verification", "", "TASK-T01", "UNIT-001, ...") + "\n" +
				matrix(3, "-", 1, "-", "100% (4/4)"),
			"task_queue.md:8: TASK-T01: warning: test ID UNIT-999 is not in the test plan\n" +
				"task_queue.md:17: TASK-V01: warning: test ID ... is not in the test plan\n"},
		{"a stale matrix is reported at its first wrong line",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-001, UNIT-002, UNIT-003, SEC-001") + "\n" +
				matrix(3, "-", 0, "SEC-001", "75% (3/4)"),
			"task_queue.md:17: coverage matrix is stale; run `orchestrator coverage --write`\n"},
		{"a matrix under another heading level is stale at its heading",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-001, UNIT-002, UNIT-003, SEC-001") + "\n#" +
				matrix(3, "-", 1, "-", "100% (4/4)"),
			"task_queue.md:11: coverage matrix is stale; run `orchestrator coverage --write`\n"},
		{"a missing matrix is reported at the end of the file",
			taskRecord("TASK-T01", "testing", "write", "", "UNIT-001, UNIT-002, UNIT-003, SEC-001"),
			"task_queue.md:9: no coverage matrix; run `orchestrator coverage --write`\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := queueOf(t, tt.queue)
			if got := findingLines(CheckCoverage(d, plan)); got != tt.want {
				t.Errorf("got\n%swant\n%s\nqueue:\n%s", got, tt.want, numbered(tt.queue))
			}
		})
	}
}

// TestCheckOrder checks that Check gives every kind of finding, the queue's in line order
// and then the plan's, with the right severities.
func TestCheckOrder(t *testing.T) {
	plan := planOf(t, `{"tests": {"unit": [{"id": "UNIT-001"}, {"id": "UNIT-002"}]}}`)
	q := taskRecord("TASK-T01", "testing", "write", "TASK-001", "UNIT-001, UNIT-404") +
		taskRecord("TASK-001", "backend", "", "TASK-002", "", "| Retry-Count | many |") +
		taskRecord("TASK-002", "backend", "", "TASK-001, TASK-404", "")
	d := queueOf(t, q)
	got := Check(d, plan)
	want := "task_queue.md:8: TASK-T01: TEST task depends on BUILD task TASK-001: tests come before the code they test\n" +
		"task_queue.md:9: TASK-T01: warning: test ID UNIT-404 is not in the test plan\n" +
		"task_queue.md:17: TASK-001: dependency cycle: TASK-001 -> TASK-002 -> TASK-001\n" +
		"task_queue.md:17: TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n" +
		"task_queue.md:18: TASK-001: Retry-Count: \"many\" is not a non-negative integer\n" +
		"task_queue.md:26: TASK-002: depends on TASK-404, which does not exist\n" +
		"task_queue.md:26: TASK-002: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)\n" +
		"task_queue.md:27: no coverage matrix; run `orchestrator coverage --write`\n" +
		"plan.json:1: UNIT-002: not mapped: no TEST task lists it in Test IDs (unit)\n"
	if findingLines(got) != want {
		t.Errorf("got\n%swant\n%s\nqueue:\n%s", findingLines(got), want, numbered(q))
	}
	for _, f := range got {
		if (f.Severity == Warning) != strings.Contains(f.Message, "not in the test plan") {
			t.Errorf("severity %s for %s", f.Severity, f)
		}
	}
	if fs := Check(d, nil); strings.Contains(findingLines(fs), "coverage") || strings.Contains(findingLines(fs), "plan") {
		t.Errorf("without a plan, coverage is checked:\n%s", findingLines(fs))
	}
}

// corpusQueue builds a task queue from claudestrator's own examples in
// decomposition_agent.md: the task queue skeleton of PHASE 4 (with TASK-001, a backend
// task), TASK-T01 in the test task format of PHASE 2C (testing, Mode write, Test IDs, a
// **Dependencies:** prose line) or of D.6, and TASK-V01 of D.4b (test_verification). edit
// rewrites parts of the examples.
func corpusQueue(t *testing.T, t01Marker string, edit map[string]string) string {
	t.Helper()
	q := string(fencedExample(t, "prompts/decomposition_agent.md", "Create `.orchestrator/task_queue.md` with this exact format:"))
	q += "\n" + string(fencedExample(t, "prompts/decomposition_agent.md", t01Marker))
	q += "\n" + string(fencedExample(t, "prompts/decomposition_agent.md", "**TASK-V## Format:**"))
	for old, repl := range edit {
		if !strings.Contains(q, old) {
			t.Fatalf("corpus example has no %q", old)
		}
		q = strings.Replace(q, old, repl, 1)
	}
	return q
}

// TestClaudestratorShapes validates queues made of claudestrator's example tasks and checks
// the exact findings.
func TestClaudestratorShapes(t *testing.T) {
	plan := planOf(t, "{\"tests\": {\"unit\": [\n{\"id\": \"UNIT-001\"}, {\"id\": \"UNIT-002\"}, {\"id\": \"UNIT-003\"}]}}")
	// TASK-001 is implemented after its tests, as PHASE 2B's example ordering says.
	tddOrder := map[string]string{"**Dependencies:** None\n\n**Notes:** Use existing User model": "**Dependencies:** TASK-T01\n\n**Notes:** Use existing User model"}
	const noTest = "BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)"
	tests := []struct {
		name      string
		t01Marker string
		edit      map[string]string
		plan      *Plan
		write     bool // write the coverage matrix first
		want      string
	}{
		{"as written, without a plan", "PHASE 2C: TEST TASK FORMAT", nil, nil, false,
			// TASK-001 says "**Dependencies:** None"; TASK-V01 names a TASK-002 that the
			// example leaves out.
			"task_queue.md:38: TASK-001: " + noTest + "\n" +
				"task_queue.md:77: TASK-V01: depends on TASK-002, which does not exist\n"},
		{"TASK-001 depends on TASK-T01, with a plan", "PHASE 2C: TEST TASK FORMAT", tddOrder, plan, false,
			"task_queue.md:77: TASK-V01: depends on TASK-002, which does not exist\n" +
				"task_queue.md:79: TASK-V01: warning: test ID ... is not in the test plan\n" +
				"task_queue.md:93: no coverage matrix; run `orchestrator coverage --write`\n"},
		{"the same after coverage --write", "PHASE 2C: TEST TASK FORMAT", tddOrder, plan, true,
			"task_queue.md:77: TASK-V01: depends on TASK-002, which does not exist\n" +
				"task_queue.md:79: TASK-V01: warning: test ID ... is not in the test plan\n"},
		{"D.6's TASK-T01 depends on the BUILD tasks it tests", "### D.6 Test Task Format", nil, plan, true,
			"task_queue.md:38: TASK-001: " + noTest + "\n" +
				"task_queue.md:52: TASK-T01: warning: test ID UNIT-019 is not in the test plan\n" +
				"task_queue.md:52: TASK-T01: warning: test ID UNIT-023 is not in the test plan\n" +
				"task_queue.md:64: TASK-T01: depends on TASK-002, which does not exist\n" +
				"task_queue.md:64: TASK-T01: TEST task depends on BUILD task TASK-001: tests come before the code they test\n" +
				"task_queue.md:79: TASK-V01: depends on TASK-002, which does not exist\n" +
				"task_queue.md:81: TASK-V01: warning: test ID ... is not in the test plan\n" +
				"plan.json:2: UNIT-003: not mapped: no TEST task lists it in Test IDs (unit)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := corpusQueue(t, tt.t01Marker, tt.edit)
			d := queueOf(t, q)
			if got := strings.Join(d.IDs(), " "); got != "TASK-001 TASK-T01 TASK-V01" {
				t.Fatalf("records %s", got)
			}
			if tt.write {
				src, err := Apply(d, ReplaceSection{Title: CoverageTitle, Text: Coverage(d, tt.plan).Render()})
				if err != nil {
					t.Fatal(err)
				}
				q = string(src)
				d = queueOf(t, q)
			}
			if got := findingLines(Check(d, tt.plan)); got != tt.want {
				t.Errorf("got\n%swant\n%s\nqueue:\n%s", got, tt.want, numbered(q))
			}
		})
	}
}

// TestReadyOrder checks the order of `orchestrator next` (SPEC §6.2): tasks of open critical
// issues first, then TEST, VERIFY, BUILD and QA tasks, then file order; tasks that are not
// pending, are halted, or wait for a dependency are not ready.
func TestReadyOrder(t *testing.T) {
	task := func(id, category, mode, status, deps string, extra ...string) string {
		r := taskRecord(id, category, mode, deps, "", extra...)
		return strings.Replace(r, "| Status | pending |", "| Status | "+status+" |", 1)
	}
	q := task("TASK-Q01", "qa", "", "pending", "") +
		task("TASK-001", "backend", "", "pending", "") +
		task("TASK-V01", "test_verification", "", "pending", "TASK-000") +
		task("TASK-000", "backend", "", "completed", "") +
		task("TASK-T02", "testing", "write", "pending", "TASK-S01") +
		task("TASK-S01", "docs", "", "skipped", "") +
		task("TASK-002", "frontend", "", "pending", "", "| Source Issue | ISSUE-1 |") +
		task("TASK-T01", "testing", "write", "pending", "") +
		task("TASK-003", "backend", "", "pending", "TASK-001") + // waits for TASK-001
		task("TASK-004", "backend", "", "pending", "", "| Halted | true |") +
		task("TASK-005", "backend", "", "in_progress", "") +
		task("TASK-006", "backend", "", "failed", "") +
		task("TASK-007", "fullstack", "", "pending", "") +
		task("TASK-T03", "testing", "write", "pending", "", "| Remediation | ISSUE-3 |") +
		task("TASK-V02", "testing", "verify", "pending", "")
	issues, err := Parse("issue_queue.md", []byte(
		"### ISSUE-1\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Priority | critical |\n\n"+
			"### ISSUE-2\n\n| Field | Value |\n|---|---|\n| Status | in_progress |\n| Priority | critical |\n| Task Ref | TASK-007 |\n\n"+
			"### ISSUE-3\n\n| Field | Value |\n|---|---|\n| Status | completed |\n| Priority | critical |\n| Source Task | TASK-Q01 |\n\n"+
			"### ISSUE-4\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Priority | high |\n| Task Ref | TASK-001 |\n"), Issues)
	if err != nil {
		t.Fatal(err)
	}
	d := queueOf(t, q)
	var got []string
	for _, r := range Ready(d, issues, map[string]bool{"TASK-T01": true}) {
		got = append(got, r.ID+"/"+r.Kind.String())
	}
	want := "TASK-002/BUILD TASK-007/BUILD TASK-T02/TEST TASK-T03/TEST TASK-V01/VERIFY TASK-V02/VERIFY TASK-001/BUILD TASK-Q01/QA"
	if strings.Join(got, " ") != want {
		t.Errorf("ready:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	got = got[:0]
	for _, r := range Ready(d, nil, nil) {
		got = append(got, r.ID)
	}
	if want := "TASK-T02 TASK-T01 TASK-T03 TASK-V01 TASK-V02 TASK-001 TASK-002 TASK-007 TASK-Q01"; strings.Join(got, " ") != want {
		t.Errorf("ready without issues:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestReadyAfter checks the ready set as if some tasks had other statuses: the loop picks
// the next tasks in the same write that records a finished one. A task whose dependency
// the change completes becomes ready, with the status it has there; one the change takes
// out of pending is not; a dependency on no task is never done.
func TestReadyAfter(t *testing.T) {
	q := taskRecord("TASK-001", "backend", "", "", "") +
		taskRecord("TASK-002", "backend", "", "TASK-001", "") +
		taskRecord("TASK-T01", "testing", "write", "TASK-001", "") +
		taskRecord("TASK-003", "backend", "", "TASK-404", "") +
		taskRecord("TASK-004", "backend", "", "", "")
	d := queueOf(t, q)
	ids := func(ts []Task) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID+"/"+t.Status)
		}
		return strings.Join(out, " ")
	}
	if got, want := ids(Ready(d, nil, nil)), "TASK-001/pending TASK-004/pending"; got != want {
		t.Errorf("ready: got %s, want %s", got, want)
	}
	changed := map[string]string{"TASK-001": StatusCompleted, "TASK-004": StatusInProgress}
	if got, want := ids(ReadyAfter(d, nil, nil, changed)), "TASK-T01/pending TASK-002/pending"; got != want {
		t.Errorf("ready after %v: got %s, want %s", changed, got, want)
	}
	changed = map[string]string{"TASK-004": StatusPending, "TASK-001": StatusSkipped}
	if got, want := ids(ReadyAfter(d, nil, map[string]bool{"TASK-002": true}, changed)), "TASK-T01/pending TASK-004/pending"; got != want {
		t.Errorf("ready after %v with TASK-002 running: got %s, want %s", changed, got, want)
	}
}

// longDeps is a list of 40 dependencies with repeats, as "ALL build tasks" can be.
var longDeps, longDepsWant = func() (string, []string) {
	var list, want []string
	for i := 0; i < 40; i++ {
		list = append(list, fmt.Sprintf("TASK-%03d", i), fmt.Sprintf("TASK-%03d", i/2))
	}
	seen := map[string]bool{}
	for _, id := range list {
		if !seen[id] {
			seen[id] = true
			want = append(want, id)
		}
	}
	return strings.Join(list, ", "), want
}()

// TestDepsRowAndProse checks that dependencies come from the Depends On or Dependencies row
// and from the **Dependencies:** prose line, in claudestrator's shapes.
func TestDepsRowAndProse(t *testing.T) {
	tests := []struct {
		name, record string
		want         string
	}{
		{"Depends On row", "| Depends On | TASK-T01, TASK-001 |\n", "TASK-T01 TASK-001"},
		{"Dependencies row, bracketed", "| Dependencies | [TASK-T01, TASK-001] |\n", "TASK-T01 TASK-001"},
		{"depends-on spelled otherwise", "| depends_on | TASK-T01 |\n", "TASK-T01"},
		{"prose line", "\n**Dependencies:** TASK-001, TASK-002\n", "TASK-001 TASK-002"},
		{"prose Depends On", "\n**Depends On:** TASK-001\n", "TASK-001"},
		{"prose None", "\n**Dependencies:** None\n", ""},
		{"empty row", "| Depends On | - |\n", ""},
		{"row and prose the same, as claudestrator writes both", "| Depends On | TASK-T01 |\n\n**Dependencies:** TASK-T01\n", "TASK-T01"},
		{"repeated IDs once, in order", "| Depends On | TASK-T01, TASK-001, TASK-T01 |\n| Dependencies | TASK-001, TASK-003 |\n", "TASK-T01 TASK-001 TASK-003"},
		{"a long list", "| Depends On | " + longDeps + " |\n", strings.Join(longDepsWant, " ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "### TASK-002\n\n| Field | Value |\n|-------|-------|\n| Category | backend |\n" + tt.record
			d := queueOf(t, src)
			r, _ := d.Record("TASK-002")
			if got := strings.Join(d.Task(r).Deps, " "); got != tt.want {
				t.Errorf("deps = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCyclesLongRing checks that a dependency cycle through 200,000 tasks is found and named
// whole: the search is iterative and linear, so neither the stack nor the time explodes.
func TestCyclesLongRing(t *testing.T) {
	const n = 200000
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("TASK-%06d", i), Deps: []string{fmt.Sprintf("TASK-%06d", (i+1)%n)}}
	}
	cycles := Cycles(tasks)
	if len(cycles) != 1 || len(cycles[0]) != n || cycles[0][0] != "TASK-000000" || cycles[0][1] != "TASK-000001" {
		t.Fatalf("got %d cycles", len(cycles))
	}
}

// BenchmarkCycles shows that cycle detection grows linearly with tasks and dependencies: a
// chain, a ring through every task, and a dense graph with many small cycles; the -walk
// variants time the search alone, on a graph already made.
func BenchmarkCycles(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, shape := range []string{"chain", "ring", "dense"} {
			tasks := make([]Task, n)
			for i := range tasks {
				tasks[i].ID = fmt.Sprintf("TASK-%06d", i)
				switch shape {
				case "chain":
					if i > 0 {
						tasks[i].Deps = []string{tasks[i-1].ID}
					}
				case "ring":
					tasks[i].Deps = []string{fmt.Sprintf("TASK-%06d", (i+1)%n)}
				case "dense":
					for _, k := range []int{1, 2, 3, 5, 8} {
						tasks[i].Deps = append(tasks[i].Deps, fmt.Sprintf("TASK-%06d", (i/10)*10+(i+k)%10))
					}
				}
			}
			b.Run(fmt.Sprintf("%s/tasks=%d", shape, n), func(b *testing.B) {
				for b.Loop() {
					Cycles(tasks)
				}
			})
			// The walk alone, on a graph already made: making it looks every ID up in a map,
			// which outgrows the processor's caches at 100,000 tasks.
			g := newGraph(tasks, nil)
			b.Run(fmt.Sprintf("%s-walk/tasks=%d", shape, n), func(b *testing.B) {
				for b.Loop() {
					cycles(tasks, g)
				}
			})
		}
	}
}

// TestCheckLargeQueue runs Check on a queue large enough for it to work on two cores and
// compares its findings with the rules run one by one.
func TestCheckLargeQueue(t *testing.T) {
	src := string(genQueue(t, 3*parallelTasks))
	for old, repl := range map[string]string{
		"| Depends On | TASK-01999 |": "| Depends On | TASK-01999, TASK-99999 |",
		"### TASK-04000\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Complexity | normal |\n| Priority | medium |\n| Depends On | TASK-03999 |": "### TASK-04000\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Complexity | normal |\n| Priority | medium |\n| Depends On | TASK-04002 |",
		"### TASK-04002\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Complexity | normal |\n| Priority | medium |\n| Depends On | TASK-04001 |": "### TASK-04002\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Complexity | normal |\n| Priority | medium |\n| Depends On | TASK-04000 |",
		"| Test IDs | SEC-00007 |": "| Test IDs | SEC-00007, UNIT-00001 |",
		"### TASK-05000\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |": "### TASK-05000\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Auto-Retry | maybe |",
	} {
		if !strings.Contains(src, old) {
			t.Fatalf("generated queue has no %q", old)
		}
		src = strings.Replace(src, old, repl, 1)
	}
	d := queueOf(t, src)
	var planText strings.Builder
	if err := queuegen.WritePlan(&planText, 3*parallelTasks, 3); err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, planText.String())
	got := findingLines(Check(d, plan))
	var want []Finding
	want = append(want, CheckStructure(d)...)
	want = append(want, CheckTDD(d)...)
	want = append(want, CheckCoverage(d, plan)...)
	sortedLines := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if sortedLines(got) != sortedLines(findingLines(want)) {
		t.Errorf("Check:\n%s\nthe rules one by one:\n%s", got, findingLines(want))
	}
	for _, want := range []string{
		"TASK-02000: depends on TASK-99999, which does not exist",
		"TASK-04000: dependency cycle: TASK-04000 -> TASK-04002 -> TASK-04000",
		"TASK-04000: BUILD task depends on no TEST task",
		"TASK-00007: test ID UNIT-00001 is also mapped by TASK-00001",
		"TASK-05000: Auto-Retry: \"maybe\" is not true or false",
		"UNIT-X00002: not mapped",
		"no coverage matrix",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in\n%s", want, got)
		}
	}
}
