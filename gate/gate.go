package gate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
)

// Failure types a gate reports (SPEC §8.1).
const (
	TypeFalseRed      = "false_red"
	TypeScope         = "scope_violation"
	TypeTampered      = "test_tampered"
	TypeTestFails     = "test_fails"
	TypeBuildFails    = "build_fails"
	TypeRegression    = "regression"
	TypeVerifyFails   = "verify_fails"
	TypeNoTestCommand = "no_test_command"
	// TypeBrokenTest is the false RED of a broken test file: one that does not build for a
	// reason of its own, or whose test fails by what its own code raised (SPEC §7.2).
	TypeBrokenTest = "broken_test"
)

// An Input is what a gate needs to judge one attempt.
type Input struct {
	// ReviewTestChange runs GREEN on a change to tests fixed at RED that a judge is to rule
	// on (SPEC §7.3, §11.2): the integrity findings are logged instead of refusing, and
	// everything else (the runs, the canaries, the baseline) is checked as always. The
	// caller lands such a change only on the judge's ruling.
	ReviewTestChange bool
	Root             string
	AttemptDir       string
	Task             string
	Attempt          int
	TestIDs          []string
	// TestIDNames says that the Test IDs are the project's own test names (config
	// test_ids: names, SPEC §12): each names the test of that full name, subtest or
	// parameters included, and the tests below it, not a word of a test's name.
	TestIDNames bool
	TestCommand string
	// ProjectCommand says that TestCommand is the project's test command, not the task's
	// own: RED narrows it to the task's tests (TestFile, else the test files it changed).
	ProjectCommand bool
	// TestFile holds the task's Test File paths, relative to Root ("" fields: none).
	TestFile []string
	Globs    []string
	// Changed are the files the agent changed (from a Snapshot), relative to Root.
	Changed []string
	// Deps are the RED manifests of the TEST tasks the task depends on (BUILD only).
	Deps []*Manifest
	// RegressionCommand re-runs the baseline's passing tests ("" when there is none).
	RegressionCommand string
	// FullCommand is the project's whole suite ("" when the project has no test command).
	// With it, one run of it decides GREEN (SPEC §7.3): the RED tests and the baseline's
	// passing tests are each looked for, by name, in that one run.
	FullCommand string
	// Baseline holds the IDs of the tests the baseline has as passing.
	Baseline []string
	// Owed reports whether a baseline test is owed to another TEST task whose BUILD has
	// not landed yet (SPEC §7.5): its failure is not this task's regression.
	Owed    func(id string) bool
	Timeout time.Duration
	// Env is the environment the test commands run with: PinnedEnv, made at the
	// orchestrator's start (nil: the orchestrator's own).
	Env []string
	// Harness says which files decide how tests run (SPEC §7.6); Contents reads a changed
	// file as it was at the candidate's base and as the candidate has it. Without Contents,
	// the harness and the existing tests are not checked.
	Harness  Harness
	Contents Contents
	// Jail is the sandbox every test command runs in (SPEC §7.6), nil for none; the
	// commands then get the Jail's environment, not Env. Checkout is the top of the
	// gate's checkout that holds Root (Root when ""): the one folder the commands may
	// write, beside their caches and /tmp.
	Jail     *Jail
	Checkout string
	// Key seals the hand-offs the gate writes (SPEC §15.2 item 4), so that FindRed knows
	// them from files written by anyone else. nil writes them unsealed: they are then not
	// evidence.
	Key *seal.Key
	// Restore brings the checkout back to the candidate's commit, as it was before the
	// gate's first command: the gate calls it before each command after the first, so that
	// what one command's code wrote in the checkout (a rewritten test) cannot decide the
	// next. nil: the commands share the checkout as they leave it.
	Restore func() error
	// Impact keeps and finds the sealed results of Go packages by their inputs (impact.go):
	// with it, GREEN's run of the whole suite and VERIFY's run leave out the packages whose
	// inputs a sealed record holds (a failure's only in GREEN, where it decides nothing).
	// nil: everything runs.
	Impact *Impact
	// canary, when set, is planted rather than one drawn for the run or the jail's: the
	// sandbox's benchmark plants the same in the sandbox and without it.
	canary *testrun.Canary
}

// RunOptions are the options of a test command of the gate: its environment, and its
// sandbox, which depends on the command (testexec.go). Commands run for the gate outside a gate (the baseline's) use them too.
func RunOptions(in Input, command string) []testrun.Option { return in.runOptions(command) }

func (in Input) runOptions(command string) []testrun.Option {
	if in.Jail == nil {
		return []testrun.Option{testrun.WithEnv(EnvFor(in.Env, in.Root))}
	}
	// In the sandbox, the jail's environment, cleared of secrets, whatever Env says; the
	// runners' caches as the command may have them (testexec.go).
	p, env := in.Jail.ForCommand(command, cmp.Or(in.Checkout, in.Root), in.Root, EnvFor(in.Jail.Env, in.Root))
	return []testrun.Option{testrun.WithEnv(env), testrun.WithSandbox(p)}
}

