package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/plan"
	"github.com/spf13/cobra"
)

// planOptions are the options of `orchestrator plan`.
type planOptions struct {
	*globalOptions
	PRD        string
	Plan       string
	DryRun     bool
	JSON       bool
	Agent      string
	MaxRetries int
}

func newPlanCommand(g *globalOptions) *cobra.Command {
	opts := &planOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "plan --prd FILE",
		Short: "Have the planner agent turn a requirements file and the test plan into tasks, checked before they are written",
		Long: `Run the planner agent on a requirements file (--prd) and the test plan
(projectspec/test-plan-output.json, or --plan) to break them into tasks (docs/plan.md).

The planner writes its tasks to a scratch file (ORCHESTRATOR_PLAN_FILE), never to the
queue, and ends with a tdd-result block of role planner. Its output is a claim: appended to
the task queue as it is, it must pass validate with no error (every test ID of the plan in
exactly one TEST task, TEST tasks before BUILD tasks, no cycle, no missing dependency,
well-formed values, new IDs, new tasks pending). A rejected output goes back to the planner
with validate's findings, verbatim, and nothing else, up to retries.max_retries times
(default 3); then planning halts with a report of what is still wrong (exit 3) and the
queue is untouched.

An accepted output is appended to the task queue, with its coverage matrix, in one atomic
write: the tasks already there keep every byte. The planner runs in the repository, in the
sandbox where one runs (config sandbox), where everything but its scratch file is
read-only; without a sandbox, a planner that changes any other file is refused and the
queue files are put back.

--dry-run prints the queue it would write and writes nothing; --json prints the findings
of each round. Records of every round are kept in .orchestrator/runs/plan/.`,
		Example: `  orchestrator plan --prd docs/requirements.md
  orchestrator plan --prd docs/requirements.md --plan specs/test-plan.json --dry-run
  orchestrator plan --prd docs/requirements.md --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runPlan(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.PRD, "prd", "", "requirements `file` (required)")
	c.Flags().StringVar(&opts.Plan, "plan", "", "test plan `file` (default projectspec/test-plan-output.json)")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the queue that would be written, and write nothing")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the findings of each round and the outcome as JSON")
	c.Flags().StringVar(&opts.Agent, "agent", "", "the agent to plan with (default: the config's agent)")
	c.Flags().IntVar(&opts.MaxRetries, "max-retries", -1, "times a rejected output goes back to the planner (default: retries.max_retries if config.yaml sets it, else 3)")
	return c
}

// planJSON is the output of `plan --json`.
type planJSON struct {
	Outcome  string        `json:"outcome"` // written, dry-run or halted
	Reason   string        `json:"reason,omitempty"`
	Queue    string        `json:"queue"`
	Rounds   []plan.Round  `json:"rounds"`
	New      []string      `json:"new_tasks"`
	Coverage *coverageJSON `json:"coverage,omitempty"`
	Report   string        `json:"report,omitempty"`
	Text     string        `json:"queue_text,omitempty"` // with --dry-run: the queue it would write
}

func runPlan(ctx context.Context, opts *planOptions) error {
	if opts.PRD == "" {
		return usageErrorf("plan: --prd FILE is required: the requirements to plan from")
	}
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	prd, err := readPRD(opts.PRD)
	if err != nil {
		return err
	}
	p, err := loadPlan(l, opts.Plan, true)
	if err != nil {
		return err
	}
	retries := opts.MaxRetries
	if retries < 0 {
		retries = plan.DefaultMaxRetries
		if cfg.Line("retries", "max_retries") > 0 {
			retries = cfg.Retries.MaxRetries
		}
	}
	// Progress goes where it does not mix with the data asked for.
	progress := opts.Stdout
	if opts.DryRun || opts.JSON {
		progress = opts.Stderr
	}
	jail, err := planSandbox(cfg.Sandbox, progress)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := plan.Run(ctx, plan.Options{
		Layout: l, Config: cfg, PRDPath: opts.PRD, PRD: prd, Plan: p,
		Agent: opts.Agent, MaxRetries: retries, DryRun: opts.DryRun, Sandbox: jail,
		Events: func(e plan.Event) { planEvent(progress, e) },
	})
	var ee *plan.ExistingError
	switch {
	case errors.As(err, &ee):
		if opts.JSON {
			writeJSON(opts.Stdout, ee.Findings)
		} else {
			io.WriteString(opts.Stdout, plan.FindingsText(ee.Findings))
		}
		return &exitError{code: exitFailure, err: ee}
	case errors.Is(err, plan.ErrAgent):
		return &exitError{code: exitUsage, err: err}
	case err != nil:
		return err
	}
	if opts.JSON {
		out := planJSON{Outcome: res.Outcome, Reason: res.Reason, Queue: l.Tasks(), Rounds: res.Rounds, New: res.New, Report: res.ReportPath}
		if out.New == nil {
			out.New = []string{}
		}
		if res.Coverage != nil {
			c := toCoverageJSON(res.Coverage)
			out.Coverage = &c
		}
		if res.Outcome == plan.DryRun {
			out.Text = string(res.Queue)
		}
		if err := writeJSON(opts.Stdout, out); err != nil {
			return err
		}
	} else {
		switch res.Outcome {
		case plan.DryRun:
			if _, err := opts.Stdout.Write(res.Queue); err != nil {
				return err
			}
		case plan.Written:
			fmt.Fprintf(opts.Stdout, "%d tasks appended to %s: %s\ncoverage: %s\n", len(res.New), l.Tasks(), strings.Join(res.New, ", "), res.Coverage.Summary())
		case plan.Halted:
			io.WriteString(opts.Stdout, res.Report)
		}
	}
	if res.Outcome == plan.Halted {
		return &exitError{code: exitHalted}
	}
	return nil
}

// planEvent prints one event of a planning run; a rejection with its findings under it, at
// most 20 of them.
func planEvent(w io.Writer, e plan.Event) {
	fmt.Fprintf(w, "%s plan round %d %s: %s\n", time.Now().Format("15:04:05"), e.Round, e.What, e.Message)
	const most = 20
	for i, f := range e.Findings {
		if i == most {
			fmt.Fprintf(w, "  ... and %d more: %s\n", len(e.Findings)-most, filepath.Join(e.Dir, "findings.txt"))
			break
		}
		fmt.Fprintf(w, "  %s\n", f)
	}
}

// readPRD reads the requirements file: a missing, empty or binary file is bad input (exit
// 2) that names it.
func readPRD(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("requirements: %w", err)}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, usageErrorf("requirements: %s is empty", path)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return nil, usageErrorf("requirements: %s is not a text file", path)
	}
	return b, nil
}

// planSandbox decides whether the planner runs in bubblewrap, as watch decides for its
// agents: off never, bwrap or nothing, auto where it runs (saying so when it does not).
func planSandbox(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "off":
		return false, nil
	case "bwrap":
		if err := agents.BwrapAvailable(); err != nil {
			return false, fmt.Errorf("sandbox: bwrap: %w", err)
		}
		return true, nil
	}
	if err := agents.BwrapAvailable(); err != nil {
		fmt.Fprintf(w, "warning: the planner runs without a sandbox (%v); a planner that writes outside its scratch file is refused after the fact\n", err)
		return false, nil
	}
	return true, nil
}
