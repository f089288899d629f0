package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cheatTask is a task a cheating planner adds to the queue itself: already completed, so
// that nothing is ever built.
const cheatTask = "\n### TASK-999: Everything\n\n| Field | Value |\n|-------|-------|\n| Status | completed |\n| Category | backend |\n"

// TestPlanCheats runs planners that cheat beside honest work: each writes a valid scratch
// file, and then writes the queue itself or edits another file, or fills its tasks with
// state only the orchestrator writes. Without a sandbox, a write outside the scratch file is
// refused after the fact (the queue put back, the run halted); in the sandbox it fails.
func TestPlanCheats(t *testing.T) {
	t.Parallel()
	appendQueue := "printf '" + strings.ReplaceAll(cheatTask, "\n", `\n`) + "' >> .orchestrator/task_queue.md"
	tests := []struct {
		name     string
		sandbox  string // config sandbox
		fixture  string
		sh       string
		wantCode int
		want     []string // in the output
		wantLog  []string // in the planner's log
		readme   string   // README.md after, "" for unchanged
	}{
		{name: "writes the queue without a sandbox", sandbox: "off", fixture: calcGood, sh: appendQueue, wantCode: 3,
			want: []string{"the planner changed files other than its scratch file (.orchestrator/task_queue.md): its output is refused"}},
		{name: "replaces the queue without a sandbox", sandbox: "off", fixture: calcGood,
			sh: "printf '# Task Queue\\n" + strings.ReplaceAll(cheatTask, "\n", `\n`) + "' > .orchestrator/q.tmp && mv .orchestrator/q.tmp .orchestrator/task_queue.md", wantCode: 3,
			want: []string{"(.orchestrator/task_queue.md): its output is refused"}},
		{name: "edits another file without a sandbox", sandbox: "off", fixture: calcGood, sh: "echo hacked >> README.md", wantCode: 3,
			want: []string{"(README.md): its output is refused"}, readme: "# calc\nhacked\n"},
		{name: "writes the queue in the sandbox", sandbox: "bwrap", fixture: calcGood, sh: appendQueue + "; echo hacked >> README.md", wantCode: 0,
			want: []string{"6 tasks appended"}, wantLog: []string{"Read-only file system", "my script failed"}},
		{name: "puts a link to the queue in place of its scratch file", sandbox: "auto", fixture: calcGood, wantCode: 3,
			sh:   `ln -sf "$PWD/.orchestrator/task_queue.md" "$ORCHESTRATOR_PLAN_FILE"`,
			want: []string{"is not a regular file (L---------): write the tasks into it"}},
		{name: "marks its tasks completed", sandbox: "off", wantCode: 3,
			fixture: strings.Replace(calcGood, "| Status | pending |\n| Category | backend |", "| Status | completed |\n| Category | backend |\n| Commit | 8da04b2f7d53a26e92b2fe7033fc085867f5db3a |", 1),
			want: []string{"TASK-001: a new task's Status is pending, not completed: the orchestrator records progress",
				"TASK-001: Commit is \"8da04b2f7d53a26e92b2fe7033fc085867f5db3a\": a new task leaves the fields the orchestrator keeps empty"}},
		{name: "takes its BUILD tasks out of TDD", sandbox: "off", wantCode: 3,
			fixture: strings.ReplaceAll(calcGood, "| Category | backend |", "| Category | backend |\n| TDD | exempt |"),
			want:    []string{"TASK-001: TDD is \"exempt\": only a person may take a task out of TDD ordering"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.sandbox == "bwrap" {
				requireBwrap(t)
			}
			r := newRepo(t, calcPlan, "sandbox: "+tt.sandbox)
			r.fixtures(t, map[string]string{"tasks.md": tt.fixture})
			before := r.read(t, ".orchestrator/task_queue.md")
			env := append(planner("fixtures/tasks.md"), "TESTAGENT_SH="+tt.sh)
			out, code := r.orch(t, env, "plan", "--prd", "docs/requirements.md", "--max-retries", "0")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			log := r.read(t, ".orchestrator/runs/plan/1/1/agent.log")
			for _, want := range tt.wantLog {
				if !strings.Contains(log, want) {
					t.Errorf("the planner's log lacks %q:\n%s", want, log)
				}
			}
			after := r.read(t, ".orchestrator/task_queue.md")
			if strings.Contains(after, "TASK-999") {
				t.Errorf("the planner's own write is in the queue:\n%s", after)
			}
			if tt.wantCode != 0 && after != before {
				t.Errorf("the queue changed:\n%s", after)
			}
			if tt.wantCode == 0 && !strings.HasPrefix(after, before) {
				t.Errorf("the queue's former bytes changed:\n%s", after)
			}
			readme := tt.readme
			if readme == "" {
				readme = "# calc\n"
			}
			if got := r.read(t, "README.md"); got != readme {
				t.Errorf("README.md = %q, want %q", got, readme)
			}
			if tt.sandbox == "off" && strings.Contains(tt.sh, "task_queue.md") {
				// The planner's version of the queue is kept, not lost.
				refused := r.read(t, ".orchestrator/runs/plan/1/1/refused/task_queue.md")
				if !strings.Contains(refused, "TASK-999") {
					t.Errorf("refused/task_queue.md:\n%s", refused)
				}
			}
			if _, err := os.Stat(filepath.Join(r.root, ".orchestrator", ".task_queue.md.tmp")); err == nil {
				t.Error("a temporary file was left")
			}
		})
	}
}
