package main

import (
	"context"
	"fmt"
	"io"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/spf13/cobra"
)

// coverageOptions are the options of `orchestrator coverage`.
type coverageOptions struct {
	*globalOptions
	Plan  string
	Write bool
	JSON  bool
}

func newCoverageCommand(g *globalOptions) *cobra.Command {
	opts := &coverageOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "coverage [--write]",
		Short: "Print the test coverage matrix, or write it into the task queue",
		Long: `Compare the test plan (projectspec/test-plan-output.json, or --plan) with the Test IDs of
the TEST tasks, and print the coverage matrix: for each category of the plan, in the plan's
order, how many test IDs it has, how many are mapped to a TEST task, and which are missing.
The percentage is rounded down, so 100% means every planned test has a task.

With --write, the matrix replaces the "## Test Coverage Matrix" section of the task queue (it
is appended at the end when there is none) and nothing else in the file changes; when the
section is already current, the file is not written. validate reports a stale matrix.`,
		Example: `  orchestrator coverage
  orchestrator coverage --write
  orchestrator coverage --plan specs/test-plan.json --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runCoverage(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Plan, "plan", "", "test plan `file` (default projectspec/test-plan-output.json)")
	c.Flags().BoolVar(&opts.Write, "write", false, "write the matrix into the task queue instead of printing it")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the coverage as JSON")
	return c
}

// coverageJSON is the output of `coverage --json`.
type coverageJSON struct {
	Categories []coverageCategoryJSON `json:"categories"`
	PlanCount  int                    `json:"plan_count"`
	Mapped     int                    `json:"mapped_count"`
	Percent    int                    `json:"percent"`
}

type coverageCategoryJSON struct {
	Category  string   `json:"category"`
	PlanCount int      `json:"plan_count"`
	Mapped    int      `json:"mapped_count"`
	Missing   []string `json:"missing_ids"`
}

func toCoverageJSON(c *queue.CoverageReport) coverageJSON {
	out := coverageJSON{Categories: []coverageCategoryJSON{}, PlanCount: c.Planned, Mapped: c.Mapped, Percent: c.Percent()}
	for _, row := range c.Categories {
		missing := row.Missing
		if missing == nil {
			missing = []string{}
		}
		out.Categories = append(out.Categories, coverageCategoryJSON{Category: row.Category, PlanCount: row.Planned, Mapped: row.Mapped, Missing: missing})
	}
	return out
}

func runCoverage(ctx context.Context, opts *coverageOptions) error {
	l, err := opts.layout()
	if err != nil {
		return err
	}
	plan, err := loadPlan(l, opts.Plan, true)
	if err != nil {
		return err
	}
	var rep *queue.CoverageReport
	if opts.Write {
		// The matrix is computed from the file as Update reads it under the lock (again, if
		// a person saved it meanwhile), so that it matches the Test IDs it is written with.
		_, err = queue.Update(ctx, l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
			rep = queue.Coverage(d, plan)
			return []queue.Op{queue.ReplaceSection{Title: queue.CoverageTitle, Text: rep.Render()}}, nil
		})
		if err != nil {
			return err
		}
	} else {
		d, err := queue.Load(l.Tasks())
		if err != nil {
			return err
		}
		rep = queue.Coverage(d, plan)
	}
	switch {
	case opts.JSON:
		return writeJSON(opts.Stdout, toCoverageJSON(rep))
	case opts.Write:
		return nil
	}
	_, err = io.WriteString(opts.Stdout, rep.Render())
	return err
}

// coverageLine is the coverage line of `status`.
func coverageLine(c *queue.CoverageReport) string {
	return fmt.Sprintf("coverage: %s", c.Summary())
}