// A Run is one command a gate ran.
type Run struct {
	Command  string        `json:"command"`
	ExitCode int           `json:"exit_code"`
	Class    string        `json:"class"`
	Duration time.Duration `json:"duration_ns"`
}

// A Verdict is a gate's decision with its evidence.
type Verdict struct {
	Pass        bool
	Type        string // failure type when !Pass
	Reason      string // one line
	Output      string // raw output of the command that decided a failure
	FailingTest string
	File        string
	Runs        []Run
	Log         strings.Builder // gate.log: every command, its exit code, and the decision
	// Full is the run of the project's whole suite that decided a GREEN gate (nil when
	// none did): when the candidate lands, the baseline grows from it, with no run more.
	Full *testrun.Result
	// ChangedTests are the existing tests a RED that passed rewrote, each failing at the
	// base (SPEC §7.2), as file:name: the landing names them in its
	// Orchestrator-Changed-Tests trailer.
	ChangedTests []string

	forged *testrun.ForgedError // a run whose canaries were misreported (canary.go)
	// rewrote is a run during which a test file changed (guard.go): nothing it or any
	// other run of the gate reported counts.
	rewrote *TestsChangedError
}

func (v *Verdict) fail(typ, format string, args ...any) *Verdict {
	if v.forged != nil {
		// Nothing a forged report said counts, whatever failure the caller saw in it.
		typ, format, args = TypeForged, "%s", []any{forgedReason(v.forged)}
	} else if v.rewrote != nil {
		typ, format, args = TypeTampered, "%s", []any{v.rewrote.Error()}
		if v.rewrote.Path != "" {
			v.File = v.rewrote.Path
		}
	}
	v.Pass, v.Type, v.Reason = false, typ, fmt.Sprintf(format, args...)
	fmt.Fprintf(&v.Log, "decision: fail (%s): %s\n", typ, v.Reason)
	return v
}

// Refuse returns a failed verdict that needed no test run: the change itself is out of
// bounds (an agent that changed the orchestrator's files), or the evidence a gate needs
// is missing.
func Refuse(typ, format string, args ...any) *Verdict {
	return (&Verdict{}).fail(typ, format, args...)
}

func (v *Verdict) pass(format string, args ...any) *Verdict {
	if v.forged != nil || v.rewrote != nil {
		return v.fail(TypeTampered, "") // fail says which
	}
	v.Pass, v.Type, v.Reason = true, "", fmt.Sprintf(format, args...)
	fmt.Fprintf(&v.Log, "decision: pass: %s\n", v.Reason)
	return v
}

// commandPrefix starts the line of gate.log that names a command the gate runs.
const commandPrefix = "$ "

// RanCommands returns the commands a gate.log shows the gate running, in order.
func RanCommands(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if c, ok := strings.CutPrefix(l, commandPrefix); ok {
			out = append(out, c)
		}
	}
	return out
}

// run runs a test command and logs it.
func (v *Verdict) run(ctx context.Context, in Input, command string) (*testrun.Result, error) {
	if len(v.Runs) > 0 && in.Restore != nil {
		if err := in.Restore(); err != nil {
			return nil, fmt.Errorf("restore the checkout before %s: %w", command, err)
		}
		v.Log.WriteString("checkout: restored to the candidate's commit\n")
	}
	v.Log.WriteString(commandPrefix + command + "\n")
	if in.Jail != nil {
		fmt.Fprintf(&v.Log, "sandbox: %s\n", in.Jail.Describe(cmp.Or(in.Checkout, in.Root)))
	} else {
		v.Log.WriteString("sandbox: none: the command runs with the orchestrator's rights\n")
	}
	res, err := v.runTests(ctx, in, command)
	if err != nil {
		fmt.Fprintf(&v.Log, "could not run: %v\n", err)
		return nil, err
	}
	v.Runs = append(v.Runs, Run{Command: command, ExitCode: res.ExitCode, Class: string(res.Class), Duration: res.Duration})
	fmt.Fprintf(&v.Log, "exit code %d, runner %s, %s: %d passed, %d failed, %d skipped (%v)\n",
		res.ExitCode, res.Runner, res.Class, len(res.Passed()), len(res.Failed()), len(res.Skipped()), res.Duration.Round(time.Millisecond))
	for _, e := range res.BuildErrors {
		fmt.Fprintf(&v.Log, "  build: %s\n", e)
	}
	return res, nil
}

// notRun decides a gate whose test command could not run: a failure of type typ; or, for
// a problem of the set-up (a *testrun.SetupError: the command's program or its runner is
// not installed, the sandbox did not start), no verdict at all but the error, which the
// caller passes on. No test ran, so nothing was learned of the agent's work, and the loop
// stops instead of counting an attempt against the agent (SPEC §7.6).
func (v *Verdict) notRun(typ string, err error) (*Verdict, error) {
	if isSetup(err) {
		return nil, err
	}
	return v.fail(typ, "the tests could not run: %v", err), nil
}

