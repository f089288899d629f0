package tdd

import "testing"

func TestMode(t *testing.T) {
	tests := []struct{ role, typ, reason, mode string }{
		{RoleImplementer, "format_violation", "", "D"},
		{RoleTestWriter, "timeout", "", "E"},
		{RoleImplementer, "agent_error", "failure mode E: out of turns", "E"},
		{RoleTestWriter, "false_red", "", "A"},
		{RoleImplementer, "test_failed", "", "B"},
		{RoleRefactorer, "test_failed", "", "C"},
	}
	for _, tt := range tests {
		if got, _ := Mode(tt.role, tt.typ, tt.reason); got != tt.mode {
			t.Errorf("Mode(%s, %s, %q) = %s, want %s", tt.role, tt.typ, tt.reason, got, tt.mode)
		}
	}
}

// TestSpent: a format violation halts at the second; a semantic failure at the second of
// its role and AC; a refactorer's second is dropped, not halted.
func TestSpent(t *testing.T) {
	impl := &Place{Role: RoleImplementer, AC: "AC-X.1"}
	refactor := &Place{Role: RoleRefactorer}
	tests := []struct {
		name       string
		p          *Place
		mode       string
		n          int
		halt, stop bool
	}{
		{"first format violation", impl, "D", 1, false, false},
		{"second format violation", impl, "D", FormatBudget, true, false},
		{"first semantic failure", impl, "B", 1, false, false},
		{"second semantic failure", impl, "B", SemanticBudget, true, false},
		{"a refactor's second", refactor, "C", SemanticBudget, false, true},
		{"a refactor's format violations halt", refactor, "D", FormatBudget, true, false},
	}
	for _, tt := range tests {
		halt, stop := tt.p.Spent(tt.mode, "what", "AC-X.1", tt.n)
		if (halt != "") != tt.halt || (stop != "") != tt.stop {
			t.Errorf("%s: halt %q, stop %q", tt.name, halt, stop)
		}
	}
}

func TestFailedAC(t *testing.T) {
	writer := &Place{Role: RoleTestWriter, ACs: []string{"AC-X.1", "AC-X.2"}}
	if got := writer.FailedAC("false RED: AC-X.2's tests pass before any code"); got != "AC-X.2" {
		t.Errorf("test writer's AC = %q", got)
	}
	if got := writer.FailedAC("false RED: nothing ran"); got != "AC-X.1, AC-X.2" {
		t.Errorf("test writer's AC without one named = %q", got)
	}
	if got := (&Place{Role: RoleImplementer, AC: "AC-X.1"}).FailedAC("AC-X.2 broke"); got != "AC-X.1" {
		t.Errorf("implementer's AC = %q", got)
	}
}

func TestResultBlock(t *testing.T) {
	final := "done\n```tdd-result\n{\"status\":\"old\"}\n```\nthen\n```tdd-result\n{\"status\":\"green\"}\n```\nbye"
	if got, want := ResultBlock(final), "```tdd-result\n{\"status\":\"green\"}\n```"; got != want {
		t.Errorf("ResultBlock = %q, want %q", got, want)
	}
	if got := ResultBlock("```tdd-result\n{\"cut"); got != "```tdd-result\n{\"cut" {
		t.Errorf("an unclosed block = %q", got)
	}
	if ResultBlock("no block") != "" {
		t.Error("a block where there is none")
	}
}
