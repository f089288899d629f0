package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/watch"
	"github.com/orchestrator/orchestrator/workers"
	"github.com/orchestrator/orchestrator/worktree"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// watchOptions are the options of `orchestrator watch` and `orchestrator run`.
type watchOptions struct {
	*globalOptions
	Jobs     int
	Once     bool
	JSON     bool
	Agent    string
	Timeout  time.Duration
	Grace    time.Duration
	Debounce time.Duration
	Only     string
	// ServeWorkers and Workers run the agents on worker machines (SPEC §18): through a
	// JetStream server this watch starts, or an existing one.
	ServeWorkers string
	Workers      string
}

func newWatchCommand(g *globalOptions) *cobra.Command {
	opts := &watchOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "watch",
		Short: "Run ready tasks through agents, check every claim, and keep watching the queue",
		Long: `Start an agent for each ready task (up to --jobs at once), wait for its completion marker
or its exit, and check its claim by running the task's test command: a BUILD or VERIFY claim
passes only if the tests pass, a TEST claim only if they fail. The outcome is written to the
task queue with compare-and-set, so a person's edit made meanwhile wins; a running task set to
another status by hand has its agent stopped.

With --once it stops when nothing is ready or running and exits 0 if every task is completed
or skipped, 1 if any failed, 3 if any halted. SIGINT or SIGTERM stops the agents, puts their
tasks back to pending and exits 130. A second watch on the same repository refuses to start.

A problem of the set-up is no agent's failure: an agent or a test command that cannot run here
(a program not found, a test runner not installed) is refused before anything starts, and one
met later (the sandbox does not start, a judge's answer cannot be read even after its re-emit)
stops the run; either way it exits 2 with the reason, and the task it met goes back to pending
with no attempt counted.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runWatch(c.Context(), opts)
		},
	}
	addWatchFlags(c, opts)
	c.Flags().IntVar(&opts.Jobs, "jobs", 0, "agents at once (default: config jobs, else 1)")
	c.Flags().BoolVar(&opts.Once, "once", false, "stop when nothing is ready or running")
	addWorkersFlags(c, opts)
	return c
}

// addWorkersFlags adds the flags that run the agents on workers (SPEC §18).
func addWorkersFlags(c *cobra.Command, opts *watchOptions) {
	c.Flags().StringVar(&opts.ServeWorkers, "serve-workers", "", "run agents on workers through a JetStream server started here on `ADDR` (host:port; overrides config workers), which orchestrator worker connects to")
	c.Flags().StringVar(&opts.Workers, "workers", "", "run agents on the workers of an existing NATS server, `URL` nats://host:port (overrides config workers)")
}

func newRunCommand(g *globalOptions) *cobra.Command {
	opts := &watchOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "run ID",
		Short: "Run one attempt of one task in the foreground, and check it",
		Long: `Run one attempt of task ID (pending, failed or blocked), whatever its dependencies, the
way watch would: status in_progress, attempt folder, prompt, agent, gate, outcome. Exit 0 if
the claim was verified, 1 if not.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Only = args[0]
			return runWatch(c.Context(), opts)
		},
	}
	addWatchFlags(c, opts)
	return c
}

func addWatchFlags(c *cobra.Command, opts *watchOptions) {
	c.Flags().BoolVar(&opts.JSON, "json", false, "print events as JSON lines")
	c.Flags().StringVar(&opts.Agent, "agent", "", "agent for every task without an Agent field (overrides config)")
	c.Flags().DurationVar(&opts.Timeout, "timeout", 0, "task timeout (overrides config task_timeout)")
	c.Flags().DurationVar(&opts.Grace, "grace", 0, "time an agent gets after its marker, and between SIGTERM and SIGKILL (overrides config grace)")
	c.Flags().DurationVar(&opts.Debounce, "debounce", 100*time.Millisecond, "how long queue-file changes settle before they are read")
}

func runWatch(ctx context.Context, opts *watchOptions) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	if opts.Agent != "" {
		cfg.Agent, cfg.Ladder = opts.Agent, nil
		cfg.Override("agent", "ladder")
	}
	if opts.Timeout > 0 {
		cfg.TaskTimeout.Duration = opts.Timeout
	}
	if opts.Grace > 0 {
		cfg.Grace.Duration = opts.Grace
	}
	jobs := opts.Jobs
	if jobs == 0 {
		jobs = cfg.Jobs
	}
	remote, err := workersOf(cfg, opts)
	if err != nil {
		return err
	}
	format, color := progressFormat(opts.JSON, opts.Stdout, os.Getenv)
	plan, err := checkBeforeRun(ctx, l, cfg, opts.Only)
	if err != nil {
		return err
	}
	exe, _ := os.Executable()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := watch.Run(ctx, watch.Options{
		Layout: l, Config: cfg, Jobs: jobs, Once: opts.Once, Only: opts.Only,
		Out: opts.Stdout, Format: format, Color: color, Debounce: opts.Debounce, Executable: exe, Plan: plan,
		Workers: remote,
	})
	if errors.Is(err, watch.ErrBusy) || errors.Is(err, watch.ErrCannotRun) {
		return &exitError{code: exitUsage, err: err}
	}
	if err != nil {
		return err
	}
	switch sum.Outcome {
	case watch.Interrupted:
		return &exitError{code: exitInterrupted}
	case watch.Halted:
		return &exitError{code: exitHalted}
	case watch.SomeFailed:
		return &exitError{code: exitFailure}
	}
	return nil
}

