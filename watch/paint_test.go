package watch

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

var sgrCode = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestPaint: a Table that paints colours its status words and keeps its columns where
// they are without colour; a Table that does not paint, and the formats for programs
// and logs whatever they are told, carry no colour.
func TestPaint(t *testing.T) {
	events := func(r *reporter) {
		r.event("TASK-001", "started", "attempt 1, BUILD task, agent claude (pid 42)")
		r.event("TASK-002", "started", "attempt 1, BUILD task, agent claude (pid 43)")
		r.eventWith("TASK-001", "failed", "attempt 1 (test_fails): claim rejected; see .orchestrator/runs/TASK-001/1/gate.log",
			eventFields{Attempt: 1, Agent: "claude", Outcome: "failed", FailureType: "test_fails", GateLog: ".orchestrator/runs/TASK-001/1/gate.log"})
		r.close()
	}
	var painted, plain bytes.Buffer
	events(newReporter(&painted, Table, true))
	events(newReporter(&plain, Table, false))
	if !strings.Contains(painted.String(), "TASK-001 \x1b[31mfailed\x1b[0m: attempt 1 (test_fails)") ||
		!strings.Contains(painted.String(), "\x1b[36min_progress\x1b[0m") {
		t.Errorf("status words not painted:\n%q", painted.String())
	}
	if sgrCode.MatchString(plain.String()) {
		t.Errorf("colour in a table that does not paint:\n%q", plain.String())
	}
	// Without its colour codes, the painted table is the plain one: the same columns.
	if got := sgrCode.ReplaceAllString(painted.String(), ""); got != plain.String() {
		t.Errorf("painting moved the columns:\npainted %q\nplain   %q", got, plain.String())
	}
	for _, f := range []Format{Lines, JSON} {
		var b bytes.Buffer
		events(newReporter(&b, f, true))
		if strings.Contains(b.String(), "\x1b") {
			t.Errorf("format %d carries escapes:\n%q", f, b.String())
		}
	}
}

// TestReasonLine: a rejection's message is one line, whatever its reason holds, and a
// long reason is cut on a character's boundary (gate.log has the rest).
func TestReasonLine(t *testing.T) {
	long := strings.Repeat("é", maxReason) // two bytes each
	tests := []struct {
		name                       string
		n                          int
		typ, why, then, gate, want string
	}{
		{"all parts", 2, "test_fails", "claim rejected:\n  go test exited 1\n", "trying again", ".orchestrator/runs/T/2/gate.log",
			"attempt 2 (test_fails): claim rejected: go test exited 1; trying again; see .orchestrator/runs/T/2/gate.log"},
		{"no type, no next step", 1, "", "dependency: the schema", "", "g.log", "attempt 1: dependency: the schema; see g.log"},
		{"no reason", 1, "timeout", "", "", "", "attempt 1 (timeout): none"},
		{"long reason", 1, "", long, "", "", "attempt 1: " + strings.Repeat("é", maxReason/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonLine(tt.n, tt.typ, tt.why, tt.then, tt.gate); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
