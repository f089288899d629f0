package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/testdiff"
	"github.com/orchestrator/orchestrator/testrun"
)

// existingChanges is what a test writer's change did to the tests that were already there
// (SPEC §7.2): the tests it rewrote, for checkChanged to weigh against the run, and those
// it deleted or skipped (lost), each a line naming the test and what it lost, which
// refuseLost refuses after the run. Both are read before any test runs and judged after
// it, so that "the tests already pass" comes before any scope rule.
type existingChanges struct {
	changed []testdiff.Test
	lost    []string
	file    string // the file of the first lost test
}

// checkExisting reads what a test writer's change did to the tests that were already there
// (SPEC §7.2), compared per test function or method by the language's own parser (package
// testdiff: Go, Python; other languages by existingTests, which allows only new tests).
// Added to and moved are allowed; deleted and skipped are returned as lost, and changed
// tests as changed. Without Contents (no base to compare with) it finds nothing.
func (v *Verdict) checkExisting(ctx context.Context, in Input, files []string) (existingChanges, error) {
	var out existingChanges
	if in.Contents == nil {
		return out, nil
	}
	var parsed []testdiff.File
	for _, f := range files {
		before, after, err := in.Contents(f)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", f, err)
		}
		switch path.Ext(f) {
		case ".go", ".py":
			parsed = append(parsed, testdiff.File{Path: f, Before: before, After: after})
			continue
		}
		var lines []string
		if !judgedByName(f) {
			lines = existingTests(f, before, after)
		} else {
			// Rust's and JavaScript's tests are judged like Go's and Python's: a changed
			// test that fails at the base states new behaviour (checkChanged), by the name
			// cargo reports, or the title vitest and jest report.
			var changed []testdiff.Test
			lines, changed = existingUnits(f, before, after)
			out.changed = append(out.changed, changed...)
			for _, t := range changed {
				fmt.Fprintf(&v.Log, "existing test: %s\n", t)
			}
		}
		if len(lines) > 0 {
			if out.file == "" {
				out.file = f
			}
			out.lost = append(out.lost, lines...)
		}
	}
	// A Go test in a file the change left alone uses the helpers of its package's other
	// test files: a helper weakened there weakens it, so those files are compared too.
	// So does a Python test that imports a helper from a module the change touched (from
	// tests.helpers import check), or a helper of a module it did not touch.
	for _, f := range append(unchangedGoTests(in.Root, files), unchangedPyModules(in.Root, files)...) {
		before, after, err := in.Contents(f)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", f, err)
		}
		parsed = append(parsed, testdiff.File{Path: f, Before: before, After: after})
	}
	tests, err := testdiff.Compare(ctx, parsed)
	if err != nil {
		return out, err
	}
	for _, t := range tests {
		switch t.Kind {
		case testdiff.Unchanged:
			continue
		case testdiff.Deleted, testdiff.Skipped:
			if out.file == "" {
				out.file = t.File
			}
			out.lost = append(out.lost, t.String())
		case testdiff.Changed:
			out.changed = append(out.changed, t)
		}
		fmt.Fprintf(&v.Log, "existing test: %s\n", t)
	}
	return out, nil
}

