package queue

import (
	"strings"
	"testing"
)

// The rules read every field of a large queue, through fast paths that must agree with the
// plain functions: quickValid with checkSyntax, Task's lookups with Lookup and Get.

var oddValues = []string{
	"", "-", "none", "pending", "Pending", "complete", "done", "in-progress", "in_progress", "wont_fix",
	"accepted", "0", "7", "007", "123456789", "1234567890", "-1", "1.5", "true", "false", "TRUE", "yes",
	"write", "verify", "Write", "easy", "normal", "complex", "hard", "exempt", "3f9a0c1d2e4b5a67",
	"3F9A0C1D2E4B5A67", "3f9a0c1d2e4b5a6", "[3f9a0c1d2e4b5a67]", `a\|b`, "testing", "backend", "qa",
}

func FuzzQuickValid(f *testing.F) {
	for i := range checkedNames {
		for _, v := range oddValues {
			f.Add(i, v, false)
		}
	}
	f.Fuzz(func(t *testing.T, i int, v string, issues bool) {
		if i < 0 || i >= len(checkedNames) || strings.ContainsAny(v, "\r\n") {
			return
		}
		k := Tasks
		if issues {
			k = Issues
		}
		if quickValid(k, checkedNames[i], []byte(v)) {
			if err := checkSyntax(k, checkedNames[i], v); err != nil {
				t.Fatalf("quickValid(%s, %q) but checkSyntax: %v", checkedNames[i], v, err)
			}
		}
	})
}

// TestTaskAgreesWithGet builds records with odd values in every field Task reads and
// compares Task with what Get and the value functions make of them.
func TestTaskAgreesWithGet(t *testing.T) {
	names := []string{"Status", "Category", "Mode", "Test IDs", "Halted", "Source Issue", "Remediation", "TDD"}
	checked := 0
	for i, v := range oddValues {
		var b strings.Builder
		b.WriteString("### TASK-1\n\n| Field | Value |\n|---|---|\n")
		for j, n := range names {
			if (i+j)%3 != 0 {
				b.WriteString("| " + n + " | " + oddValues[(i+j)%len(oddValues)] + " |\n")
			}
		}
		b.WriteString("\n**Category:** " + v + "\n\n**Halted:** " + v + "\n")
		d, err := Parse("task_queue.md", []byte(b.String()), Tasks)
		if err != nil {
			continue // a status that does not parse, or a repeated field
		}
		checked++
		r := &d.Records[0]
		got := d.Task(r)
		status, _ := NormalizeStatus(Tasks, d.Get(r, "Status"))
		halted, _ := Bool(d.Get(r, "Halted"))
		want := Task{
			Status:   status,
			Category: strings.ToLower(strings.TrimSpace(d.Get(r, "Category"))),
			Mode:     strings.ToLower(strings.TrimSpace(d.Get(r, "Mode"))),
			TestIDs:  List(d.Get(r, "Test IDs")),
			Halted:   halted,
			Issues:   append(List(d.Get(r, "Source Issue")), List(d.Get(r, "Remediation"))...),
		}
		if got.Status != want.Status || got.Category != want.Category || got.Mode != want.Mode ||
			strings.Join(got.TestIDs, ",") != strings.Join(want.TestIDs, ",") || got.Halted != want.Halted ||
			strings.Join(got.Issues, ",") != strings.Join(want.Issues, ",") {
			t.Errorf("Task = %+v\nwant   %+v\nrecord:\n%s", got, want, b.String())
		}
	}
	if checked < len(oddValues)/2 {
		t.Errorf("only %d of %d records parsed", checked, len(oddValues))
	}
}
