package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/spf13/cobra"
)

// setOptions are the options of `orchestrator set`.
type setOptions struct {
	*globalOptions
	ID     string
	Assign []string // Field=Value
	If     []string // Field=Value that must hold first
}

func newSetCommand(g *globalOptions) *cobra.Command {
	opts := &setOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "set ID Field=Value...",
		Short: "Edit fields of a task or issue in place",
		Long: `Set fields of the record ID in the task queue (or, for ISSUE- IDs, the issue queue).
An existing row has only its value cell rewritten, keeping its padding (in an aligned table, the
column's width, when the value fits); a missing field gets a new row at the end of the
record's field table. With --if, the edit is made only when the
fields already hold the given values (compare-and-set); otherwise it exits 1 and changes
nothing.`,
		Example: `  orchestrator set TASK-001 Status=completed
  orchestrator set TASK-001 Status=in_progress --if Status=pending`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.Assign = args[0], args[1:]
			return runSet(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.If, "if", nil, "only edit when `Field=Value` holds now (repeatable)")
	return c
}

// parseAssignments reads Field=Value arguments. A field given twice, in any of its
// spellings (Retry-Count and retry_count are one field, SPEC §3.1), is refused: which value
// was meant is not known, and writing both would leave the record with a repeated field.
func parseAssignments(list []string) ([][2]string, error) {
	var out [][2]string
	for i, a := range list {
		name, value, ok := strings.Cut(a, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, usageErrorf("%q is not Field=Value", a)
		}
		if err := queue.CheckFieldName(name); err != nil {
			return nil, usageErrorf("%v", err)
		}
		for _, prev := range list[:i] {
			if p, _, _ := strings.Cut(prev, "="); queue.SameName(p, name) {
				return nil, usageErrorf("field %s is given twice (%q and %q)", queue.CanonicalName(name), prev, a)
			}
		}
		out = append(out, [2]string{strings.TrimSpace(name), value})
	}
	return out, nil
}

func runSet(ctx context.Context, opts *setOptions) error {
	if !queue.ValidID(opts.ID) {
		return usageErrorf("%q is not a record ID", opts.ID)
	}
	assign, err := parseAssignments(opts.Assign)
	if err != nil {
		return err
	}
	conds, err := parseAssignments(opts.If)
	if err != nil {
		return err
	}
	l, err := opts.layout()
	if err != nil {
		return err
	}
	// The record is looked for in the file its ID belongs to, then in the other one. Not
	// found in either, the error names the file it belongs to.
	files := []string{l.Tasks(), l.Issues()}
	if strings.HasPrefix(opts.ID, "ISSUE-") {
		files[0], files[1] = files[1], files[0]
	}
	notFound := fmt.Errorf("%s: %w: %s", files[0], queue.ErrNotFound, opts.ID)
	err = notFound
	for _, path := range files {
		if _, statErr := os.Stat(path); errors.Is(statErr, fs.ErrNotExist) && path != l.Tasks() {
			continue // a repository without an issue queue
		}
		kind := queue.KindOf(path)
		_, err = queue.UpdateRecords(ctx, path, kind, []string{opts.ID}, func(d *queue.Doc) ([]queue.Op, error) {
			// Values are checked against the file the record is in: an issue's statuses
			// are not a task's.
			if _, ok := d.Record(opts.ID); !ok {
				return nil, notFound
			}
			for _, a := range assign {
				if err := queue.CheckValue(kind, a[0], a[1]); err != nil {
					return nil, usageErrorf("%s: %v", opts.ID, err)
				}
			}
			var ops []queue.Op
			for _, c := range conds {
				ops = append(ops, queue.Expect{ID: opts.ID, Field: c[0], Value: c[1]})
			}
			for _, a := range assign {
				ops = append(ops, queue.SetField{ID: opts.ID, Field: a[0], Value: a[1]})
			}
			return ops, nil
		})
		if !errors.Is(err, queue.ErrNotFound) {
			break
		}
	}
	if errors.Is(err, queue.ErrConflict) {
		return &exitError{code: exitFailure, err: err}
	}
	return err
}
