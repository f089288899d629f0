package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/orchestrator/orchestrator/cost"
	"github.com/orchestrator/orchestrator/watch"
	"github.com/spf13/cobra"
)

// costOptions are the options of `orchestrator cost`.
type costOptions struct {
	*globalOptions
	JSON bool
}

func newCostCommand(g *globalOptions) *cobra.Command {
	opts := &costOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "cost",
		Short: "Show what the agents spent: verified work and rejected attempts, per task, agent and role, and for the run",
		Long: `cost reads what every attempt's agent runs spent, as the agent programs reported it
(Claude Code's total_cost_usd and tokens, Codex's tokens priced with the config's prices, an
exec agent's usage line), and splits it into what verified work cost and what the other
attempts cost (rejected claims, failures, stopped and rate-limited attempts). A figure that a
program did not report is unknown: "?" here, null in --json, never 0.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runCost(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

func runCost(_ context.Context, opts *costOptions) error {
	l, err := opts.layout()
	if err != nil {
		return err
	}
	q, err := loadQueues(l)
	if err != nil {
		return err
	}
	rep := cost.BuildReport(q.tasks, watch.ReadCosts(l, q.tasks))
	if opts.JSON {
		return writeJSON(opts.Stdout, rep)
	}
	return writeCost(opts.Stdout, rep)
}

// writeCost prints the report as three tables and the run's line.
func writeCost(out io.Writer, rep cost.Report) error {
	table := func(header string, rows func(w io.Writer)) error {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, header+"\tVERIFIED\tREJECTED\tTOTAL\tTOKENS")
		rows(w)
		if err := w.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(out)
		return err
	}
	if err := table("TASK\tSTATUS\tATTEMPTS", func(w io.Writer) {
		for _, t := range rep.Tasks {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", t.Task, orDash(t.Status), t.Attempts, bucketCells(t.Bucket))
		}
	}); err != nil {
		return err
	}
	if err := table("AGENT\tRUNS", func(w io.Writer) {
		for _, a := range rep.Agents {
			fmt.Fprintf(w, "%s\t%d\t%s\n", a.Agent, a.Runs, bucketCells(a.Bucket))
		}
	}); err != nil {
		return err
	}
	if err := table("ROLE\tRUNS", func(w io.Writer) {
		for _, r := range rep.Roles {
			fmt.Fprintf(w, "%s\t%d\t%s\n", r.Role, r.Runs, bucketCells(r.Bucket))
		}
	}); err != nil {
		return err
	}
	b := rep.Run
	_, err := fmt.Fprintf(out, "run: %s verified work, %s rejected attempts, %s in all; %s tokens in %d agent runs\n",
		cost.FormatUSD(b.VerifiedUSD), cost.FormatUSD(b.RejectedUSD), cost.FormatUSD(b.TotalUSD), cost.FormatTokens(b.Tokens), b.Runs)
	return err
}

func bucketCells(b cost.Bucket) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s", cost.FormatUSD(b.VerifiedUSD), cost.FormatUSD(b.RejectedUSD), cost.FormatUSD(b.TotalUSD), cost.FormatTokens(b.Tokens))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
