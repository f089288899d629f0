package gate

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// testOutputs returns the own output of each failing test of a RED run, cut to 2000
// characters, by test ID.
func testOutputs(tests []testrun.Test) map[string]string {
	out := map[string]string{}
	for _, t := range tests {
		if t.Status == testrun.Failed && strings.TrimSpace(t.Output) != "" {
			out[t.ID] = clip(t.Output, 2000)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ACTests are the tests of a requirement's acceptance criteria that one implementer's
// gate judges (SPEC §9): its own AC's, the earlier ACs', and the later ACs', each by the
// runner's ID, and the command that runs its own and the earlier ones by name.
type ACTests struct {
	AC      string              // the AC being implemented
	Own     []string            // its tests
	Earlier []string            // the tests of the ACs before it
	Later   map[string][]string // the tests of each AC after it, by AC
	Order   []string            // the later ACs in order
	Command string              // runs Own and Earlier by name
}

// CycleTests returns the tests of the RED hand-off m, by AC, as the runner of command
// names them in root: a test the RED run reported keeps its ID; a test only declared (the
// build failed at RED) gets the ID its runner will give it, from the test file that
// declares it.
func CycleTests(root, command string, m *Manifest) map[string][]string {
	out := map[string][]string{}
	if m == nil {
		return out
	}
	module := testrun.ModulePath(root)
	sources := map[string][]string{}
	texts := map[string]string{}
	for _, f := range m.TestFiles {
		if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f))); err == nil {
			sources[f], texts[f] = declared(f, string(b)), string(b)
		}
	}
	for ac, names := range m.Tests {
		for _, name := range names {
			out[ac] = append(out[ac], testID(module, name, m.TestFiles, sources, texts))
		}
	}
	return out
}

// testID returns the runner's ID of a test named name: name itself when it is an ID
// already (pkg.TestX, file::test_x, file > title), else made from the file that declares
// it.
func testID(module, name string, files []string, decl map[string][]string, texts map[string]string) string {
	if strings.Contains(name, "::") || strings.Contains(name, " > ") || shortName(name) != name {
		return name
	}
	for _, f := range files {
		if !slices.Contains(decl[f], name) {
			continue
		}
		switch path.Ext(f) {
		case ".go":
			pkg := module
			if dir := path.Dir(f); dir != "." {
				pkg += "/" + dir
			}
			return pkg + "." + name
		case ".py":
			return f + "::" + pyPath(texts[f], name)
		default:
			return f + " > " + name
		}
	}
	return name
}

// ByName returns the command that runs the tests ids by name, the way command runs its
// runner: go test -run, pytest node IDs, vitest and jest -t (testrun.RegressionCommandFor).
func ByName(root, command string, ids []string) string {
	return testrun.RegressionCommandFor(root, command, ids)
}

