package testrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/orchestrator/orchestrator/seal"
)

// ErrNotRun is wrapped by MakeBaseline's error when the test command did not run to its
// end: it was not found or not executable (exit 127 or 126), timed out, or was killed.
var ErrNotRun = errors.New("the test command did not run")

// A Summary counts the tests of a baseline. Total counts every test the runner reported,
// skipped ones too; a Go parent test and each of its subtests count once each.
type Summary struct {
	Total   int `json:"total_tests"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// A Baseline is .orchestrator/baseline.json (SPEC §7.5): the tests that passed on a run of
// the whole suite, a command that re-runs exactly them, and the hashes of the test files.
type Baseline struct {
	Summary Summary `json:"baseline_summary"`
	// PassingTests are the IDs of the tests that passed, sorted.
	PassingTests []string `json:"passing_tests"`
	// RegressionCommand re-runs exactly PassingTests and exits non-zero if any fails (see
	// RegressionCommandFor); "" when there is nothing to re-run. For a command whose runner
	// is unknown (Exit) it is the command itself, when it passed.
	RegressionCommand string `json:"baseline_regression_command"`
	// TestFileHashes are the SHA-256 (hex) of the test files, by path relative to the root.
	TestFileHashes map[string]string `json:"test_file_hashes"`
	Runner         Runner            `json:"runner"`
	Created        time.Time         `json:"created"`
	// Commit is the commit of the integration branch the baseline holds for (SPEC §7.5):
	// the head it was measured on, or the landing whose run it grew from. When the
	// branch's head no longer descends from it (a person reset or rewrote the history),
	// the baseline is of another history and is measured again. "" when unknown (a
	// baseline made outside a git repository, or by an older version).
	Commit string `json:"commit,omitempty"`
	// Command is the test command that was run; ExitCode and Class tell how it ended.
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Class    Class  `json:"class"`
	// Dropped are the tests a person took out of the passing set (`orchestrator baseline
	// --drop`), with the date: the only way a test leaves it.
	Dropped []Dropped `json:"dropped,omitempty"`
}

// A Dropped test is one a person took out of the baseline.
type Dropped struct {
	Test string    `json:"test"`
	Date time.Time `json:"date"`
}

// MakeBaseline runs the whole test suite (Run) and makes its baseline (NewBaseline). Failing
// tests are recorded, not an error; a command that did not run is an error wrapping
// ErrNotRun.
func MakeBaseline(ctx context.Context, root, command string, globs []string, timeout time.Duration, opts ...Option) (*Baseline, error) {
	res, err := Run(ctx, root, command, timeout, opts...)
	if err != nil {
		return nil, err
	}
	if err := NotRun(res); err != nil {
		return nil, err
	}
	return NewBaseline(root, res, globs)
}

// NotRun returns an error wrapping ErrNotRun when a result is of a command that did not run
// to its end, and nil otherwise.
func NotRun(res *Result) error {
	switch {
	case res.TimedOut:
		return fmt.Errorf("%w: %s timed out after %s", ErrNotRun, res.Command, res.Duration.Round(time.Millisecond))
	case res.ExitCode == 126 || res.ExitCode == 127 || res.ExitCode < 0:
		return fmt.Errorf("%w: %s: exit %d: %s", ErrNotRun, res.Command, res.ExitCode, lastLine(res.Output))
	}
	return nil
}

// NewBaseline makes the baseline of a run of the whole suite in root: its passing tests,
// their regression command, and the hashes of the test files that globs name (nil:
// DefaultGlobs).
func NewBaseline(root string, res *Result, globs []string) (*Baseline, error) {
	if globs == nil {
		globs = DefaultGlobs
	}
	files, err := TestFiles(root, globs)
	if err != nil {
		return nil, err
	}
	hashes, err := HashFiles(root, files)
	if err != nil {
		return nil, err
	}
	b := &Baseline{
		PassingTests:   res.Passed(),
		TestFileHashes: hashes,
		Runner:         res.Runner,
		Created:        time.Now().UTC().Truncate(time.Second),
		Command:        res.Command,
		ExitCode:       res.ExitCode,
		Class:          res.Class,
	}
	if b.PassingTests == nil {
		b.PassingTests = []string{}
	}
	sort.Strings(b.PassingTests)
	b.Summary = Summary{Total: len(res.Tests), Passed: res.count(Passed), Failed: res.count(Failed), Skipped: res.count(Skipped)}
	switch {
	case res.Runner == Exit:
		if res.Class == ClassPass {
			b.RegressionCommand = res.Command
		}
	default:
		b.RegressionCommand = RegressionCommandFor(root, res.Command, b.PassingTests)
	}
	return b, nil
}

// Write writes the baseline to path as indented JSON, atomically: to a temporary file in
// the same folder, synced, then renamed over path. It creates the folder if needed.
func (b *Baseline) Write(path string) error { return b.WriteSealed(path, nil) }

// WriteSealed writes the baseline as Write does, sealed with key (package seal): the
// baseline the gate trusts, in the orchestrator's state. A nil key writes it unsealed.
func (b *Baseline) WriteSealed(path string, key *seal.Key) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	if key != nil {
		if data, err = key.SealJSON(seal.KindBaseline, data); err != nil {
			return fmt.Errorf("write baseline: %w", err)
		}
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	f, err := os.CreateTemp(dir, ".baseline-*.json")
	if err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, there is nothing to remove
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write baseline: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write baseline: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write baseline: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	return nil
}

// ReadBaseline reads a baseline written by Write (or by hand, in the same format), without
// checking a seal: the readable copy, for people.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	return parseBaseline(path, seal.Strip(data))
}

// ReadSealedBaseline reads a baseline written by WriteSealed and checks its seal with key:
// one whose seal is missing or does not match is not evidence, an *seal.EditedError naming
// path.
func ReadSealedBaseline(path string, key *seal.Key) (*Baseline, error) {
	data, err := key.ReadJSON(seal.KindBaseline, path)
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	return parseBaseline(path, data)
}

func parseBaseline(path string, data []byte) (*Baseline, error) {
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("read baseline %s: %w", path, err)
	}
	if b.TestFileHashes == nil {
		b.TestFileHashes = map[string]string{}
	}
	return &b, nil
}
