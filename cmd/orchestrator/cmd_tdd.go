package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/tdd"
	"github.com/orchestrator/orchestrator/watch"
	"github.com/orchestrator/orchestrator/worktree"
	"github.com/spf13/cobra"
)

// tddOptions are the options of `orchestrator tdd`.
type tddOptions struct {
	watchOptions
	FR string
}

func newTDDCommand(g *globalOptions) *cobra.Command {
	opts := &tddOptions{watchOptions: watchOptions{globalOptions: g}}
	c := &cobra.Command{
		Use:   "tdd FR-ID",
		Short: "Run the TDD cycle of one requirement: RED once, GREEN per acceptance criterion, REFACTOR once",
		Long: `Read the requirement specs/frs/<FR-ID>.md (or the .md path given) and its "## Acceptance
Criteria" items, each with an AC-<PREFIX>.<N> ID; write its cycle into the task queue under
its own section (TASK-<FR>-RED, TASK-<FR>-AC<N> for each AC in order, TASK-<FR>-REFACTOR),
appended after everything else; then run the watch loop on those tasks until they finish or
halt. Running it again resumes the cycle from its tasks' state and never adds them twice.

The test writer's tests must be named after their ACs (TestAC_STE_1, test_ac_ste_1), with a
failing test for every AC. Each implementer sees its own AC alone, and its gate runs that
AC's tests and the earlier ACs' by name, and the whole suite for the baseline. A refactor
that breaks the suite is dropped and the cycle still ends green.

A semantic failure (A false RED, B no GREEN, C refactor broke GREEN, E out of turns) gets 2
attempts per role per AC; a format violation (D) one re-prompt. Exit 0 when every AC is
green (the refactor done or dropped), 1 when a task failed, 2 for a bad FR file (nothing is
written), 3 when the cycle halted, 130 when interrupted.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			opts.FR = args[0]
			return runTDD(c.Context(), opts)
		},
	}
	addWatchFlags(c, &opts.watchOptions)
	addWorkersFlags(c, &opts.watchOptions)
	return c
}

// tddSummary is the final object of `tdd --json`.
type tddSummary struct {
	Event    string        `json:"event"` // "tdd"
	FR       string        `json:"fr"`
	File     string        `json:"file"`
	Outcome  string        `json:"outcome"` // green, failed, halted, interrupted
	ExitCode int           `json:"exit_code"`
	Refactor string        `json:"refactor"` // its status: completed, failed (dropped), ...
	Tasks    []tddTaskLine `json:"tasks"`
}

type tddTaskLine struct {
	ID       string `json:"id"`
	Role     string `json:"role"`
	AC       string `json:"ac,omitempty"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Commit   string `json:"commit,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func runTDD(ctx context.Context, opts *tddOptions) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	path, id := tdd.Resolve(l.Root, opts.FR)
	fr, err := tdd.Load(path, id)
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
	remote, err := workersOf(cfg, &opts.watchOptions)
	if err != nil {
		return err
	}
	ids := fr.IDs()
	if err := writeCycle(ctx, l, cfg, fr); err != nil {
		return err
	}
	format, color := progressFormat(opts.JSON, opts.Stdout, os.Getenv)
	plan, err := loadPlan(l, "", false)
	if err != nil {
		return err
	}
	exe, _ := os.Executable()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := watch.Run(ctx, watch.Options{
		Layout: l, Config: cfg, Jobs: 1, Once: true, Tasks: ids,
		Out: opts.Stdout, Format: format, Color: color, Debounce: opts.Debounce, Executable: exe, Plan: plan,
		Workers: remote,
	})
	if errors.Is(err, watch.ErrBusy) {
		return &exitError{code: exitUsage, err: err}
	}
	if err != nil {
		return err
	}
	s, err := cycleSummary(l, fr, path, sum)
	if err != nil {
		return err
	}
	if opts.JSON {
		if err := writeJSONLine(opts.Stdout, s); err != nil {
			return err
		}
	} else {
		printCycle(opts, s)
	}
	if s.ExitCode != exitOK {
		return &exitError{code: s.ExitCode}
	}
	return nil
}

// writeCycle appends the cycle's missing tasks to the task queue, in one write, after
// checking that the queue with them parses and that their agents can start: a refusal
// writes nothing.
func writeCycle(ctx context.Context, l queue.Layout, cfg *config.Config, fr *tdd.FR) error {
	doc, err := queue.Load(l.Tasks())
	if err != nil {
		return err
	}
	if _, err := loadOptional(l.Issues()); err != nil {
		return err
	}
	if rec, ok := doc.Record(tdd.RedID(fr.ID)); ok {
		// The cycle is there: it resumes as it was written. A requirement whose criteria
		// changed since is not patched into it.
		if have, want := strings.Join(doc.Task(rec).TestIDs, ", "), strings.Join(fr.ACIDs(), ", "); have != want {
			return &queue.ParseError{Path: doc.Path, Line: rec.Line, ID: rec.ID, Msg: fmt.Sprintf(
				"the cycle of %s was written for %s, and %s now has %s; finish or remove the cycle's tasks to write it again", fr.ID, have, fr.Path, want)}
		}
	}
	next := doc
	if ops := fr.Ops(doc); len(ops) > 0 {
		src, err := queue.Apply(doc, ops...)
		if err != nil {
			return err
		}
		if next, err = queue.Parse(l.Tasks(), src, queue.Tasks); err != nil {
			return fmt.Errorf("the queue with the cycle of %s does not parse: %w", fr.ID, err)
		}
	}
	if err := watch.Preflight(l, cfg, next, fr.IDs()...); err != nil {
		return err
	}
	if _, err := worktree.Open(ctx, l.Root); err != nil {
		return err
	}
	_, err = queue.Update(ctx, l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		return fr.Ops(d), nil
	})
	return err
}

// cycleSummary reads the cycle's tasks after the run and decides the command's outcome: 0
// when every AC is green (whatever became of the refactor), 3 when a task halted, 130 when
// interrupted, 1 otherwise.
func cycleSummary(l queue.Layout, fr *tdd.FR, path string, sum watch.Summary) (*tddSummary, error) {
	d, err := queue.Load(l.Tasks())
	if err != nil {
		return nil, err
	}
	s := &tddSummary{Event: "tdd", FR: fr.ID, File: path}
	green, halted := true, false
	for _, id := range fr.IDs() {
		rec, ok := d.Record(id)
		if !ok {
			return nil, fmt.Errorf("%s: %w: %s", d.Path, queue.ErrNotFound, id)
		}
		t := d.Task(rec)
		line := tddTaskLine{ID: id, Status: t.Status, Attempts: attemptsOf(l, id), AC: strings.TrimSpace(d.Get(rec, tdd.FieldAC))}
		if queue.IsEmpty(line.AC) {
			line.AC = ""
		}
		if c := d.Get(rec, "Commit"); !queue.IsEmpty(c) {
			line.Commit = strings.TrimSpace(c)
		}
		for _, f := range []string{"Halt-Reason", "Blocked-Reason"} {
			if v := d.Get(rec, f); !queue.IsEmpty(v) && line.Reason == "" {
				line.Reason = v
			}
		}
		switch {
		case t.Kind == queue.KindTest:
			line.Role = "test-writer"
		case id == tdd.RefactorID(fr.ID):
			line.Role = "refactorer"
			s.Refactor = t.Status
		default:
			line.Role = "implementer"
		}
		if t.Status == queue.StatusHalted || t.Halted {
			halted = true
		}
		if line.Role != "refactorer" && t.Status != queue.StatusCompleted {
			green = false
		}
		if line.Role == "refactorer" && t.Status != queue.StatusCompleted && t.Status != queue.StatusFailed {
			green = false
		}
		s.Tasks = append(s.Tasks, line)
	}
	switch {
	case sum.Outcome == watch.Interrupted:
		s.Outcome, s.ExitCode = "interrupted", exitInterrupted
	case halted || sum.Outcome == watch.Halted && !green:
		s.Outcome, s.ExitCode = "halted", exitHalted
	case green:
		s.Outcome, s.ExitCode = "green", exitOK
	default:
		s.Outcome, s.ExitCode = "failed", exitFailure
	}
	return s, nil
}

// attemptsOf returns how many attempt folders a task has.
func attemptsOf(l queue.Layout, id string) int {
	entries, _ := os.ReadDir(filepath.Join(l.Runs(), id))
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			n++
		}
	}
	return n
}

func printCycle(opts *tddOptions, s *tddSummary) {
	w := opts.Stdout
	fmt.Fprintf(w, "\nTDD cycle of %s (%s): %s\n", s.FR, relPath(s.File), s.Outcome)
	for _, t := range s.Tasks {
		what := t.Role
		if t.AC != "" {
			what += " of " + t.AC
		}
		fmt.Fprintf(w, "  %-24s %-28s %-10s attempts %d", t.ID, what, t.Status, t.Attempts)
		if t.Commit != "" {
			fmt.Fprintf(w, "  %.12s", t.Commit)
		}
		if t.Reason != "" {
			fmt.Fprintf(w, "  (%s)", t.Reason)
		}
		fmt.Fprintln(w)
	}
	if s.Outcome == "green" && s.Refactor == queue.StatusFailed {
		fmt.Fprintln(w, "The refactor broke the suite and was dropped: the cycle ends green with the implementers' code.")
	}
}

func relPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return p
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w interface{ Write([]byte) (int, error) }, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
