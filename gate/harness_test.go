package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIsHarness(t *testing.T) {
	h := Harness{Globs: []string{"scripts/run-tests.sh"}, Commands: []string{"make test"}}
	noMake := Harness{}
	script := Harness{Commands: []string{"./test.sh -v && bash scripts/ci.sh --fast; go test ./... ./cart", "/usr/bin/python3 run_tests.py", "GOFLAGS=-x sh /etc/ci.sh",
		"test -f calc.go && grep -q Add calc.go && go vet lib.go", "python3 -m pytest tests/test_x.py", "env A=1 node tools/run.js"}}
	tests := []struct {
		path, content string
		h             Harness
		want          bool
	}{
		{"calc/add_test.go", "package calc", h, true},
		{"tests/test_x.py", "", h, true},
		{"conftest.py", "", h, true},
		{"deep/in/tree/conftest.py", "", h, true},
		{"pytest.ini", "", h, true},
		{"go.work", "go 1.22", h, true},
		{"jest.config.js", "", h, true},
		{"jest.config.ts", "", h, true},
		{"vitest.config.mts", "", h, true},
		{"web/vite.config.ts", "", h, true},
		{".cargo/config.toml", "", h, true},
		{"sub/.cargo/config.toml", "", h, true},
		{"config.toml", "", h, false},
		{"Makefile", "test:\n\tgo test ./...\n", h, true},
		{"Makefile", "test:\n\tgo test ./...\n", noMake, false},
		{"scripts/run-tests.sh", "", h, true},
		{"scripts/deploy.sh", "", h, false},
		{"main_test_helper.go", "package calc\n\nfunc TestMain(m *testing.M) { os.Exit(m.Run()) }\n", h, true},
		{"calc/calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n", h, false},
		{"pyproject.toml", "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n", h, true},
		{"pyproject.toml", "[project]\nname = \"x\"\n", h, false},
		{"setup.cfg", "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n", h, true},
		{"setup.cfg", "[metadata]\nname = x\n", h, false},
		{"tox.ini", "[tox]\nenvlist = py3\n[pytest]\naddopts = -q\n", h, true},
		{"tox.ini", "[tox]\nenvlist = py3\n", h, false},
		{"package.json", `{"name": "x", "scripts": {"test": "vitest run"}}`, h, true},
		{"package.json", `{"name": "x", "scripts": {"build": "tsc"}}`, h, false},
		{"package.json", `{"name": "x", "jest": {"testEnvironment": "node"}}`, h, true},
		// Babel transforms the test files before jest runs them.
		{"package.json", `{"name": "x", "babel": {"plugins": ["./strip.js"]}}`, h, true},
		{"babel.config.js", "", h, true},
		{"web/.babelrc", "", h, true},
		{".babelrc.json", "", h, true},
		{"babel.js", "", h, false},
		// pytest reads .pytest.ini first, before pyproject.toml.
		{".pytest.ini", "[pytest]\naddopts = -p shop.checks\n", h, true},
		{"README.md", "", h, false},
		// A file a test command names: the script it runs decides what its exit says.
		{"test.sh", "", script, true},
		{"scripts/ci.sh", "", script, true},
		{"run_tests.py", "", script, true},
		{"ci.sh", "", script, false},
		{"tools/run.js", "", script, true},
		// What a command only reads or builds is no script of it.
		{"calc.go", "package calc", script, false},
		{"lib.go", "package calc", script, false},
		{"cart/cart.go", "package cart", script, false},
		{"...", "", script, false},
	}
	for _, tt := range tests {
		if got := tt.h.IsHarness(tt.path, []byte(tt.content)); got != tt.want {
			t.Errorf("IsHarness(%s, %q) = %v, want %v", tt.path, tt.content, got, tt.want)
		}
	}
}

