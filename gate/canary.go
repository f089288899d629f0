package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/testrun"
)

// TypeForged is the failure type of a run whose report cannot be trusted (SPEC §7.6): the
// canaries planted beside its tests were not reported as they must be.
const TypeForged = "forged_results"

// forgedHow says, in the verdict's reason, what a forged_results failure means, so that a
// person reading the issue or the halt report understands it without the code.
const forgedHow = "the orchestrator planted two tests of its own beside the tests it ran, " +
	"one that must pass and one that must fail, with names chosen at random; " +
	"a report that gets them wrong was rewritten by something in the run (a TestMain, an init " +
	"function, a conftest.py hook, a runner plugin or configuration), so none of its results count"

// runTests runs a test command in the gate's checkout with a canary planted beside the
// tests it runs (SPEC §7.6), and checks the runner's report against it. An honest report
// comes back without the canaries: their tests, their lines of output, and the failure
// the failing one gave the command's exit code are taken out, so that the run's own tests
// decide. A report that gets the canaries wrong is an error, and the verdict fails as
// forged_results whatever the caller makes of it. The canary files are removed after the
// run; they only ever exist in the gate's checkout. A command no runner reads gets no
// canary, and gate.log says so.
func (v *Verdict) runTests(ctx context.Context, in Input, command string) (*testrun.Result, error) {
	if err := testrun.RemoveBytecode(in.Root); err != nil {
		return nil, err
	}
	p, err := testrun.PlantCanary(in.Root, command, in.plantedCanary())
	if err != nil {
		return nil, err
	}
	if p.Skip != "" {
		fmt.Fprintf(&v.Log, "canary: none: %s\n", p.Skip)
		res, err := v.runWatched(ctx, in, command, command)
		if err == nil && res.Forged != nil {
			v.forged = res.Forged
			fmt.Fprintf(&v.Log, "the report cannot be trusted: %s (%s)\n", res.Forged.What, res.Forged.Where)
			fmt.Fprintf(&v.Log, "the runner's output:\n%s\n", indent(clip(res.Output, 4000)))
			return nil, res.Forged
		}
		return res, err
	}
	fmt.Fprintf(&v.Log, "canary %s: planted %s\n", p.Token, strings.Join(p.Files, ", "))
	if p.Command != command {
		fmt.Fprintf(&v.Log, "canary %s: run as %s\n", p.Token, p.Command)
	}
	res, err := v.runWatched(ctx, in, command, p.Command)
	if rerr := p.Remove(); rerr != nil {
		fmt.Fprintf(&v.Log, "canary %s: could not remove: %v\n", p.Token, rerr)
	}
	if err != nil {
		return nil, err
	}
	res.Command = command
	code := res.ExitCode
	if err := p.Check(res); err != nil {
		var f *testrun.ForgedError
		if !errors.As(err, &f) {
			return nil, err
		}
		v.forged = f
		fmt.Fprintf(&v.Log, "canary %s: the report cannot be trusted: %s\n", p.Token, f.What)
		fmt.Fprintf(&v.Log, "canary %s: exit code %d; the canaries' tests as reported:\n", p.Token, res.ExitCode)
		n := 0
		for _, t := range res.Tests {
			if p.Holds(t.ID) {
				n++
				fmt.Fprintf(&v.Log, "  %s: %s\n", t.ID, t.Status)
			}
		}
		if n == 0 {
			v.Log.WriteString("  (none)\n")
		}
		fmt.Fprintf(&v.Log, "the runner's output:\n%s\n", indent(clip(res.Output, 4000)))
		return nil, err
	}
	fmt.Fprintf(&v.Log, "canary %s: reported as planted (one passed, one failed with its message)\n", p.Token)
	if code != res.ExitCode {
		fmt.Fprintf(&v.Log, "canary %s: the command exited %d for the failing canary; the run's own tests decide: exit %d\n", p.Token, code, res.ExitCode)
	}
	return res, nil
}

// runWatched runs run, the gate's form of command, with the test files watched (guard.go):
// a test file or test data that changed while it ran is a *TestsChangedError, and the
// verdict fails as test_tampered whatever the caller makes of the run.
func (v *Verdict) runWatched(ctx context.Context, in Input, command, run string) (*testrun.Result, error) {
	g, note := guardTests(in.Root, in.Globs)
	if note != "" {
		fmt.Fprintf(&v.Log, "guard: %s\n", note)
	}
	res, err := testrun.Run(ctx, in.Root, run, in.Timeout, in.runOptions(run)...)
	if changed := g.stop(command); changed != nil {
		v.rewrote = changed
		fmt.Fprintf(&v.Log, "guard: %v\n", changed)
		return nil, changed
	}
	return res, err
}

// plantedCanary is the canary a run plants: the jail's (Jail.Canary), or one drawn for the
// run without a sandbox.
func (in Input) plantedCanary() testrun.Canary {
	switch {
	case in.canary != nil:
		return *in.canary
	case in.Jail != nil:
		return in.Jail.Canary()
	}
	return testrun.NewCanary()
}

// forgedReason is the reason of a forged_results verdict. It names the package, folder or
// file of the canaries, never their random names: the same forgery must give the same
// failure signature in every run (SPEC §8.1).
func forgedReason(f *testrun.ForgedError) string {
	how := forgedHow
	if f.Stream {
		how = forgedStreamHow
	}
	return fmt.Sprintf("forged_results: the test runner's report cannot be trusted: %s (%s); %s", f.What, f.Where, how)
}

// forgedStreamHow says what a forged_results failure of a report that contradicts itself
// means.
const forgedStreamHow = "the runner reports each test once, through a pipe the orchestrator holds while the run " +
	"lasts; a test reported twice, or a report after the run ended, was written by something else in the run " +
	"(code run at interpreter exit, an imported module, a plugin), so none of its results count"
