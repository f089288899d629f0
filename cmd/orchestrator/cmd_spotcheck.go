package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/spotcheck"
	"github.com/spf13/cobra"
)

// spotcheckOptions are the options of `orchestrator spotcheck`.
type spotcheckOptions struct {
	*globalOptions
	JSON   bool
	Mutate bool
}

func newSpotcheckCommand(g *globalOptions) *cobra.Command {
	opts := &spotcheckOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "spotcheck TASK-ID [--mutate] [--json]",
		Short: "Spot-check a task: a deterministic sample of the test plan, run by name, and mutants of its code",
		Long: `spotcheck samples the test plan for a task (docs/qa.md): all of the task's own Test IDs
and smoke or critical tests, and a share of every other category (unit 10%, 2 to 10;
integration 20%, 2 to 5; e2e 25%, 1 to 3; security 30%, 2 to 5; performance 10%, 1 to 2),
picked by a seed from SHA-256 of the task ID and the category, so the same task always gets
the same tests. A planned test that no test of the project is named after counts as selected
and failed. The selected tests run by name in a scratch checkout of the integration head.

The decision: smoke under 100% is CRITICAL, the task's tests under 100% FAIL, another
category passes at 95%, warns at 90-94%, fails under 90%, and under 95% overall fails.

With --mutate (always in a QA task of watch), each BUILD task the task depends on has the
lines its landed commit changed mutated, one mutant at a time (operators flipped, conditions
negated, returned values replaced by zero values, statements dropped; at most
mutants_per_task), and its tests run against each: tests that kill none FAIL, survivors WARN.

The report goes to .orchestrator/reports/spotcheck-<TASK>.md; a FAIL or CRITICAL opens a
qa_failure issue, and a qa_mismatch one for each implementer that claimed its tests passed.
Exit 0 for PASS or WARN, 1 for FAIL or CRITICAL.`,
		Example: `  orchestrator spotcheck TASK-Q01
  orchestrator spotcheck TASK-Q01 --mutate --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			return runSpotcheck(c.Context(), opts, args[0])
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	c.Flags().BoolVar(&opts.Mutate, "mutate", false, "also mutate the landed code of the BUILD tasks it covers")
	return c
}

func runSpotcheck(ctx context.Context, opts *spotcheckOptions, id string) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	jail, _, err := commandJail(l, cfg, opts.Stderr)
	if err != nil {
		return err
	}
	rep, err := spotcheck.Run(ctx, spotcheck.Options{Layout: l, Config: cfg, Task: id, Mutate: opts.Mutate, Jail: jail})
	switch {
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, spotcheck.ErrNoPlan):
		return &exitError{code: exitUsage, err: err}
	case err != nil:
		return err
	}
	if opts.JSON {
		if err := writeJSON(opts.Stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprint(opts.Stdout, rep.Markdown())
		fmt.Fprintf(opts.Stdout, "\nreport: %s\n", rep.Path)
		for _, id := range rep.Issues {
			fmt.Fprintf(opts.Stdout, "issue: %s\n", id)
		}
	}
	if rep.Decision == spotcheck.Fail || rep.Decision == spotcheck.Critical {
		return &exitError{code: exitFailure}
	}
	return nil
}