// unchangedGoTests returns the Go test files, relative to root, of the folders in which
// changed holds Go test files, that changed does not hold: the files whose tests may use a
// changed helper.
func unchangedGoTests(root string, changed []string) []string {
	dirs := map[string]bool{}
	for _, f := range changed {
		if strings.HasSuffix(f, "_test.go") {
			dirs[path.Dir(f)] = true
		}
	}
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			continue
		}
		for _, e := range entries {
			f := path.Join(dir, e.Name())
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), "_test.go") && !slices.Contains(changed, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// unchangedPyModules returns the Python files, relative to root, that changed does not
// hold and whose tests or helpers a changed Python file may change or use: the test files
// and helper modules (any file but conftest.py) under the top folders of the changed files
// that name one of their modules, and of those modules in turn (a test that imports the
// helper that imports the changed comparison); and the project's modules that those
// files import (a helper the changed test now calls). testdiff follows only what each
// test's file imports. It keeps no more than maxPyReaders.
func unchangedPyModules(root string, changed []string) []string {
	tops := map[string]bool{}
	stems := map[string]bool{}
	var todo []string
	for _, f := range changed {
		if path.Ext(f) != ".py" {
			continue
		}
		top, _, found := strings.Cut(f, "/")
		if !found {
			top = "."
		}
		tops[top] = true
		stems[pyStem(f)] = true
		todo = append(todo, f)
	}
	if len(todo) == 0 {
		return nil
	}
	var files []string
	for _, top := range slices.Sorted(maps.Keys(tops)) {
		start := filepath.Join(root, filepath.FromSlash(top))
		filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return filepath.SkipDir
			}
			name := e.Name()
			if e.IsDir() {
				if p != start && (strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules" || name == "venv") {
					return filepath.SkipDir
				}
				return nil
			}
			if rel, err := filepath.Rel(root, p); err == nil && e.Type().IsRegular() && strings.HasSuffix(name, ".py") && name != "conftest.py" {
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
	}
	sources := map[string][]byte{}
	read := func(f string) []byte {
		if src, ok := sources[f]; ok {
			return src
		}
		src, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		sources[f] = src
		return src
	}
	taken := map[string]bool{}
	for _, f := range changed {
		taken[f] = true
	}
	var out []string
	take := func(f string) {
		if !taken[f] && len(out) < maxPyReaders {
			taken[f] = true
			out = append(out, f)
			todo = append(todo, f)
		}
	}
	// Upward: the files that name a module taken, until none is new.
	for grew := true; grew; {
		grew = false
		for _, f := range files {
			if taken[f] {
				continue
			}
			src := read(f)
			for stem := range stems {
				if bytes.Contains(src, []byte(stem)) {
					take(f)
					stems[pyStem(f)], grew = true, true
					break
				}
			}
		}
	}
	// Downward: the project's modules the files taken import.
	for len(todo) > 0 {
		f := todo[0]
		todo = todo[1:]
		for _, m := range pyImports(read(f)) {
			if p := pyModuleFile(root, f, m); p != "" {
				take(p)
			}
		}
	}
	return out
}

// pyStem is the name a Python file's module is imported by: its base name, or its
// package's for __init__.py.
func pyStem(f string) string {
	stem := strings.TrimSuffix(path.Base(f), ".py")
	if stem == "__init__" {
		stem = path.Base(path.Dir(f))
	}
	return stem
}

// pyImports returns the modules a Python source imports (pyImportRE), relative ones with
// their dots: "from tests import helpers" gives tests and tests.helpers (either may be the
// module).
func pyImports(src []byte) []string {
	var out []string
	for _, line := range strings.Split(string(src), "\n") {
		m := pyImportRE().FindStringSubmatch(line)
		switch {
		case m == nil:
		case m[3] != "":
			for _, part := range strings.Split(m[3], ",") {
				if f := strings.Fields(part); len(f) > 0 {
					out = append(out, f[0])
				}
			}
		default:
			if strings.Trim(m[1], ".") != "" {
				out = append(out, m[1])
			}
			for _, part := range strings.Split(m[2], ",") {
				if f := strings.Fields(part); len(f) > 0 && f[0] != "*" {
					sep := "."
					if strings.HasSuffix(m[1], ".") {
						sep = ""
					}
					out = append(out, m[1]+sep+f[0])
				}
			}
		}
	}
	return out
}

// pyModuleFile returns the file, relative to root, of the module mod that file from
// imports ("" when the project has none): read from from's folder when relative, else from
// root or any folder above from's (the folders pytest puts on sys.path).
func pyModuleFile(root, from, mod string) string {
	var bases []string
	if rest, ok := strings.CutPrefix(mod, "."); ok {
		dir := path.Dir(from)
		for strings.HasPrefix(rest, ".") {
			rest, dir = rest[1:], path.Dir(dir)
		}
		mod, bases = rest, []string{dir}
	} else {
		for dir := path.Dir(from); ; dir = path.Dir(dir) {
			bases = append(bases, dir)
			if dir == "." {
				break
			}
		}
	}
	if mod == "" {
		return ""
	}
	rel := strings.ReplaceAll(mod, ".", "/")
	for _, b := range bases {
		for _, c := range []string{path.Join(b, rel+".py"), path.Join(b, rel, "__init__.py")} {
			if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(c))); err == nil && st.Mode().IsRegular() {
				return c
			}
		}
	}
	return ""
}

