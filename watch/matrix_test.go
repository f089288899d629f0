package watch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A lang is a small real project in one language: its files, the command that runs the TEST
// task's new tests, and the command that runs the whole suite.
type lang struct {
	name       string
	base       map[string]string // the project before any task
	testFile   string            // the test the test writer writes
	test       string            // its content: fails until the implementation exists
	brokenTest string            // the same test with a syntax error
	implFile   string
	impl       string // the implementation that makes it pass
	wrongImpl  string // an implementation that compiles but is wrong
	oldFile    string // an earlier feature with a passing test
	brokenOld  string // the earlier feature broken
	skipFiles  map[string]string
	testCmd    string
	projectCmd string
	available  func() string // "" when the runner is installed, else why not
}

var langs = []lang{
	{
		name: "go",
		base: map[string]string{
			"go.mod":          "module example.com/calc\n\ngo 1.22\n",
			"calc.go":         "// Package calc adds.\npackage calc\n",
			"old/old.go":      "// Package old is an earlier feature.\npackage old\n\n// Old returns 1.\nfunc Old() int { return 1 }\n",
			"old/old_test.go": "package old\n\nimport \"testing\"\n\nfunc TestOld(t *testing.T) {\n\tif Old() != 1 {\n\t\tt.Fatal(\"Old() != 1\")\n\t}\n}\n",
		},
		testFile:   "add_test.go",
		test:       "package calc\n\nimport \"testing\"\n\nfunc TestAdd_UNIT_001(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
		brokenTest: "package calc\n\nimport \"testing\"\n\nfunc TestAdd_UNIT_001(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n",
		implFile:   "add.go",
		impl:       "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a + b }\n",
		wrongImpl:  "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return 0 }\n",
		oldFile:    "old/old.go",
		brokenOld:  "// Package old is an earlier feature.\npackage old\n\n// Old returns 1.\nfunc Old() int { return 2 }\n",
		skipFiles:  map[string]string{"main_test.go": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n"},
		testCmd:    "go test -run TestAdd ./...",
		projectCmd: "go test ./...",
		available:  func() string { return "" },
	},
	{
		name: "python",
		base: map[string]string{
			"pytest.ini":         "[pytest]\npythonpath = .\n",
			"calc.py":            "def old():\n    return 1\n",
			"tests/test_old.py":  "from calc import old\n\n\ndef test_old():\n    assert old() == 1\n",
			"tests/__init__.py":  "",
			"conftest_unused.md": "pytest reads conftest.py; this project has none at first.\n",
		},
		testFile:   "tests/test_add.py",
		test:       "from calc import add\n\n\ndef test_add_unit_001():\n    assert add(2, 3) == 5\n",
		brokenTest: "from calc import add\n\n\ndef test_add_unit_001(:\n    assert add(2, 3) == 5\n",
		implFile:   "calc.py",
		impl:       "def old():\n    return 1\n\n\ndef add(a, b):\n    return a + b\n",
		wrongImpl:  "def old():\n    return 1\n\n\ndef add(a, b):\n    return 0\n",
		oldFile:    "calc.py",
		brokenOld:  "def old():\n    return 2\n\n\ndef add(a, b):\n    return a + b\n",
		skipFiles: map[string]string{"conftest.py": "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n" +
			"    for item in items:\n        item.add_marker(pytest.mark.skip(reason='later'))\n"},
		testCmd:    "/usr/bin/python3 -m pytest -q tests/test_add.py",
		projectCmd: "/usr/bin/python3 -m pytest -q tests",
		available: func() string {
			if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
				return "pytest is not installed for /usr/bin/python3 (make test-deps installs it)"
			}
			return ""
		},
	},
	{
		name: "ts",
		base: map[string]string{
			"package.json":     "{\n  \"name\": \"calc\",\n  \"private\": true,\n  \"type\": \"module\",\n  \"devDependencies\": {\"vitest\": \"4.1.12\"}\n}\n",
			"src/old.ts":       "export function old(): number {\n  return 1\n}\n",
			"src/old.test.ts":  "import { expect, test } from 'vitest'\nimport { old } from './old'\n\ntest('old', () => {\n  expect(old()).toBe(1)\n})\n",
			"vitest.config.ts": "export default { test: { exclude: ['**/node_modules/**', '.orchestrator/**'] } }\n",
		},
		testFile:   "src/add.test.ts",
		test:       "import { expect, test } from 'vitest'\nimport { add } from './add'\n\ntest('add UNIT_001', () => {\n  expect(add(2, 3)).toBe(5)\n})\n",
		brokenTest: "import { expect, test } from 'vitest'\nimport { add } from './add'\n\ntest('add UNIT_001', () => {\n  expect(add(2, 3)).toBe(5\n",
		implFile:   "src/add.ts",
		impl:       "export function add(a: number, b: number): number {\n  return a + b\n}\n",
		wrongImpl:  "export function add(a: number, b: number): number {\n  return 0\n}\n",
		oldFile:    "src/old.ts",
		brokenOld:  "export function old(): number {\n  return 2\n}\n",
		skipFiles:  map[string]string{"vitest.config.ts": "export default { test: { exclude: ['**/node_modules/**', '.orchestrator/**', 'src/add.test.ts'] } }\n"},
		testCmd:    "npx vitest run src/add.test.ts",
		projectCmd: "npx vitest run",
		available: func() string {
			if _, err := os.Stat(tsModules()); err != nil {
				return "vitest is not installed in testrun/testdata/projects/ts (make test-deps installs it)"
			}
			return ""
		},
	},
}