// isSetup reports whether err is a problem of the set-up (notRun).
func isSetup(err error) bool {
	var se *testrun.SetupError
	return errors.As(err, &se)
}

// keepOutput keeps the raw output of the command that decided a failure: in Output, and in
// the log between the lines that LastOutput finds.
func (v *Verdict) keepOutput(out string) {
	v.Output = out
	v.Log.WriteString(OutputStart + out)
	if !strings.HasSuffix(out, "\n") {
		v.Log.WriteByte('\n')
	}
	v.Log.WriteString(OutputEnd)
}

// The raw output of the deciding command sits between these lines in gate.log.
const (
	OutputStart = "--- output ---\n"
	OutputEnd   = "--- end of output ---\n"
)

// LastOutput returns the raw output recorded in a gate.log, or "".
func LastOutput(log string) string {
	_, out, ok := strings.Cut(log, OutputStart)
	if !ok {
		return ""
	}
	out, _, _ = strings.Cut(out, OutputEnd)
	return out
}

// Red is the gate of a TEST task (SPEC §7.2): the task's tests must fail, because they fail
// or because the implementation they call does not exist yet, not because a test file is
// broken or because no test ran; the agent may change only test files; and every Test ID must
// name at least one of the agent's tests that fails now (or, when the build failed for the
// missing implementation, one the agent's files declare), and none that passes or is skipped.
// The task's tests are its own Test Command, else the project's command narrowed to the
// task's Test File, else to the test files the agent added or changed: tests elsewhere do not
// decide. On success it writes handoff-red.json.
func Red(ctx context.Context, in Input) (*Verdict, error) {
	v := &Verdict{}
	fmt.Fprintf(&v.Log, "RED gate: task %s attempt %d\n", in.Task, in.Attempt)
	fmt.Fprintf(&v.Log, "changed files: %s\n", list(in.Changed))
	var outside, testFiles, data []string
	for _, f := range in.Changed {
		if testrun.IsTestFile(f, in.Globs) {
			testFiles = append(testFiles, f)
		} else {
			outside = append(outside, f)
		}
	}
	// Test data: outside the test files (testdata/, golden files), or inside them by the
	// globs (tests/data/): a case of a data-driven test, whose readers RED runs.
	var inTests []string
	for _, f := range testFiles {
		if isTestData(f) {
			inTests = append(inTests, f)
		}
	}
	if len(outside)+len(inTests) > 0 {
		var deleted, rest []string
		var err error
		data, deleted, rest, err = testData(in, append(slices.Clone(outside), inTests...))
		if err != nil {
			return nil, err
		}
		if deleted, err = movedData(in, deleted, data); err != nil {
			return nil, err
		}
		if len(deleted) > 0 {
			v.File = deleted[0]
			return v.fail(TypeScope, "scope_violation: a test writer may add and change test data, not delete it (a case of a data-driven test): %s deleted. %s", strings.Join(deleted, ", "), existingAdvice), nil
		}
		if len(data) > 0 {
			fmt.Fprintf(&v.Log, "test data the test writer added or changed: %s\n", strings.Join(data, ", "))
		}
		outside = rest
	}
	if len(outside) > 0 {
		// Test support beside the tests: the harness (conftest.py, the runner's
		// configuration), changed only in its harness part.
		allowed, out, err := redHarness(in, outside)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 {
			return v.fail(TypeScope, "the test writer changed files that are not tests: %s", strings.Join(out, ", ")), nil
		}
		fmt.Fprintf(&v.Log, "test support the test writer changed (harness): %s\n", strings.Join(allowed, ", "))
	}
	// Harness that rewrites what the runner reports tests nothing (SPEC §7.6).
	if verdict, err := v.checkTampering(ctx, in); verdict != nil || err != nil {
		return verdict, err
	}
	existing, err := v.checkExisting(ctx, in, testFiles)
	if err != nil {
		return nil, err
	}
	if in.TestCommand == "" {
		return v.fail(TypeNoTestCommand, "the task has no test command, so the claim cannot be verified"), nil
	}
	// The agent's test files as they are now (a deleted one has no tests to run or read).
	sources := map[string]string{}
	var present []string
	for _, f := range testFiles {
		if b, err := os.ReadFile(filepath.Join(in.Root, filepath.FromSlash(f))); err == nil {
			sources[f] = string(b)
			present = append(present, f)
		}
	}
	// What feeds tests the change did not touch: its test data, and its helpers.
	feeds := append(slices.Clone(data), pyHelpers(present, sources)...)
	command, verdict := redCommand(v, in, present, feeds)
	if verdict != nil {
		v.Reason += lostNote(existing)
		return verdict, nil
	}
	res, err := v.run(ctx, in, command)
	if err != nil {
		return v.notRun(TypeFalseRed, err)
	}
	v.keepOutput(res.Output)
	v.newSignatures(in, res)
	// "The tests already pass" comes before any scope rule (SPEC §7.2): it is the real
	// reason, and the scope rules follow in the same reason.
	switch res.Class {
	case testrun.ClassPass:
		return v.fail(TypeFalseRed, "false RED: the tests already pass (%s exited 0)%s", command, lostNote(existing)), nil
	case testrun.ClassNoTests:
		return v.fail(TypeFalseRed, "false RED: no test ran%s", lostNote(existing)), nil
	case testrun.ClassBrokenTest:
		// A change that deleted or skipped tests often leaves the file broken too (an
		// import the deleted test used): the deletion is what the person must hear of.
		if verdict := v.refuseLost(existing); verdict != nil {
			return verdict, nil
		}
		return v.fail(TypeBrokenTest, "false RED: a test file is broken: %s", cmp.Or(res.Reason, first(res.BuildErrors, "syntax error"))), nil
	case testrun.ClassAssertionFailure, testrun.ClassMissingImplementation:
	default:
		return v.fail(TypeFalseRed, "the tests did not run as tests (%s, exit %d): %s", res.Class, res.ExitCode, first(res.BuildErrors, "")), nil
	}
	// The tests the agent declared, and those of the run that are the agent's: in its files
	// by the runner's word, or, when the runner does not say the file (go test), declared
	// there by name. Pre-existing tests do not decide, unless the change fed them new test
	// data (fed): then those that now fail against the baseline are the evidence.
	var declaredNames []string
	decl := map[string]bool{}
	for _, f := range present {
		for _, name := range declared(f, sources[f]) {
			if !decl[name] {
				decl[name] = true
				declaredNames = append(declaredNames, name)
			}
		}
	}
	inFiles := map[string]bool{}
	for _, f := range present {
		inFiles[path.Clean(f)] = true
	}
	var mine, fed []testrun.Test
	for _, t := range res.Tests {
		switch {
		case t.File != "" && inFiles[path.Clean(t.File)] || t.File == "" && decl[topName(t.ID)]:
			mine = append(mine, t)
		case len(feeds) > 0:
			fed = append(fed, t)
		}
	}
	var failing []string
	for _, t := range mine {
		if t.Status == testrun.Failed {
			failing = append(failing, t.ID)
		}
	}
	fedFailing := v.fedEvidence(in, fed)
	failing = append(failing, fedFailing...)
	named := res.Runner != testrun.Exit // the runner reports test names
	if named && res.Class == testrun.ClassAssertionFailure && len(failing) == 0 {
		return v.fail(TypeFalseRed, "false RED: the tests already pass: none of the tests the agent wrote%s fails (%s)%s",
			orFed(feeds), describe(res), lostNote(existing)), nil
	}
	// The scope rules on the tests that were there (SPEC §7.2).
	if verdict := v.refuseLost(existing); verdict != nil {
		return verdict, nil
	}
	if verdict := v.checkChanged(in, res, existing.changed); verdict != nil {
		return verdict, nil
	}
	if verdict := v.raisedInTest(ctx, in, res, mine); verdict != nil {
		return verdict, nil
	}
	if res.Class == testrun.ClassMissingImplementation {
		// The tests could not run: run them with the missing names standing in, to see
		// whether one fails in its own code before it reaches them (probe.go).
		verdict, err := v.probeMissing(ctx, in, res, present, sources)
		if verdict != nil || err != nil {
			return verdict, err
		}
	}
	// Declarations stand for failing tests only when no test could run: the build failed
	// for the missing implementation, or the runner names no tests.
	byDeclaration := res.Class == testrun.ClassMissingImplementation || !named
	byID := map[string][]string{}
	candidates := mine
	if len(feeds) > 0 {
		candidates = append(slices.Clone(mine), fed...)
	}
	for _, id := range in.TestIDs {
		if in.TestIDNames {
			// The project's own test names (test_ids: names): the test of that full name
			// must fail, or, for a test below it (a subtest, a parametrization), one of them.
			var below []testrun.Test
			for _, t := range candidates {
				switch byName(t.ID, id) {
				case nameIs:
					if t.Status != testrun.Failed {
						v.FailingTest = t.ID
						return v.fail(TypeFalseRed, "false RED: %s is the test %s names and %s at RED", t.ID, id, t.Status), nil
					}
					byID[id] = append(byID[id], t.ID)
				case nameBelow:
					below = append(below, t)
				}
			}
			if len(byID[id]) == 0 && len(below) > 0 {
				for _, t := range below {
					if t.Status == testrun.Failed {
						byID[id] = append(byID[id], t.ID)
					}
				}
				if len(byID[id]) == 0 {
					v.FailingTest = below[0].ID
					return v.fail(TypeFalseRed, "false RED: none of the tests %s names fails at RED (%s %s)", id, below[0].ID, below[0].Status), nil
				}
			}
			if len(byID[id]) == 0 && byDeclaration {
				for _, name := range declaredNames {
					if name == topName(id) {
						byID[id] = append(byID[id], name)
					}
				}
			}
			if len(byID[id]) == 0 {
				return v.fail(TypeFalseRed, "no test is named %s (test_ids: names: a test the agent wrote or fed new test data, failing now or declared, of that full name)", id), nil
			}
			fmt.Fprintf(&v.Log, "%s: %s\n", id, strings.Join(byID[id], ", "))
			continue
		}
		for _, t := range mine {
			if !namedBy(shortName(t.ID), id) {
				continue
			}
			if t.Status != testrun.Failed {
				v.FailingTest = t.ID
				return v.fail(TypeFalseRed, "false RED: %s is named after %s and %s at RED", t.ID, id, t.Status), nil
			}
			byID[id] = append(byID[id], t.ID)
		}
		if len(byID[id]) == 0 && byDeclaration {
			for _, name := range declaredNames {
				if namedBy(name, id) {
					byID[id] = append(byID[id], name)
				}
			}
		}
		if len(byID[id]) == 0 {
			return v.fail(TypeFalseRed, "no test is named after %s (a test the agent wrote, failing now or declared, must contain %s)", id, idToken(id)), nil
		}
		fmt.Fprintf(&v.Log, "%s: %s\n", id, strings.Join(byID[id], ", "))
	}
	m := &Manifest{
		Phase: "red", Timestamp: time.Now().UTC(), Task: in.Task, Attempt: in.Attempt,
		TestFiles: testFiles, Command: command, ExitCode: res.ExitCode,
		RunnerOutput: clip(res.Output, 2000), FailingTests: failing, Allowlist: testFiles,
		ChangedTests: v.ChangedTests,
	}
	if len(byID) > 0 {
		m.Tests = byID
	}
	m.Outputs = testOutputs(mine)
	if len(failing) == 0 {
		// The build failed before any test ran: the tests GREEN must see pass are the ones
		// declared in the test files.
		m.DeclaredTests = declaredNames
	}
	// The test data the change added or changed is held to its RED version at GREEN, as
	// its test files are: an implementer may not rewrite a golden file to match.
	// (A file the change deleted has no hash: it is gone at RED.)
	var held []string
	for _, f := range append(slices.Clone(testFiles), data...) {
		if _, err := os.Lstat(filepath.Join(in.Root, filepath.FromSlash(f))); err == nil {
			held = append(held, f)
		}
	}
	if m.TestHashes, err = testrun.HashFiles(in.Root, held); err != nil {
		return nil, err
	}
	if err := m.Write(filepath.Join(in.AttemptDir, "handoff-red.json"), in.Key); err != nil {
		return nil, err
	}
	return v.pass("RED: %s fails as it should (%s)", command, res.Class), nil
}