// maxPyReaders bounds the unchanged Python files read beside the changed ones.
const maxPyReaders = 1000

// refuseLost refuses, as a scope_violation naming each test and what it lost, a change that
// deleted or skipped tests that were already there (nil when it did neither).
func (v *Verdict) refuseLost(e existingChanges) *Verdict {
	if len(e.lost) == 0 {
		return nil
	}
	if v.File == "" {
		v.File = e.file
	}
	return v.fail(TypeScope, "scope_violation: a test writer may add tests, rows and assertions, not delete, skip or weaken the tests already there: %s. %s",
		strings.Join(e.lost, "; "), existingAdvice)
}

// lostNote is what a false RED adds when the change also deleted or skipped existing tests:
// the scope rule the person meets next ("" when none).
func lostNote(e existingChanges) string {
	if len(e.lost) == 0 {
		return ""
	}
	return fmt.Sprintf(". Besides, a test writer may not delete, skip or weaken the tests already there: %s. %s", strings.Join(e.lost, "; "), existingAdvice)
}

// existingAdvice tells the person what to do with a change that needs an existing test
// gone or weakened.
const existingAdvice = "If the change needs it, a person commits that test change directly, " +
	"or takes the test out of the baseline (orchestrator baseline --drop ID) and gives the change a TEST task of its own"

