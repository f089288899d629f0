package spotcheck

import (
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/retry"
)

// TestReportVerdict: a QA task passes on a PASS or a WARN, and fails as qa_failure on a
// FAIL, naming each failed pick and each task whose tests killed no mutant.
func TestReportVerdict(t *testing.T) {
	rep := func(decision string) *Report {
		return &Report{Task: "TASK-QA", Commit: "0123456789abcdef", Decision: decision, Path: "reports/qa.md", Output: "--- FAIL: TestTotal",
			Selection: []Category{{Name: "unit", Picks: []Pick{{ID: "UT-1", Passed: true}, {ID: "UT-2", Why: "failed"}}}},
			Mutations: []*MutationResult{{Task: "TASK-001", Mutants: 4, Killed: 0, Decision: Fail}, {Task: "TASK-002", Mutants: 3, Killed: 3, Decision: Pass}}}
	}
	for _, d := range []string{Pass, Warn} {
		v := rep(d).Verdict()
		if !v.Pass || v.Reason != "spot check "+d+" (reports/qa.md); TASK-001 0/4 mutants killed, TASK-002 3/3 mutants killed" {
			t.Errorf("%s: pass %v, reason %q", d, v.Pass, v.Reason)
		}
	}
	v := rep(Fail).Verdict()
	if v.Pass || v.Type != string(retry.QAFailure) {
		t.Fatalf("FAIL: pass %v type %q", v.Pass, v.Type)
	}
	for _, want := range []string{"unit: UT-2: failed", "the tests of TASK-001 killed none of its 4 mutants"} {
		if !strings.Contains(v.Reason, want) || !strings.Contains(v.Output, want) {
			t.Errorf("FAIL does not name %q:\nreason %q\noutput %q", want, v.Reason, v.Output)
		}
	}
	if strings.Contains(v.Reason, "UT-1") || strings.Contains(v.Reason, "TASK-002 killed") {
		t.Errorf("what passed is named a failure: %q", v.Reason)
	}
	if !strings.HasSuffix(v.Output, "--- FAIL: TestTotal") || !strings.HasPrefix(v.Log.String(), "spot check of TASK-QA at 0123456789ab: FAIL") {
		t.Errorf("output %q\nlog %q", v.Output, v.Log.String())
	}
}
