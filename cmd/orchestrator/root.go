package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/watch"
	"github.com/orchestrator/orchestrator/worktree"
	"github.com/spf13/cobra"
)

// Exit codes (SPEC §13).
const (
	exitOK          = 0
	exitFailure     = 1 // validation or gate failure
	exitUsage       = 2 // bad usage, unreadable input, or a problem of the set-up (SPEC §7.6)
	exitHalted      = 3
	exitInterrupted = 130
)

// An exitError carries the exit code a command chose; its message may be empty when the
// command already printed what went wrong.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode decides the exit code of an error, in one place.
func exitCode(err error) int {
	var ee *exitError
	var pe queue.ParseErrors
	var pe1 *queue.ParseError
	var ce *config.Error
	var pf *watch.PreflightError
	var ws *watch.SetupError
	var ts *testrun.SetupError
	var cc *worktree.ConfigChangedError
	var co *worktree.CheckoutError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ws), errors.As(err, &ts):
		// A problem of the set-up, not of any agent's work (SPEC §7.6): the test
		// command's program or runner is missing, the sandbox did not start, a judge's
		// answer cannot be read.
		return exitUsage
	case errors.As(err, &pe), errors.As(err, &pe1), errors.As(err, &ce), errors.As(err, &pf), errors.Is(err, queue.ErrNoRepo),
		errors.Is(err, worktree.ErrNotRepository), errors.Is(err, queue.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return exitUsage
	case errors.As(err, &cc), errors.As(err, &co), errors.Is(err, seal.ErrKeyExposed):
		// The repository's own configuration changed during a run, a checkout is not its
		// commit, or the key that seals the evidence is not private: a person looks.
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailure
}

// globalOptions are the flags every command takes.
type globalOptions struct {
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// layout finds the repository the command works on.
func (g *globalOptions) layout() (queue.Layout, error) {
	wd, err := os.Getwd()
	if err != nil {
		return queue.Layout{}, err
	}
	l, err := queue.FindRoot(g.Dir, wd)
	if err != nil {
		// No repository, or a --dir that is not a folder: bad usage.
		return l, &exitError{code: exitUsage, err: err}
	}
	return l, nil
}

// layoutConfig finds the repository and reads its config.yaml (a bad config is bad input:
// exit 2).
func (g *globalOptions) layoutConfig() (queue.Layout, *config.Config, error) {
	l, err := g.layout()
	if err != nil {
		return l, nil, err
	}
	cfg, err := config.Load(l.Config())
	if err != nil {
		return l, nil, &exitError{code: exitUsage, err: err}
	}
	return l, cfg, nil
}

// Main runs the command line args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globalOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	root := newRootCommand(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(stderr, "orchestrator:", msg)
		}
		if strings.HasPrefix(err.Error(), "unknown command") {
			return exitUsage
		}
		return exitCode(err)
	}
	return exitOK
}

func newRootCommand(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:           "orchestrator",
		Short:         "Run coding agents through a strict test-driven loop, with state in markdown",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetVersionTemplate(versionText(debug.ReadBuildInfo()))
	root.PersistentFlags().StringVar(&g.Dir, "dir", "", "repository root (default: the first folder up that holds .orchestrator/; or $ORCHESTRATOR_DIR)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	root.AddCommand(
		newInitCommand(g),
		newStatusCommand(g),
		newShowCommand(g),
		newSetCommand(g),
		newNextCommand(g),
		newValidateCommand(g),
		newCoverageCommand(g),
		newWatchCommand(g),
		newBaselineCommand(g),
		newRunCommand(g),
		newPromptCommand(g),
		newReplayCommand(g),
		newSignatureCommand(g),
		newIssuesCommand(g),
		newTDDCommand(g),
		newPlanCommand(g),
		newCostCommand(g),
		newSpotcheckCommand(g),
		newWorkerCommand(g),
		newWorkersCommand(g),
	)
	return root
}

// usageArgs wraps a cobra argument check so that its error exits with the usage code.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		return nil
	}
}
