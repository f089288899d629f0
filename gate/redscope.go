package gate

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/testdiff"
	"github.com/orchestrator/orchestrator/testrun"
)

// redCommand returns the command that runs a TEST task's tests (SPEC §7.2): the task's own
// Test Command as it is; else the project's command narrowed to the task's Test File, else
// to the test files the agent wrote (present: those that exist) and the tests that read the
// test data it added or changed (dataReaders): for Go the package that holds the testdata/
// folder, for pytest the test modules of the data's folder and above, and the whole suite
// when none is found. A project command of a runner that cannot be narrowed (judged by its
// exit code) runs whole. It returns a failed verdict when there is nothing to run.
func redCommand(v *Verdict, in Input, present, data []string) (string, *Verdict) {
	if !in.ProjectCommand {
		return in.TestCommand, nil
	}
	files, from := present, "the test files the agent wrote"
	if len(in.TestFile) > 0 {
		files, from = in.TestFile, "the task's Test File"
	}
	if testrun.Detect(in.TestCommand) == testrun.Exit {
		fmt.Fprintf(&v.Log, "the project test command runs no runner it can narrow to %s; it runs whole\n", from)
		return in.TestCommand, nil
	}
	if len(in.TestFile) == 0 && len(data) > 0 {
		readers, whole := dataReaders(in, data)
		if whole {
			fmt.Fprintf(&v.Log, "no test module found beside the test data the agent changed (%s): the whole suite runs\n", strings.Join(data, ", "))
			return in.TestCommand, nil
		}
		fmt.Fprintf(&v.Log, "the tests that read the test data the agent changed: %s\n", strings.Join(readers, ", "))
		files, from = append(slices.Clone(present), readers...), "the test files the agent wrote and those that read its test data"
	}
	if len(files) == 0 {
		return "", v.fail(TypeFalseRed, "false RED: the test writer added or changed no test file")
	}
	cmd, ok := testrun.Restrict(in.TestCommand, files)
	if !ok {
		return "", v.fail(TypeFalseRed, "false RED: none of %s (%s) is a test that %s runs", from, strings.Join(files, ", "), in.TestCommand)
	}
	fmt.Fprintf(&v.Log, "the project test command narrowed to %s: %s\n", from, cmd)
	return cmd, nil
}

// dataReaders returns the test files that may read the test data files data (SPEC §7.2):
// for data under a testdata/ folder, the Go test files of the folder that holds it (its
// package), else those of the data's own folder; and the test files (by the task's globs)
// of the data's folder and of every folder above it up to the root (pytest's data-driven
// tests, which read a folder of files). whole is true when a data file has no test file
// found for it: then only the whole suite is sure to run its reader.
func dataReaders(in Input, data []string) (readers []string, whole bool) {
	globs := in.Globs
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			readers = append(readers, f)
		}
	}
	for _, d := range data {
		found := false
		// Go: the package whose testdata/ holds the file, or the file's own folder.
		dir := path.Dir(path.Clean(d))
		if i := slices.Index(strings.Split(d, "/"), "testdata"); i >= 0 {
			dir = path.Join(strings.Split(d, "/")[:i]...)
			if dir == "" {
				dir = "."
			}
		}
		for _, f := range filesIn(in.Root, dir) {
			if strings.HasSuffix(f, "_test.go") {
				add(f)
				found = true
			}
		}
		// Python and the others: the test files of the data's folder and above.
		for dir := path.Dir(path.Clean(d)); ; dir = path.Dir(dir) {
			for _, f := range filesIn(in.Root, dir) {
				if !strings.HasSuffix(f, ".go") && testrun.IsTestFile(f, globs) && !isTestData(f) {
					add(f)
					found = true
				}
			}
			if dir == "." || dir == "/" {
				break
			}
		}
		if !found {
			return nil, true
		}
	}
	slices.Sort(readers)
	return readers, false
}

// filesIn returns the regular files directly in folder dir of root, as slash-separated
// paths relative to root.
func filesIn(root, dir string) []string {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out
}

