package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/spf13/cobra"
)

// validateOptions are the options of `orchestrator validate`.
type validateOptions struct {
	*globalOptions
	JSON bool
	Plan string
}

func newValidateCommand(g *globalOptions) *cobra.Command {
	opts := &validateOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "validate",
		Short: "Check the queues and report every problem as path:line: ID: message",
		Long: `Check the task and issue queues (SPEC §6.1):

  - the format: duplicate IDs, records without a field table, malformed rows, repeated
    fields, unknown statuses;
  - every dependency exists, and there is no dependency cycle (the cycle is named);
  - field values are well-formed: statuses, integers, booleans, 16-hex signatures;
  - TDD ordering: a TEST task depends on no BUILD task, and every BUILD task depends,
    directly or through other tasks, on a TEST task (except devops and docs tasks, and
    tasks with | TDD | exempt |);
  - with a test plan (projectspec/test-plan-output.json, or --plan): every plan ID is in the
    Test IDs of exactly one TEST task (an ID in a task but not in the plan is a warning), and
    the coverage matrix is current.

It prints one line per finding, in file order, and never writes. Exit 0 when there are no
errors (warnings allowed), 1 when there are errors, 2 when a file cannot be parsed or the
test plan cannot be read.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runValidate(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the findings as a JSON array")
	c.Flags().StringVar(&opts.Plan, "plan", "", "test plan `file` (default projectspec/test-plan-output.json, if it exists)")
	return c
}

func runValidate(_ context.Context, opts *validateOptions) error {
	// validate reads everything, keeps it to the end and exits: collecting garbage on the
	// way only costs time (measured: a few ms of 40 on a 10,000-task queue). The memory
	// limit still brings the collector back for a queue too big for that.
	limit := debug.SetMemoryLimit(-1) // -1 only reads it
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(min(limit, 1<<30)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	l, err := opts.layout()
	if err != nil {
		return err
	}
	// Read the plan while the queues are parsed: both are big on a big project.
	type planResult struct {
		plan *queue.Plan
		err  error
	}
	planc := make(chan planResult, 1)
	go func() {
		p, err := loadPlan(l, opts.Plan, false)
		planc <- planResult{p, err}
	}()
	waitPlan := sync.OnceValues(func() (*queue.Plan, error) {
		r := <-planc
		return r.plan, r.err
	})

	var findings []queue.Finding
	parseFailed := false
	for _, path := range []string{l.Tasks(), l.Issues()} {
		var withPlan func() (*queue.Plan, error) // the task queue is checked against the plan
		if path == l.Tasks() {
			withPlan = waitPlan
		}
		found, failed, err := checkFile(path, withPlan)
		switch {
		case errors.Is(err, fs.ErrNotExist) && path == l.Issues():
			continue
		case err != nil:
			return err
		}
		findings = append(findings, found...)
		parseFailed = parseFailed || failed
	}
	plan, err := waitPlan()
	if err != nil {
		return err
	}
	// File order: the task queue, the issue queue, then the plan (Check puts the plan's
	// findings after the task queue's).
	if plan != nil {
		last := func(f queue.Finding) int {
			if f.Path == plan.Path {
				return 1
			}
			return 0
		}
		byFile := func(a, b queue.Finding) int { return last(a) - last(b) }
		if !slices.IsSortedFunc(findings, byFile) { // sorted already, unless the issue queue has findings
			slices.SortStableFunc(findings, byFile)
		}
	}
	if opts.JSON {
		if findings == nil {
			findings = []queue.Finding{}
		}
		if err := writeJSON(opts.Stdout, findings); err != nil {
			return err
		}
	} else {
		// One write of a buffer sized first: growing it costs more than filling it.
		size := 0
		for _, f := range findings {
			size += len(f.Path) + len(f.ID) + len(f.Message) + 32
		}
		buf := make([]byte, 0, size)
		for _, f := range findings {
			buf = append(f.AppendText(buf), '\n')
		}
		if _, err := opts.Stdout.Write(buf); err != nil {
			return err
		}
	}
	errs := 0
	for _, f := range findings {
		if f.Severity == queue.Error {
			errs++
		}
	}
	switch {
	case parseFailed:
		return &exitError{code: exitUsage}
	case errs > 0:
		return &exitError{code: exitFailure}
	}
	return nil
}

// checkFile reads, parses and checks one queue file. A file that cannot be parsed gives its
// parse errors as findings (failed). withPlan, when not nil, gives the test plan to check
// the file against.
func checkFile(path string, withPlan func() (*queue.Plan, error)) (findings []queue.Finding, failed bool, err error) {
	// Mapped rather than read, and released before anything is printed: validate only
	// reads (see MapFile), and the findings keep copies of what they need.
	src, release, err := queue.MapFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read queue: %w", err)
	}
	defer release()
	d, err := queue.Parse(path, src, queue.KindOf(path))
	if err != nil {
		if fs := queue.FindingsFromParse(err); fs != nil {
			return fs, true, nil
		}
		return nil, false, err
	}
	var plan *queue.Plan
	if withPlan != nil {
		if plan, err = withPlan(); err != nil {
			return nil, false, err
		}
	}
	return queue.Check(d, plan), false, nil
}
