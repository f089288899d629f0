package spotcheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMutateSaysWhatItCouldNot: --mutate over a QA task that covers two BUILD tasks, one
// landed (TASK-001) and one completed by hand with no landing commit (TASK-002). The
// landed one is mutated (the twin); the other cannot be, and the report says so in a line
// that names it, rather than pass over it in silence.
func TestMutateSaysWhatItCouldNot(t *testing.T) {
	t.Parallel()
	p := newProject(t, "go", nil, nil, goAdd, goAddTest)
	b, err := os.ReadFile(filepath.Join(p.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		t.Fatal(err)
	}
	q := string(b)
	q = strings.Replace(q, "| Depends On | TASK-001 |", "| Depends On | TASK-001, TASK-002 |", 1)
	q += "\n### TASK-002: Sub\n\n| Field | Value |\n|-------|-------|\n| Status | completed |\n| Category | backend |\n| Depends On | TASK-T01 |\n"
	p.write(".orchestrator/task_queue.md", q)
	rep := p.spotcheck(true)
	md := rep.Markdown()
	if len(rep.Mutations) != 1 || rep.Mutations[0].Task != "TASK-001" || rep.Mutations[0].Mutants == 0 {
		t.Errorf("mutations %+v, want TASK-001's landed change mutated\n%s", rep.Mutations, md)
	}
	if len(rep.NotMutated) != 1 || rep.NotMutated[0].Task != "TASK-002" {
		t.Fatalf("not mutated %+v, want TASK-002\n%s", rep.NotMutated, md)
	}
	var line string
	for _, l := range strings.Split(md, "\n") {
		if strings.Contains(l, "TASK-002") {
			line = l
		}
	}
	if !strings.Contains(line, "not mutated") || !strings.Contains(line, "no landing commit") {
		t.Errorf("no line of the report says TASK-002 was not mutated, and why:\n%s", md)
	}
}
