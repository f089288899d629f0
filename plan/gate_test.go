package plan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
)

const gatePlan = `{"tests": {"unit": [{"id": "UNIT-001"}, {"id": "UNIT-002"}]}}`

const gateTasks = "### TASK-T01: Tests\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | testing |\n| Mode | write |\n| Test IDs | UNIT-001, UNIT-002 |\n\n" +
	"### TASK-001: Code\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | backend |\n| Depends On | TASK-T01 |\n"

// TestJudgeKeepsTheQueue: whatever the queue's shape (CRLF, no final newline, a matrix, a
// task after the matrix), the candidate holds every byte of it before the matrix, then the
// new tasks in the queue's line endings, then the matrix; and an output that passes once
// passes again on the candidate's bytes with nothing new to add.
func TestJudgeKeepsTheQueue(t *testing.T) {
	plan, err := queue.ParsePlan("plan.json", []byte(gatePlan))
	if err != nil {
		t.Fatal(err)
	}
	matrix := "## Test Coverage Matrix\n\nold\n"
	tests := []struct {
		name, queue, scratch string
		keep                 string // the prefix of the queue that stays
	}{
		{"empty", "", gateTasks, ""},
		{"header only", "# Task Queue\n", gateTasks, "# Task Queue\n"},
		{"no final newline", "# Task Queue\n\nnotes", gateTasks, "# Task Queue\n\nnotes"},
		{"CRLF queue, LF tasks", "# Task Queue\r\n\r\n", gateTasks, "# Task Queue\r\n\r\n"},
		{"LF queue, CRLF tasks", "# Task Queue\n\n", strings.ReplaceAll(gateTasks, "\n", "\r\n"), "# Task Queue\n\n"},
		{"stale matrix", "# Task Queue\n\n" + matrix, gateTasks, "# Task Queue\n\n"},
		{"tasks with prose and other headings", "# Q\n", "# My plan\n\nSome words.\n\n## Tasks\n\n" + gateTasks + "\n## Test Coverage Matrix\n\nmine\n", "# Q\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing, err := queue.Parse("task_queue.md", []byte(tt.queue), queue.Tasks)
			if err != nil {
				t.Fatal(err)
			}
			v := Judge(existing, "plan.md", []byte(tt.scratch), plan, "candidate.md")
			if !v.OK() {
				t.Fatalf("rejected: %s", v.Text())
			}
			c := string(v.Candidate)
			if !strings.HasPrefix(c, tt.keep) {
				t.Errorf("candidate does not start with the queue's bytes:\n%q", c)
			}
			crlf := strings.Contains(tt.queue, "\r\n")
			if strings.Contains(c[len(tt.keep):], "\r\n") != crlf {
				t.Errorf("line endings of the added text (queue CRLF %v):\n%q", crlf, c)
			}
			if strings.Contains(c, "mine") || strings.Contains(c, "Some words") || strings.Count(c, "## Test Coverage Matrix") != 1 {
				t.Errorf("only the records are taken, and one matrix is written:\n%s", c)
			}
			if !strings.Contains(c, "**Coverage: 100% (2/2)**") {
				t.Errorf("matrix:\n%s", c)
			}
			// Judged again on the candidate, the same tasks are copies of the queue's:
			// nothing is new, and nothing changes.
			again, err := queue.Parse("task_queue.md", v.Candidate, queue.Tasks)
			if err != nil {
				t.Fatal(err)
			}
			if v2 := Judge(again, "plan.md", []byte(tt.scratch), plan, "candidate.md"); !v2.OK() || len(v2.New) != 0 || !bytes.Equal(v2.Candidate, v.Candidate) {
				t.Errorf("the same tasks judged again: OK %v, new %v, candidate changed %v", v2.OK(), v2.New, !bytes.Equal(v2.Candidate, v.Candidate))
			}
		})
	}
}

