package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
)

// corpusExample returns the body of the first ```markdown fence after marker in
// claudestrator's decomposition prompt (MIT, kept in queue/testdata).
func corpusExample(t *testing.T, marker string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "queue", "testdata", "claudestrator", "prompts", "decomposition_agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte(marker))
	if i < 0 {
		t.Fatalf("%q not found in the corpus", marker)
	}
	rest := src[i:]
	rest = rest[bytes.Index(rest, []byte("\n```"))+1:]
	rest = rest[bytes.IndexByte(rest, '\n')+1:]
	return string(rest[:bytes.Index(rest, []byte("\n```"))+1])
}

// TestJudgeClaudestratorTasks judges tasks as claudestrator's decomposition agent writes
// them (its D.6 example, with `---` rules, **Dependencies:** prose and no Mode): the format
// is read as it is, and its ordering, tests written after the code they test, is refused;
// the same task made to come first passes.
func TestJudgeClaudestratorTasks(t *testing.T) {
	example := corpusExample(t, "### D.6 Test Task Format")
	if !strings.Contains(example, "**Dependencies:** TASK-001, TASK-002") {
		t.Fatalf("the corpus example changed:\n%s", example)
	}
	plan, err := queue.ParsePlan("plan.json", []byte(`{"tests": {"unit": [{"id": "UNIT-001"}, {"id": "UNIT-002"}, {"id": "UNIT-019"}, {"id": "UNIT-023"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	builds := "### TASK-001\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n\n---\n\n**Description:** Validation.\n\n" +
		"### TASK-002\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Depends On | TASK-001 |\n\n---\n\n**Description:** Normalization.\n"
	existing, err := queue.Parse("task_queue.md", []byte("# Task Queue\n"), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(existing, "plan.md", []byte(example+"\n"+builds), plan, "candidate.md")
	want := []string{
		"TASK-T01: TEST task depends on BUILD task TASK-001: tests come before the code they test",
		"TASK-T01: TEST task depends on BUILD task TASK-002: tests come before the code they test",
		"TASK-001: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)",
		"TASK-002: BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)",
	}
	for _, w := range want {
		if !strings.Contains(v.Text(), w) {
			t.Errorf("findings lack %q:\n%s", w, v.Text())
		}
	}
	if v.OK() || v.Errors() != len(want) {
		t.Errorf("OK %v, %d errors:\n%s", v.OK(), v.Errors(), v.Text())
	}
	// Tests first: the TEST task depends on nothing, the first BUILD task on it.
	fixed := strings.Replace(example, "**Dependencies:** TASK-001, TASK-002", "**Dependencies:** -", 1) + "\n" +
		strings.Replace(builds, "| Category | backend |\n\n---\n\n**Description:** Validation.", "| Category | backend |\n| Depends On | TASK-T01 |\n\n---\n\n**Description:** Validation.", 1)
	if v := Judge(existing, "plan.md", []byte(fixed), plan, "candidate.md"); !v.OK() {
		t.Errorf("tests first was refused:\n%s", v.Text())
	} else if !strings.Contains(string(v.Candidate), example[:strings.Index(example, "**Dependencies:**")]) {
		t.Errorf("the task was not appended as written:\n%s", v.Candidate)
	}
}
