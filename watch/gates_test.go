package watch_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gateCase runs `watch --once` on a queue and checks one task's final status and what its
// last attempt's gate.log says.
type gateCase struct {
	name       string
	tasks      []task
	agents     map[string][]string
	task       string
	wantStatus string
	wantInGate []string
	attempts   int
	setup      func(r *repo)
	check      func(t *testing.T, r *repo) // more checks after the run
}

func runGateCase(t *testing.T, c gateCase) {
	t.Helper()
	r := newRepo(t, c.tasks, c.agents, "")
	if c.setup != nil {
		c.setup(r)
	}
	for i := 0; i < max(c.attempts, 1); i++ {
		if i > 0 {
			// A person sends the failed task back, as the retry logic will.
			if code, out := r.run("set", c.task, "Status=pending"); code != 0 {
				t.Fatalf("set: %s", out)
			}
		}
		r.run("watch", "--once")
	}
	if got := r.statuses()[c.task]; got != c.wantStatus {
		t.Errorf("%s is %q, want %q", c.task, got, c.wantStatus)
	}
	runs, _ := os.ReadDir(filepath.Join(r.root, ".orchestrator/runs", c.task))
	last := filepath.Join(".orchestrator/runs", c.task, runs[len(runs)-1].Name())
	gate := r.read(filepath.Join(last, "gate.log"))
	for _, w := range c.wantInGate {
		if !strings.Contains(gate, w) {
			t.Errorf("gate.log does not say %q:\n%s", w, gate)
		}
	}
	if c.check != nil {
		c.check(t, r)
	}
	r.noneLeft()
}