// TestJudgeRejects: the scratch file's own problems are reported at its lines; the
// candidate's at the candidate's.
func TestJudgeRejects(t *testing.T) {
	plan, err := queue.ParsePlan("plan.json", []byte(gatePlan))
	if err != nil {
		t.Fatal(err)
	}
	existing, err := queue.Parse("task_queue.md", []byte("# Q\n\n### TASK-900: Old\n\n| Field | Value |\n|---|---|\n| Status | completed |\n| Category | docs |\n"), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, scratch string
		want          []string
		candidate     bool
	}{
		{"empty", "", []string{"plan.md:1: no tasks: write each task as a heading that starts with its ID, followed by a | Field | Value | table"}, false},
		{"not text", "### TASK-1\x00", []string{"plan.md:1: not a text file (a NUL byte)"}, false},
		{"no field table", "### TASK-T01: Tests\n\nprose only\n", []string{"plan.md:1: TASK-T01: record has no field table (| Field | Value |)"}, false},
		{"reused ID", strings.Replace(gateTasks, "TASK-001", "TASK-900", -1),
			[]string{"plan.md:10: TASK-900: duplicate ID: the queue has a task TASK-900 already (task_queue.md:3); give new tasks new IDs"}, false},
		{"dangling and cycle", strings.Replace(gateTasks, "| Depends On | TASK-T01 |", "| Depends On | TASK-T01, TASK-002 |", 1) +
			"\n### TASK-002: More\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | backend |\n| Depends On | TASK-T01, TASK-003 |\n\n### TASK-003: Loop\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | backend |\n| Depends On | TASK-002 |\n",
			[]string{"candidate.md:33: TASK-002: dependency cycle: TASK-002 -> TASK-003 -> TASK-002"}, true},
		{"bad values", strings.Replace(gateTasks, "| Category | backend |", "| Category | backend |\n| Retry-Count | many |", 1),
			[]string{"plan.md:16: TASK-001: Retry-Count is \"many\": a new task leaves the fields the orchestrator keeps empty",
				"candidate.md:25: TASK-001: Retry-Count: \"many\" is not a non-negative integer"}, true},
		{"unmapped and twice", strings.Replace(gateTasks, "UNIT-001, UNIT-002", "UNIT-001", 1) +
			"\n### TASK-T02: More tests\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | testing |\n| Mode | write |\n| Test IDs | UNIT-001, UNIT-404 |\n",
			[]string{"candidate.md:34: TASK-T02: test ID UNIT-001 is also mapped by TASK-T01 (line 10): map each test ID to one TEST task",
				"candidate.md:34: TASK-T02: warning: test ID UNIT-404 is not in the test plan",
				"plan.json:1: UNIT-002: not mapped: no TEST task lists it in Test IDs (unit)"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(existing, "plan.md", []byte(tt.scratch), plan, "candidate.md")
			if got := strings.Split(strings.TrimSpace(v.Text()), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s\ncandidate:\n%s", v.Text(), strings.Join(tt.want, "\n"), v.Candidate)
			}
			if v.OK() || (v.Candidate != nil) != tt.candidate {
				t.Errorf("OK %v, candidate %v", v.OK(), v.Candidate != nil)
			}
			if v.Candidate != nil && !bytes.HasPrefix(v.Candidate, existing.Src) {
				t.Error("the candidate changed the queue's bytes")
			}
		})
	}
}

// TestPreCheck: unmapped plan IDs and a stale matrix are the planner's and plan's work;
// other errors of the queue are not.
func TestPreCheck(t *testing.T) {
	plan, _ := queue.ParsePlan("plan.json", []byte(gatePlan))
	ok, _ := queue.Parse("q.md", []byte("# Q\n\n## Test Coverage Matrix\n\nstale\n"), queue.Tasks)
	if fs, err := PreCheck(ok, plan); err != nil || len(fs) != 0 {
		t.Errorf("PreCheck = %v, %v; want nothing", fs, err)
	}
	bad, _ := queue.Parse("q.md", []byte("# Q\n\n### TASK-001: X\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | backend |\n"), queue.Tasks)
	fs, err := PreCheck(bad, plan)
	if err != nil || len(fs) != 1 || !strings.Contains(fs[0].Message, "BUILD task depends on no TEST task") {
		t.Errorf("PreCheck = %v, %v", fs, err)
	}
}

// TestJudgeCopiedQueue: a planner that writes the whole queue, its tasks as they are plus
// new ones, passes with the new ones only; a copy with a changed field is refused.
func TestJudgeCopiedQueue(t *testing.T) {
	plan, _ := queue.ParsePlan("plan.json", []byte(gatePlan))
	old := "# Q\n\n### TASK-900: Old\n\n| Field | Value |\n|---|---|\n| Status | completed |\n| Category | docs |\n"
	existing, err := queue.Parse("task_queue.md", []byte(old), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(existing, "plan.md", []byte(old+"\n"+gateTasks), plan, "candidate.md")
	if !v.OK() || strings.Join(v.New, " ") != "TASK-T01 TASK-001" || strings.Count(string(v.Candidate), "TASK-900: Old") != 1 {
		t.Errorf("copy of the queue plus new tasks: OK %v, new %v\n%s%s", v.OK(), v.New, v.Text(), v.Candidate)
	}
	changed := strings.Replace(old, "completed", "pending", 1) + "\n" + gateTasks
	if v := Judge(existing, "plan.md", []byte(changed), plan, "candidate.md"); v.OK() || !strings.Contains(v.Text(), "plan.md:3: TASK-900: duplicate ID") {
		t.Errorf("a changed copy: OK %v\n%s", v.OK(), v.Text())
	}
}
