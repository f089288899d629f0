package plan_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPlanDryRun: --dry-run prints the queue it would write and writes nothing; with --json
// the queue is in the output's queue_text.
func TestPlanDryRun(t *testing.T) {
	t.Parallel()
	r := newRepo(t, calcPlan)
	r.fixtures(t, map[string]string{"good.md": calcGood})
	before := r.read(t, ".orchestrator/task_queue.md")
	env := []string{"TESTAGENT_MODE=planner", "TESTAGENT_FROMFILE=fixtures/good.md"}
	out, code := r.orch(t, env, "plan", "--prd", "docs/requirements.md", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.HasPrefix(out, before) || !strings.Contains(out, strings.TrimSpace(calcGood)) || !strings.HasSuffix(out, "**Coverage: 100% (8/8)**\n") {
		t.Errorf("dry run printed:\n%s", out)
	}
	if got := r.read(t, ".orchestrator/task_queue.md"); got != before {
		t.Error("the dry run wrote the queue")
	}
	out, code = r.orch(t, env, "plan", "--prd", "docs/requirements.md", "--dry-run", "--json")
	p := decode(t, out)
	if code != 0 || p.Outcome != "dry-run" || !strings.HasPrefix(p.Text, before) || len(p.New) != 6 {
		t.Errorf("exit %d, %+v", code, p)
	}
}

// TestPlanFormatViolations: an output whose final message has no result block, or one of
// another role, is rejected with the contract's message, whatever its scratch file holds.
func TestPlanFormatViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"no result block", []string{"TESTAGENT_MODE=nomarker"}, "tdd-result: exactly one block required, found none"},
		{"another role", []string{"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer", `TESTAGENT_SH=cp fixtures/good.md "$ORCHESTRATOR_PLAN_FILE"`},
			`rejected: tdd-result: role is "implementer", want "planner"`},
		{"exits 1", []string{"TESTAGENT_MODE=exit1"}, "rejected: tdd-result: exactly one block required, found none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, calcPlan)
			r.fixtures(t, map[string]string{"good.md": calcGood})
			before := r.read(t, ".orchestrator/task_queue.md")
			out, code := r.orch(t, append(tt.env, "TESTAGENT_MARKER=none"), "plan", "--prd", "docs/requirements.md", "--max-retries", "0")
			if code != 3 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want 3 and %q in:\n%s", code, tt.want, out)
			}
			if r.read(t, ".orchestrator/task_queue.md") != before {
				t.Error("the queue changed")
			}
		})
	}
}

// TestPlanTimeout: a planner that runs past task_timeout is ended, and its round rejected
// with that reason.
func TestPlanTimeout(t *testing.T) {
	t.Parallel()
	r := newRepo(t, calcPlan, "task_timeout: 1s", "stop_grace: 1s")
	r.fixtures(t, map[string]string{"good.md": calcGood})
	start := time.Now()
	out, code := r.orch(t, []string{"TESTAGENT_MODE=planner", "TESTAGENT_FROMFILE=fixtures/good.md", "TESTAGENT_WORK=60s"},
		"plan", "--prd", "docs/requirements.md", "--max-retries", "0")
	if code != 3 || !strings.Contains(out, "the planner did not finish within task_timeout (1s)") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestPlanInterrupted: SIGINT while the planner works ends it, writes nothing and exits 130.
func TestPlanInterrupted(t *testing.T) {
	t.Parallel()
	r := newRepo(t, calcPlan, "stop_grace: 1s")
	r.fixtures(t, map[string]string{"good.md": calcGood})
	before := r.read(t, ".orchestrator/task_queue.md")
	cmd := exec.Command(orchestratorBin, "plan", "--prd", "docs/requirements.md")
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "TESTAGENT_MODE=planner", "TESTAGENT_FROMFILE=fixtures/good.md", "TESTAGENT_WORK=60s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.waitPlanner(t)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want 130", err)
	}
	if r.read(t, ".orchestrator/task_queue.md") != before {
		t.Error("the queue changed")
	}
	var round struct {
		PID     int    `json:"pid"`
		Problem string `json:"problem"`
	}
	if err := decodeJSON([]byte(r.read(t, ".orchestrator/runs/plan/1/1/result.json")), &round); err != nil {
		t.Fatal(err)
	}
	if round.PID == 0 || syscall.Kill(round.PID, 0) == nil {
		t.Errorf("the planner (pid %d) still runs", round.PID)
	}
	if round.Problem != "interrupted" {
		t.Errorf("round record: problem %q", round.Problem)
	}
}

