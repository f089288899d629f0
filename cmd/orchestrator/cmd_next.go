package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/spf13/cobra"
)

// nextOptions are the options of `orchestrator next`.
type nextOptions struct {
	*globalOptions
	JSON bool
}

func newNextCommand(g *globalOptions) *cobra.Command {
	opts := &nextOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "next",
		Short: "List the tasks that are ready to run, in the order they would run",
		Long: `List the ready set: pending tasks, not halted, whose dependencies are all completed or
skipped. Tasks of open critical issues come first, then TEST, VERIFY, BUILD and QA tasks, then
file order.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runNext(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

// readyTask is one entry of `next --json`.
type readyTask struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Category string `json:"category"`
	Line     int    `json:"line"`
}

func runNext(_ context.Context, opts *nextOptions) error {
	l, err := opts.layout()
	if err != nil {
		return err
	}
	q, err := loadQueues(l)
	if err != nil {
		return err
	}
	ready := queue.Ready(q.tasks, q.issues, nil)
	out := bufio.NewWriterSize(opts.Stdout, 64<<10) // one write, not one per task
	if opts.JSON {
		list := make([]readyTask, 0, len(ready))
		for _, t := range ready {
			list = append(list, readyTask{ID: t.ID, Kind: t.Kind.String(), Category: t.Category, Line: t.Line})
		}
		if err := writeJSON(out, list); err != nil {
			return err
		}
		return out.Flush()
	}
	for _, t := range ready {
		fmt.Fprintf(out, "%s\t%s\n", t.ID, t.Kind)
	}
	return out.Flush()
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "A -> B" reads as written; the output is not for HTML pages
	return enc.Encode(v)
}
