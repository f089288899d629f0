package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
	"github.com/spf13/cobra"
)

// baselineOptions are the options of `orchestrator baseline`.
type baselineOptions struct {
	*globalOptions
	JSON    bool
	Command string
	Timeout time.Duration
	Drop    []string
}

func newBaselineCommand(g *globalOptions) *cobra.Command {
	opts := &baselineOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "baseline",
		Short: "Run the whole test suite and record which tests pass in .orchestrator/baseline.json",
		Long: `Run the project's test command and write .orchestrator/baseline.json (docs/gate.md): the
counts, the IDs of the tests that pass, a command that re-runs exactly them (the GREEN
gate's regression check), and the SHA-256 of every test file (config test_globs).

The test command is --command, else commands.test in .orchestrator/config.yaml, else the
Test row of the task queue's "## Project Commands" table. Its runner is recognized (go test,
pytest, vitest, jest, cargo test) and read in its structured form; any other command is
judged by its exit code alone.

Failing tests are recorded, not an error: exit 0 whenever the suite ran. Exit 2 when there
is no test command, or it could not run (not found, timed out).

The baseline only grows (watch adds what passes in each landed GREEN run): a test leaves
it only by your decision, with --drop TEST..., which takes those tests out of the passing
set without running anything and records them, with the date, under "dropped". A test that
is not in the passing set is an error, and nothing is written.

The baseline records the commit it holds for (here HEAD). When the branch no longer
descends from it (you reset, rebased or amended it), watch measures a new one before it
starts anything and says why: a test of the abandoned commits is never a regression.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runBaseline(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the baseline as JSON, with its path")
	c.Flags().StringVar(&opts.Command, "command", "", "test `command` line to run (overrides config and the task queue)")
	c.Flags().DurationVar(&opts.Timeout, "timeout", 0, "time limit of the test run (default: config task_timeout)")
	c.Flags().StringSliceVar(&opts.Drop, "drop", nil, "take these `tests` (IDs, comma-separated or repeated) out of the baseline's passing set, running nothing")
	return c
}

// dropFromBaseline takes tests out of the baseline, a person's decision (SPEC §7.5): in
// the orchestrator's state, when the repository has one, and in .orchestrator/baseline.json.
// In a git repository the state's copy, sealed, is the baseline (the readable one is never
// read back as truth); outside one, the readable copy is all there is.
func dropFromBaseline(ctx context.Context, opts *baselineOptions, l queue.Layout) error {
	from, state, key, err := stateBaseline(ctx, l)
	if err != nil {
		return err
	}
	paths := []string{l.Baseline()}
	if state != "" {
		paths = append([]string{state}, paths...)
	}
	var b *testrun.Baseline
	if _, err := os.Stat(from); err == nil {
		if state != "" {
			b, err = testrun.ReadSealedBaseline(from, key)
		} else {
			b, err = testrun.ReadBaseline(from)
		}
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%w; run orchestrator baseline to measure it again", err)}
		}
	}
	if b == nil {
		return usageErrorf("no baseline: %s does not exist (run orchestrator baseline)", from)
	}
	drop := map[string]bool{}
	for _, id := range opts.Drop {
		drop[strings.TrimSpace(id)] = true
	}
	var kept []string
	for _, id := range b.PassingTests {
		if drop[id] {
			delete(drop, id)
			b.Dropped = append(b.Dropped, testrun.Dropped{Test: id, Date: time.Now().UTC().Truncate(time.Second)})
			continue
		}
		kept = append(kept, id)
	}
	if len(drop) > 0 {
		var missing []string
		for id := range drop {
			missing = append(missing, id)
		}
		sort.Strings(missing)
		return usageErrorf("%s: not in the baseline's passing tests: %s", l.Baseline(), strings.Join(missing, ", "))
	}
	if kept == nil {
		kept = []string{}
	}
	b.PassingTests = kept
	b.RegressionCommand = testrun.RegressionCommandFor(l.Root, b.Command, kept)
	for _, p := range paths {
		if err := b.WriteSealed(p, sealFor(p, state, key)); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.Stdout, "dropped %d tests; %d passing tests left\n", len(opts.Drop), len(kept))
	return nil
}

func runBaseline(ctx context.Context, opts *baselineOptions) error {
	l, cfg, err := opts.layoutConfig()
	if err != nil {
		return err
	}
	if len(opts.Drop) > 0 {
		return dropFromBaseline(ctx, opts, l)
	}
	command, err := baselineCommand(l, cfg, opts.Command)
	if err != nil {
		return err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = cfg.TaskTimeout.Duration
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The environment and the sandbox the gate runs tests with (SPEC §7.6), so that the
	// baseline is what the gate will see. The person's tree stays writable (it is theirs,
	// and runners write caches in it), its git folder hidden.
	jail, gitDirs, err := commandJail(l, cfg, opts.Stderr)
	if err != nil {
		return err
	}
	in := gate.Input{Root: l.Root, Env: gate.PinnedEnv(os.Environ()), Jail: jail}
	// In a git repository, the packages' results are sealed as the watch's own baseline
	// seals them (SPEC §7.3): the first gates after it run only what a change reaches.
	// Their keys are of the files as they are here, whatever is committed.
	repo, err := worktree.Open(ctx, l.Root)
	head := ""
	if err == nil {
		head, _ = repo.Head(ctx)
		if key, err := repo.Key(); err == nil {
			in.Impact = &gate.Impact{Dir: gate.ImpactDir(), Key: key, Commit: head, Repo: repo.Root}
		}
	}
	sealer := gate.PlanBaselineSeal(ctx, in, command)
	runOpts := gate.RunOptions(in, command)
	if jail != nil {
		p, env := jail.ForCommand(command, l.Root, l.Root, gate.EnvFor(jail.Env, l.Root))
		p.Mask = append(p.Mask, gitDirs...)
		runOpts = append(runOpts, testrun.WithEnv(env), testrun.WithSandbox(p))
	}
	res, err := testrun.Run(ctx, l.Root, command, timeout, runOpts...)
	switch {
	case ctx.Err() != nil:
		return &exitError{code: exitInterrupted, err: ctx.Err()}
	case err != nil:
		return &exitError{code: exitUsage, err: err}
	}
	if err := testrun.NotRun(res); err != nil {
		fmt.Fprint(opts.Stderr, tail(res.Output, 20))
		return &exitError{code: exitUsage, err: err}
	}
	b, err := testrun.NewBaseline(l.Root, res, cfg.TestGlobs)
	if err != nil {
		return err
	}
	// The commit it holds for: watch measures it again once the branch no longer
	// descends from it (SPEC §7.5).
	b.Commit = head
	if err := sealer.Seal(res); err != nil {
		fmt.Fprintf(opts.Stderr, "orchestrator: the packages' results were not all sealed, so the first gates run them again: %v\n", err)
	}
	path := filepath.Join(l.Dir(), "baseline.json")
	if err := b.Write(path); err != nil {
		return err
	}
	// The baseline the gate trusts is the sealed one in the orchestrator's state; the one
	// above is its readable copy.
	if _, state, key, err := stateBaseline(ctx, l); err != nil {
		return err
	} else if state != "" {
		if err := b.WriteSealed(state, key); err != nil {
			return err
		}
	}
	rel, err := filepath.Rel(l.Root, path)
	if err != nil {
		rel = path
	}
	if opts.JSON {
		return writeJSON(opts.Stdout, struct {
			Path string `json:"path"`
			*testrun.Baseline
		}{rel, b})
	}
	s := b.Summary
	fmt.Fprintf(opts.Stdout, "runner:  %s (%s)\n", b.Runner, b.Command)
	if b.Runner == testrun.Exit {
		fmt.Fprintf(opts.Stdout, "result:  exit %d, %s\n", b.ExitCode, b.Class)
	} else {
		fmt.Fprintf(opts.Stdout, "tests:   %d total, %d passed, %d failed, %d skipped (%s)\n", s.Total, s.Passed, s.Failed, s.Skipped, b.Class)
	}
	if res.Reason != "" && b.Class != testrun.ClassAssertionFailure {
		fmt.Fprintf(opts.Stdout, "reason:  %s\n", res.Reason)
	}
	fmt.Fprintf(opts.Stdout, "files:   %d test files hashed\n", len(b.TestFileHashes))
	fmt.Fprintf(opts.Stdout, "wrote %s\n", rel)
	return nil
}

// baselineCommand picks the test command: the flag, else config's commands.test, else the
// Test row of the task queue's Project Commands table.
func baselineCommand(l queue.Layout, cfg *config.Config, flag string) (string, error) {
	if c := strings.TrimSpace(flag); c != "" {
		return c, nil
	}
	if c := strings.TrimSpace(cfg.Commands.Test); c != "" {
		return c, nil
	}
	tasks, err := loadOptional(l.Tasks())
	if err != nil {
		return "", err
	}
	if tasks != nil {
		if c := tasks.ProjectCommand("Test"); c != "" {
			return c, nil
		}
	}
	return "", usageErrorf("no test command: pass --command, set commands.test in %s, or fill the Test row of the Project Commands table in %s", l.Config(), l.Tasks())
}

// tail returns the last n lines of s, ending with a newline ("" for no output).
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// stateBaseline returns where the baseline is read from (the state's copy in a git
// repository, else the readable one), the state's copy ("" outside a git repository), and
// the key that seals it.
func stateBaseline(ctx context.Context, l queue.Layout) (from, state string, key *seal.Key, err error) {
	repo, err := worktree.Open(ctx, l.Root)
	if err != nil {
		return l.Baseline(), "", nil, nil
	}
	if key, err = repo.Key(); err != nil {
		return "", "", nil, err
	}
	state = filepath.Join(repo.State(), "baseline.json")
	return state, state, key, nil
}

// sealFor returns the key to write the baseline at path with: the key for the state's
// copy, none for the readable one.
func sealFor(path, state string, key *seal.Key) *seal.Key {
	if path == state {
		return key
	}
	return nil
}
