package retry

import (
	"path/filepath"
	"strconv"
	"testing"
)

// TestForgetAbandonedHistory: failures of a history the integration branch no longer holds
// (Failure.Forget) do not count toward the task's retry state. The cheat: a task that
// failed twice the same way on abandoned commits fails that way once more on the new
// history and must not halt as a third identical failure; nor does a halt of the abandoned
// history hold. Its twin: a failure of the current history still counts, and forgetting
// one of two identical failures leaves the other.
func TestForgetAbandonedHistory(t *testing.T) {
	tests := []struct {
		name    string
		issue   []string // fields of the open issue
		forget  []Forgotten
		want    string // retry, failed or halt
		repeat  int    // Signature-Repeat-Count after
		retry   int    // Retry-Count after
		history string // Previous-Signatures after
		halted  string // the issue's Halted after
	}{
		{
			name:  "without forgetting, the third identical failure halts",
			issue: []string{"Failure-Signature", addSig, "Previous-Signatures", "[" + addSig + "]", "Retry-Count", "2"},
			want:  "halt", repeat: 2, retry: 2, history: "[" + addSig + ", " + addSig + "]", halted: "true",
		},
		{
			name:   "the two of another history no longer count",
			issue:  []string{"Failure-Signature", addSig, "Previous-Signatures", "[" + addSig + "]", "Retry-Count", "2"},
			forget: []Forgotten{{addSig, true}, {addSig, true}},
			want:   "retry", repeat: 0, retry: 1, history: "[]", halted: "false",
		},
		{
			name:   "one of another history, one of this one",
			issue:  []string{"Failure-Signature", addSig, "Previous-Signatures", "[" + addSig + "]", "Retry-Count", "2"},
			forget: []Forgotten{{addSig, true}},
			want:   "retry", repeat: 1, retry: 2, history: "[" + addSig + "]", halted: "false",
		},
		{
			name: "a halt of the abandoned history no longer holds",
			issue: []string{"Failure-Signature", addSig, "Previous-Signatures", "[" + addSig + ", " + addSig + "]", "Retry-Count", "2",
				"Halted", "true", "Auto-Retry", "false", "Halt-Reason", "Repeated identical failure (3x)"},
			forget: []Forgotten{{addSig, true}, {addSig, true}, {addSig, false}},
			want:   "retry", repeat: 0, retry: 1, history: "[]", halted: "false",
		},
		{
			name: "a halt with failures of this history left holds",
			issue: []string{"Failure-Signature", addSig, "Previous-Signatures", "[1111111111111111]", "Retry-Count", "2",
				"Halted", "true", "Auto-Retry", "false", "Halt-Reason", "Max retries reached (2)"},
			forget: []Forgotten{{addSig, true}},
			want:   "failed", repeat: 0, retry: 1, history: "[1111111111111111]", halted: "true",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newRepo(t, filepath.Join("record", "new-issue"))
			withIssue(t, l, "ISSUE-20261121-001", tt.issue...)
			f := failure("TASK-003", addLine, 0)
			f.Forget = tt.forget
			d := record(t, l, f, Limits{}, tt.want)
			issue := fields(t, l.Issues(), d.IssueID)
			if d.RepeatCount != tt.repeat || issue["Signature-Repeat-Count"] != itoa(tt.repeat) {
				t.Errorf("Signature-Repeat-Count %d (issue %q), want %d", d.RepeatCount, issue["Signature-Repeat-Count"], tt.repeat)
			}
			if d.RetryCount != tt.retry || issue["Retry-Count"] != itoa(tt.retry) {
				t.Errorf("Retry-Count %d (issue %q), want %d", d.RetryCount, issue["Retry-Count"], tt.retry)
			}
			if issue["Previous-Signatures"] != tt.history {
				t.Errorf("Previous-Signatures %q, want %q", issue["Previous-Signatures"], tt.history)
			}
			if issue["Halted"] != tt.halted {
				t.Errorf("issue Halted %q, want %q", issue["Halted"], tt.halted)
			}
			task := fields(t, l.Tasks(), "TASK-003")
			if task["Previous-Signatures"] != issue["Previous-Signatures"] || task["Retry-Count"] != issue["Retry-Count"] {
				t.Errorf("task and issue disagree: task %v, issue %v", task, issue)
			}
			if err := validate(l); err != nil {
				t.Error(err)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
