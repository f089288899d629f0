package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orchestrator/orchestrator/watch"
	"github.com/spf13/cobra"
)

// showOptions are the options of `orchestrator show`.
type showOptions struct {
	*globalOptions
	ID   string
	JSON bool
}

func newShowCommand(g *globalOptions) *cobra.Command {
	opts := &showOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one task: its status, its last decision and why, its issue, its files, its agent's last lines",
		Long: `Show task ID: its status, kind, category and agent; the decision on its last attempt (outcome,
failure type, reason, when); its issue in issue_queue.md, if it has one; where the attempt's
folder, gate.log and agent.log are (relative to the repository root); and the last lines of
the agent's output. An unknown ID exits 2. With --json, the same as one JSON object.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runShow(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the task's report as JSON")
	return c
}

func runShow(ctx context.Context, opts *showOptions) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	rep, err := watch.Show(ctx, l, cfg, opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(opts.Stdout, rep)
	}
	return writeShow(opts.Stdout, rep)
}

// writeShow prints a task's report for a person: the task, its last decision, its files,
// and its agent's last lines.
func writeShow(out io.Writer, rep *watch.TaskReport) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s\t%s\n", k, v)
		}
	}
	row(rep.Task, rep.Title)
	row("status", rep.Status)
	row("kind", rep.Kind)
	row("category", rep.Category)
	agent := rep.Agent
	if rep.AgentFrom == "config" {
		agent += " (config)"
	}
	row("agent", agent)
	row("blocked", rep.BlockedReason)
	row("halted", rep.HaltReason)
	row("attempts", fmt.Sprint(rep.Attempts))
	fmt.Fprintln(w)
	if d := rep.Last; d != nil {
		what := d.Outcome
		if d.FailureType != "" {
			what += " (" + d.FailureType + ")"
		}
		by := ""
		if d.Agent != "" {
			by = " by " + d.Agent
		}
		if d.Worker != "" {
			by += " on worker " + d.Worker
		}
		row("last decision", fmt.Sprintf("attempt %d%s: %s", d.Attempt, by, what))
		if !d.Decided.IsZero() {
			row("decided", d.Decided.Local().Format(time.DateTime))
		}
		var took []string
		for _, st := range d.Stages {
			took = append(took, fmt.Sprintf("%s %.1f ms", st.Stage, st.MS))
		}
		row("stages", strings.Join(took, ", "))
		row("reason", d.Reason)
		row("commit", d.Commit)
		row("note", d.Note)
	} else {
		row("last decision", "none: no attempt yet")
	}
	if is := rep.Issue; is != nil {
		var about []string
		about = append(about, is.Status)
		if is.Halted {
			about = append(about, "halted")
		}
		if is.RootCause != "" {
			about = append(about, "root cause "+is.RootCause)
		}
		if is.RetryCount != "" {
			about = append(about, "retries "+is.RetryCount)
		}
		row("issue", fmt.Sprintf("%s (%s)", is.ID, strings.Join(about, ", ")))
		row("summary", is.Summary)
	} else {
		row("issue", "none")
	}
	fmt.Fprintln(w)
	row("runs", rep.Paths.Runs)
	row("gate.log", rep.Paths.GateLog)
	row("agent.log", rep.Paths.AgentLog)
	if err := w.Flush(); err != nil {
		return err
	}
	if len(rep.AgentTail) > 0 {
		fmt.Fprintf(out, "\nagent.log, last %d lines:\n", len(rep.AgentTail))
		for _, ln := range rep.AgentTail {
			fmt.Fprintf(out, "  %s\n", ln)
		}
	}
	return nil
}