// TestInnerScripts: the shell scripts a test command's script runs in turn are part of
// the harness, to a depth of three; what they build or read that is no shell script (the
// implementation a script compiles), a script named only in a comment, and a script of
// no command are not.
func TestInnerScripts(t *testing.T) {
	root := t.TempDir()
	for rel, text := range map[string]string{
		"test.sh":           "#!/bin/sh\n# see scripts/old.sh\ngo build -o bin/app cmd/app/main.go\n./scripts/unit.sh && sh scripts/lint.sh\n",
		"scripts/unit.sh":   "go test ./... && tools/deep/check\n",
		"scripts/lint.sh":   "gofmt -l .\n",
		"scripts/old.sh":    "exit 0\n",
		"tools/deep/check":  "#!/bin/sh\nexec tools/deeper.bash\n",
		"tools/deeper.bash": "tools/deepest.sh\n",
		"tools/deepest.sh":  "exit 0\n",
		"cmd/app/main.go":   "package main\n",
		"scripts/deploy.sh": "exit 0\n",
	} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := Harness{Commands: []string{"./test.sh"}}.innerScripts(root)
	// A Makefile's recipe runs a script when a test command runs make.
	os.WriteFile(filepath.Join(root, "Makefile"), []byte("test:\n\t./scripts/deploy.sh\n"), 0o644)
	if made := (Harness{Commands: []string{"make test"}}).innerScripts(root); !made["scripts/deploy.sh"] {
		t.Errorf("the script the Makefile's recipe runs is not in the harness: %v", made)
	}
	for _, f := range []string{"scripts/unit.sh", "scripts/lint.sh", "tools/deep/check", "tools/deeper.bash"} {
		if !got[f] {
			t.Errorf("%s, which the test script runs, is not in the harness: %v", f, got)
		}
	}
	for _, f := range []string{"scripts/old.sh", "cmd/app/main.go", "scripts/deploy.sh", "tools/deepest.sh", "test.sh"} {
		if got[f] {
			t.Errorf("%s is in the harness: %v", f, got)
		}
	}
}

