package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/orchestrator/orchestrator/retry"
	"github.com/spf13/cobra"
)

func newIssuesCommand(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "issues",
		Short: "Work with the issue queue",
		// Runnable, so that a wrong subcommand is an error (exit 2) and not the help.
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], c.CommandPath())
			}
			return c.Help()
		},
	}
	c.AddCommand(newIssuesConvertCommand(g))
	return c
}

// issuesConvertOptions are the options of `orchestrator issues convert`.
type issuesConvertOptions struct {
	*globalOptions
	JSON bool
	Now  func() time.Time // the clock for Last Updated; nil means sourceDateClock
}

func newIssuesConvertCommand(g *globalOptions) *cobra.Command {
	opts := &issuesConvertOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "convert",
		Short: "Turn pending issues into tasks",
		Long: `Turn the issue queue's pending issues into new tasks at the end of the task queue,
TASK-<next number>, keeping the issue's retry fields (Retry-Count, Max-Retries,
Failure-Signature, Previous-Signatures, Signature-Repeat-Count) and setting Source Issue.
Each converted issue gets Status accepted and Task Ref. Halted issues need a person and are
skipped, each with a line saying so; failure-remediation issues of existing tasks belong to
the retry loop and are left alone. Running it again converts nothing twice.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runIssuesConvert(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON: every issue converted or skipped")
	return c
}

// sourceDateClock returns the time for what a command writes: now, or the time that
// $SOURCE_DATE_EPOCH gives (seconds since 1970), for reproducible output.
func sourceDateClock() time.Time {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now()
}

func runIssuesConvert(ctx context.Context, opts *issuesConvertOptions) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	now := opts.Now
	if now == nil {
		now = sourceDateClock
	}
	lim := retry.Limits(cfg.Retries)
	convs, err := retry.Convert(ctx, l, lim, now())
	if opts.JSON {
		if convs == nil {
			convs = []retry.Conversion{}
		}
		enc := json.NewEncoder(opts.Stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(map[string]any{"conversions": convs}); jerr != nil && err == nil {
			err = jerr
		}
		return err
	}
	for _, c := range convs {
		if c.Skipped != "" {
			fmt.Fprintf(opts.Stdout, "skipped %s: %s\n", c.Issue, c.Skipped)
		} else {
			fmt.Fprintf(opts.Stdout, "converted %s to %s\n", c.Issue, c.Task)
		}
		if c.Note != "" {
			fmt.Fprintf(opts.Stdout, "  note: %s\n", c.Note)
		}
	}
	if err == nil && len(convs) == 0 {
		fmt.Fprintln(opts.Stdout, "no pending issues to convert")
	}
	return err
}
