package plan_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// TestPlanRealSize plans a project of real size: 400 test IDs in six categories, 800 tasks
// (cmd/queuegen's queue and plan). The planner first drops 18 test IDs (the RFC's 18 of
// 76, here of 400), then maps one ID twice and makes a TEST task depend on a BUILD task,
// then gets it right. Each rejection names exactly what is wrong.
func TestPlanRealSize(t *testing.T) {
	t.Parallel()
	const n = 800
	var q, pl bytes.Buffer
	if err := queuegen.WriteQueue(&q, n); err != nil {
		t.Fatal(err)
	}
	if err := queuegen.WritePlan(&pl, n, 0); err != nil {
		t.Fatal(err)
	}
	// The planner's tasks are queuegen's records, without its header.
	good := q.String()[strings.Index(q.String(), "### "+queuegen.TaskID(1)):]
	r := newRepo(t, pl.String())

	// Drop the test IDs of 18 TEST tasks spread over the queue.
	drop := good
	var dropped []string
	for i := 1; len(dropped) < 18; i += 44 {
		id := queuegen.TestID(i)
		drop = strings.Replace(drop, "| Test IDs | "+id+" |", "| Test IDs | - |", 1)
		dropped = append(dropped, id)
	}
	// Map the first test ID twice, and make TEST task 5 depend on BUILD task 2.
	dup := strings.Replace(good, "| Test IDs | "+queuegen.TestID(3)+" |", "| Test IDs | "+queuegen.TestID(3)+", "+queuegen.TestID(1)+" |", 1)
	dup = strings.Replace(dup, "### "+queuegen.TaskID(5)+"\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | testing |\n| Mode | write |\n| Complexity | normal |\n| Priority | medium |\n| Depends On | - |",
		"### "+queuegen.TaskID(5)+"\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | testing |\n| Mode | write |\n| Complexity | normal |\n| Priority | medium |\n| Depends On | "+queuegen.TaskID(2)+" |", 1)
	if dup == good || strings.Count(dup, "| Depends On | "+queuegen.TaskID(2)+" |") != 1 {
		t.Fatal("the misordered queue was not made")
	}
	r.fixtures(t, map[string]string{"drop.md": drop, "dup.md": dup, "good.md": good})

	out, code := r.orch(t, planner("fixtures/drop.md", "fixtures/dup.md", "fixtures/good.md"), "plan", "--prd", "docs/requirements.md", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%.3000s", code, out)
	}
	p := decode(t, out)
	if len(p.Rounds) != 3 || !p.Rounds[2].Accepted {
		t.Fatalf("%d rounds, last accepted %v", len(p.Rounds), p.Rounds[len(p.Rounds)-1].Accepted)
	}
	plan, err := queue.ParsePlan(filepath.Join(r.root, "projectspec", "test-plan-output.json"), pl.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Len() != n/2 {
		t.Fatalf("plan of %d IDs", plan.Len())
	}
	var got1 []string
	for _, f := range p.Rounds[0].Findings {
		if f.Path != plan.Path || f.Severity != queue.Error || !strings.HasPrefix(f.Message, "not mapped") {
			t.Errorf("round 1: unexpected finding %s", f)
		}
		if test, _, _ := plan.Test(f.ID); test.Line != f.Line {
			t.Errorf("round 1: %s at line %d, the plan has it at %d", f.ID, f.Line, test.Line)
		}
		got1 = append(got1, f.ID)
	}
	// In plan order: by category, then by task.
	var want1 []string
	for _, c := range plan.Categories {
		for _, test := range c.Tests {
			for _, id := range dropped {
				if id == test.ID {
					want1 = append(want1, id)
				}
			}
		}
	}
	if !reflect.DeepEqual(got1, want1) {
		t.Errorf("round 1 reports %v, want the dropped %v", got1, want1)
	}
	var got2 []string
	for _, f := range p.Rounds[1].Findings {
		got2 = append(got2, f.ID+": "+f.Message)
	}
	want2 := []string{
		fmt.Sprintf("%s: test ID %s is also mapped by %s (line %d): map each test ID to one TEST task", queuegen.TaskID(3), queuegen.TestID(1), queuegen.TaskID(1), p.lineIn(t, r, 2, queuegen.TaskID(1))),
		fmt.Sprintf("%s: TEST task depends on BUILD task %s: tests come before the code they test", queuegen.TaskID(5), queuegen.TaskID(2)),
	}
	if !reflect.DeepEqual(got2, want2) {
		t.Errorf("round 2 findings:\n%s\nwant:\n%s", strings.Join(got2, "\n"), strings.Join(want2, "\n"))
	}
	if p.Coverage == nil || p.Coverage.Percent != 100 || p.Coverage.PlanCount != n/2 || len(p.New) != n {
		t.Errorf("coverage %+v, %d new tasks", p.Coverage, len(p.New))
	}
	// validate agrees (its only findings are warnings: queuegen's BUILD tasks name the
	// claude agent, which is not installed here).
	out, code = r.orch(t, nil, "validate")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.Contains(line, "warning:") {
			t.Errorf("validate after plan: %s", line)
		}
	}
	if code != 0 {
		t.Errorf("validate after plan: exit %d", code)
	}
}

// lineIn returns the line of task id's heading in round n's candidate queue.
func (p planOutput) lineIn(t *testing.T, r *repo, n int, id string) int {
	t.Helper()
	text := r.read(t, filepath.Join(".orchestrator", "runs", "plan", "1", fmt.Sprint(n), "task_queue.md"))
	return lineOf(t, text, "### "+id+"\n")
}
