package testrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// testCanary is a fixed canary, so that planted files and commands can be compared.
var testCanary = Canary{Token: "tok123", Message: "tok123(7) = 60, want 400"}

// writeTree writes files (path: content) under a new temporary folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestNewCanary(t *testing.T) {
	a, b := NewCanary(), NewCanary()
	if a.Token == b.Token || a.Message == b.Message {
		t.Errorf("two canaries share a name or a message: %+v %+v", a, b)
	}
	for _, c := range []Canary{a, b} {
		if len(c.Token) < 6 || strings.Trim(c.Token, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("token %q: want a word of at least 6 lower-case letters", c.Token)
		}
		if !strings.Contains(c.Message, c.Token) {
			t.Errorf("message %q does not hold the token", c.Message)
		}
		// Nothing of a canary reads as one: a forger that spares what does must fail it.
		for _, s := range []string{c.Token, c.Message} {
			if strings.Contains(strings.ToLower(s), "canar") || strings.Contains(s, "zz") || strings.Contains(s, "purpose") {
				t.Errorf("%q reads as a canary", s)
			}
		}
	}
}

// goTree is a module with an internal test package, an external one, a folder without
// tests, a testdata folder and a nested module.
var goTree = map[string]string{
	"go.mod":               "module example.com/m\n\ngo 1.22\n",
	"a/a.go":               "package a\n",
	"a/a_test.go":          "package a\n",
	"b/b.go":               "package b\n",
	"b/b_test.go":          "package b\n",
	"b/x_test.go":          "package b_test\n",
	"c/c.go":               "package c\n",
	"a/testdata/t_test.go": "package nope\n",
	"sub/go.mod":           "module example.com/sub\n",
	"sub/s_test.go":        "package s\n",
}

