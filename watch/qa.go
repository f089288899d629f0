package watch

import (
	"context"
	"errors"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
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
	return rep.Verdict(), nil
}