// Green is the gate of a BUILD task (SPEC §7.3): the tests of every TEST task it depends on
// are unchanged since their RED (integrity) and now pass, with no fewer tests passing than
// failed at RED; the regression baseline still passes. On success it writes
// handoff-green.json.
func Green(ctx context.Context, in Input) (*Verdict, error) {
	v := &Verdict{}
	fmt.Fprintf(&v.Log, "GREEN gate: task %s attempt %d\n", in.Task, in.Attempt)
	fmt.Fprintf(&v.Log, "changed files: %s\n", list(in.Changed))
	// Integrity first: a changed test cannot be trusted to judge anything. No test file and
	// no file of the harness may change (SPEC §7.3, §7.6); the tests of the RED dependencies
	// are as at RED. The hashes checked here are the ones handoff-green.json records: the
	// test files are not hashed again.
	if verdict, err := v.checkHarness(in, TypeTampered); err != nil {
		return nil, err
	} else if verdict != nil {
		if !in.ReviewTestChange {
			return verdict, nil
		}
		fmt.Fprintf(&v.Log, "for the judge to rule on: %s\n", v.Reason)
		v.Pass, v.Type, v.Reason, v.File = false, "", "", ""
	}
	// Code that reaches into the test runner decides what the runs below report.
	if verdict, err := v.checkTampering(ctx, in); verdict != nil || err != nil {
		return verdict, err
	}
	hashes := map[string]string{}
	for _, m := range in.Deps {
		for _, f := range slices.Sorted(maps.Keys(m.TestHashes)) {
			now, _ := testrun.HashFile(filepath.Join(in.Root, filepath.FromSlash(f)))
			if now != m.TestHashes[f] && in.ReviewTestChange {
				fmt.Fprintf(&v.Log, "for the judge to rule on: %s changed after RED (%s)\n", f, m.Task)
				continue
			}
			if now != m.TestHashes[f] {
				v.File = f
				what := "changed"
				if now == "" {
					what = "deleted"
				}
				return v.fail(TypeTampered, "test_tampered: %s was %s after RED (%s)", f, what, m.Task), nil
			}
		}
		fmt.Fprintf(&v.Log, "integrity: the %d test files of %s are as at RED\n", len(m.TestHashes), m.Task)
		maps.Copy(hashes, m.TestHashes)
	}
	commands := []string{}
	seen := map[string]bool{}
	if in.FullCommand != "" {
		// One run of the whole suite decides: it holds the RED tests and the baseline's.
		commands = append(commands, in.FullCommand)
		seen[in.FullCommand] = true
	} else {
		for _, m := range in.Deps {
			if m.Command != "" && !seen[m.Command] {
				seen[m.Command] = true
				commands = append(commands, m.Command)
			}
		}
		if in.TestCommand != "" && !seen[in.TestCommand] {
			commands = append(commands, in.TestCommand)
		}
	}
	if len(commands) == 0 {
		return v.fail(TypeNoTestCommand, "the task has no test command, so the claim cannot be verified"), nil
	}
	passed := map[string]bool{}
	named := false // some runner reported test names (not an exit-code-only command)
	var full *testrun.Result
	for _, c := range commands {
		var res *testrun.Result
		var err error
		if c == in.FullCommand {
			// A failure that decides nothing is reused: the whole run is judged by name.
			res, err = v.runSuite(ctx, in, c, true)
		} else {
			res, err = v.run(ctx, in, c)
		}
		if err != nil {
			return v.notRun(TypeBuildFails, err)
		}
		if err := testrun.NotRun(res); err != nil || res.Class == testrun.ClassNoTests {
			v.keepOutput(res.Output)
			return v.fail(TypeBuildFails, "%s did not run the tests (%s, exit %d)", c, res.Class, res.ExitCode), nil
		}
		if c == in.FullCommand && res.Runner != testrun.Exit {
			// Judged by name below: a test that failed in the baseline too, or one owed
			// to another TEST task, does not fail this task.
			full = res
		} else if res.Class != testrun.ClassPass {
			v.keepOutput(res.Output)
			typ := TypeTestFails
			if res.Class == testrun.ClassMissingImplementation || res.Class == testrun.ClassBrokenTest || len(res.BuildErrors) > 0 {
				typ = TypeBuildFails
			}
			if f := res.Failed(); len(f) > 0 {
				v.FailingTest = f[0]
			}
			return v.fail(typ, "%s exited %d (%s)", c, res.ExitCode, describe(res)), nil
		}
		for _, id := range res.Passed() {
			passed[id] = true
		}
		named = named || res.Runner != testrun.Exit
	}
	if full != nil {
		if f := checkFull(v, in, full, passed); f != nil {
			return f, nil
		}
	}
	// No fewer tests pass than failed at RED: a skipped or deleted test is not a pass. (A
	// command judged by its exit code alone names no tests; then its exit code decides.)
	for _, m := range in.Deps {
		if !named {
			fmt.Fprintf(&v.Log, "the test commands report no test names; their exit codes decide\n")
			break
		}
		for _, id := range m.FailingTests {
			if !passed[id] {
				v.FailingTest = id
				if full != nil {
					return redNotPassed(v, full, id, m.Task), nil
				}
				return v.fail(TypeTestFails, "%s failed at RED (%s) and did not pass now: skipped, renamed or deleted", id, m.Task), nil
			}
		}
		for _, name := range m.DeclaredTests {
			if !passedByName(passed, name) {
				v.FailingTest = name
				if full != nil {
					// Say how it did not pass: by the test's ID in the run, if it ran.
					for _, t := range full.Tests {
						if passedByName(map[string]bool{t.ID: true}, name) {
							return redNotPassed(v, full, t.ID, m.Task), nil
						}
					}
					return redNotPassed(v, full, name, m.Task), nil
				}
				return v.fail(TypeTestFails, "%s, declared in %s's tests, did not pass: skipped, renamed or deleted", name, m.Task), nil
			}
		}
	}
	if full == nil && in.RegressionCommand != "" {
		res, err := v.run(ctx, in, in.RegressionCommand)
		if isSetup(err) {
			return nil, err
		}
		if err != nil || res.ExitCode != 0 {
			if res != nil {
				v.keepOutput(res.Output)
				if f := res.Failed(); len(f) > 0 {
					v.FailingTest = f[0]
				}
			}
			return v.fail(TypeRegression, "regression: a test that passed in the baseline fails now"), nil
		}
	}
	m := &Manifest{
		Phase: "green", Timestamp: time.Now().UTC(), Task: in.Task, Attempt: in.Attempt,
		Command: strings.Join(commands, " && "), RunnerOutput: "", Allowlist: in.Changed,
		TestHashes: hashes,
	}
	for _, d := range in.Deps {
		m.TestFiles = append(m.TestFiles, d.TestFiles...)
	}
	for _, f := range in.Changed {
		if !testrun.IsTestFile(f, in.Globs) {
			m.ImplementationFiles = append(m.ImplementationFiles, f)
		}
	}
	if err := m.Write(filepath.Join(in.AttemptDir, "handoff-green.json"), in.Key); err != nil {
		return nil, err
	}
	v.Full = full
	if full != nil {
		return v.pass("GREEN: %s, one run: %d passed, %d failed (none this task's)", in.FullCommand, len(full.Passed()), len(full.Failed())), nil
	}
	return v.pass("GREEN: %s pass, %d tests", strings.Join(commands, ", "), len(passed)), nil
}