func TestPlantCanary(t *testing.T) {
	tests := []struct {
		name    string
		tree    map[string]string
		command string
		files   []string // planted
		ran     string   // the command run ("": the command)
		skip    string   // part of Skip
		content map[string]string
	}{
		{name: "go all packages", tree: goTree, command: "go test ./...",
			files: []string{"a/order_tok123_test.go", "b/parse_tok123_test.go"},
			content: map[string]string{
				"a/order_tok123_test.go": "package a\n\nimport \"testing\"\n\nfunc TestValuesTok123(t *testing.T) {}\n\nfunc TestFormatTok123(t *testing.T) {\n\tt.Fatal(\"tok123(7) = 60, want 400\")\n}\n",
				"b/parse_tok123_test.go": "package b\n",
			}},
		{name: "go one package, -run", tree: goTree, command: "go test -count=1 ./b -run 'TestX$'",
			files: []string{"b/parse_tok123_test.go"},
			ran:   "go test -count=1 ./b -run 'TestX$|^(?:TestUpdateTok123|TestValuesTok123)$'"},
		{name: "go -run=", tree: goTree, command: "go test -run=^TestA$ ./a",
			files: []string{"a/order_tok123_test.go"},
			ran:   "go test '-run=^TestA$|^(?:TestFormatTok123|TestValuesTok123)$' ./a"},
		{name: "go import path, cd", tree: map[string]string{"app/go.mod": "module example.com/app\n", "app/p/p_test.go": "package p\n"},
			command: "cd app && go test example.com/app/...", files: []string{"app/p/order_tok123_test.go"}},
		{name: "go current folder", tree: goTree, command: "cd a; go test",
			files: []string{"a/order_tok123_test.go"}},
		{name: "go regression command", tree: goTree,
			command: "f=0; go test ./a -run '^TestA$' || f=1; go test ./b -run '^TestB$' || f=1; [ $f = 0 ]",
			files:   []string{"a/order_tok123_test.go", "b/parse_tok123_test.go"},
			ran:     "f=0; go test ./a -run '^TestA$|^(?:TestFormatTok123|TestValuesTok123)$' || f=1; go test ./b -run '^TestB$|^(?:TestUpdateTok123|TestValuesTok123)$' || f=1; [ $f = 0 ]"},
		{name: "go package tested twice", tree: goTree, command: "go test ./a -run A; go test ./a -run B",
			files: []string{"a/order_tok123_test.go"},
			ran:   "go test ./a -run 'A|^(?:TestFormatTok123|TestValuesTok123)$'; go test ./a -run 'B|^(?:TestFormatTok123|TestValuesTok123)$'"},
		{name: "go names from the project's tests", tree: map[string]string{"go.mod": "module example.com/m\n",
			"a/a_test.go": "package a_test\n\nfunc TestParseHeader(t *testing.T) {}\n\nfunc TestRound_UNIT_001(t *testing.T) {}\n"},
			command: "go test ./a", files: []string{"a/unit_tok123_test.go"},
			content: map[string]string{"a/unit_tok123_test.go": "package a_test\n\nimport \"testing\"\n\nfunc TestRoundTok123(t *testing.T) {}\n\nfunc TestParseTok123(t *testing.T) {\n\tt.Fatal(\"tok123(7) = 60, want 400\")\n}\n"}},
		{name: "go -failfast", tree: goTree, command: "go test -failfast -count=1 ./a -test.failfast",
			files: []string{"a/order_tok123_test.go"}, ran: "go test -count=1 ./a"},
		{name: "go then something", tree: goTree, command: "go test ./... && go vet ./...", skip: "followed by &&"},
		{name: "go -skip", tree: goTree, command: "go test -skip Tok123 ./...", skip: "would skip the canaries"},
		{name: "go -list", tree: goTree, command: "go test -list . ./...", skip: "runs no test"},
		{name: "exit code only", tree: goTree, command: "make test", skip: "exit code alone"},

		{name: "pytest testpaths", tree: map[string]string{
			"pytest.ini": "[pytest]\ntestpaths = tests\n", "tests/test_a.py": "", "tests/unit/test_b.py": "",
			"other/test_c.py": "", ".venv/test_d.py": ""},
			command: "/usr/bin/python3 -m pytest -q",
			files:   []string{"tests/test_empty_tok123.py", "tests/unit/test_format_tok123.py"},
			content: map[string]string{"tests/test_empty_tok123.py": "def test_round_tok123():\n    pass\n\n\ndef test_basic_tok123():\n    raise AssertionError(\"tok123(7) = 60, want 400\")\n"}},
		{name: "pytest pyproject testpaths", tree: map[string]string{
			"pyproject.toml": "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\ntestpaths = [\n  \"t1\",\n  \"t2\",\n]\n", "t1/test_a.py": "", "t2/b_test.py": "", "t3/test_c.py": ""},
			command: "pytest", files: []string{"t1/test_empty_tok123.py", "t2/test_update_tok123.py"}},
		{name: "pytest no config", tree: map[string]string{"test_a.py": "", "pkg/test_b.py": "", "node_modules/x/test_c.py": ""},
			command: "pytest", files: []string{"pkg/test_format_tok123.py", "test_lookup_tok123.py"}},
		{name: "pytest files and node IDs", tree: map[string]string{"tests/test_a.py": "", "tests/test_b.py": "", "more/test_c.py": ""},
			command: "pytest -q tests/test_a.py::test_x more/test_c.py",
			files:   []string{"more/test_defaults_tok123.py", "tests/test_parse_tok123.py"},
			ran:     "pytest -q tests/test_a.py::test_x more/test_c.py more/test_defaults_tok123.py tests/test_parse_tok123.py"},
		{name: "pytest -k -x", tree: map[string]string{"tests/test_a.py": ""},
			command: "pytest -x -k 'add and not slow' tests",
			files:   []string{"tests/test_empty_tok123.py"},
			ran:     "pytest -x -k '(add and not slow) or tok123' tests --maxfail=2"},
		{name: "pytest -m", tree: map[string]string{"tests/test_a.py": ""}, command: "pytest -m fast", skip: "marker"},

		{name: "vitest", tree: map[string]string{"package.json": "{}", "src/calc.test.ts": "", "src/calc.ts": "", "node_modules/x/y.test.js": ""},
			command: "npx vitest run", files: []string{"src/calc-tok123.test.ts"},
			content: map[string]string{"src/calc-tok123.test.ts": "import { test } from \"vitest\"; test(\"limits tok123\", () => {});\ntest(\"update tok123\", () => { throw new Error(\"tok123(7) = 60, want 400\"); });\n"}},
		{name: "vitest filter and -t", tree: map[string]string{"a/x.spec.js": "", "b/y.spec.js": ""},
			command: "npx vitest run b/ -t 'adds'", files: []string{"b/update-tok123.spec.js"},
			ran: "npx vitest run b/ b/update-tok123.spec.js -t '(?:adds)|^(?:round tok123|basic tok123)$'"},
		{name: "jest", tree: map[string]string{"sum.test.js": ""}, command: "npx jest sum",
			files:   []string{"sum-tok123.test.js"},
			ran:     "npx jest sum 'sum-tok123\\.test\\.js'",
			content: map[string]string{"sum-tok123.test.js": "test(\"limits tok123\", () => {});\ntest(\"lookup tok123\", () => { throw new Error(\"tok123(7) = 60, want 400\"); });\n"}},
		{name: "jest --bail", tree: map[string]string{"sum.test.js": ""}, command: "npx jest --bail", skip: "--bail"},

		{name: "cargo", tree: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n", "src/lib.rs": ""},
			command: "cargo test", files: []string{"tests/empty_tok123.rs"}, ran: "cargo test --no-fail-fast"},
		{name: "cargo filters and targets", tree: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n", "tests/it.rs": ""},
			command: "cargo test --lib -- --exact tests::adds", files: []string{"tests/empty_tok123.rs"},
			ran: "cargo test --no-fail-fast --test empty_tok123 --lib -- --exact tests::adds round_tok123 basic_tok123"},
		{name: "cargo workspace", tree: map[string]string{"Cargo.toml": "[workspace]\nmembers = [\"a\"]\n"},
			command: "cargo test", skip: "no package"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.tree)
			before := listFiles(t, root)
			p, err := PlantCanary(root, tt.command, testCanary)
			if err != nil {
				t.Fatal(err)
			}
			if tt.skip != "" {
				if !strings.Contains(p.Skip, tt.skip) || len(p.Files) > 0 || p.Command != tt.command {
					t.Errorf("Skip %q, files %v, command %q; want a skip saying %q, no file, the command as given", p.Skip, p.Files, p.Command, tt.skip)
				}
				if after := listFiles(t, root); !slices.Equal(after, before) {
					t.Errorf("a skipped canary left files: %v", after)
				}
				return
			}
			if p.Skip != "" {
				t.Fatalf("skipped: %s", p.Skip)
			}
			if got := slices.Sorted(slices.Values(p.Files)); !slices.Equal(got, tt.files) {
				t.Errorf("planted %v, want %v", got, tt.files)
			}
			want := tt.ran
			if want == "" {
				want = tt.command
			}
			if p.Command != want {
				t.Errorf("command\n%s\nwant\n%s", p.Command, want)
			}
			for f, text := range tt.content {
				b, err := os.ReadFile(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(string(b), text) {
					t.Errorf("%s:\n%s\nwant it to start with\n%s", f, b, text)
				}
				// vitest and jest print the lines around a failure: each holds the token.
				if !jsTestRE().MatchString(f) {
					continue
				}
				for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if l != "" && !strings.Contains(l, testCanary.Token) {
						t.Errorf("%s line %d does not hold the token: %q", f, i+1, l)
					}
				}
			}
			if err := p.Remove(); err != nil {
				t.Fatal(err)
			}
			if after := listFiles(t, root); !slices.Equal(after, before) {
				t.Errorf("after Remove:\n%v\nwant\n%v", after, before)
			}
		})
	}
}

