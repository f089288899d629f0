package prompts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func plannerInput() PlannerInput {
	return PlannerInput{
		PRDPath: "docs/prd.md", PRD: "# Calc\n\nIt adds.\n", PlanPath: "projectspec/test-plan-output.json",
		Categories: []PlannerCategory{{Name: "unit", Tests: []PlannerTest{{ID: "UNIT-001", Name: "adds", Priority: "high"}, {ID: "UNIT-002"}}}},
		Mapped:     1, QueuePath: ".orchestrator/task_queue.md", Existing: []string{"TASK-T00"}, PlanFile: "/repo/.orchestrator/runs/plan/1/scratch/plan.md",
	}
}

// TestRenderPlanner: the prompt holds the requirements whole, the test IDs to map, the queue's
// IDs and the scratch file; a retry's prompt is the first with the findings added, verbatim;
// an override file replaces the template.
func TestRenderPlanner(t *testing.T) {
	in := plannerInput()
	first, err := RenderPlanner(in, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# You are the planner", "```markdown\n# Calc\n\nIt adds.\n```", "### unit (2)\n\n- UNIT-001 (high): adds\n- UNIT-002\n",
		"1 of its test IDs are in the queue's testing tasks already", "do not reuse their IDs:\nTASK-T00.",
		"    /repo/.orchestrator/runs/plan/1/scratch/plan.md", "role: planner"} {
		if !strings.Contains(first, want) {
			t.Errorf("prompt lacks %q:\n%s", want, first)
		}
	}
	if again, _ := RenderPlanner(in, ""); again != first {
		t.Error("the same input gave another prompt")
	}
	in.Findings = "plan.json:3: UNIT-002: not mapped: no TEST task lists it in Test IDs (unit)\n"
	retry, err := RenderPlanner(in, "")
	if err != nil {
		t.Fatal(err)
	}
	section := "\n\n## The check rejected your last tasks\n\nThe scratch file still holds them. These are the findings of `orchestrator validate`,\nunedited:\n\n```\n" + in.Findings + "```"
	if want := strings.Replace(first, "\n\n## Finishing", section+"\n\n## Finishing", 1); retry != want {
		t.Errorf("retry prompt:\n%s", retry)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PlannerTemplate), []byte("plan {{.PRDPath}} into {{.PlanFile}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := RenderPlanner(in, dir); err != nil || got != "plan docs/prd.md into /repo/.orchestrator/runs/plan/1/scratch/plan.md\n" {
		t.Errorf("override: %q, %v", got, err)
	}
	in.PlanFile = "a\nb"
	if _, err := RenderPlanner(in, ""); err == nil {
		t.Error("a path with a line break was rendered")
	}
}