// GreenAC is the gate of one acceptance criterion's implementer in a TDD cycle (SPEC §9).
// Integrity as GREEN's: no test file, no file of the harness changed, the RED tests as at
// RED. Then the AC's tests and the earlier ACs' run by name and must all be reported
// passed. Then the project's whole suite runs once: every passing test of the baseline
// must pass (regression), and every later AC must keep a test that does not pass: an
// implementer does its own AC and no other (scope_violation). On success it writes
// handoff-green.json, and the whole suite's run is what the baseline grows from.
func GreenAC(ctx context.Context, in Input, t ACTests) (*Verdict, error) {
	v := &Verdict{}
	fmt.Fprintf(&v.Log, "GREEN gate of %s: task %s attempt %d\n", t.AC, in.Task, in.Attempt)
	fmt.Fprintf(&v.Log, "changed files: %s\n", list(in.Changed))
	if verdict, err := v.checkHarness(in, TypeTampered); verdict != nil || err != nil {
		return verdict, err
	}
	if verdict, err := v.checkTampering(ctx, in); verdict != nil || err != nil {
		return verdict, err
	}
	hashes, verdict := v.checkRedHashes(in)
	if verdict != nil {
		return verdict, nil
	}
	want := append(slices.Clone(t.Earlier), t.Own...)
	if len(t.Own) == 0 {
		return v.fail(TypeTampered, "test_tampered: the RED hand-off names no test of %s; its tests cannot be checked", t.AC), nil
	}
	if t.Command == "" {
		return v.fail(TypeNoTestCommand, "the tests of %s cannot be run by name: the project has no test command a runner reads", t.AC), nil
	}
	fmt.Fprintf(&v.Log, "the tests of %s and of the ACs before it, by name: %s\n", t.AC, strings.Join(want, ", "))
	res, err := v.run(ctx, in, t.Command)
	if err != nil {
		return v.notRun(TypeBuildFails, err)
	}
	if err := testrun.NotRun(res); err != nil || res.Class == testrun.ClassNoTests {
		v.keepOutput(res.Output)
		return v.fail(TypeBuildFails, "%s did not run the tests (%s, exit %d)", t.Command, res.Class, res.ExitCode), nil
	}
	passed := setOf(res.Passed())
	for _, id := range want {
		if passedID(passed, id) {
			continue
		}
		v.keepOutput(res.Output)
		v.FailingTest = id
		whose := t.AC
		if !slices.Contains(t.Own, id) {
			whose = "an earlier AC"
		}
		if len(res.BuildErrors) > 0 && !ranTest(res, id) {
			return v.fail(TypeBuildFails, "%s exited %d: the build failed, so %s (%s) did not run: %s", t.Command, res.ExitCode, id, whose, res.BuildErrors[0]), nil
		}
		return v.fail(TypeTestFails, "%s exited %d: %s (%s) did not pass (%s)", t.Command, res.ExitCode, id, whose, describe(res)), nil
	}
	if res.Runner != testrun.Exit && res.ExitCode != 0 {
		v.keepOutput(res.Output)
		return v.fail(TypeTestFails, "%s exited %d (%s)", t.Command, res.ExitCode, describe(res)), nil
	}
	fmt.Fprintf(&v.Log, "%s: the %d tests of %s and of the ACs before it pass\n", t.Command, len(want), t.AC)
	commands := []string{t.Command}
	switch {
	case in.FullCommand != "":
		commands = append(commands, in.FullCommand)
		full, err := v.run(ctx, in, in.FullCommand)
		if err != nil {
			return v.notRun(TypeBuildFails, err)
		}
		if err := testrun.NotRun(full); err != nil || full.Class == testrun.ClassNoTests {
			v.keepOutput(full.Output)
			return v.fail(TypeBuildFails, "%s did not run the tests (%s, exit %d)", in.FullCommand, full.Class, full.ExitCode), nil
		}
		if full.Runner == testrun.Exit {
			fmt.Fprintf(&v.Log, "%s reports no test names: the regression and the later ACs cannot be checked by name\n", in.FullCommand)
			break
		}
		fullPassed := setOf(full.Passed())
		if f := checkFull(v, in, full, fullPassed); f != nil {
			return f, nil
		}
		for _, ac := range t.Order {
			tests := t.Later[ac]
			if len(tests) == 0 {
				continue
			}
			all := true
			for _, id := range tests {
				all = all && passedID(fullPassed, id)
			}
			if all {
				v.keepOutput(full.Output)
				v.FailingTest = tests[0]
				return v.fail(TypeScope, "scope_violation: the tests of %s, a later AC, pass already: the implementer of %s implemented %s too (%s)", ac, t.AC, ac, strings.Join(tests, ", ")), nil
			}
		}
		fmt.Fprintf(&v.Log, "later ACs: each still has a test that does not pass (%s)\n", orNoneList(t.Order))
		v.Full = full
	case in.RegressionCommand != "":
		commands = append(commands, in.RegressionCommand)
		reg, err := v.run(ctx, in, in.RegressionCommand)
		if isSetup(err) {
			return nil, err
		}
		if err != nil || reg.ExitCode != 0 {
			if reg != nil {
				v.keepOutput(reg.Output)
				if f := reg.Failed(); len(f) > 0 {
					v.FailingTest = f[0]
				}
			}
			return v.fail(TypeRegression, "regression: a test that passed in the baseline fails now"), nil
		}
	}
	m := &Manifest{
		Phase: "green", Timestamp: time.Now().UTC(), Task: in.Task, Attempt: in.Attempt,
		Command: strings.Join(commands, " && "), Allowlist: in.Changed, TestHashes: hashes,
		Tests: map[string][]string{t.AC: t.Own},
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
	later := ""
	if len(t.Order) > 0 {
		later = ", later ACs not done"
	}
	return v.pass("GREEN %s: %s: %d tests pass by name; the whole suite: baseline kept%s", t.AC, t.Command, len(want), later), nil
}

// Refactor is the gate of a TDD cycle's refactorer (SPEC §9): GREEN's, and the whole suite
// must pass: no test of it fails.
func Refactor(ctx context.Context, in Input) (*Verdict, error) {
	v, err := Green(ctx, in)
	if err != nil || !v.Pass {
		return v, err
	}
	if v.Full != nil && (v.Full.ExitCode != 0 || len(v.Full.Failed()) > 0) {
		v.keepOutput(v.Full.Output)
		if f := v.Full.Failed(); len(f) > 0 {
			v.FailingTest = f[0]
		}
		full := v.Full
		v.Full = nil
		return v.fail(TypeTestFails, "REFACTOR: the whole suite must pass after a refactor: %s exited %d (%s)", full.Command, full.ExitCode, describe(full)), nil
	}
	return v, nil
}

// checkRedHashes checks that the test files of every RED dependency are as at RED, and
// returns their hashes, or the failed verdict.
func (v *Verdict) checkRedHashes(in Input) (map[string]string, *Verdict) {
	hashes := map[string]string{}
	for _, m := range in.Deps {
		for _, f := range slices.Sorted(maps.Keys(m.TestHashes)) {
			now, _ := testrun.HashFile(filepath.Join(in.Root, filepath.FromSlash(f)))
			if now != m.TestHashes[f] {
				v.File = f
				what := "changed"
				if now == "" {
					what = "deleted"
				}
				return nil, v.fail(TypeTampered, "test_tampered: %s was %s after RED (%s)", f, what, m.Task)
			}
		}
		fmt.Fprintf(&v.Log, "integrity: the %d test files of %s are as at RED\n", len(m.TestHashes), m.Task)
		maps.Copy(hashes, m.TestHashes)
	}
	return hashes, nil
}

func setOf(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// passedID reports whether test id passed: by its ID, or by its name when id is a bare
// name.
func passedID(passed map[string]bool, id string) bool {
	return passed[id] || passedByName(passed, id)
}

// ranTest reports whether the run reported test id at all.
func ranTest(res *testrun.Result, id string) bool {
	for _, t := range res.Tests {
		if t.ID == id {
			return true
		}
	}
	return false
}

func orNoneList(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// pyPath returns the pytest node path of test function name in Python source src: the
// name, after the classes that hold it ("TestCart::test_ac_1_total" for a method).
func pyPath(src, name string) string {
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " \t")
		if !strings.HasPrefix(trimmed, "def "+name+"(") && !strings.HasPrefix(trimmed, "async def "+name+"(") {
			continue
		}
		path := []string{name}
		indent := len(line) - len(trimmed)
		for j := i - 1; j >= 0 && indent > 0; j-- {
			l := lines[j]
			t := strings.TrimLeft(l, " \t")
			if t == "" || strings.HasPrefix(t, "#") || len(l)-len(t) >= indent {
				continue
			}
			indent = len(l) - len(t)
			if rest, ok := strings.CutPrefix(t, "class "); ok {
				cls := strings.FieldsFunc(rest, func(r rune) bool { return r == '(' || r == ':' || r == ' ' })
				if len(cls) > 0 {
					path = append([]string{cls[0]}, path...)
				}
			}
		}
		return strings.Join(path, "::")
	}
	return name
}