// listFiles lists the files and folders under root.
func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCanaryCheck checks results constructed as the parsers give them: an honest one is
// stripped of its canaries, and the failing canary no longer decides the exit code; the
// ways a report can get the canaries wrong are refused.
func TestCanaryCheck(t *testing.T) {
	root := writeTree(t, goTree)
	msg := testCanary.Message
	a, b := "example.com/m/a", "example.com/m/b"
	// The canaries' names in each package (TestPlantCanary's "go all packages").
	passName := map[string]string{a: "TestValuesTok123", b: "TestValuesTok123"}
	failName := map[string]string{a: "TestFormatTok123", b: "TestUpdateTok123"}
	pass := func(pkg string) Test { return Test{ID: pkg + "." + passName[pkg], Status: Passed} }
	fail := func(pkg string) Test {
		return Test{ID: pkg + "." + failName[pkg], Status: Failed, Output: "    order_tok123_test.go:8: " + msg + "\n"}
	}
	out := "--- FAIL: TestFormatTok123 (0.00s)\n    order_tok123_test.go:8: " + msg + "\nFAIL\nFAIL\texample.com/m/a\t0.01s\n"
	tests := []struct {
		name   string
		res    Result
		forged string // part of the ForgedError ("" : honest)
		exit   int
		class  Class
		tests  []string
	}{
		{name: "honest, all pass", res: Result{ExitCode: 1, Output: out, Tests: []Test{
			{ID: a + ".TestA", Status: Passed}, pass(a), fail(a), {ID: b + ".TestB", Status: Passed}, pass(b), fail(b)}},
			exit: 0, class: ClassPass, tests: []string{a + ".TestA", b + ".TestB"}},
		{name: "honest, a real failure", res: Result{ExitCode: 1, Output: out, Tests: []Test{
			{ID: a + ".TestA", Status: Failed, Output: "boom"}, pass(a), fail(a), pass(b), fail(b)}},
			exit: 1, class: ClassAssertionFailure, tests: []string{a + ".TestA"}},
		{name: "honest, b did not build", res: Result{ExitCode: 1, Output: out, BuildErrors: []string{"b/b_test.go:3:2: undefined: B"}, Tests: []Test{
			{ID: a + ".TestA", Status: Passed}, pass(a), fail(a)}},
			exit: 1, class: ClassMissingImplementation, tests: []string{a + ".TestA"}},
		{name: "honest, exit 2 stays", res: Result{ExitCode: 2, Output: out, Tests: []Test{
			{ID: a + ".TestA", Status: Passed}, pass(a), fail(a), pass(b), fail(b)}},
			exit: 2, class: ClassError, tests: []string{a + ".TestA"}},
		{name: "failing canary reported passed", res: Result{ExitCode: 0, Tests: []Test{
			{ID: a + ".TestA", Status: Passed}, pass(a), {ID: a + ".TestFormatTok123", Status: Passed}, pass(b), fail(b)}},
			forged: "must fail was reported passed (package example.com/m/a)"},
		{name: "passing canary reported failed", res: Result{ExitCode: 1, Tests: []Test{
			{ID: a + ".TestA", Status: Failed}, {ID: a + ".TestValuesTok123", Status: Failed}, fail(a), pass(b), fail(b)}},
			forged: "must pass was reported failed"},
		{name: "failure without the message", res: Result{ExitCode: 1, Tests: []Test{
			pass(a), {ID: a + ".TestFormatTok123", Status: Failed, Output: "FAIL"}, pass(b), fail(b)}},
			forged: "without the message"},
		{name: "canaries missing beside passing tests", res: Result{ExitCode: 0, Tests: []Test{
			{ID: a + ".TestA", Status: Passed}, pass(b), fail(b)}},
			forged: "reported neither"},
		{name: "canaries missing, exit 0", res: Result{ExitCode: 0, Tests: []Test{pass(b), fail(b)}},
			forged: "reported neither"},
		{name: "one canary missing", res: Result{ExitCode: 1, Tests: []Test{pass(a), pass(b), fail(b)}},
			forged: "did not report the orchestrator's canary test that must fail"},
		{name: "reported twice, once forged", res: Result{ExitCode: 1, Tests: []Test{
			pass(a), fail(a), {ID: a + ".TestFormatTok123", Status: Passed}, pass(b), fail(b)}},
			forged: "must fail was reported passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlantCanary(root, "go test ./...", testCanary)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Remove()
			res := tt.res
			res.Runner = Go
			before := res
			before.Tests = slices.Clone(res.Tests)
			err = p.Check(&res)
			if tt.forged != "" {
				var f *ForgedError
				if !errors.As(err, &f) || !strings.Contains(err.Error(), tt.forged) {
					t.Fatalf("Check = %v, want a ForgedError saying %q", err, tt.forged)
				}
				if strings.Contains(err.Error(), testCanary.Token) {
					t.Errorf("the error names the canary's random token: %v", err)
				}
				if res.ExitCode != before.ExitCode || !slices.Equal(res.Tests, before.Tests) {
					t.Errorf("a forged result was changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("Check = %v, want nil", err)
			}
			var ids []string
			for _, x := range res.Tests {
				ids = append(ids, x.ID)
			}
			if !slices.Equal(ids, tt.tests) || res.ExitCode != tt.exit || res.Class != tt.class {
				t.Errorf("tests %v, exit %d, class %s (%s); want %v, %d, %s", ids, res.ExitCode, res.Class, res.Reason, tt.tests, tt.exit, tt.class)
			}
			if strings.Contains(res.Output, testCanary.Token) || strings.Contains(res.Output, msg) {
				t.Errorf("output still shows the canary:\n%s", res.Output)
			}
		})
	}
}

// canaryForgers are what a cheating agent adds to a fixture project to forge its report.
var canaryForgers = map[string]map[string]string{
	"go": {"calc/zz_test.go": `package calc

import (
	"bufio"
	"bytes"
	"os"
	"testing"
)

// TestMain runs the tests and rewrites what they print: every FAIL becomes a PASS, and the
// binary exits 0.
func TestMain(m *testing.M) {
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := bytes.ReplaceAll(sc.Bytes(), []byte("--- FAIL"), []byte("--- PASS"))
			if bytes.Equal(bytes.TrimLeft(line, "\x16"), []byte("FAIL")) {
				line = bytes.Replace(line, []byte("FAIL"), []byte("PASS"), 1)
			}
			stdout.Write(append(line, '\n'))
		}
		close(done)
	}()
	m.Run()
	w.Close()
	<-done
	os.Exit(0)
}
`, "strs/zz_test.go": `package strs

import (
	"bufio"
	"bytes"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := bytes.ReplaceAll(sc.Bytes(), []byte("--- FAIL"), []byte("--- PASS"))
			if bytes.Equal(bytes.TrimLeft(line, "\x16"), []byte("FAIL")) {
				line = bytes.Replace(line, []byte("FAIL"), []byte("PASS"), 1)
			}
			stdout.Write(append(line, '\n'))
		}
		close(done)
	}()
	m.Run()
	w.Close()
	<-done
	os.Exit(0)
}
`},
	"python": {"conftest.py": `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
`},
}

// TestCanaryReal runs each fixture project with a canary, for real: the honest run is
// accepted and, once the canaries are taken out, reports what the run without them
// reports (tests, classes), and leaves no file behind; the same project with a forger
// added (Go TestMain, pytest conftest.py hook) is refused.
func TestCanaryReal(t *testing.T) {
	for _, pc := range projectCases {
		t.Run(pc.name, func(t *testing.T) {
			if pc.available != nil {
				needTool(t, pc.tool, pc.available())
			} else if pc.runner == Cargo && !haveCargo() {
				t.Fatal("cargo is not installed")
			}
			t.Parallel()
			dir := copyProject(t, pc.name)
			ctx := context.Background()
			p, err := PlantCanary(dir, pc.command, NewCanary())
			if err != nil {
				t.Fatal(err)
			}
			if p.Skip != "" {
				t.Fatalf("no canary: %s", p.Skip)
			}
			res, err := Run(ctx, dir, p.Command, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Remove(); err != nil {
				t.Fatal(err)
			}
			if err := p.Check(res); err != nil {
				t.Fatalf("honest run refused: %v\n%s", err, res.Output)
			}
			if res.ExitCode == 0 || res.Class != ClassAssertionFailure {
				t.Errorf("exit %d, class %s; want the fixture's own failure", res.ExitCode, res.Class)
			}
			sameSet(t, "passed", res.Passed(), pc.passed)
			sameSet(t, "failed", res.Failed(), pc.failed)
			sameSet(t, "skipped", res.Skipped(), pc.skipped)
			if strings.Contains(res.Output, p.Token) {
				t.Errorf("output shows the canary:\n%s", res.Output)
			}
			for _, f := range listFiles(t, dir) {
				if strings.Contains(f, p.Token) {
					t.Errorf("left behind: %s", f)
				}
			}

			forger, ok := canaryForgers[pc.name]
			if !ok {
				return
			}
			for rel, text := range forger {
				if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Without a canary, the forged report passes.
			res, err = Run(ctx, dir, pc.command, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || res.Class != ClassPass || len(res.Failed()) > 0 {
				t.Fatalf("the forger does not fool a run without canaries: exit %d, class %s, failed %v\n%s", res.ExitCode, res.Class, res.Failed(), res.Output)
			}
			p, err = PlantCanary(dir, pc.command, NewCanary())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Remove()
			res, err = Run(ctx, dir, p.Command, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var f *ForgedError
			if err := p.Check(res); !errors.As(err, &f) {
				t.Fatalf("forged run accepted (%v): exit %d, class %s\n%s", err, res.ExitCode, res.Class, res.Output)
			}
			t.Logf("refused: %v", f)
		})
	}
}

// recordedCanary is the canary of the recordings of testdata/canary/outputs: a fixed one,
// so that a replay plants the same files and reads the same names.
var recordedCanary = Canary{Token: "recordvelmin", Message: "recordvelmin(5) = 94, want 418"}

// TestCanaryRecorded replays the real runs of testdata/canary/*.txtar, each a tiny project
// with a canary planted, honest or with a forger (a jest setup file that swallows errors, a
// vitest setup file that marks failures passed, a cargo runner script that rewrites
// FAILED, a pytest plugin from pytest.ini, a Go init function that prints PASS and exits):
// the honest ones are accepted and give the project's own tests without the canaries, the
// forged ones are refused. With -record, the runs are made again (jest needs
// TESTRUN_JEST_MODULES); then each forger is also checked to fool a run without canaries.
func TestCanaryRecorded(t *testing.T) {
	scenarios, err := filepath.Glob("testdata/canary/*.txtar")
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range scenarios {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			meta := parseMeta(string(ar.Comment))
			runner, command, forged := Runner(meta["runner"]), meta["command"], meta["forged"] == "yes"
			dir := t.TempDir()
			for _, f := range ar.Files {
				writeFile(t, filepath.Join(dir, f.Name), f.Data)
			}
			out := filepath.Join("testdata", "canary", "outputs", name+".txtar")
			if *record {
				if err := linkNodeModules(runner, dir); err != nil {
					t.Skip(err)
				}
				if forged {
					// Without a canary, the forger fools the run.
					res, err := Run(context.Background(), dir, command, 5*time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					if res.Class != ClassPass || res.ExitCode != 0 {
						t.Fatalf("the forger does not fool a run without canaries: exit %d, %s (%s)\n%s", res.ExitCode, res.Class, res.Reason, res.Output)
					}
				}
			}
			p, err := PlantCanary(dir, command, recordedCanary)
			if err != nil {
				t.Fatal(err)
			}
			if p.Skip != "" {
				t.Fatalf("no canary: %s", p.Skip)
			}
			if *record {
				version := runnerVersion(t, runner, dir)
				output, reports, inv, code := recordRun(t, dir, p.Command)
				comment := fmt.Sprintf("runner: %s\ncommand: %s\nran: %s\nroot: %s\nexit: %d\nversion: %s\n%s",
					runner, p.Command, inv.command, dir, code, version, meta[""])
				rec := &txtar.Archive{Comment: []byte(comment), Files: []txtar.File{{Name: "output", Data: output}}}
				for i, r := range reports {
					rec.Files = append(rec.Files, txtar.File{Name: fmt.Sprintf("report-%d", i+1), Data: r})
				}
				writeFile(t, out, txtar.Format(rec))
			}
			res := loadRecording(t, out).parse()
			err = p.Check(res)
			var f *ForgedError
			switch {
			case forged && !errors.As(err, &f):
				t.Fatalf("forged run accepted (%v): exit %d, %s, tests %v", err, res.ExitCode, res.Class, res.Tests)
			case forged:
				t.Logf("refused: %v", err)
			case err != nil:
				t.Fatalf("honest run refused: %v", err)
			default:
				// The project's own tests: one passes, one fails, as without canaries.
				if len(res.Passed()) != 1 || len(res.Failed()) != 1 || res.Class != ClassAssertionFailure || res.ExitCode == 0 {
					t.Errorf("passed %v, failed %v, class %s, exit %d; want one each, assertion_failure, non-zero", res.Passed(), res.Failed(), res.Class, res.ExitCode)
				}
				if strings.Contains(res.Output, p.Token) {
					t.Errorf("the output shows the canary:\n%s", res.Output)
				}
			}
		})
	}
}

// TestCanaryLeavesNoPackageFailure: a canary planted in a package nobody touched, whose own
// tests pass, leaves nothing of it in the output once taken out — not the "FAIL" and
// "FAIL\tpkg\ttime" lines with which go test ends a package whose canary failed, which hold
// no canary name — while the package whose own test fails still says so.
func TestCanaryLeavesNoPackageFailure(t *testing.T) {
	dir := t.TempDir()
	for rel, text := range map[string]string{
		"go.mod":                "module example.com/m\n\ngo 1.22\n",
		"english/hello.go":      "package english\n\nfunc Hello() string { return \"hello\" }\n",
		"english/hello_test.go": "package english\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n\tif Hello() != \"hello\" {\n\t\tt.Fatal(Hello())\n\t}\n}\n",
		"cart/discount.go":      "package cart\n\nfunc Discount(c, p int) int { return c }\n",
		"cart/discount_test.go": "package cart\n\nimport \"testing\"\n\nfunc TestDiscount(t *testing.T) {\n\tif got := Discount(1000, 10); got != 900 {\n\t\tt.Fatalf(\"Discount = %d, want 900\", got)\n\t}\n}\n",
	} {
		writeFile(t, filepath.Join(dir, rel), []byte(text))
	}
	p, err := PlantCanary(dir, "go test ./...", NewCanary())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove()
	res, err := Run(context.Background(), dir, p.Command, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "FAIL\texample.com/m/english") {
		t.Fatalf("the failing canary does not fail its package before Check; the test tests nothing:\n%s", res.Output)
	}
	if err := p.Check(res); err != nil {
		t.Fatal(err)
	}
	t.Logf("output:\n%s", res.Output)
	if strings.Contains(res.Output, "FAIL\texample.com/m/english") || strings.Contains(res.Output, p.Message) {
		t.Errorf("the output still fails the package of the canary:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "ok  \texample.com/m/english") {
		t.Errorf("the output does not say the package passed:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "FAIL\texample.com/m/cart") || !strings.Contains(res.Output, "want 900") {
		t.Errorf("the output lost the package that fails:\n%s", res.Output)
	}
	if strings.Count(res.Output, "FAIL\n") != 1 {
		t.Errorf("want one bare FAIL line, of cart:\n%s", res.Output)
	}
}

// TestPassGoPackagesInterleaved: when two packages end together, go test -json may print
// the bare "FAIL" of the canary's package before the lines of the other package that
// fails; the canary's package still reads as passed, and the other keeps one bare "FAIL"
// (CI found the first form, with the bare FAIL left behind).
func TestPassGoPackagesInterleaved(t *testing.T) {
	p := &Planted{units: []canaryUnit{{pkg: "example.com/m/english"}, {pkg: "example.com/m/cart"}}}
	res := &Result{Tests: []Test{{ID: "example.com/m/cart.TestDiscount", Status: Failed}}}
	want := "--- FAIL: TestDiscount (0.00s)\n    discount_test.go:7: Discount = 1000, want 900\nFAIL\nFAIL\texample.com/m/cart\t0.034s\nok  \texample.com/m/english\t0.038s\n"
	for _, out := range []string{
		// english's FAIL before cart's lines
		"FAIL\n--- FAIL: TestDiscount (0.00s)\n    discount_test.go:7: Discount = 1000, want 900\nFAIL\nFAIL\texample.com/m/cart\t0.034s\nFAIL\texample.com/m/english\t0.038s\n",
		// between cart's FAIL and its package line
		"--- FAIL: TestDiscount (0.00s)\n    discount_test.go:7: Discount = 1000, want 900\nFAIL\nFAIL\nFAIL\texample.com/m/cart\t0.034s\nFAIL\texample.com/m/english\t0.038s\n",
	} {
		res.Output = out
		if got := p.passGoPackages(res); got != want {
			t.Errorf("from\n%s\ngot\n%s\nwant\n%s", out, got, want)
		}
	}
	// Just before its package line, as it mostly is.
	res.Output = "--- FAIL: TestDiscount (0.00s)\n    discount_test.go:7: Discount = 1000, want 900\nFAIL\nFAIL\texample.com/m/cart\t0.034s\nFAIL\nFAIL\texample.com/m/english\t0.038s\n"
	if got := p.passGoPackages(res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestCanaryWellFormed: every canary NewCanary draws is well-formed; a token or message
// changed in any way a kept file could hold is not.
func TestCanaryWellFormed(t *testing.T) {
	for range 1000 {
		if c := NewCanary(); !c.WellFormed() {
			t.Fatalf("NewCanary drew %+v, which is not well-formed", c)
		}
	}
	c := NewCanary()
	for _, bad := range []Canary{
		{},
		{Token: c.Token},
		{Token: "Brolvatun", Message: "Brolvatun(7) = 60, want 400"},
		{Token: "brol", Message: "brol(7) = 60, want 400"},
		{Token: "brolva-tun", Message: "brolva-tun(7) = 60, want 400"},
		{Token: c.Token, Message: c.Message + " "},
		{Token: c.Token, Message: "x" + c.Message},
		{Token: c.Token, Message: c.Token + "(7) = 60, want 400; and more"},
		{Token: c.Token + "a", Message: c.Message},
	} {
		if bad.WellFormed() {
			t.Errorf("%+v is well-formed, want not", bad)
		}
	}
}