func tsModules() string {
	p, _ := filepath.Abs("../testrun/testdata/projects/ts/node_modules")
	return p
}

// step is what one replayed agent does in one attempt.
type step struct {
	write  map[string]string
	delete []string
}

// scenario is one row of the gate matrix.
type scenario struct {
	name      string
	preImpl   bool // the implementation exists before the test writer starts
	writer    func(l lang) step
	builder   func(l lang) step
	want      map[string]string // task: status
	wantInLog map[string]string // task: text its gate.log must hold
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

var honestWriter = func(l lang) step { return step{write: map[string]string{l.testFile: l.test}} }
var honestBuilder = func(l lang) step { return step{write: map[string]string{l.implFile: l.impl}} }

var scenarios = []scenario{
	{name: "honest RED then GREEN", writer: honestWriter, builder: honestBuilder,
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "completed"},
		wantInLog: map[string]string{"TASK-T01": "fails as it should", "TASK-001": "GREEN:"}},
	{name: "false RED: the test already passes", preImpl: true, writer: honestWriter, builder: honestBuilder,
		want:      map[string]string{"TASK-T01": "failed", "TASK-001": "pending"},
		wantInLog: map[string]string{"TASK-T01": "false RED: the tests already pass"}},
	{name: "false RED: syntax error in the test", writer: func(l lang) step { return step{write: map[string]string{l.testFile: l.brokenTest}} }, builder: honestBuilder,
		want:      map[string]string{"TASK-T01": "failed"},
		wantInLog: map[string]string{"TASK-T01": "false RED: a test file is broken"}},
	{name: "test writer edits source", writer: func(l lang) step {
		return step{write: map[string]string{l.testFile: l.test, l.implFile: l.impl}}
	}, builder: honestBuilder,
		want:      map[string]string{"TASK-T01": "failed"},
		wantInLog: map[string]string{"TASK-T01": "scope_violation"}},
	{name: "implementer edits the test", writer: honestWriter, builder: func(l lang) step {
		return step{write: map[string]string{l.implFile: l.impl, l.testFile: l.test + "\n"}}
	},
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "failed"},
		wantInLog: map[string]string{"TASK-001": "test_tampered"}},
	{name: "implementer deletes the test", writer: honestWriter, builder: func(l lang) step {
		return step{write: map[string]string{l.implFile: l.impl}, delete: []string{l.testFile}}
	},
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "failed"},
		wantInLog: map[string]string{"TASK-001": "was deleted after RED"}},
	{name: "implementer breaks an earlier passing test", writer: honestWriter, builder: func(l lang) step {
		files := map[string]string{l.implFile: l.impl, l.oldFile: l.brokenOld}
		return step{write: files}
	},
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "failed"},
		wantInLog: map[string]string{"TASK-001": "regression"}},
	{name: "implementer skips the test", writer: honestWriter, builder: func(l lang) step {
		return step{write: merge(map[string]string{l.implFile: l.wrongImpl}, l.skipFiles)}
	},
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "failed"},
		wantInLog: map[string]string{"TASK-001": "claim rejected"}},
}