// fedEvidence returns the tests of a RED run, outside the agent's own files, that the
// change fed new test data and that now fail where the baseline has them passing (the
// test, or the test its subtest or parameter belongs to): the evidence of a data-driven
// test case (SPEC §7.2). A test that failed in the baseline too says nothing of the
// change; without a baseline there is nothing to compare with, and none counts.
func (v *Verdict) fedEvidence(in Input, fed []testrun.Test) []string {
	if len(fed) == 0 {
		return nil
	}
	var failing []string
	for _, t := range fed {
		if t.Status == testrun.Failed {
			failing = append(failing, t.ID)
		}
	}
	if len(failing) == 0 {
		return nil
	}
	if in.Baseline == nil {
		fmt.Fprintf(&v.Log, "tests that read the changed test data fail (%s), but there is no baseline to tell whether they failed before: they are not evidence\n", strings.Join(failing, ", "))
		return nil
	}
	passed := map[string]bool{}
	for _, id := range in.Baseline {
		passed[id] = true
		passed[testBase(id)] = true
	}
	var out []string
	for _, id := range failing {
		if passed[id] || passed[testBase(id)] {
			out = append(out, id)
			continue
		}
		fmt.Fprintf(&v.Log, "%s reads the changed test data and fails, but did not pass in the baseline: not evidence\n", id)
	}
	if len(out) > 0 {
		fmt.Fprintf(&v.Log, "tests that read the changed test data and now fail (they passed in the baseline): %s\n", strings.Join(out, ", "))
	}
	return out
}

// testBase returns the test a test ID's subtest or parametrization belongs to: Go
// "pkg.TestX/case" gives "pkg.TestX", pytest "f.py::test_x[a-b]" gives "f.py::test_x".
func testBase(id string) string {
	if strings.Contains(id, "::") {
		if i := strings.IndexByte(id, '['); i > 0 {
			return id[:i]
		}
		return id
	}
	short := shortName(id)
	if i := strings.IndexByte(short, '/'); i > 0 {
		return strings.TrimSuffix(id, short[i:])
	}
	return id
}

// orFed names, in a false RED's reason, the tests that read the agent's test data.
func orFed(data []string) string {
	if len(data) == 0 {
		return ""
	}
	return " or fed new test data"
}

// How a test ID stands to a Test ID that is a test's own name (test_ids: names).
const (
	nameOther = iota
	nameIs    // the test of that name
	nameBelow // a subtest or parametrization of it, or a method of a class it names
)

// byName says how the runner's test ID testID stands to id, a test's name as the project
// spells it: its full name (TestParse/empty, test_parse[empty], TestClass::test_x), with or
// without the package or file (pkg.TestParse, tests/test_p.py::test_parse); Python's
// TestClass.test_x is read as TestClass::test_x.
func byName(testID, id string) int {
	id = strings.TrimSpace(id)
	if id == "" {
		return nameOther
	}
	var names []string
	if strings.Contains(testID, "::") {
		// Every tail of the node ID: the file's path, the class, the function.
		parts := strings.Split(testID, "::")
		for i := range parts {
			names = append(names, strings.Join(parts[i:], "::"))
		}
		if !strings.Contains(id, "::") {
			// TestClass.test_x; a parameter may hold dots, so only the part before it.
			head, params, hasParams := strings.Cut(id, "[")
			id = strings.ReplaceAll(head, ".", "::")
			if hasParams {
				id += "[" + params
			}
		}
	} else {
		names = []string{testID, shortName(testID)}
	}
	for _, n := range names {
		switch {
		case n == id:
			return nameIs
		case strings.HasPrefix(n, id+"/"), strings.HasPrefix(n, id+"["), strings.HasPrefix(n, id+"::"):
			return nameBelow
		}
	}
	return nameOther
}

// callArityRE reads a Go build error of a call whose arguments do not fit the callee:
// "x_test.go:12:9: too many arguments in call to c.check".
var callArityRE = lazyre.New(`^(\S+\.go):\d+(?::\d+)?: (?:too many|not enough) arguments in call to (?:([\w.]+)\.)?(\w+)$`)