// redNotPassed fails a GREEN gate whose whole-suite run did not pass RED test id: it
// failed, the build failed, or the test is not there.
func redNotPassed(v *Verdict, full *testrun.Result, id, task string) *Verdict {
	v.keepOutput(full.Output)
	for _, t := range full.Tests {
		if t.ID == id && t.Status == testrun.Failed {
			return v.fail(TypeTestFails, "%s exited %d: %s fails (%s)", full.Command, full.ExitCode, id, describe(full))
		}
	}
	if len(full.BuildErrors) > 0 {
		return v.fail(TypeBuildFails, "%s exited %d: the build failed, so %s (RED of %s) did not run: %s", full.Command, full.ExitCode, id, task, full.BuildErrors[0])
	}
	return v.fail(TypeTestFails, "%s failed at RED (%s) and did not pass now: skipped, renamed or deleted", id, task)
}

// checkFull judges the whole suite's run of a GREEN gate by name: every baseline test that
// is not owed to another TEST task must have passed (one that is missing from the run
// failed). It returns the failed verdict, or nil. The RED tests are checked by the caller.
func checkFull(v *Verdict, in Input, full *testrun.Result, passed map[string]bool) *Verdict {
	var missing []string
	// Rust's doc tests are compared by the item they test, not by their line, which code
	// added above them moves (testrun.DocTestIDs).
	var ran []string
	for id := range passed {
		ran = append(ran, id)
	}
	byItem := map[string]bool{}
	for _, id := range testrun.DocTestIDs(ran) {
		byItem[id] = true
	}
	items := testrun.DocTestIDs(in.Baseline)
	for i, id := range in.Baseline {
		if passed[id] || byItem[items[i]] || (in.Owed != nil && in.Owed(id)) {
			continue
		}
		missing = append(missing, id)
	}
	if len(missing) == 0 {
		fmt.Fprintf(&v.Log, "regression: the %d passing tests of the baseline pass (or are owed)\n", len(in.Baseline))
		return nil
	}
	v.keepOutput(full.Output)
	v.FailingTest = missing[0]
	more := ""
	if len(missing) > 1 {
		more = fmt.Sprintf(" and %d more", len(missing)-1)
	}
	return v.fail(TypeRegression, "regression: %s%s passed in the baseline and did not pass now (failed, skipped or missing)", missing[0], more)
}

