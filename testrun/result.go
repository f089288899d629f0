package testrun

import "time"

// A Status is the outcome of one test.
type Status string

// The outcomes of a test. A test marked to be skipped, ignored, pending, todo or xfail is
// Skipped.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// A Test is one test the runner reported.
type Test struct {
	// ID is the runner's fully qualified name: importpath.TestName[/sub] for Go, the node
	// ID (tests/test_x.py::Class::test_y) for pytest, "file > describe > name" for vitest
	// and jest, the libtest path (tests::adds) for cargo.
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Output is the failure message or the test's output, capped at maxTestOutput bytes.
	Output string `json:"output,omitempty"`
	// File is the test's source file relative to the root, when the runner says it.
	File string `json:"file,omitempty"`
}

// A Class says why a test command ended as it did (SPEC §7.2).
type Class string

// The classes of a run, in the order Classify tries them after ClassError for a command
// that did not finish.
const (
	// ClassPass: exit 0, at least one test passed and none failed.
	ClassPass Class = "pass"
	// ClassAssertionFailure: tests ran and some failed.
	ClassAssertionFailure Class = "assertion_failure"
	// ClassMissingImplementation: the tests call code that does not exist yet (Go
	// "undefined:", Python ImportError, TypeScript "Cannot find module", Rust E0425...).
	ClassMissingImplementation Class = "missing_implementation"
	// ClassBrokenTest: a test file itself does not compile or parse, or has a build error
	// other than a missing name of the code under test.
	ClassBrokenTest Class = "broken_test"
	// ClassNoTests: the command ran nothing.
	ClassNoTests Class = "no_tests"
	// ClassError: the command could not run, timed out, or failed for another reason.
	ClassError Class = "error"
)

// maxOutput caps Result.Output; maxTestOutput caps Test.Output.
const (
	maxOutput     = 256 << 10
	maxTestOutput = 16 << 10
)

// A Result is what Run learned from one run of a test command.
type Result struct {
	Runner Runner `json:"runner"`
	// Command is the command line as given; Ran is the command line as run, with the
	// flags that make the runner report structured output.
	Command string `json:"command"`
	Ran     string `json:"ran,omitempty"`
	// ExitCode is the command's exit code, -1 when it did not finish (TimedOut) or was
	// ended by a signal.
	ExitCode int `json:"exit_code"`
	// Output is the command's combined output, capped at 256 KiB. For go test it is the
	// text of the -json output events as go test prints it without -json: package lines,
	// and the output of the failed tests (of every test with -v).
	Output string `json:"output"`
	// Tests are the tests the runner reported, in its order. A Go parent test and each of
	// its subtests are separate tests.
	Tests []Test `json:"tests"`
	// BuildErrors are the compile, collection and import errors, one line each, as
	// "file:line: message" when the runner names a file.
	BuildErrors []string `json:"build_errors,omitempty"`
	Class       Class    `json:"class"`
	// Reason is the line that decided Class: the first build error or failure message.
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration"`
	TimedOut bool          `json:"timed_out,omitempty"`
	// Forged says why the runner's structured report cannot be trusted, read from the
	// report alone (a test reported twice, or after the run ended); nil when nothing says
	// so. Planted.Check returns it.
	Forged *ForgedError `json:"forged,omitempty"`
	// Packages is how go test ended each package it tested, by import path: Passed (its
	// test binary passed; with canaries planted, Planted.Check counts a package whose only
	// failed test was its failing canary as Passed), Failed (a test failed, the build
	// failed, or the binary died), Skipped (no test files). Nil for the other runners.
	Packages map[string]Status `json:"packages,omitempty"`
}

// Passed returns the IDs of the tests that passed, in the runner's order.
func (r *Result) Passed() []string { return r.ids(Passed) }

// Failed returns the IDs of the tests that failed, in the runner's order.
func (r *Result) Failed() []string { return r.ids(Failed) }

// Skipped returns the IDs of the tests that were skipped, in the runner's order.
func (r *Result) Skipped() []string { return r.ids(Skipped) }

func (r *Result) ids(s Status) []string {
	var ids []string
	for _, t := range r.Tests {
		if t.Status == s {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// count returns how many tests have status s.
func (r *Result) count(s Status) int {
	n := 0
	for _, t := range r.Tests {
		if t.Status == s {
			n++
		}
	}
	return n
}