// TestGateMatrix runs every scenario of SPEC §7.2–7.3 on small real projects in Go, Python
// (pytest) and TypeScript (vitest), with replayed agents making real file changes and the
// real test runners judging them.
func TestGateMatrix(t *testing.T) {
	t.Parallel()
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			if why := l.available(); why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatal(why)
				}
				t.Skip(why)
			}
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					r := matrixRepo(t, l, sc)
					code, out := r.run("watch", "--once")
					st := r.statuses()
					for id, want := range sc.want {
						if st[id] != want {
							t.Errorf("%s is %q, want %q (exit %d)\n%s", id, st[id], want, code, out)
						}
					}
					for id, want := range sc.wantInLog {
						log := r.read(filepath.Join(".orchestrator/runs", id, "1", "gate.log"))
						if !strings.Contains(log, want) {
							t.Errorf("%s's gate.log does not say %q:\n%s", id, want, log)
						}
					}
				})
			}
		})
	}
}

// matrixRepo builds a repository for one language and scenario: the project, a TEST task and
// a BUILD task, and the replay recordings of their agents.
func matrixRepo(t *testing.T, l lang, sc scenario) *repo {
	t.Helper()
	r := &repo{t: t, root: t.TempDir()}
	for p, c := range l.base {
		writeFile(t, filepath.Join(r.root, p), c)
	}
	if sc.preImpl {
		writeFile(t, filepath.Join(r.root, l.implFile), l.impl)
	}
	if l.name == "ts" {
		if err := os.Symlink(tsModules(), filepath.Join(r.root, "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
	queue := fmt.Sprintf(`# Task Queue

## Project Commands

| Command | Value |
|---------|-------|
| Test | %s |

### TASK-T01

| Field | Value |
|-------|-------|
| Status | pending |
| Category | testing |
| Mode | write |
| Test IDs | UNIT-001 |
| Test Command | %s |

### TASK-001

| Field | Value |
|-------|-------|
| Status | pending |
| Category | backend |
| Depends On | TASK-T01 |
| Test Command | %s |
`, l.projectCmd, l.testCmd, l.testCmd)
	writeFile(t, filepath.Join(r.root, ".orchestrator/task_queue.md"), queue)
	writeFile(t, filepath.Join(r.root, ".orchestrator/config.yaml"), "agent: replay\ngrace: 300ms\ntask_timeout: 2m\n")
	writeFile(t, filepath.Join(r.root, ".orchestrator/no_auto_retry"), "")
	record(t, r.root, "TASK-T01", "test-writer", sc.writer(l))
	record(t, r.root, "TASK-001", "implementer", sc.builder(l))
	return r
}

// record writes a replay recording: the files, the deletions, the result block and a done
// marker.
func record(t *testing.T, root, id, role string, s step) {
	t.Helper()
	dir := filepath.Join(root, ".orchestrator/replay", id, "1")
	var files []string
	for p, c := range s.write {
		writeFile(t, filepath.Join(dir, "files", p), c)
		files = append(files, p)
	}
	if len(s.delete) > 0 {
		writeFile(t, filepath.Join(dir, "delete"), strings.Join(s.delete, "\n")+"\n")
	}
	list := "files: []\n"
	if len(files) > 0 {
		list = "files:\n  - " + strings.Join(files, "\n  - ") + "\n"
	}
	writeFile(t, filepath.Join(dir, "result.md"), "Done.\n\n```tdd-result\nrole: "+role+"\nstatus: ok\n"+list+
		"command: make test\noutput_excerpt: |\n  ok\n```\n")
	writeFile(t, filepath.Join(dir, "marker"), "done\n")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
