package watch

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
)

// TestPromptInfoFor checks that the JSON view holds the very prompt PromptFor renders, and
// the role, attempt and allowlist it was rendered with.
func TestPromptInfoFor(t *testing.T) {
	l := queue.Layout{Root: t.TempDir()}
	writeFile(t, filepath.Join(l.Root, "calc", "calc_test.go"), "package calc\n", 0o644)
	writeFile(t, l.Tasks(), "# Tasks\n\n### TASK-001\n\n| Field | Value |\n|---|---|\n| Status | completed |\n| Category | testing |\n| Mode | write |\n\n"+
		"### TASK-002: Add\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Category | backend |\n| Depends On | TASK-001 |\n| Test File | calc/calc_test.go |\n", 0o644)
	writeFile(t, filepath.Join(l.Runs(), "TASK-002", "1", "result.json"), "{}\n", 0o644)
	cfg := config.Default()
	info, err := PromptInfoFor(l, cfg, "TASK-002")
	if err != nil {
		t.Fatal(err)
	}
	text, err := PromptFor(l, cfg, "TASK-002")
	if err != nil {
		t.Fatal(err)
	}
	want := PromptInfo{Task: "TASK-002", Role: "implementer", Attempt: 2, Allowlist: []string{"calc/calc_test.go"}, Prompt: text}
	if !reflect.DeepEqual(*info, want) {
		t.Errorf("got %+v\nwant %+v", *info, want)
	}
}