// checkChanged weighs the existing tests the change rewrote against the run of RED (SPEC
// §7.2): a rewritten test that fails there, against the base's implementation, states new
// behaviour and is allowed (named in v.ChangedTests, for the landing's
// Orchestrator-Changed-Tests trailer); one that still passes, or that the run did not show
// failing, is a scope_violation, since a gate cannot tell its refactor from its weakening.
// A test the run could not reach because the build failed for the missing implementation
// fails there when it names what is missing.
func (v *Verdict) checkChanged(in Input, res *testrun.Result, changed []testdiff.Test) *Verdict {
	if len(changed) == 0 {
		return nil
	}
	missing := missingNames(in, res)
	var refused []string
	for _, t := range changed {
		status := changedStatus(in, res, t, missing)
		fmt.Fprintf(&v.Log, "existing test changed: %s: %s at the base\n", t, status)
		if status.Fails {
			v.ChangedTests = append(v.ChangedTests, t.File+":"+t.Name)
			continue
		}
		if v.File == "" {
			v.File = t.File
		}
		if status.Unproven != "" {
			refused = append(refused, fmt.Sprintf("%s (it %s)", t, status.Unproven))
		} else {
			refused = append(refused, fmt.Sprintf("%s (and it %s at the base)", t, status.Text))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	v.ChangedTests = nil
	return v.fail(TypeScope, "scope_violation: an existing test changed in a way that is not an addition, and the run does not show it failing at the base (a changed test must fail there: it states new behaviour): %s. %s",
		strings.Join(refused, "; "), existingAdvice)
}

// A runStatus is how a changed test fared in the run of RED: Fails, with the other fields
// empty, when it fails there (and so states new behaviour); else Text says how it fared
// ("passes", "is skipped", "did not run"), or Unproven says why failing there proves
// nothing: it fails, or cannot run, only for a missing name, and what it lost is not made
// up for by code that uses that name.
type runStatus struct {
	Fails    bool
	Text     string
	Unproven string
}

func (s runStatus) String() string {
	switch {
	case s.Fails:
		return "fails"
	case s.Unproven != "":
		return s.Unproven
	}
	return s.Text
}

// changedStatus says how a changed test fared in the run: it fails (any of its cases, or
// its package's build for a missing name it uses, when every part it lost is replaced by
// code that uses what is missing: testdiff's Unaccounted), passes, is skipped, did not run,
// or cannot run at the base with what it lost that nothing made up for.
func changedStatus(in Input, res *testrun.Result, t testdiff.Test, missing map[string]bool) runStatus {
	status := "did not run"
	for _, r := range res.Tests {
		if !resultOf(in, r, t) {
			continue
		}
		switch r.Status {
		case testrun.Failed:
			// A test that fails where it reaches a missing name (Python's AttributeError
			// or ImportError, at its call or in a helper's, or for a name it computes) says
			// as little as one that cannot run for it: at the base, only test code can name
			// what the change has not written yet.
			for _, name := range missingIn(r.Output) {
				if why := unmadeUp(t, name, missing); why != "" {
					return runStatus{Unproven: fmt.Sprintf("fails at the base only where it reaches %s, which is missing there, %s", strings.TrimPrefix(name, "."), why)}
				}
			}
			return runStatus{Fails: true}
		case testrun.Passed:
			status = "passes"
		case testrun.Skipped:
			if status != "passes" {
				status = "is skipped"
			}
		}
	}
	if status == "did not run" && res.Class == testrun.ClassMissingImplementation {
		// It names what is missing (itself or through a helper), so it cannot run here;
		// what it lost must be made up for by code that depends on it, or naming it says
		// nothing.
		if name := t.Reaches(func(n string) bool { return isMissing(missing, n, isPy(t)) }); name != "" {
			if why := unmadeUp(t, name, missing); why != "" {
				return runStatus{Unproven: fmt.Sprintf("cannot run at the base, for %s is missing there, %s", strings.TrimPrefix(name, "."), why)}
			}
			return runStatus{Fails: true}
		}
	}
	return runStatus{Text: status}
}

// resultOf reports whether a test of the run is (a case of) the test t: for Go, a test of
// t's package (its import path ends with t's folder) named t.Name, or a subtest named by
// the method of a suite; for pytest, a node of t's file whose class and function path is
// t.Name, parameters aside; for cargo, a test of t's file whose path ends with t.Name.
func resultOf(in Input, r testrun.Test, t testdiff.Test) bool {
	switch path.Ext(t.File) {
	case ".go":
		short := shortName(r.ID)
		pkg := strings.TrimSuffix(r.ID, "."+short)
		if dir := path.Dir(t.File); dir != "." && pkg != r.ID && pkg != dir && !strings.HasSuffix(pkg, "/"+dir) {
			return false
		}
		_, method, isMethod := strings.Cut(t.Name, ".")
		if !isMethod {
			return topName(r.ID) == t.Name
		}
		parts := strings.Split(short, "/")
		return len(parts) >= 2 && parts[1] == method
	case ".py":
		file, rest, ok := strings.Cut(r.ID, "::")
		if !ok {
			return false
		}
		if r.File != "" {
			file = r.File
		}
		if file != t.File && !strings.HasSuffix(t.File, "/"+file) && !strings.HasSuffix(file, "/"+t.File) {
			return false
		}
		var names []string
		for _, p := range strings.Split(rest, "::") {
			if i := strings.IndexByte(p, '['); i > 0 {
				p = p[:i]
			}
			names = append(names, p)
		}
		return strings.Join(names, ".") == t.Name
	case ".rs":
		// cargo names a test by its module path in its binary ("tests::adds", or the
		// function alone in an integration test's), the binary by its source.
		if !sameFile(r.File, t.File) {
			return false
		}
		return r.ID == t.Name || strings.HasSuffix(r.ID, "::"+t.Name)
	}
	if jsExts[path.Ext(t.File)] {
		// vitest and jest name a test by its file, the titles of the blocks around it and
		// its own title, joined by " > " (testrun's jsSep); existingUnits only judges a
		// title used once in its file, without that separator in it.
		return r.File != "" && sameFile(r.File, t.File) && strings.HasSuffix(r.ID, " > "+t.Name)
	}
	return false
}

// sameFile reports whether a runner's file of a test (relative to where it ran: the
// project folder) and a changed file (relative to the repository) are the same file.
func sameFile(runner, changed string) bool {
	return runner == "" || runner == changed || strings.HasSuffix(runner, "/"+changed) || strings.HasSuffix(changed, "/"+runner)
}

// judgedByName reports whether the changed tests of a file read by existingUnits are
// judged by the run (checkChanged), by the names their runner reports: Rust's and the
// JavaScript runners'. A file of another language may only gain tests.
func judgedByName(file string) bool {
	ext := path.Ext(file)
	return ext == ".rs" || jsExts[ext]
}

// unmadeUp says what a changed test that reaches the missing name lost without code that
// uses what is missing in its place ("" when nothing): testdiff's Unaccounted, with name
// and the run's missing names as what is missing.
func unmadeUp(t testdiff.Test, name string, missing map[string]bool) string {
	why := t.Unaccounted(func(n string) bool { return isMissing(missing, n, isPy(t)) || names(n, name, isPy(t)) })
	if why == "" {
		return ""
	}
	return "and what it lost is not made up for by code that uses it: " + why
}

// missingNameRE finds the names a build or an import says are missing: Go's "undefined:
// X" (or pkg.X), "has no field or method X" and "unknown field X in struct literal",
// Python's "cannot import name 'X' from 'm'", "No module named 'a.b'" and "module 'm' has
// no attribute 'X'" (or an object's).
var missingNameRE = lazyre.New(`undefined: ((?:\w+\.)?\w+)|(?:has no field or method|has no method) (\w+)|unknown field (\w+)|cannot import name '(\w+)'(?: from '([\w.]+)')?|No module named '([\w.]+)'|(?:module '([\w.]+)' )?has no attribute '(\w+)'`)

// missingNames returns the names a run that failed for the missing implementation says
// are missing: alone ("Mul": of the test's own package, a method, a field) or with the
// package or module they are missing from ("calc.Mul", "calc.mul").
//
// Go's "undefined: calc.Mul" names the package by the name the erring file gives it: it
// is read as that import's path (example.com/calc/calc.Mul), as testdiff names a test's
// package members, so that another package imported as calc elsewhere is not it.
func missingNames(in Input, res *testrun.Result) map[string]bool {
	out := map[string]bool{}
	if res.Class != testrun.ClassMissingImplementation {
		return out
	}
	for _, name := range missingIn(strings.Join(res.BuildErrors, "\n") + "\n" + res.Output) {
		out[name] = true
	}
	if res.Runner != testrun.Go {
		return out
	}
	for _, e := range res.BuildErrors {
		m := goUndefinedMemberRE().FindStringSubmatch(strings.TrimSpace(e))
		if m == nil {
			continue
		}
		src, err := os.ReadFile(filepath.Join(in.Root, filepath.FromSlash(path.Clean(m[1]))))
		if err != nil {
			continue
		}
		if p, ok := testdiff.GoImportNames(src)[m[2]]; ok {
			delete(out, m[2]+"."+m[3])
			out[p+"."+m[3]] = true
		}
	}
	return out
}

// goUndefinedMemberRE reads Go's "file.go:7:12: undefined: calc.Mul".
var goUndefinedMemberRE = lazyre.New(`^(\S+\.go):\d+(?::\d+)?: undefined: (\w+)\.(\w+)$`)

// missingIn returns the names a text says are missing (missingNames): "No module named
// 'calc.fast'" says calc.fast is (calc may well be there).
func missingIn(text string) []string {
	var out []string
	for _, m := range missingNameRE().FindAllStringSubmatch(text, -1) {
		switch {
		case m[1] != "":
			out = append(out, m[1])
		case m[2] != "":
			out = append(out, "."+m[2]) // a member of a value
		case m[3] != "":
			out = append(out, "."+m[3]) // a field: a member of a value
		case m[4] != "" && m[5] != "":
			out = append(out, m[5]+"."+m[4])
		case m[4] != "":
			out = append(out, m[4])
		case m[6] != "":
			out = append(out, m[6])
		case m[7] != "":
			out = append(out, m[7]+"."+m[8])
		case m[8] != "":
			out = append(out, "."+m[8]) // an object's
		}
	}
	return out
}

// names reports whether a name a test mentions (testdiff's Refs: alone, or with what it
// is mentioned as a member of) is the missing name (missingIn's: alone, with its package
// or module, or ".X", a member of some value). The same name is; a member of another
// package, or a name the test declares itself ("(local).Mul"), is not (bytes.Equal is not
// the missing method Equal, nor operator.mul the missing calc.mul). A name mentioned
// alone is the missing name of that name with any package (a Go package's own Mul is
// calc.Mul of its external tests) and, in Python, anything's (a string given getattr); a
// value's member is a missing member of that name, and in Python also a module's (calc
// is a value where "from pkg import calc" bound it).
func names(ref, missing string, py bool) bool {
	if ref == missing {
		return true
	}
	name := missing[strings.LastIndexByte(missing, '.')+1:]
	switch {
	case !strings.Contains(ref, "."):
		return ref == name && (py || !strings.HasPrefix(missing, "."))
	case strings.HasPrefix(ref, "."):
		return py && ref[1:] == name
	}
	if py {
		// A Python module is named from where it is imported: tests read from a src
		// folder name src.pkg.calc what the runner calls pkg.calc.
		return !strings.HasPrefix(missing, ".") && (strings.HasSuffix(ref, "."+missing) || strings.HasSuffix(missing, "."+ref))
	}
	// A Go package's member the build named only by the package's name (calc.Mul, not
	// read as its path): the package whose path ends in that name.
	owner, refName := ref[:strings.LastIndexByte(ref, '.')], ref[strings.LastIndexByte(ref, '.')+1:]
	pkg := strings.TrimSuffix(missing, "."+name)
	return refName == name && pkg != missing && !strings.ContainsAny(pkg, "/.") && path.Base(owner) == pkg
}

// isPy reports whether a test is Python's.
func isPy(t testdiff.Test) bool { return path.Ext(t.File) == ".py" }

// isMissing reports whether a name a test mentions is one of the missing (names); py says
// the test is Python's.
func isMissing(missing map[string]bool, ref string, py bool) bool {
	if missing[ref] {
		return true
	}
	for m := range missing {
		if names(ref, m, py) {
			return true
		}
	}
	return false
}

// lastParts returns the missing names without their package or module: what a Go source
// names them by.
func lastParts(missing map[string]bool) map[string]bool {
	out := map[string]bool{}
	for m := range missing {
		out[m[strings.LastIndexByte(m, '.')+1:]] = true
	}
	return out
}

// raisedInTest refuses a RED whose failing test fails by a panic or an exception raised in
// test code (a test file, conftest.py), not by an assertion or in the code under test: the
// test is broken, and it says nothing of the implementation (SPEC §7.2). It reads the
// failures of the agent's tests (mine) only.
func (v *Verdict) raisedInTest(ctx context.Context, in Input, res *testrun.Result, mine []testrun.Test) *Verdict {
	globs := in.Globs
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	for _, t := range mine {
		file, line, kind, ok := testrun.Origin(res.Runner, t, in.Root)
		if !ok || !(testrun.IsTestFile(file, globs) || path.Base(file) == "conftest.py") {
			continue
		}
		if kind == "AttributeError" && pyMissingAttr(t.Output) {
			// Python's missing implementation: a method or attribute of the code under
			// test that does not exist yet, as Go's "has no field or method".
			fmt.Fprintf(&v.Log, "%s: an AttributeError of an object of the code under test (%s): the missing implementation\n", t.ID, pyMissingAttrRE().FindString(t.Output))
			continue
		}
		if kind == "AttributeError" {
			if from, ok := pyNoneFromCode(ctx, in, globs, t, file, line); ok {
				fmt.Fprintf(&v.Log, "%s: an AttributeError on the None that a call of the code under test gave (%s): a RED for the right reason\n", t.ID, from)
				continue
			}
		}
		v.FailingTest, v.File = t.ID, file
		return v.fail(TypeBrokenTest, "false RED: %s fails by a %s raised in the test's own code (%s:%d), not by an assertion or in the code under test", t.ID, kind, file, line)
	}
	return nil
}

// pyMissingAttrRE matches the AttributeError of an attribute missing from an object, a
// class or a module that is not None: "'Parser' object has no attribute 'format'".
var pyMissingAttrRE = lazyre.New(`AttributeError: (?:'([A-Za-z_]\w*)' object|type object '\w+'|module '[\w.]+') has no attribute '\w+'`)

// pyMissingAttr reports whether a test's output says an attribute is missing from an
// object of the code under test (pyMissingAttrRE): not from None or a built-in value,
// which a test's own code gets wrong.
func pyMissingAttr(out string) bool {
	m := pyMissingAttrRE().FindStringSubmatch(out)
	if m == nil {
		return false
	}
	switch m[1] {
	case "NoneType", "dict", "list", "str", "int", "float", "tuple", "set", "bytes", "bool", "function", "method":
		return false
	}
	return true
}

// isTestData reports whether a file is data that tests read (SPEC §7.2): anything under a
// testdata folder, a golden file, a snapshot (anything under __snapshots__, a .snap file),
// and files that are not code under a folder of tests (tests/data/, fixtures/). A test writer may add and change them: a new
// case of a data-driven test is a new file.
func isTestData(p string) bool {
	p = path.Clean(p)
	dirs := strings.Split(path.Dir(p), "/")
	if slices.Contains(dirs, "testdata") || slices.Contains(dirs, "__snapshots__") ||
		strings.HasSuffix(p, ".golden") || strings.HasSuffix(p, ".snap") {
		return true // jest and vitest keep a test file's snapshots beside it, in __snapshots__
	}
	if codeExts[path.Ext(p)] {
		return false
	}
	for _, d := range dirs {
		switch d {
		case "test", "tests", "fixtures", "__snapshots__", "data":
			return slices.ContainsFunc(dirs, func(d string) bool { return d == "test" || d == "tests" })
		}
	}
	return false
}

// codeExts are the extensions of files a runner imports or loads as code, never data.
var codeExts = map[string]bool{
	".go": true, ".py": true, ".pyc": true, ".pth": true, ".js": true, ".mjs": true, ".cjs": true,
	".ts": true, ".mts": true, ".cts": true, ".jsx": true, ".tsx": true, ".rs": true, ".so": true,
	".toml": true, ".cfg": true, ".ini": true,
}

// testData splits the files a test writer changed beside its tests into test data it
// added or changed (allowed), test data it deleted (a data-driven test's case gone:
// refused) and the rest.
func testData(in Input, files []string) (data, deleted, rest []string, err error) {
	for _, f := range files {
		if !isTestData(f) {
			rest = append(rest, f)
			continue
		}
		gone := false
		if in.Contents != nil {
			_, after, err := in.Contents(f)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("read %s: %w", f, err)
			}
			gone = after == nil
		} else if _, err := os.Lstat(filepath.Join(in.Root, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			gone = true
		}
		if gone {
			deleted = append(deleted, f)
		} else {
			data = append(data, f)
		}
	}
	return data, deleted, rest, nil
}