// workersOf returns where the run's agents run: on the workers of the server that
// --serve-workers starts or --workers names, else of config workers, else here (the zero
// value). The embedded server's token is config workers.token, else
// $ORCHESTRATOR_WORKER_TOKEN, else the one the run keeps in its state.
func workersOf(cfg *config.Config, opts *watchOptions) (watch.WorkersOptions, error) {
	w := cfg.Workers
	switch {
	case opts.ServeWorkers != "" && opts.Workers != "":
		return watch.WorkersOptions{}, usageErrorf("watch: --serve-workers and --workers: serve workers from this watch, or use an existing server, not both")
	case opts.ServeWorkers != "":
		if err := config.CheckServeAddr(opts.ServeWorkers); err != nil {
			return watch.WorkersOptions{}, usageErrorf("watch: --serve-workers: %v", err)
		}
		w.Serve, w.URL = opts.ServeWorkers, ""
	case opts.Workers != "":
		if err := config.CheckNATSURL(opts.Workers); err != nil {
			return watch.WorkersOptions{}, usageErrorf("watch: --workers: %v", err)
		}
		w.Serve, w.URL = "", opts.Workers
	}
	if !w.Enabled() {
		return watch.WorkersOptions{}, nil
	}
	out := watch.WorkersOptions{Serve: w.Serve, URL: w.URL, Token: w.Token, AckWait: w.AckWait.Duration, MaxDeliver: w.MaxDeliver, Replicas: w.Replicas}
	if out.Token == "" {
		out.Token = os.Getenv(tokenEnv)
	}
	if w.URL == "" {
		out.Replicas = 0 // the embedded server is one server
	}
	if user, password := w.User(); user != "" {
		out.Credentials = workers.Credentials{User: user, Password: password}
	}
	return out, nil
}

// checkBeforeRun refuses a run that could only fail, before anything is written (no lock,
// no attempt folder, no status change), with exit 2: a queue that cannot be read, a test
// plan that validate would refuse, an agent that cannot start (watch.Preflight), or a
// folder that is not a git repository on a branch with a commit. A
// missing default plan is no plan, as for validate. It returns the plan (nil without one).
func checkBeforeRun(ctx context.Context, l queue.Layout, cfg *config.Config, only string) (*queue.Plan, error) {
	tasks, err := queue.Load(l.Tasks())
	if err != nil {
		return nil, err
	}
	if _, err := loadOptional(l.Issues()); err != nil {
		return nil, err
	}
	plan, err := loadPlan(l, "", false)
	if err != nil {
		return nil, err
	}
	var ids []string
	if only != "" {
		ids = []string{only}
	}
	if err := watch.Preflight(l, cfg, tasks, ids...); err != nil {
		return nil, err
	}
	// Verified work lands as commits: a git repository on a branch, with a commit.
	_, err = worktree.Open(ctx, l.Root)
	return plan, err
}

// progressFormat returns how a run reports its progress to out: JSON lines with --json
// (jsonFlag), a live table on a terminal, else one line per event; and whether the table
// paints its status words: on a terminal only, and never when NO_COLOR is set to anything
// (https://no-color.org). getenv reads the environment.
func progressFormat(jsonFlag bool, out io.Writer, getenv func(string) string) (watch.Format, bool) {
	switch {
	case jsonFlag:
		return watch.JSON, false
	case isTerminal(out):
		return watch.Table, getenv("NO_COLOR") == ""
	}
	return watch.Lines, false
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// promptOptions are the options of `orchestrator prompt`.
type promptOptions struct {
	*globalOptions
	ID   string
	JSON bool
}

func newPromptCommand(g *globalOptions) *cobra.Command {
	opts := &promptOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "prompt ID",
		Short: "Print exactly the prompt the agent of task ID would receive now",
		Long: `Print exactly the prompt the agent of task ID would receive if it started now. With --json,
print {"task", "role", "attempt", "allowlist", "prompt"}: the role that would run, the attempt
number, the files the prompt may include, and the prompt.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runPrompt(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the prompt and what it was built from as JSON")
	return c
}

func runPrompt(opts *promptOptions) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	if opts.JSON {
		info, err := watch.PromptInfoFor(l, cfg, opts.ID)
		if err != nil {
			return err
		}
		return writeJSON(opts.Stdout, info)
	}
	text, err := watch.PromptFor(l, cfg, opts.ID)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(opts.Stdout, text)
	return err
}
