package retry

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
)

// TestConvert converts the issues of testdata/convert/in and compares the queues with
// testdata/convert/want; a second run converts nothing more and writes nothing.
func TestConvert(t *testing.T) {
	ctx := context.Background()
	l := newRepo(t, "convert")
	got, err := Convert(ctx, l, Limits{}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	want := []Conversion{
		{Issue: "ISSUE-20261120-001", Task: "TASK-005", Note: "TASK-005 depends on no TEST task: add one before it runs, or mark it | TDD | exempt |"},
		{Issue: "ISSUE-20261120-002", Skipped: "halted (Repeated identical failure (3x)); it needs a person"},
		{Issue: "ISSUE-20261120-004", Task: "TASK-006", Note: "TASK-006 depends on no TEST task: add one before it runs, or mark it | TDD | exempt |"},
		{Issue: "ISSUE-20261120-006", Task: "TASK-007"},
	}
	if len(got) != len(want) {
		t.Fatalf("conversions %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("conversion %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	checkTree(t, l, "convert")

	before := tree(t, l.Dir())
	again, err := Convert(ctx, l, Limits{}, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Skipped == "" {
		t.Errorf("second run: %+v, want only the halted issue skipped", again)
	}
	for name, b := range tree(t, l.Dir()) {
		if !bytes.Equal(b, before[name]) {
			t.Errorf("second run changed %s", name)
		}
	}
}

// TestConvertFinishesAnEarlierRun marks an issue accepted whose task an interrupted run
// already appended, without appending another.
func TestConvertFinishesAnEarlierRun(t *testing.T) {
	ctx := context.Background()
	l := newRepo(t, "convert")
	_, err := queue.Update(ctx, l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		return []queue.Op{queue.AppendRecord{Text: "### TASK-042\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Source Issue | ISSUE-20261120-001 |\n"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Convert(ctx, l, Limits{}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Task != "TASK-042" {
		t.Errorf("first conversion %+v, want TASK-042", got[0])
	}
	if f := fields(t, l.Issues(), "ISSUE-20261120-001"); f["Status"] != "accepted" || f["Task Ref"] != "TASK-042" {
		t.Errorf("issue %v", f)
	}
	d, err := queue.Load(l.Tasks())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range d.IDs() {
		if r, _ := d.Record(id); d.Get(r, "Source Issue") == "ISSUE-20261120-001" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d tasks for ISSUE-20261120-001", n)
	}
}

func TestNextTaskID(t *testing.T) {
	tests := []struct{ ids, want string }{
		{"", "TASK-001"},
		{"TASK-T01 TASK-V01", "TASK-001"},
		{"TASK-001 TASK-012 TASK-T05", "TASK-013"},
		{"TASK-1 TASK-2", "TASK-3"},
		{"TASK-099", "TASK-100"},
		{"TASK-0999 TASK-12", "TASK-1000"},
	}
	for _, tt := range tests {
		var src bytes.Buffer
		src.WriteString("# Tasks\n")
		for _, id := range strings.Fields(tt.ids) {
			src.WriteString("\n### " + id + "\n\n| Field | Value |\n|---|---|\n| Status | pending |\n")
		}
		d, err := queue.Parse(filepath.Join("x", "task_queue.md"), src.Bytes(), queue.Tasks)
		if err != nil {
			t.Fatal(err)
		}
		if got := nextTaskID(d); got != tt.want {
			t.Errorf("%q: %s, want %s", tt.ids, got, tt.want)
		}
	}
}
