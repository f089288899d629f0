package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/orchestrator/orchestrator/retry"
	"github.com/spf13/cobra"
)

// signatureOptions are the options of `orchestrator signature`.
type signatureOptions struct {
	*globalOptions
	Type   string
	Error  string // the primary error line
	Test   string
	File   string
	Output string // a file of raw gate output ("-": standard input), read when Error is empty
	JSON   bool
}

func newSignatureCommand(g *globalOptions) *cobra.Command {
	opts := &signatureOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "signature --type TYPE --error LINE [--test NAME] [--file PATH]",
		Short: "Print the failure signature of an error",
		Long: `Print the 16-hex-digit failure signature of a failure: the first 16 hex digits of
SHA-256(type, normalized primary error, failing test, file), the value of a task's
Failure-Signature. The error line is normalized first (ANSI codes, durations, timestamps,
temp folders, memory addresses, goroutine numbers and process IDs are replaced), so the
same failure gets the same signature in every run.

With --output, the primary error (and, unless --test is given, the failing test) is taken
from a runner's raw output, as the orchestrator does after a failed gate.

Types: build_fails, test_fails, false_red, broken_test, no_marker, timeout, agent_lost, test_tampered,
regression, format_violation, scope_violation, qa_failure, verify_fails, forged_results.

docs/watch.md says how signatures decide retries and halts.`,
		Example: `  orchestrator signature --type test_fails --error "--- FAIL: TestAdd (0.00s)" --test TestAdd --file calc/add_test.go
  go test ./... 2>&1 | orchestrator signature --type test_fails --output -`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runSignature(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Type, "type", "", "failure `type` (required)")
	c.Flags().StringVar(&opts.Error, "error", "", "the primary error `line`")
	c.Flags().StringVar(&opts.Test, "test", "", "the failing test's `name`")
	c.Flags().StringVar(&opts.File, "file", "", "the `path` of the file concerned")
	c.Flags().StringVar(&opts.Output, "output", "", "read the primary error from this runner output `file` (- for standard input)")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON with the normalized error")
	return c
}

// signatureResult is the output of `signature --json`.
type signatureResult struct {
	Signature       string `json:"signature"`
	Type            string `json:"type"`
	PrimaryError    string `json:"primary_error"`
	NormalizedError string `json:"normalized_error"`
	FailingTest     string `json:"failing_test"`
	File            string `json:"file"`
}

func runSignature(_ context.Context, opts *signatureOptions) error {
	if opts.Type == "" {
		return usageErrorf("--type is required")
	}
	t, err := retry.ParseType(opts.Type)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if opts.Output != "" {
		var data []byte
		if opts.Output == "-" {
			data, err = io.ReadAll(opts.Stdin)
		} else {
			data, err = os.ReadFile(opts.Output)
		}
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if opts.Error == "" {
			opts.Error = retry.PrimaryError(string(data))
		}
		if opts.Test == "" {
			opts.Test = retry.FailingTest(string(data))
		}
	}
	sig := retry.Signature(t, opts.Error, opts.Test, opts.File)
	if !opts.JSON {
		_, err := fmt.Fprintln(opts.Stdout, sig)
		return err
	}
	enc := json.NewEncoder(opts.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(signatureResult{
		Signature: sig, Type: string(t), PrimaryError: opts.Error,
		NormalizedError: retry.Normalize(opts.Error), FailingTest: opts.Test, File: opts.File,
	})
}
