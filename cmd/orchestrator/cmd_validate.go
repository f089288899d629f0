package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/watch"
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
		Long: `Check the task and issue queues:

  - the format: duplicate IDs, records without a field table, malformed rows, repeated
    fields, unknown statuses;
  - every dependency exists, and there is no dependency cycle (the cycle is named);
  - field values are well-formed: statuses, integers, booleans, 16-hex signatures;
  - TDD ordering: a TEST task depends on no BUILD task, and every BUILD task depends,
    directly or through other tasks, on a TEST task (except devops and docs tasks, and
    tasks with | TDD | exempt |);
  - with a test plan (projectspec/test-plan-output.json, or --plan): every plan ID is in the
    Test IDs of exactly one TEST task (an ID in a task but not in the plan is a warning), and
    the coverage matrix is current;
  - config.yaml: value errors and unknown keys, each at its line, and the agents the
    queue would start, by the same check watch makes before it starts: an unknown agent
    name or an agent without a command is an error, a program that is not installed here
    (the default agent's too, claude unless config.yaml names another) a warning (watch
    refuses to start without it);
  - the test commands a run could run (config commands.test, else the task queue's
    Project Commands, and each task's Test Command): a program the shell does not find, or
    a runner that is not installed (go, cargo, pytest for the Python the command names,
    vitest or jest in node_modules), is a warning at the line that sets the command (watch
    refuses to start with it, exit 2);
  - the vocabulary (warnings): a field name spelt nearly like a known one (Categroy), a
    Category the orchestrator does not know (tests: a BUILD task; did you mean testing?),
    a task-like field table under a heading that does not begin with a task ID
    (### Task-001: the task does not exist). docs/queue.md lists every field and category.

It prints one line per finding, in file order, and never writes. Exit 0 when there are no
errors (warnings allowed), 1 when there are errors, 2 when a file cannot be parsed (config.yaml
included) or the test plan cannot be read.`,
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

	findings, cfg, parseFailed, err := checkConfig(l)
	if err != nil {
		return err
	}
	for _, path := range []string{l.Tasks(), l.Issues()} {
		var withPlan func() (*queue.Plan, error) // the task queue is checked against the plan
		var agents func(*queue.Doc) []queue.Finding
		if path == l.Tasks() {
			withPlan = waitPlan
			if cfg != nil {
				agents = func(d *queue.Doc) []queue.Finding { return agentFindings(l, cfg, d) }
			}
		}
		found, failed, err := checkFile(path, withPlan, agents)
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

// checkConfig reads config.yaml. A file that cannot be loaded gives its errors as findings
// (failed) and no config; one that cannot be read at all, an error.
func checkConfig(l queue.Layout) (findings []queue.Finding, cfg *config.Config, failed bool, err error) {
	cfg, err = config.Load(l.Config())
	if err == nil {
		return nil, cfg, false, nil
	}
	var errs config.Errors
	var one *config.Error
	switch {
	case errors.As(err, &errs):
	case errors.As(err, &one):
		errs = config.Errors{one}
	default:
		return nil, nil, false, err
	}
	for _, e := range errs {
		findings = append(findings, queue.Finding{Path: e.Path, Line: e.Line, Severity: queue.Error, Message: e.Msg})
	}
	return findings, nil, true, nil
}

// agentFindings reports what keeps a run of the task queue d from starting, by watch's own
// check (watch.CheckStart, which finds everything watch.Preflight refuses a run with): a bad
// agent name or an agent without a command is an error; a program or a test runner missing
// on this machine, a warning. A problem without a line of its own (the built-in default
// agent, which config.yaml does not name) is at config.yaml's line 1, where agent: would
// name another. Those of config.yaml come first, then the queue's in line order.
func agentFindings(l queue.Layout, cfg *config.Config, d *queue.Doc) []queue.Finding {
	named, missing := watch.CheckStart(l, cfg, d)
	var out []queue.Finding
	for i, list := range [][]error{named, missing} {
		sev := queue.Error
		if i == 1 {
			sev = queue.Warning
		}
		for _, err := range list {
			f := queue.Finding{Path: l.Config(), Line: 1, Severity: sev, Message: err.Error()}
			var pe *queue.ParseError
			var ce *config.Error
			switch {
			case errors.As(err, &pe):
				f.Path, f.Line, f.ID, f.Message = pe.Path, pe.Line, pe.ID, pe.Msg
			case errors.As(err, &ce):
				f.Path, f.Line, f.Message = ce.Path, ce.Line, ce.Msg
			}
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b queue.Finding) int {
		if (a.Path == d.Path) != (b.Path == d.Path) {
			if a.Path == d.Path {
				return 1
			}
			return -1
		}
		return a.Line - b.Line
	})
	return out
}

// checkFile reads, parses and checks one queue file. A file that cannot be parsed gives its
// parse errors as findings (failed). withPlan, when not nil, gives the test plan to check
// the file against; agents, when not nil, the findings about the agents the file names.
func checkFile(path string, withPlan func() (*queue.Plan, error), agents func(*queue.Doc) []queue.Finding) (findings []queue.Finding, failed bool, err error) {
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
	findings = queue.Check(d, plan)
	if words := queue.CheckVocabulary(d); len(words) > 0 {
		findings = mergeFindings(d.Path, findings, words)
	}
	if agents != nil {
		if more := agents(d); len(more) > 0 {
			findings = mergeFindings(d.Path, findings, more)
		}
	}
	return findings, false, nil
}

// mergeFindings adds more to a file's findings: those of other files first (config.yaml),
// then those of path in line order, then the rest of found (the plan's) as they were.
func mergeFindings(path string, found, more []queue.Finding) []queue.Finding {
	var out, rest []queue.Finding
	for _, f := range more {
		if f.Path != path {
			out = append(out, f)
		}
	}
	var own []queue.Finding
	for _, f := range found {
		if f.Path == path {
			own = append(own, f)
		} else {
			rest = append(rest, f)
		}
	}
	for _, f := range more {
		if f.Path == path {
			own = append(own, f)
		}
	}
	slices.SortStableFunc(own, func(a, b queue.Finding) int { return a.Line - b.Line })
	out = append(out, own...)
	return append(out, rest...)
}
