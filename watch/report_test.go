package watch

import (
	"bytes"
	"strings"
	"testing"
)

// TestLiveTable: on a terminal, events redraw a table in place (cursor up, clear), and a
// failure's reason stays visible above it.
func TestLiveTable(t *testing.T) {
	var b bytes.Buffer
	r := newReporter(&b, Table, false)
	defer r.close()
	r.event("TASK-001", "started", "attempt 1, BUILD task, agent claude (pid 42)")
	first := b.String()
	if !strings.Contains(first, "TASK      STATUS") || !strings.Contains(first, "TASK-001  in_progress  1") || !strings.Contains(first, "claude") {
		t.Fatalf("first draw:\n%s", first)
	}
	r.event("TASK-001", "failed", "attempt 1: claim rejected: go test exited 1")
	out := b.String()[len(first):]
	if !strings.HasPrefix(out, "\x1b[2A\x1b[J") {
		t.Errorf("redraw does not move up over the old table: %q", out)
	}
	if !strings.Contains(out, "TASK-001 failed: attempt 1: claim rejected") || !strings.Contains(out, "TASK-001  failed") {
		t.Errorf("after the failure:\n%s", out)
	}
	// The cost column: "-" before anything is known, then what the attempts cost.
	if !strings.Contains(first, "AGENT   COST") || !strings.Contains(first, "claude  -") {
		t.Errorf("no cost column:\n%s", first)
	}
	r.cost("TASK-001", "$0.0420")
	r.event("TASK-001", "started", "attempt 2, BUILD task, agent claude (pid 43)")
	if last := b.String(); !strings.Contains(last[strings.LastIndex(last, "TASK      "):], "claude  $0.0420") {
		t.Errorf("the cost column does not show the task's cost:\n%s", last)
	}
}

// TestJSONLines: --json prints one JSON object a line.
func TestJSONLines(t *testing.T) {
	var b bytes.Buffer
	r := newReporter(&b, JSON, false)
	r.event("TASK-001", "completed", "attempt 1: claim verified")
	if line := b.String(); !strings.HasPrefix(line, `{"time":"`) || !strings.Contains(line, `"event":"completed","task":"TASK-001"`) || strings.Count(line, "\n") != 1 {
		t.Errorf("json line: %q", line)
	}
}
