package watch_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lang is a small real project in one language, under testdata/gates/<name>/: base/ is the
// project before any task (an earlier feature with a passing test), variants/ holds what the
// replayed agents write (the new test, a broken one, the implementation, a wrong one, the
// earlier feature broken, files that skip the test), and commands names the command that runs
// the TEST task's new tests and the one that runs the whole suite.
type lang struct {
	name       string
	base       map[string]string
	testFile   string
	test       string
	brokenTest string
	implFile   string
	impl       string
	wrongImpl  string
	oldFile    string
	brokenOld  string
	skipFiles  map[string]string
	testCmd    string
	projectCmd string
	available  func() string // "" when the runner is installed, else why not
}

// langs are the projects of the gate matrix, with how to tell that their runner is here.
var langs = map[string]func() string{
	"go": func() string { return "" },
	"python": func() string {
		if _, err := pytestHere(); err != nil {
			return "pytest is not installed for /usr/bin/python3 (make test-deps installs it)"
		}
		return ""
	},
	"ts": func() string {
		if _, err := os.Stat(tsModules()); err != nil {
			return "vitest is not installed in testrun/testdata/projects/ts (make test-deps installs it)"
		}
		return ""
	},
}

// loadLang reads testdata/gates/<name>.
func loadLang(t *testing.T, name string) lang {
	t.Helper()
	root := filepath.Join("testdata", "gates", name)
	files := func(dir string) map[string]string {
		out := map[string]string{}
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(root, dir), p)
			out[filepath.ToSlash(rel)] = string(b)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(out) == 0 {
			t.Fatalf("%s: no files in %s", name, dir)
		}
		return out
	}
	one := func(dir string) (string, string) {
		for p, c := range files(dir) {
			return p, c
		}
		return "", ""
	}
	l := lang{name: name, base: files("base"), skipFiles: files("variants/skip"), available: langs[name]}
	l.testFile, l.test = one("variants/test")
	l.brokenTest = files("variants/broken-test")[l.testFile]
	l.implFile, l.impl = one("variants/impl")
	l.wrongImpl = files("variants/wrong-impl")[l.implFile]
	l.oldFile, l.brokenOld = one("variants/broken-old")
	cmds, err := os.ReadFile(filepath.Join(root, "commands"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(cmds), "\n") {
		if v, ok := strings.CutPrefix(line, "test: "); ok {
			l.testCmd = v
		}
		if v, ok := strings.CutPrefix(line, "project: "); ok {
			l.projectCmd = v
		}
	}
	return l
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
		return step{write: map[string]string{l.implFile: l.impl, l.oldFile: l.brokenOld}}
	},
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "failed"},
		wantInLog: map[string]string{"TASK-001": "regression"}},
	{name: "implementer skips the test", writer: honestWriter, builder: func(l lang) step {
		files := map[string]string{l.implFile: l.wrongImpl}
		maps.Copy(files, l.skipFiles)
		return step{write: files}
	},
		want:      map[string]string{"TASK-T01": "completed", "TASK-001": "failed"},
		wantInLog: map[string]string{"TASK-001": "claim rejected"}},
}

// TestGateMatrix runs every scenario of SPEC §7.2–7.3 on small real projects in Go, Python
// (pytest) and TypeScript (vitest), with replayed agents making real file changes and the
// real test runners judging them.
func TestGateMatrix(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"go", "python", "ts"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := loadLang(t, name)
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
		r.write(p, c)
	}
	if sc.preImpl {
		r.write(l.implFile, l.impl)
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
	r.write(".orchestrator/task_queue.md", queue)
	r.write(".orchestrator/config.yaml", "agent: replay\ngrace: 300ms\ntask_timeout: 2m\nsandbox: off\n")
	r.write(".orchestrator/no_auto_retry", "")
	record(r, "TASK-T01", "test-writer", sc.writer(l))
	record(r, "TASK-001", "implementer", sc.builder(l))
	return r
}

// record writes a replay recording: the files, the deletions, the result block and a done
// marker.
func record(r *repo, id, role string, s step) {
	r.t.Helper()
	dir := filepath.Join(".orchestrator/replay", id, "1")
	var files []string
	for p, c := range s.write {
		r.write(filepath.Join(dir, "files", p), c)
		files = append(files, p)
	}
	if len(s.delete) > 0 {
		r.write(filepath.Join(dir, "delete"), strings.Join(s.delete, "\n")+"\n")
	}
	list := "files: []\n"
	if len(files) > 0 {
		list = "files:\n  - " + strings.Join(files, "\n  - ") + "\n"
	}
	r.write(filepath.Join(dir, "result.md"), "Done.\n\n```tdd-result\nrole: "+role+"\nstatus: ok\n"+list+
		"command: make test\noutput_excerpt: |\n  ok\n```\n")
	r.write(filepath.Join(dir, "marker"), "done\n")
}
