package gate

import (
	"context"

	"github.com/orchestrator/orchestrator/testrun"
)

// MakeBaseline runs the project's whole suite, command, in in.Root and makes its baseline
// (testrun.NewBaseline; SPEC §7.5), with the gate's sandbox and environment. With
// in.Impact and a plain go test, it also seals the result of each package it tested under
// the package's input key, as a GREEN gate's run does (impact.go): the first gates after it
// then run only the packages a change reaches, not the whole suite again. Its run plants
// no canaries: the suite is the integration branch's, every change of which a gate with
// canaries judged, or the person's own. unsealed says which results could not be sealed:
// the baseline stands without them.
func MakeBaseline(ctx context.Context, in Input, command string, globs []string) (b *testrun.Baseline, unsealed, err error) {
	var plan *impactPlan
	if in.Impact != nil && in.Impact.Key != nil && in.Impact.Dir != "" {
		// The keys of the bytes as they are before the suite's code runs; where they
		// cannot be known, nothing is sealed.
		if plan, _ = in.impactKeys(ctx, command); plan != nil {
			plan.run = plan.pkgs
		}
	}
	res, err := testrun.Run(ctx, in.Root, command, in.Timeout, in.runOptions(command)...)
	if err != nil {
		return nil, nil, err
	}
	if err := testrun.NotRun(res); err != nil {
		return nil, nil, err
	}
	if b, err = testrun.NewBaseline(in.Root, res, globs); err != nil {
		return nil, nil, err
	}
	if plan != nil {
		_, unsealed = in.Impact.seal(plan, res)
	}
	return b, unsealed, nil
}
