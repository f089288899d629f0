package gate

import (
	"bufio"
	"bytes"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/testrun"
)

// testSupport returns the files of the packages that only tests import (SPEC §7.6, the
// harness), in the gate's checkout root as the candidate has it or as it was at the
// candidate's base (changed files read with read, the others from root): they decide what
// the tests see as much as the tests do.
//
//   - Go: the non-test files of a package of the root module whose importers are all
//     _test.go files of other folders (a package's own external tests do not count: the
//     code a test writer's tests import, before anything else does, is not support).
//   - Python: a module whose importers are all test files, in a test folder (named test,
//     tests or testing) or, among tests that sit beside the code, named as test help
//     (helpers.py, fixtures.py, test_utils.py: testHelpName): the code under test is
//     imported by tests alone too.
//
// A file the candidate adds is not support for being imported by tests alone, unless it
// is named as test help: the tests (which the candidate cannot change) were waiting for
// it, a module or package that did not exist when they were written; it is the code they
// test (SPEC §7.2: the implementation missing at RED).
func testSupport(root string, changed []string, read Contents, globs []string) map[string]bool {
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	files := map[string][]byte{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") && name != "__init__" ||
				name == "node_modules" || name == "vendor" || name == "testdata" || name == "__pycache__" ||
				fileExists(filepath.Join(p, "pyvenv.cfg"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".py") {
			rel, err := filepath.Rel(root, p)
			if err == nil {
				b, _ := os.ReadFile(p)
				files[filepath.ToSlash(rel)] = b
			}
		}
		return nil
	})
	if len(files) == 0 {
		return nil
	}
	before := map[string][]byte{}
	after := map[string][]byte{}
	for p, b := range files {
		before[p], after[p] = b, b
	}
	for _, p := range changed {
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".py") {
			continue
		}
		b, a, err := read(p)
		if err != nil {
			continue
		}
		delete(before, p)
		delete(after, p)
		if b != nil {
			before[p] = b
		}
		if a != nil {
			after[p] = a
		}
	}
	module := ""
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil {
		module = modulePath(b)
	}
	out := map[string]bool{}
	for _, state := range []map[string][]byte{before, after} {
		for p := range goSupport(state, module) {
			out[p] = true
		}
		for p := range pySupport(state, globs) {
			out[p] = true
		}
	}
	for p := range out {
		if _, existed := before[p]; !existed && !testHelpName(p) {
			delete(out, p)
		}
	}
	return out
}

// testHelpWords are the words of a file or folder name that mark what is in it as help for
// tests rather than code under test.
var testHelpWords = []string{"test", "tests", "testing", "testutil", "testutils", "testhelpers", "conftest",
	"fixture", "fixtures", "helper", "helpers", "mock", "mocks", "fake", "fakes", "stub", "stubs"}

// testHelpName reports whether the path p names help for tests: one of its folders or its
// file name, split into words at "_", "-" and ".", has a word of testHelpWords
// (tests/helpers.py, shop/test_utils.py, internal/testutil/eq.go; not latest.py).
func testHelpName(p string) bool {
	for _, part := range strings.Split(strings.TrimSuffix(p, path.Ext(p)), "/") {
		for _, w := range strings.FieldsFunc(strings.ToLower(part), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
			if slices.Contains(testHelpWords, w) {
				return true
			}
		}
	}
	return false
}

// modulePath reads the module path of a go.mod.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			if p, err := strconv.Unquote(f[1]); err == nil {
				return p
			}
			return f[1]
		}
	}
	return ""
}

// goSupport returns the non-test Go files of the packages of module that only other
// folders' test files import.
func goSupport(files map[string][]byte, module string) map[string]bool {
	if module == "" {
		return nil
	}
	// importers by package folder: whether each is a test file.
	tests, others := map[string]int{}, map[string]int{}
	fset := token.NewFileSet()
	for p, src := range files {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		f, err := goparser.ParseFile(fset, p, src, goparser.ImportsOnly)
		if err != nil {
			continue
		}
		dir := path.Dir(p)
		for _, im := range f.Imports {
			ip, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				continue
			}
			target := ""
			switch {
			case ip == module:
				target = "."
			case strings.HasPrefix(ip, module+"/"):
				target = strings.TrimPrefix(ip, module+"/")
			default:
				continue
			}
			switch {
			case !strings.HasSuffix(p, "_test.go"):
				others[target]++
			case target != dir:
				tests[target]++
			}
		}
	}
	out := map[string]bool{}
	for p := range files {
		dir := path.Dir(p)
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && tests[dir] > 0 && others[dir] == 0 {
			out[p] = true
		}
	}
	return out
}

var (
	// pyImportRE reads an import statement: "import a.b as c, d" or "from .a import b, c".
	pyImportRE = lazyre.New(`^\s*(?:from\s+(\.*[\w.]*)\s+import\s+\(?([\w\s,.*]+)|import\s+([\w\s,.]+))`)
)

// pySupport returns the Python modules that only test files import and that live among
// tests.
func pySupport(files map[string][]byte, globs []string) map[string]bool {
	tests, others := map[string]int{}, map[string]int{}
	resolve := func(name string) []string {
		base := strings.ReplaceAll(name, ".", "/")
		var out []string
		for _, f := range []string{base + ".py", base + "/__init__.py"} {
			if _, ok := files[f]; ok {
				out = append(out, f)
			}
		}
		return out
	}
	for p, src := range files {
		if !strings.HasSuffix(p, ".py") {
			continue
		}
		isTest := testrun.IsTestFile(p, globs) || path.Base(p) == "conftest.py"
		pkg := path.Dir(p)
		var targets []string
		for _, line := range strings.Split(string(src), "\n") {
			m := pyImportRE().FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if m[3] != "" {
				for _, part := range strings.Split(m[3], ",") {
					if f := strings.Fields(part); len(f) > 0 {
						targets = append(targets, resolve(f[0])...)
					}
				}
				continue
			}
			from := m[1]
			if dots := len(from) - len(strings.TrimLeft(from, ".")); dots > 0 {
				dir := pkg
				for range dots - 1 {
					dir = path.Dir(dir)
				}
				rest := strings.TrimLeft(from, ".")
				if dir != "." {
					rest = strings.Trim(strings.ReplaceAll(dir, "/", ".")+"."+rest, ".")
				}
				from = rest
			}
			if from != "" {
				targets = append(targets, resolve(from)...)
			}
			for _, part := range strings.Split(m[2], ",") {
				if f := strings.Fields(part); len(f) > 0 && f[0] != "*" {
					name := f[0]
					if from != "" {
						name = from + "." + name
					}
					targets = append(targets, resolve(name)...)
				}
			}
		}
		for _, t := range targets {
			if t == p {
				continue
			}
			if isTest {
				tests[t]++
			} else {
				others[t]++
			}
		}
	}
	// The folders that hold tests.
	testDirs := map[string]bool{}
	for p := range files {
		if testrun.IsTestFile(p, globs) || path.Base(p) == "conftest.py" {
			testDirs[path.Dir(p)] = true
		}
	}
	out := map[string]bool{}
	for p, n := range tests {
		if n == 0 || others[p] > 0 || path.Base(p) == "__init__.py" || testrun.IsTestFile(p, globs) {
			continue
		}
		dir := path.Dir(p)
		among := testDirs[dir] && testHelpName(path.Base(p))
		for _, part := range strings.Split(dir, "/") {
			among = among || part == "test" || part == "tests" || part == "testing"
		}
		if among {
			out[p] = true
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