// Verify is the gate of a VERIFY task (SPEC §7.4): the tests pass; each failing test is
// reported with its name and output.
func Verify(ctx context.Context, in Input) (*Verdict, error) {
	v := &Verdict{}
	fmt.Fprintf(&v.Log, "VERIFY gate: task %s attempt %d\n", in.Task, in.Attempt)
	// Only a TEST task may change the tests and the harness (SPEC §7.6).
	if verdict, err := v.checkHarness(in, TypeTampered); verdict != nil || err != nil {
		return verdict, err
	}
	if verdict, err := v.checkTampering(ctx, in); verdict != nil || err != nil {
		return verdict, err
	}
	if in.TestCommand == "" {
		return v.fail(TypeNoTestCommand, "the task has no test command, so the claim cannot be verified"), nil
	}
	res, err := v.runSuite(ctx, in, in.TestCommand, false)
	if err != nil {
		return v.notRun(TypeVerifyFails, err)
	}
	if res.Class == testrun.ClassPass {
		return v.pass("VERIFY: %s passes (%d tests)", in.TestCommand, len(res.Passed())), nil
	}
	var failing []string
	for _, t := range res.Tests {
		if t.Status == testrun.Failed {
			failing = append(failing, t.ID)
			fmt.Fprintf(&v.Log, "FAIL %s\n%s\n", t.ID, indent(t.Output))
		}
	}
	v.keepOutput(res.Output)
	if len(failing) > 0 {
		v.FailingTest = failing[0]
		return v.fail(TypeVerifyFails, "%d tests fail: %s", len(failing), strings.Join(failing, ", ")), nil
	}
	return v.fail(TypeVerifyFails, "%s exited %d (%s)", in.TestCommand, res.ExitCode, describe(res)), nil
}

