package spotcheck

import (
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/retry"
)

// Verdict turns the report into the gate verdict of a QA task (SPEC §11.1): a PASS or a
// WARN passes, with its summary (and each mutated task's kills) as the reason; a FAIL
// fails as qa_failure, naming what failed, with the selected tests' run as its output.
func (rep *Report) Verdict() *gate.Verdict {
	v := &gate.Verdict{}
	fmt.Fprintf(&v.Log, "spot check of %s at %.12s: %s\n%s", rep.Task, rep.Commit, rep.Decision, rep.Markdown())
	summary := fmt.Sprintf("spot check %s (%s)", rep.Decision, rep.Path)
	if len(rep.Mutations) > 0 {
		var ms []string
		for _, m := range rep.Mutations {
			ms = append(ms, fmt.Sprintf("%s %d/%d mutants killed", m.Task, m.Killed, m.Mutants))
		}
		summary += "; " + strings.Join(ms, ", ")
	}
	if rep.Decision == Pass || rep.Decision == Warn {
		v.Pass, v.Reason = true, summary
		return v
	}
	failures := rep.Failures()
	v.Output = strings.Join(failures, "\n") + "\n\n" + rep.Output
	v.Type, v.Reason = string(retry.QAFailure), summary+": "+strings.Join(failures, "; ")
	return v
}

// Failures lists what failed the spot check, one line each: its failed picks
// ("category: ID: why") and the tasks whose tests killed no mutant. The QA task's verdict
// and the spot check's qa_failure issue both say them.
func (rep *Report) Failures() []string {
	out := (&Selection{Categories: rep.Selection}).Failures()
	for _, m := range rep.Mutations {
		if m.Decision == Fail {
			out = append(out, fmt.Sprintf("mutation: the tests of %s killed none of its %d mutants", m.Task, m.Mutants))
		}
	}
	return out
}
