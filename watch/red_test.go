package watch_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRedHandOffInLoop: in a Go module of two packages with passing tests and no Test
// Command or Test File on its tasks, the test writer adds calc/mul_test.go calling Mul, which
// does not exist yet. The RED gate runs the project's command narrowed to ./calc and passes;
// the implementer's prompt holds that test file, found through the RED hand-off, and no
// implementation file; the implementer's Mul passes GREEN.
func TestRedHandOffInLoop(t *testing.T) {
	t.Parallel()
	test := `package calc; import "testing"; func TestMul_UNIT_001(t *testing.T) { if got := Mul(2, 3); got != 6 { t.Fatalf("Mul(2, 3) = %d", got) } }`
	r := newRepo(t, []task{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer"},
		{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
	}, map[string][]string{
		"writer":  {"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer", "TESTAGENT_WRITE=calc/mul_test.go=" + test},
		"builder": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc/mul.go=package calc; func Mul(a, b int) int { return a * b }"},
	}, "commands:\n  test: go test ./...\n")
	r.write(".orchestrator/task_queue.md", strings.Replace(r.read(".orchestrator/task_queue.md"), "| Mode | write |", "| Mode | write |\n| Test IDs | UNIT-001 |", 1))
	r.write("go.mod", "module example.com/multi\n\ngo 1.22\n")
	r.write("calc/add.go", "package calc\n\n// Add adds. IMPLEMENTATION DETAIL\nfunc Add(a, b int) int { return a + b }\n")
	r.write("calc/add_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n")
	r.write("strs/strs.go", "package strs\n\nfunc Twice(s string) string { return s + s }\n")
	r.write("strs/strs_test.go", "package strs\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(\"a\") != \"aa\" {\n\t\tt.Fatal(\"Twice\")\n\t}\n}\n")

	code, out := r.run("watch", "--once")
	st := r.statuses()
	if st["TASK-T01"] != "completed" || st["TASK-001"] != "completed" {
		t.Errorf("statuses %v (exit %d)\n%s\nRED gate.log:\n%s", st, code, out, r.read(".orchestrator/runs/TASK-T01/1/gate.log"))
	}
	if log := r.read(".orchestrator/runs/TASK-T01/1/gate.log"); !strings.Contains(log, "$ go test ./calc\n") || strings.Contains(log, "$ go test ./...") {
		t.Errorf("RED did not run only ./calc:\n%s", log)
	}
	var m struct {
		Command   string              `json:"command"`
		TestFiles []string            `json:"test_files"`
		Tests     map[string][]string `json:"tests"`
	}
	if err := json.Unmarshal([]byte(r.read(".orchestrator/runs/TASK-T01/1/handoff-red.json")), &m); err != nil {
		t.Fatal(err)
	}
	if m.Command != "go test ./calc" || !slices.Equal(m.TestFiles, []string{"calc/mul_test.go"}) || !slices.Equal(m.Tests["UNIT-001"], []string{"TestMul_UNIT_001"}) {
		t.Errorf("handoff-red.json = %+v", m)
	}
	prompt := r.read(".orchestrator/runs/TASK-001/1/prompt.md")
	if !strings.Contains(prompt, "calc/mul_test.go") || !strings.Contains(prompt, "func TestMul_UNIT_001") {
		t.Errorf("the implementer's prompt lacks the RED test file:\n%s", prompt)
	}
	if strings.Contains(prompt, "IMPLEMENTATION DETAIL") {
		t.Errorf("the implementer's prompt holds a file not on its allowlist:\n%s", prompt)
	}
	r.noneLeft()
}