// A Manifest is a phase's hand-off (handoff-red.json, handoff-green.json): what the next
// phase may see and what must not change.
type Manifest struct {
	Phase     string    `json:"phase"`
	Timestamp time.Time `json:"timestamp"`
	Task      string    `json:"task"`
	Attempt   int       `json:"attempt"`
	// Commit is the commit that landed the phase's work (set once it has landed).
	Commit        string            `json:"commit,omitempty"`
	TestFiles     []string          `json:"test_files"`
	TestHashes    map[string]string `json:"test_hashes"`
	Command       string            `json:"command"`
	ExitCode      int               `json:"exit_code"`
	RunnerOutput  string            `json:"runner_output"`
	FailingTests  []string          `json:"failing_tests,omitempty"`
	DeclaredTests []string          `json:"declared_tests,omitempty"`
	// Tests are the failing or declared tests by the Test ID they are named after (RED).
	Tests               map[string][]string `json:"tests,omitempty"`
	ImplementationFiles []string            `json:"implementation_files,omitempty"`
	// Outputs holds each failing test's own output at RED, by test ID: what the
	// implementer of one acceptance criterion is shown of its tests, and of no others.
	Outputs   map[string]string `json:"outputs,omitempty"`
	Allowlist []string          `json:"allowlist"`

	// ChangedTests are the existing tests the RED rewrote, each failing at the base (SPEC
	// §7.2), as file:name.
	ChangedTests []string `json:"changed_tests,omitempty"`
}