// TestGates covers the RED and GREEN gates and the agent states through real runs.
func TestGates(t *testing.T) {
	t.Parallel()
	writer := []string{"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer"}
	tests := []gateCase{
		{
			name:       "RED: test writer edits source",
			tasks:      []task{{id: "TASK-T01", category: "testing", mode: "write", testCommand: "false"}},
			agents:     map[string][]string{"honest": append(writer, "TESTAGENT_WRITE=calc_test.go=x\ncalc.go=y")},
			task:       "TASK-T01",
			wantStatus: "failed",
			wantInGate: []string{"scope_violation", "calc.go"},
		},
		{
			name:       "RED: Test ID named by no test",
			tasks:      []task{{id: "TASK-T01", category: "testing", mode: "write", testCommand: "false"}},
			agents:     map[string][]string{"honest": append(writer, "TESTAGENT_WRITE=calc_test.go=func TestAdd()")},
			task:       "TASK-T01",
			wantStatus: "failed",
			wantInGate: []string{"no test is named after UNIT-007"},
			setup: func(r *repo) {
				q := strings.Replace(r.read(".orchestrator/task_queue.md"), "| Mode | write |", "| Mode | write |\n| Test IDs | UNIT-007 |", 1)
				r.write(".orchestrator/task_queue.md", q)
			},
		},
		{
			name: "GREEN: implementer edits the test",
			tasks: []task{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testCommand: "test -f calc.go"},
				{id: "TASK-001", category: "backend", agent: "tamper", testCommand: "test -f calc.go", deps: "TASK-T01"},
			},
			agents: map[string][]string{
				"writer": append(writer, "TESTAGENT_WRITE=calc_test.go=the real test"),
				"tamper": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=x\ncalc_test.go=a weaker test"},
			},
			task:       "TASK-001",
			wantStatus: "failed",
			wantInGate: []string{"test_tampered", "calc_test.go"},
		},
		{
			name: "GREEN: implementer deletes the test",
			tasks: []task{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testCommand: "test -f calc.go"},
				{id: "TASK-001", category: "backend", agent: "builder", testCommand: "test -f calc.go", deps: "TASK-T01"},
			},
			agents: map[string][]string{
				"writer":  append(writer, "TESTAGENT_WRITE=calc_test.go=the real test"),
				"builder": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=x"},
			},
			setup: func(r *repo) {
				// The builder's agent removes the test file before writing its code.
				cfg := r.read(".orchestrator/config.yaml")
				cfg = strings.Replace(cfg, `"TESTAGENT_WRITE=calc.go=x"`, `"TESTAGENT_WRITE=calc.go=x", "TESTAGENT_DELETE=calc_test.go"`, 1)
				r.write(".orchestrator/config.yaml", cfg)
			},
			task:       "TASK-001",
			wantStatus: "failed",
			wantInGate: []string{"test_tampered", "calc_test.go was deleted"},
		},
		{
			name: "GREEN: honest",
			tasks: []task{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testCommand: "test -f calc.go"},
				{id: "TASK-001", category: "backend", agent: "builder", testCommand: "test -f calc.go", deps: "TASK-T01"},
			},
			agents: map[string][]string{
				"writer":  append(writer, "TESTAGENT_WRITE=calc_test.go=the real test"),
				"builder": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=x"},
			},
			task:       "TASK-001",
			wantStatus: "completed",
			wantInGate: []string{"GREEN gate", "integrity: the 1 test files of TASK-T01 are as at RED", "decision: completed"},
			check: func(t *testing.T, r *repo) {
				var m struct {
					Phase               string   `json:"phase"`
					ImplementationFiles []string `json:"implementation_files"`
				}
				b := r.read(".orchestrator/runs/TASK-001/1/handoff-green.json")
				if err := json.Unmarshal([]byte(b), &m); err != nil || m.Phase != "green" || len(m.ImplementationFiles) != 1 {
					t.Errorf("handoff-green.json = %s (%v)", b, err)
				}
				if _, err := os.Stat(filepath.Join(r.root, ".orchestrator/runs/TASK-T01/1/handoff-red.json")); err != nil {
					t.Errorf("no handoff-red.json: %v", err)
				}
			},
		},
		{
			name:       "dependency state blocks the task",
			tasks:      []task{{id: "TASK-001", category: "backend", testCommand: "true"}},
			agents:     map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_MARKER=failed", "TESTAGENT_STATE=dependency", "TESTAGENT_MESSAGE=needs a running postgres"}},
			task:       "TASK-001",
			wantStatus: "blocked",
			wantInGate: []string{"needs a running postgres"},
		},
		{
			name:       "false success three times halts",
			tasks:      []task{{id: "TASK-001", category: "backend", testCommand: "false"}},
			agents:     map[string][]string{"honest": {"TESTAGENT_MODE=lie"}},
			task:       "TASK-001",
			attempts:   3,
			wantStatus: "halted",
			wantInGate: []string{"claim rejected"},
			check: func(t *testing.T, r *repo) {
				q := r.read(".orchestrator/task_queue.md")
				if !strings.Contains(q, "| Halted | true |") || !strings.Contains(q, "False success (3x)") {
					t.Errorf("queue lacks the halt fields:\n%s", q)
				}
			},
		},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runGateCase(t, c)
		})
	}
}

// TestIssueStateReprompts: an agent stuck on an unclear requirement is asked again up to
// twice; the third time the task is blocked for a person.
func TestIssueStateReprompts(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "true"}},
		map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_MARKER=failed", "TESTAGENT_STATE=issue", "TESTAGENT_MESSAGE=which rounding mode?"}}, "")
	r.run("watch", "--once")
	if got := r.statuses()["TASK-001"]; got != "blocked" {
		t.Errorf("status %q, want blocked", got)
	}
	runs, _ := os.ReadDir(filepath.Join(r.root, ".orchestrator/runs/TASK-001"))
	if len(runs) != 3 {
		t.Errorf("%d attempts, want 3 (the first and two re-prompts)", len(runs))
	}
	if q := r.read(".orchestrator/task_queue.md"); !strings.Contains(q, "which rounding mode?") || !strings.Contains(q, "| Remediation | ISSUE-") {
		t.Errorf("the question is not recorded on the task:\n%s", q)
	}
	if iq := r.read(".orchestrator/issue_queue.md"); !strings.Contains(iq, "| Type | question |") || !strings.Contains(iq, "which rounding mode?") {
		t.Errorf("no issue for a person:\n%s", iq)
	}
	r.noneLeft()
}
