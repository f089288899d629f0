package main

import (
	"context"
	"fmt"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/spf13/cobra"
)

// validateOptions are the options of `orchestrator validate`.
type validateOptions struct {
	*globalOptions
	JSON bool
}

func newValidateCommand(g *globalOptions) *cobra.Command {
	opts := &validateOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "validate",
		Short: "Check the queues and report every problem as path:line: ID: message",
		Long: `Check the task and issue queues: the format (duplicate IDs, records without a field table,
malformed rows, repeated fields, unknown statuses), that every dependency exists, that there is
no dependency cycle, and that field values are well-formed. It prints one line per finding in
file order and never writes. Exit 0 when there are no errors (warnings allowed), 1 when there
are errors, 2 when a file cannot be parsed.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runValidate(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the findings as a JSON array")
	return c
}

func runValidate(_ context.Context, opts *validateOptions) error {
	l, err := opts.layout()
	if err != nil {
		return err
	}
	var findings []queue.Finding
	parseFailed := false
	for _, path := range []string{l.Tasks(), l.Issues()} {
		d, err := loadOptional(path)
		if err != nil {
			if fs := queue.FindingsFromParse(err); fs != nil {
				findings = append(findings, fs...)
				parseFailed = true
				continue
			}
			return err
		}
		if d == nil {
			if path == l.Tasks() {
				return fmt.Errorf("read queue: %s: %w", path, errMissing)
			}
			continue
		}
		findings = append(findings, queue.CheckStructure(d)...)
	}
	if opts.JSON {
		if findings == nil {
			findings = []queue.Finding{}
		}
		if err := writeJSON(opts.Stdout, findings); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintln(opts.Stdout, f)
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