// ReadManifest reads a manifest written by Write, without checking its seal: for people
// and prompts, never as evidence (OpenManifest).
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(seal.Strip(b), &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// OpenManifest reads the manifest at path (handoff-red.json or handoff-green.json) and
// checks its seal with key: one whose seal is missing or does not match, or which names
// another task or attempt than wanted (0: any), is not evidence, an *seal.EditedError
// naming it.
func OpenManifest(key *seal.Key, path, task string, attempt int) (*Manifest, error) {
	doc, err := key.ReadJSON(manifestKind(path), path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if task != "" && m.Task != task || attempt != 0 && m.Attempt != attempt {
		// Sealed, but another attempt's: copied here.
		return nil, seal.Edited(path, seal.ErrBroken)
	}
	return &m, nil
}

// manifestKind is the seal's kind of a hand-off, by its file name.
func manifestKind(path string) string {
	if filepath.Base(path) == "handoff-green.json" {
		return seal.KindGreen
	}
	return seal.KindRed
}

// Write writes the manifest as JSON to path, sealed with key (unsealed when key is nil),
// replacing the file whole.
func (m *Manifest) Write(path string, key *seal.Key) error {
	if m.TestFiles == nil {
		m.TestFiles = []string{}
	}
	if m.Allowlist == nil {
		m.Allowlist = []string{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if key != nil {
		if b, err = key.SealJSON(manifestKind(path), b); err != nil {
			return err
		}
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// FindRed returns the RED manifest of a TEST task's latest attempt that has one, or nil,
// checked with key (OpenManifest). A manifest that exists but cannot be read is an error,
// not "no RED": GREEN would otherwise skip the integrity check of that task's tests. One
// whose seal fails is not evidence: it is skipped, as if that attempt had none, and the
// orchestrator names it elsewhere (status, watch).
func FindRed(key *seal.Key, runs, task string) (*Manifest, error) {
	entries, err := os.ReadDir(filepath.Join(runs, task))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // the task has had no attempt
	}
	if err != nil {
		return nil, fmt.Errorf("find RED of %s: %w", task, err)
	}
	var nums []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			nums = append(nums, n)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(nums)))
	for _, n := range nums {
		m, err := OpenManifest(key, filepath.Join(runs, task, strconv.Itoa(n), "handoff-red.json"), task, n)
		var edited *seal.EditedError
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.As(err, &edited):
			continue // that attempt did not pass RED, or its record is not evidence
		case err != nil:
			return nil, fmt.Errorf("find RED of %s: %w", task, err)
		}
		return m, nil
	}
	return nil, nil
}

// idToken returns how a Test ID appears in a test name: non-alphanumerics read as '_',
// compared case-insensitively (UNIT-001 is named by TestAdd_UNIT_001).
func idToken(id string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, id))
}

func describe(res *testrun.Result) string {
	if f := res.Failed(); len(f) > 0 {
		return fmt.Sprintf("%s: %s", res.Class, strings.Join(f, ", "))
	}
	if len(res.BuildErrors) > 0 {
		return fmt.Sprintf("%s: %s", res.Class, res.BuildErrors[0])
	}
	return string(res.Class)
}

func list(files []string) string {
	if len(files) == 0 {
		return "none"
	}
	return strings.Join(files, ", ")
}

func first(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// passedByName reports whether a passed test's ID ends with name (Go "pkg.TestX", pytest
// "tests/t.py::test_x", JS "file > name").
func passedByName(passed map[string]bool, name string) bool {
	for id := range passed {
		if id == name || strings.HasSuffix(id, "."+name) || strings.HasSuffix(id, "::"+name) ||
			strings.HasSuffix(id, " > "+name) {
			return true
		}
	}
	return false
}