// waitPlanner waits until the first round's planner has started: it prints its prompt's
// hash first.
func (r *repo) waitPlanner(t *testing.T) {
	t.Helper()
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", "plan", "1", "1", "agent.log")); strings.Contains(string(b), "prompt sha256") {
			return
		}
		if i > 300 {
			t.Fatal("the planner did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPlanPersonEditsMeanwhile: a person's edit of the queue while the planner works is
// kept; one that clashes with the planner's tasks (the same ID) is kept too, and the
// planner's tasks are not written.
func TestPlanPersonEditsMeanwhile(t *testing.T) {
	t.Parallel()
	requireBwrap(t) // without the sandbox, a change of the queue during a round is the planner's
	person := "\n### TASK-D01: Document the calculator\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | docs |\n"
	for _, tt := range []struct {
		name, edit string
		wantCode   int
	}{
		{"a new task", person, 0},
		{"a task with the planner's ID", strings.Replace(person, "TASK-D01", "TASK-003", 1), 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, calcPlan, "sandbox: bwrap")
			r.fixtures(t, map[string]string{"good.md": calcGood})
			cmd := exec.Command(orchestratorBin, "plan", "--prd", "docs/requirements.md", "--max-retries", "0")
			cmd.Dir = r.root
			cmd.Env = append(os.Environ(), "TESTAGENT_MODE=planner", "TESTAGENT_FROMFILE=fixtures/good.md", "TESTAGENT_WORK=2s")
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.waitPlanner(t)
			// The person saves the queue as an editor does: a new file renamed over it.
			edited := r.read(t, ".orchestrator/task_queue.md") + tt.edit
			r.write(t, ".orchestrator/task_queue.md.swp", edited)
			if err := os.Rename(filepath.Join(r.root, ".orchestrator", "task_queue.md.swp"), filepath.Join(r.root, ".orchestrator", "task_queue.md")); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, out.String())
			}
			after := r.read(t, ".orchestrator/task_queue.md")
			if !strings.HasPrefix(after, edited) && tt.wantCode == 0 || tt.wantCode != 0 && after != edited {
				t.Errorf("the person's edit was not kept:\n%s", after)
			}
			if tt.wantCode == 0 && !strings.Contains(after, "### TASK-T01") {
				t.Errorf("the planner's tasks were not written:\n%s", after)
			}
			if tt.wantCode != 0 && !strings.Contains(out.String(), "the task queue changed while the planner worked") {
				t.Errorf("output:\n%s", out.String())
			}
		})
	}
}

// TestPlanInputsOutsideTheRepo: requirements and a plan in a folder of their own under the
// temporary folder (private in the sandbox) stay readable to the planner there, which
// reads its tasks from beside them.
func TestPlanInputsOutsideTheRepo(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	r := newRepo(t, calcPlan, "sandbox: bwrap")
	specs := t.TempDir()
	for name, text := range map[string]string{"prd.md": "# Calculator\n", "plan.json": calcPlan, "tasks.md": calcGood} {
		if err := os.WriteFile(filepath.Join(specs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := r.orch(t, []string{"TESTAGENT_MODE=planner", "TESTAGENT_FROMFILE=" + filepath.Join(specs, "tasks.md")},
		"plan", "--prd", filepath.Join(specs, "prd.md"), "--plan", filepath.Join(specs, "plan.json"))
	if code != 0 || !strings.Contains(out, "6 tasks appended") {
		t.Errorf("exit %d\n%s\n%s", code, out, r.read(t, ".orchestrator/runs/plan/1/1/agent.log"))
	}
}