// newSignatures reads a Go RED whose build failed in a test file for a call with too many or
// too few arguments to a function or method of the code under test (declared in the
// package's files that are not tests): the test calls that implementation in a form that
// does not exist yet (a new parameter), which is the missing implementation (SPEC §7.2),
// not a broken test. A call whose arguments the compiler could not type ("have (unknown
// type)": the value of a function that does not exist yet) follows from another error and
// decides nothing. When every error the run calls broken is such a call (or the
// compiler's "too many errors", which ends a long list), the run is read as
// missing_implementation, each such error marked "undefined: NAME" for the names
// the missing implementation holds (missingNames, checkChanged, the probe).
func (v *Verdict) newSignatures(in Input, res *testrun.Result) {
	if res.Runner != testrun.Go || res.Class != testrun.ClassBrokenTest {
		return
	}
	errs := slices.Clone(res.BuildErrors)
	out := strings.Split(res.Output, "\n")
	var judged []string // what decides the class: all but the compiler's "too many errors"
	changed := false
	for i, e := range errs {
		if strings.HasSuffix(strings.TrimSpace(e), ": too many errors") {
			// The compiler stops after ten errors: its last line says so, of whatever
			// file it was reading, and is no error of its own.
			changed = true
			continue
		}
		m := callArityRE().FindStringSubmatch(strings.TrimSpace(e))
		if m != nil && untypedArguments(out, e) {
			// The compiler could not type the arguments ("have (unknown type)"): an
			// error that follows from another (a value of a function that does not
			// exist yet), which decides nothing by itself.
			changed = true
			continue
		}
		judged = append(judged, e)
		if m == nil {
			continue
		}
		file := path.Clean(strings.TrimPrefix(m[1], "./"))
		if !declaredInCode(in.Root, path.Dir(file), m[3]) {
			continue
		}
		// Said as the compiler says what is missing: a function of the test's package
		// ("undefined: check"), of another ("undefined: semver.check"), or a method of a
		// value ("has no field or method check": c.check).
		missing := "undefined: " + m[3]
		if m[2] != "" {
			missing = "has no field or method " + m[3]
			src, _ := os.ReadFile(filepath.Join(in.Root, filepath.FromSlash(file)))
			if _, ok := testdiff.GoImportNames(src)[m[2]]; ok {
				missing = "undefined: " + m[2] + "." + m[3]
			}
		}
		errs[i] = fmt.Sprintf("%s (the implementation's %s in the form the test calls: %s)", e, m[3], missing)
		judged[len(judged)-1] = errs[i]
		changed = true
	}
	if !changed {
		return
	}
	probe := *res
	probe.BuildErrors = judged
	class, reason := testrun.Classify(&probe, in.Globs)
	if class != testrun.ClassMissingImplementation {
		return
	}
	fmt.Fprintf(&v.Log, "the build errors in test files are all of the missing implementation (a call in a form it does not have yet, or the compiler's \"too many errors\"): read as %s (%s)\n", class, reason)
	res.Class, res.Reason, res.BuildErrors = class, reason, errs
}

// untypedArguments reports whether the Go build error e, a call whose arguments do not fit
// its callee, says in the lines that follow it in the run's output (lines) that the
// compiler did not know their type: "have (unknown type)" or "(invalid type)".
func untypedArguments(lines []string, e string) bool {
	e = strings.TrimSpace(e)
	for i, l := range lines {
		if strings.TrimSpace(l) != e {
			continue
		}
		for _, more := range lines[i+1:] {
			if !strings.HasPrefix(more, "\t") {
				break
			}
			if have, ok := strings.CutPrefix(strings.TrimSpace(more), "have ("); ok {
				return strings.Contains(have, "unknown type") || strings.Contains(have, "invalid type")
			}
		}
	}
	return false
}

// declaredInCode reports whether a function or method named name is declared in the Go
// files of folder dir of root that are not tests.
func declaredInCode(root, dir, name string) bool {
	for _, f := range filesIn(root, dir) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.SkipObjectResolution)
		if file == nil {
			continue
		}
		_ = err // what parses is read
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == name {
				return true
			}
		}
	}
	return false
}

// movedData returns the test data files of deleted that were not moved: a file whose
// content the change adds again under another name (one of data) was moved, which a test
// writer may do, as it may move a test (SPEC §7.2).
func movedData(in Input, deleted, data []string) ([]string, error) {
	if len(deleted) == 0 || len(data) == 0 || in.Contents == nil {
		return deleted, nil
	}
	added := map[string]bool{}
	for _, f := range data {
		_, after, err := in.Contents(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		added[string(after)] = true
	}
	var out []string
	for _, f := range deleted {
		before, _, err := in.Contents(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		if !added[string(before)] {
			out = append(out, f)
		}
	}
	return out, nil
}

// pyHelpers returns the Python files among a test writer's that are test support, not test
// modules: present, declaring no test, and neither conftest.py nor __init__.py (a helper
// the tests of its folder import, tests/burntsushi.py). Like test data, they feed the test
// modules of their folder and above, which RED runs (SPEC §7.2).
func pyHelpers(present []string, sources map[string]string) []string {
	var out []string
	for _, f := range present {
		base := path.Base(f)
		if path.Ext(f) != ".py" || base == "conftest.py" || base == "__init__.py" || len(declared(f, sources[f])) > 0 {
			continue
		}
		out = append(out, f)
	}
	return out
}
