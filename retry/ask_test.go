package retry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

func TestAsk(t *testing.T) {
	l := queue.Layout{Root: t.TempDir()}
	if err := os.MkdirAll(l.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	id, err := Ask(context.Background(), l, "TASK-001", "backend", "which rounding mode?", at)
	if err != nil || id != "ISSUE-20261121-001" {
		t.Fatalf("Ask = %q, %v", id, err)
	}
	d, err := queue.Load(filepath.Join(l.Dir(), "issue_queue.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := d.Record(id)
	if !ok || d.Get(r, "Type") != "question" || d.Get(r, "Source Task") != "TASK-001" || d.Get(r, "Status") != "pending" {
		t.Fatalf("issue: %q", d.Body(r))
	}
	if !strings.Contains(d.Body(r), "which rounding mode?") {
		t.Errorf("the question is missing:\n%s", d.Body(r))
	}
	if tbl, ok := d.SectionTable(QueueStatusTitle, "Field"); !ok || !strings.Contains(string(d.Src[tbl.Start:tbl.End]), "| Pending | 1 |") {
		t.Errorf("Queue Status not updated:\n%s", d.Src)
	}
}
