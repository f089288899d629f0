package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/spotcheck"
)

// judgeQA is the gate of a QA task (SPEC §11.1): the orchestrator's own spot check, with
// mutation of the landed changes of the BUILD tasks it covers, on the candidate. A QA agent
// changes no file: what it claims is checked, not taken. Without a test plan there is
// nothing to sample, and the plain VERIFY gate decides.
func (r *runner) judgeQA(ctx context.Context, a *attempt, commit string, verify func() (*gate.Verdict, error)) (*gate.Verdict, error) {
	if len(a.changes) > 0 {
		var paths []string
		for _, c := range a.changes {
			paths = append(paths, c.Path)
		}
		return gate.Refuse(gate.TypeScope, "scope_violation: a QA task changes no file, and this one changed %s", strings.Join(paths, ", ")), nil
	}
	rep, err := spotcheck.Run(ctx, spotcheck.Options{
		Layout: r.o.Layout, Config: r.o.Config, Task: a.id, Mutate: true, Commit: commit, Env: r.env, NoIssues: true,
		Jail: r.gateJail,
	})
	if errors.Is(err, spotcheck.ErrNoPlan) {
		return verify()
	}
	if err != nil {
		return nil, err
	}
	v := &gate.Verdict{}
	fmt.Fprintf(&v.Log, "spot check of %s at %.12s: %s\n%s", a.id, commit, rep.Decision, rep.Markdown())
	summary := fmt.Sprintf("spot check %s (%s)", rep.Decision, rep.Path)
	if len(rep.Mutations) > 0 {
		var ms []string
		for _, m := range rep.Mutations {
			ms = append(ms, fmt.Sprintf("%s %d/%d mutants killed", m.Task, m.Killed, m.Mutants))
		}
		summary += "; " + strings.Join(ms, ", ")
	}
	if rep.Decision == spotcheck.Pass || rep.Decision == spotcheck.Warn {
		v.Pass, v.Reason = true, summary
		return v, nil
	}
	v.Output = strings.Join(failuresOf(rep), "\n") + "\n\n" + rep.Output
	v.Pass, v.Type, v.Reason = false, string(retry.QAFailure), summary+": "+strings.Join(failuresOf(rep), "; ")
	return v, nil
}

// failuresOf lists what failed a spot check: its failed picks and the tasks whose tests
// killed no mutant.
func failuresOf(rep *spotcheck.Report) []string {
	var out []string
	for _, c := range rep.Selection {
		for _, p := range c.Picks {
			if !p.Passed {
				out = append(out, fmt.Sprintf("%s %s: %s", c.Name, p.ID, p.Why))
			}
		}
	}
	for _, m := range rep.Mutations {
		if m.Decision == spotcheck.Fail {
			out = append(out, fmt.Sprintf("the tests of %s killed none of its %d mutants", m.Task, m.Mutants))
		}
	}
	return out
}
