package gate

import (
	"context"

	"github.com/orchestrator/orchestrator/testrun"
)

// MakeBaseline runs the project's whole suite, command, in in.Root and makes its baseline
// (testrun.NewBaseline; SPEC §7.5), with the gate's sandbox and environment. With
// in.Impact and a plain go test, a package whose inputs a sealed record holds as a pass
// (impact.go) is not run: its tests count as they passed then, as in a GREEN gate, so a
// clone or a worktree of a project whose packages were tested before runs only what
// differs. A recorded failure runs again, so that one that chance made is never kept out
// of the baseline. The result of each package that runs is sealed under its key as a GREEN
// gate's run seals it: the first gates after it then run only the packages a change
// reaches. Its run plants no canaries: the suite is the integration branch's, every change
// of which a gate with canaries judged, or the person's own. Before anything runs, start
// (if not nil) hears what will: the command ("" when every package's pass is reused) and,
// with in.Impact, what the records hold. unsealed says which results could not be sealed:
// the baseline stands without them.
func MakeBaseline(ctx context.Context, in Input, command string, globs []string, start func(run, reuse string)) (b *testrun.Baseline, unsealed, err error) {
	var s *BaselineSeal
	run, reuse := command, ""
	if in.Impact != nil && in.Impact.Key != nil && in.Impact.Dir != "" {
		plan, why := in.planImpact(ctx, command, false)
		if plan != nil {
			s = &BaselineSeal{impact: in.Impact, plan: plan}
			run, reuse = plan.runs(command), plan.describe()
		} else {
			reuse = "no sealed record used: " + why
		}
	}
	if start != nil {
		start(run, reuse)
	}
	var res *testrun.Result
	if run != "" {
		if res, err = testrun.Run(ctx, in.Root, run, in.Timeout, in.runOptions(run)...); err != nil {
			return nil, nil, err
		}
		if err := testrun.NotRun(res); err != nil {
			return nil, nil, err
		}
		unsealed = s.Seal(res)
	}
	if s != nil && len(s.plan.reused) > 0 {
		res = s.plan.merged(command, res)
	}
	if b, err = testrun.NewBaseline(in.Root, res, globs); err != nil {
		return nil, nil, err
	}
	return b, unsealed, nil
}

// A BaselineSeal seals the packages' results of a baseline's run (MakeBaseline, or
// `orchestrator baseline` in the person's tree) for the gates that follow it.
type BaselineSeal struct {
	impact *Impact
	plan   *impactPlan
}

// PlanBaselineSeal takes, before a baseline's run of command in in.Root, the input key of
// each package the run tests: the keys of the bytes as they are before the suite's code
// runs. It returns nil, which seals nothing, without in.Impact or where the keys cannot be
// known (a command that is not a plain go test, a module go list cannot describe).
func PlanBaselineSeal(ctx context.Context, in Input, command string) *BaselineSeal {
	if in.Impact == nil || in.Impact.Key == nil || in.Impact.Dir == "" {
		return nil
	}
	plan, _ := in.impactKeys(ctx, command)
	if plan == nil {
		return nil
	}
	plan.run = plan.pkgs
	return &BaselineSeal{impact: in.Impact, plan: plan}
}

// Seal seals the result res holds of each package planned; its error says which results
// could not be sealed (the baseline stands without them).
func (s *BaselineSeal) Seal(res *testrun.Result) error {
	if s == nil {
		return nil
	}
	_, err := s.impact.seal(s.plan, res)
	return err
}