// TestHarnessChanges reads what a change did to the harness, by the content before and
// after: for a file of which a section is the harness, only that section counts; the rest
// of it is another change (Other).
func TestHarnessChanges(t *testing.T) {
	const pkg = `{"name": "x", "version": "1.0.0", "scripts": {"test": "vitest run", "build": "tsc"}}`
	const pyproject = "[project]\nname = \"x\"\nversion = \"1\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\ntestpaths = [\n  \"tests\",\n]\n"
	tests := []struct {
		name, path, before, after string
		want                      string // "" none, else What and Other as "changed other"
	}{
		{"test file changed", "calc/add_test.go", "package calc\n", "package calc\n\n", "changed"},
		{"test file added", "calc/new_test.go", "", "package calc\n", "added"},
		{"test file deleted", "calc/add_test.go", "package calc\n", "", "deleted"},
		{"conftest added", "tests/sub/conftest.py", "", "import pytest\n", "added"},
		{"code changed", "calc/calc.go", "package calc\n", "package calc\n\nfunc A() {}\n", ""},
		{"TestMain added to a code file", "calc/calc.go", "package calc\n", "package calc\n\nfunc TestMain(m *testing.M) {}\n", "changed"},
		{"test script changed", "package.json", pkg, strings.Replace(pkg, "vitest run", "true", 1), "changed"},
		{"pretest added", "package.json", pkg, strings.Replace(pkg, `"build"`, `"pretest": "node hack.js", "build"`, 1), "changed"},
		{"version bumped", "package.json", pkg, strings.Replace(pkg, "1.0.0", "1.0.1", 1), ""},
		{"package.json reformatted", "package.json", pkg, "{\n  \"scripts\": {\"build\": \"tsc\", \"test\": \"vitest run\"},\n  \"version\": \"1.0.0\", \"name\": \"x\"\n}\n", ""},
		{"test script and version", "package.json", pkg, strings.Replace(strings.Replace(pkg, "1.0.0", "2", 1), "vitest run", "true", 1), "changed other"},
		{"pytest addopts changed", "pyproject.toml", pyproject, strings.Replace(pyproject, `"-q"`, `"-q -p no:randomly"`, 1), "changed"},
		{"pytest testpaths changed (a continued value)", "pyproject.toml", pyproject, strings.Replace(pyproject, `"tests",`, `"tests/unit",`, 1), "changed"},
		{"project version bumped", "pyproject.toml", pyproject, strings.Replace(pyproject, `version = "1"`, `version = "2"`, 1), ""},
		{"pytest section added to pyproject", "pyproject.toml", "[project]\nname = \"x\"\n", "[project]\nname = \"x\"\n[tool.pytest.ini_options]\naddopts = \"-x\"\n", "changed"},
		{"dotted pytest key", "pyproject.toml", "[project]\nname = \"x\"\n", "tool.pytest.ini_options.addopts = \"-x\"\n[project]\nname = \"x\"\n", "changed"},
		{"setup.cfg pytest section", "setup.cfg", "[metadata]\nname = x\n", "[metadata]\nname = x\n[tool:pytest]\naddopts = -x\n", "changed"},
		{"setup.cfg metadata", "setup.cfg", "[metadata]\nname = x\n[tool:pytest]\naddopts = -x\n", "[metadata]\nname = y\n[tool:pytest]\naddopts = -x\n", ""},
		{"tox.ini pytest section", "tox.ini", "[tox]\n[pytest]\naddopts = -x\n", "[tox]\n[pytest]\naddopts = -q\n", "changed"},
		{"package.json added with a test script", "package.json", "", pkg, "added other"},
		{"go.work added", "go.work", "", "go 1.22\nuse ./x\n", "added"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(string) ([]byte, []byte, error) { return bytesOrNil(tt.before), bytesOrNil(tt.after), nil }
			got, err := Harness{}.Changes([]string{tt.path}, read)
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			if len(got) > 0 {
				s = got[0].What
				if got[0].Other {
					s += " other"
				}
			}
			if s != tt.want {
				t.Errorf("Changes = %q (%+v), want %q", s, got, tt.want)
			}
		})
	}
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// TestGreenHarness: the implementer may not add, change, delete or rename a test file or a
// file of the harness (SPEC §7.3): GREEN refuses before any test runs, naming the file.
func TestGreenHarness(t *testing.T) {
	base := map[string]string{
		"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc/add.go": "package calc\n",
		"calc/add_test.go": "package calc\n\nimport _ \"example.com/calc/testutil\"\n", "pytest.ini": "[pytest]\n",
		"testutil/eq.go":     "package testutil\n",
		"tests/test_shop.py": "from tests.helpers import check\nfrom shop.discount import discount\n",
		"tests/helpers.py":   "def check(a, b):\n    assert a == b\n", "shop/discount.py": "def discount(c, p):\n    pass\n",
		// Tests beside the code, waiting for cart/price.py (missing at RED) and a new Go
		// package, promo.
		"cart/test_cart.py": "from cart.price import price\nfrom cart.total import total\nfrom cart.helpers import check\nfrom cart.test_utils import check2\n",
		"cart/total.py":     "def total(c):\n    return 0\n", "cart/test_utils.py": "def check2(a, b):\n    assert a == b\n",
		"web/__snapshots__/price.test.js.snap": "exports[`price 1`] = `100`;\n",
		"calc/promo_test.go":                   "package calc\n\nimport (\n\t_ \"example.com/calc/mocks\"\n\t_ \"example.com/calc/promo\"\n)\n",
	}
	tests := []struct {
		name    string
		changes map[string]string // path: content after ("" deleted)
		file    string            // named, or "" for no refusal
	}{
		{"code only", map[string]string{"calc/add.go": "package calc\n\nfunc Add() {}\n"}, ""},
		{"test edited", map[string]string{"calc/add_test.go": "package calc\n// x\n"}, "calc/add_test.go"},
		{"test deleted", map[string]string{"calc/add_test.go": ""}, "calc/add_test.go"},
		{"test added", map[string]string{"calc/more_test.go": "package calc\n"}, "calc/more_test.go"},
		{"conftest added", map[string]string{"conftest.py": "def pytest_collection_modifyitems(items):\n    items.clear()\n"}, "conftest.py"},
		{"TestMain in a code file", map[string]string{"calc/main.go": "package calc\n\nfunc TestMain(m *testing.M) {}\n"}, "calc/main.go"},
		{"pytest.ini edited", map[string]string{"pytest.ini": "[pytest]\naddopts = -p no:junitxml\n"}, "pytest.ini"},
		{"go.work added", map[string]string{"go.work": "go 1.22\n"}, "go.work"},
		// Files that shadow what Python or the runner loads, beside honest twins.
		{"a root package named pytest", map[string]string{"pytest/__init__.py": "def main(): pass\n"}, "pytest/__init__.py"},
		{"a root decimal.py", map[string]string{"decimal.py": "class Decimal: pass\n"}, "decimal.py"},
		{"a root _pytest module", map[string]string{"_pytest/reports.py": "x = 1\n"}, "_pytest/reports.py"},
		{"honest: a module named like one, not at the root", map[string]string{"shop/decimal.py": "x = 1\n", "decimal_utils.py": "x = 1\n"}, ""},
		{"honest: a root types folder of another language", map[string]string{"types/index.d.ts": "export {}\n"}, ""},
		// Committed bytecode and package metadata.
		{"committed bytecode", map[string]string{"shop/__pycache__/discount.cpython-311.pyc": "\x00"}, "shop/__pycache__/discount.cpython-311.pyc"},
		{"a .pyc beside its source", map[string]string{"shop/discount.pyc": "\x00"}, "shop/discount.pyc"},
		{"a .pth file", map[string]string{"forge.pth": "import forge\n"}, "forge.pth"},
		{"a dist-info with a pytest11 entry point", map[string]string{"forge-1.0.dist-info/entry_points.txt": "[pytest11]\nforge = forge\n"}, "forge-1.0.dist-info/entry_points.txt"},
		{"an egg-info", map[string]string{"shop.egg-info/PKG-INFO": "Name: shop\n"}, "shop.egg-info/PKG-INFO"},
		// go.mod's replace directives into the tree.
		{"a go.mod replace into the tree", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n\nreplace example.com/dep => ./forged/dep\n"}, "go.mod"},
		{"a go.mod replace block into the tree", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n\nreplace (\n\texample.com/dep v1.0.0 => ../dep\n)\n"}, "go.mod"},
		{"honest: a go.mod require and a replace by a version", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.23\n\nrequire example.com/dep v1.2.0\n\nreplace example.com/dep => example.com/fork v1.2.1\n"}, ""},
		// Packages imported only by tests.
		{"a Go package only tests import", map[string]string{"testutil/eq.go": "package testutil\n\nfunc Eq(a, b int) bool { return true }\n"}, "testutil/eq.go"},
		{"honest: the Go package the tests test", map[string]string{"calc/add.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n"}, ""},
		{"a Python module only tests import, among the tests", map[string]string{"tests/helpers.py": "def check(a, b):\n    pass\n"}, "tests/helpers.py"},
		{"honest: the Python module the tests test", map[string]string{"shop/discount.py": "def discount(c, p):\n    return c - c * p // 100\n"}, ""},
		// A module or package the tests were waiting for (missing at RED) is the code
		// they test, wherever it sits; added help for tests is still support.
		{"honest: a new Python module that tests beside it import", map[string]string{"cart/price.py": "def price(c):\n    return c\n"}, ""},
		{"honest: a new Go package another folder's test imports", map[string]string{"promo/promo.go": "package promo\n\nfunc Off(c int) int { return c }\n"}, ""},
		{"a new helper module that tests beside it import", map[string]string{"cart/helpers.py": "def check(a, b):\n    pass\n"}, "cart/helpers.py"},
		{"a new Go test-help package another folder's test imports", map[string]string{"mocks/clock.go": "package mocks\n\nfunc Now() int { return 0 }\n"}, "mocks/clock.go"},
		// jest keeps a test file's snapshots beside it: an implementer may not rewrite
		// what an existing test expects.
		{"a jest snapshot rewritten", map[string]string{"web/__snapshots__/price.test.js.snap": "exports[`price 1`] = `99`;\n"}, "web/__snapshots__/price.test.js.snap"},
		{"honest: a new snapshot file", map[string]string{"web/__snapshots__/total.test.js.snap": "exports[`total 1`] = `3`;\n"}, ""},
		// Tests beside the code: a module they alone import is the code under test, not
		// support, unless named as help for tests.
		{"honest: a module tests beside it import, changed", map[string]string{"cart/total.py": "def total(c):\n    return sum(c)\n"}, ""},
		{"a helper module tests beside it import, changed", map[string]string{"cart/test_utils.py": "def check(a, b):\n    pass\n"}, "cart/test_utils.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var changed []string
			after := map[string]string{}
			for p, c := range base {
				after[p] = c
			}
			for p, c := range tt.changes {
				changed = append(changed, p)
				if c == "" {
					delete(after, p)
				} else {
					after[p] = c
				}
			}
			for p, c := range after {
				os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
				os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
			}
			in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1, TestCommand: "true",
				Changed: changed, Timeout: time.Minute,
				Contents: func(p string) ([]byte, []byte, error) {
					return bytesOrNil(base[p]), bytesOrNil(after[p]), nil
				}}
			v, err := Green(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.file == "" {
				if !v.Pass {
					t.Errorf("GREEN refused: %s", v.Reason)
				}
				return
			}
			if v.Pass || v.Type != TypeTampered || v.File != tt.file || !strings.Contains(v.Reason, tt.file) || len(v.Runs) != 0 {
				t.Errorf("GREEN: pass %v, %s, file %q: %s (runs %d); want test_tampered naming %s before any run", v.Pass, v.Type, v.File, v.Reason, len(v.Runs), tt.file)
			}
		})
	}
}

// TestVerifyHarness: a VERIFY task may not change the tests or the harness either.
func TestVerifyHarness(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "conftest.py"), []byte("x = 1\n"), 0o644)
	in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-V01", Attempt: 1, TestCommand: "true",
		Changed: []string{"conftest.py"}, Timeout: time.Minute,
		Contents: func(string) ([]byte, []byte, error) { return nil, []byte("x = 1\n"), nil }}
	v, err := Verify(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if v.Pass || v.Type != TypeTampered || v.File != "conftest.py" || len(v.Runs) != 0 {
		t.Errorf("VERIFY: pass %v, %s, %q: %s; want test_tampered naming conftest.py before any run", v.Pass, v.Type, v.File, v.Reason)
	}
	in.Changed, in.Contents = nil, func(string) ([]byte, []byte, error) { return nil, nil, nil }
	if v, _ := Verify(context.Background(), in); !v.Pass {
		t.Errorf("VERIFY with no change: %s", v.Reason)
	}
}
