package testrun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recorded lists what each recorded run in testdata/outputs must parse to. The recordings
// are real runs of the runners (TestRecord; the versions are in each file's header).
var recorded = []struct {
	name    string
	class   Class
	passed  []string
	failed  []string
	skipped []string
	build   []string
	reason  string // a part of Result.Reason
}{
	// go test -json
	{name: "go_pass", class: ClassPass,
		passed: []string{
			"example.com/calc.TestAdd", "example.com/calc.TestTable/one_plus_one",
			"example.com/calc.TestTable/zero", "example.com/calc.TestTable", "example.com/calc/strs.TestUpper",
		},
		skipped: []string{"example.com/calc.TestLater"}},
	{name: "go_fail", class: ClassAssertionFailure,
		passed: []string{"example.com/calc.TestAdd", "example.com/calc.TestTable/one_plus_one", "example.com/calc/strs.TestUpper"},
		failed: []string{"example.com/calc.TestNegative", "example.com/calc.TestTable/minus_one", "example.com/calc.TestTable"},
		reason: "example.com/calc.TestNegative: calc_test.go:13: Add(-1, -2) = 0, want -3"},
	{name: "go_verbose", class: ClassAssertionFailure,
		passed: []string{"example.com/calc.TestAdd"}, failed: []string{"example.com/calc.TestWrong"}},
	{name: "go_panic", class: ClassAssertionFailure,
		passed: []string{"example.com/calc.TestAdd", "example.com/calc/strs.TestOK"},
		failed: []string{"example.com/calc.TestPanic/inner", "example.com/calc.TestPanic"},
		reason: "panic: assignment to entry in nil map"},
	{name: "go_undefined", class: ClassMissingImplementation,
		passed: []string{"example.com/calc/strs.TestOK"},
		build: []string{
			"./calc_test.go:12:5: undefined: Sub",
			"./calc_test.go:19:7: c.Mul undefined (type Calc has no field or method Mul)",
		}},
	{name: "go_buildtext", class: ClassMissingImplementation,
		passed: []string{"example.com/calc/strs.TestOK"},
		build: []string{
			"./calc_test.go:12:5: undefined: Sub",
			"./calc_test.go:19:7: c.Mul undefined (type Calc has no field or method Mul)",
		}},
	{name: "go_missing_pkg", class: ClassMissingImplementation,
		build: []string{"calc_test.go:6:2: no required module provides package example.com/calc/geo; to add it:"}},
	{name: "go_syntax", class: ClassBrokenTest,
		passed: []string{"example.com/calc/strs.TestOK"},
		build:  []string{"calc_test.go:8:4: expected '}', found 'EOF'"}},
	// A vet error in a test file is the test file's own: a broken test.
	{name: "go_type_test", class: ClassBrokenTest,
		build: []string{`./mul_test.go:6:17: cannot use "six" (untyped string constant) as int value in variable declaration`, "./mul_test.go:7:12: undefined: Mul"}},
	{name: "go_panic_impl", class: ClassAssertionFailure, failed: []string{"example.com/calc.TestMul"}, reason: "panic: not implemented"},
	{name: "go_vet", class: ClassBrokenTest,
		build: []string{`./calc_test.go:9:14: fmt.Printf format %d has arg "three" of wrong type string`}},
	{name: "go_notests", class: ClassNoTests, reason: "no test files"},
	{name: "go_skipped", class: ClassNoTests, skipped: []string{"example.com/calc.TestA", "example.com/calc.TestB"}},
	{name: "go_nomatch", class: ClassNoTests, reason: "no tests to run"},

	// pytest: the orchestrator's reporter, and the console for what it lacks
	{name: "py_pass", class: ClassPass,
		passed: []string{
			"tests/test_calc.py::test_add", "tests/test_calc.py::TestGroup::test_in_class",
			"tests/test_calc.py::TestGroup::TestNested::test_deep", "tests/test_calc.py::test_param[1-2]",
			"tests/test_calc.py::test_param[x y-z]", "tests/unit/test_more.py::test_more",
		},
		skipped: []string{"tests/test_calc.py::test_skipped", "tests/test_calc.py::test_known_bug"}},
	{name: "py_fail", class: ClassAssertionFailure,
		passed: []string{"tests/test_calc.py::test_add"},
		failed: []string{
			"tests/test_calc.py::test_negative", "tests/test_calc.py::test_uses_fixture",
			"tests/test_calc.py::TestGroup::test_in_class",
		},
		reason: "tests/test_calc.py::test_negative: assert 0 == -3"},
	{name: "py_missing_module", class: ClassMissingImplementation, passed: []string{"tests/test_other.py::test_other"},
		build: []string{"tests/test_geo.py:1: ModuleNotFoundError: No module named 'geo'"}},
	{name: "py_missing_name", class: ClassMissingImplementation,
		build: []string{"tests/test_calc.py:1: ImportError: cannot import name 'sub' from 'calc' (calc.py)"}},
	{name: "py_attr_missing", class: ClassMissingImplementation,
		failed: []string{"tests/test_calc.py::test_sub", "tests/test_calc.py::test_sub_negative"},
		reason: "tests/test_calc.py::test_sub: AttributeError: module 'calc' has no attribute 'sub'"},
	{name: "py_conftest", class: ClassMissingImplementation,
		build: []string{"tests/conftest.py:1: ModuleNotFoundError: No module named 'geo'"}},
	{name: "py_syntax_test", class: ClassBrokenTest, passed: []string{"tests/test_other.py::test_other"},
		build: []string{"tests/test_calc.py:4: SyntaxError: invalid syntax"}},
	{name: "py_indent_test", class: ClassBrokenTest,
		build: []string{"tests/test_calc.py:6: IndentationError: unexpected indent"}},
	{name: "py_syntax_impl", class: ClassError,
		build: []string{"calc.py:1: SyntaxError: expected ':'"}},
	{name: "py_notests", class: ClassNoTests},
	{name: "py_raise_test", class: ClassAssertionFailure,
		failed: []string{"tests/test_calc.py::test_raised_in_test", "tests/test_calc.py::test_raised_in_code", "tests/test_calc.py::test_assertion"}},
	{name: "py_name_test", class: ClassBrokenTest,
		build: []string{"tests/test_mul.py:1: ModuleNotFoundError: No module named 'calc'", "tests/test_other.py:1: NameError: name 'undefined_name' is not defined"}},
	{name: "py_user_junit", class: ClassAssertionFailure,
		passed: []string{"tests/test_calc.py::test_add", "tests/test_calc.py::test_param[1]", "tests/test_calc.py::test_param[2]"},
		failed: []string{"tests/test_calc.py::test_wrong"}},

	// vitest JSON
	{name: "vt_pass", class: ClassPass,
		passed: []string{
			"src/calc.test.ts > add > adds two numbers", "src/calc.test.ts > add > with zero > keeps the number",
			"src/calc.test.ts > works at the top level", "test/more.test.ts > UNIT-002 adds more",
		},
		skipped: []string{"src/calc.test.ts > add > with zero > skipped one", "src/calc.test.ts > add > with zero > todo one"}},
	{name: "vt_fail", class: ClassAssertionFailure,
		passed: []string{"src/calc.test.ts > add > adds two numbers"},
		failed: []string{"src/calc.test.ts > add > adds negative numbers", "src/calc.test.ts > reads a property"},
		reason: "AssertionError: expected +0 to be -3"},
	{name: "vt_missing_module", class: ClassMissingImplementation,
		passed: []string{"src/other.test.ts > passes"},
		build:  []string{"src/geo.test.ts: Cannot find module './geo' imported from src/geo.test.ts"}},
	{name: "vt_missing_export", class: ClassMissingImplementation,
		passed: []string{"src/calc.test.ts > calc > adds"},
		failed: []string{"src/calc.test.ts > calc > subtracts"},
		reason: "is not a function"},
	{name: "vt_syntax_test", class: ClassBrokenTest,
		passed: []string{"src/other.test.ts > passes"},
		build:  []string{"src/calc.test.ts:6: Transform failed with 1 error: [PARSE_ERROR] Expected `,` or `)` but found `}`"}},
	{name: "vt_syntax_impl", class: ClassError,
		build: []string{"src/calc.ts:3: Transform failed with 1 error: [PARSE_ERROR] Unexpected token"}},
	{name: "vt_notests", class: ClassNoTests, reason: "No test files found"},

	// jest JSON
	{name: "jest_pass", class: ClassPass,
		passed: []string{
			"calc.test.js > add > adds two numbers", "calc.test.js > add > with zero > keeps the number",
			"calc.test.js > works at the top level",
		},
		skipped: []string{"calc.test.js > add > with zero > skipped one", "calc.test.js > add > with zero > todo one"}},
	{name: "jest_fail", class: ClassAssertionFailure,
		passed: []string{"calc.test.js > add > adds two numbers"},
		failed: []string{"calc.test.js > add > adds negative numbers"}},
	{name: "jest_missing_module", class: ClassMissingImplementation,
		passed: []string{"other.test.js > passes"},
		build:  []string{"geo.test.js:1: Cannot find module './geo' from 'geo.test.js'"}},
	{name: "jest_missing_export", class: ClassMissingImplementation,
		passed: []string{"calc.test.js > adds"},
		failed: []string{"calc.test.js > subtracts"},
		reason: "TypeError: sub is not a function"},
	{name: "jest_syntax_test", class: ClassBrokenTest,
		passed: []string{"other.test.js > passes"},
		build:  []string{`calc.test.js: SyntaxError: calc.test.js: Unexpected token, expected "," (5:0)`}},
	{name: "jest_ts_no_export", class: ClassMissingImplementation,
		build: []string{`src/calc.test.ts:1: error TS2305: Module '"./calc"' has no exported member 'sub'.`}},
	{name: "jest_notests", class: ClassNoTests, reason: "No tests found"},

	// cargo test (libtest's human output)
	{name: "rs_pass", class: ClassPass,
		passed:  []string{"tests::nested::deep", "tests::adds", "tests::overflows", "int_add", "src/lib.rs - add (line 3)"},
		skipped: []string{"tests::later"}},
	{name: "rs_fail", class: ClassAssertionFailure,
		passed: []string{"tests::adds", "int_add"},
		failed: []string{"tests::negative", "tests::panics"},
		reason: "tests::negative: thread 'tests::negative'"},
	{name: "rs_quiet", class: ClassAssertionFailure,
		passed: []string{"tests::adds"}, failed: []string{"tests::wrong"}},
	{name: "rs_missing_fn", class: ClassMissingImplementation,
		build: []string{"tests/sub.rs:3: error[E0425]: cannot find function `sub` in crate `calc`"}},
	{name: "rs_unresolved", class: ClassMissingImplementation,
		build: []string{"tests/geo.rs:1: error[E0432]: unresolved import `calc::geo`"}},
	{name: "rs_syntax_test", class: ClassBrokenTest,
		build: []string{"tests/add.rs:3: error: mismatched closing delimiter: `}`"}},
	{name: "rs_notests", class: ClassNoTests},
}

func TestParseRecorded(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range recorded {
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			rec := loadRecording(t, filepath.Join("testdata", "outputs", tt.name+".txtar"))
			if got := Detect(rec.command); got != rec.runner {
				t.Errorf("Detect(%q) = %s, want %s", rec.command, got, rec.runner)
			}
			res := rec.parse()
			if res.Class != tt.class {
				t.Errorf("class %s (%s), want %s", res.Class, res.Reason, tt.class)
			}
			check := func(what string, got, want []string) {
				if !slices.Equal(got, want) {
					t.Errorf("%s:\n got %q\nwant %q", what, got, want)
				}
			}
			check("passed", res.Passed(), tt.passed)
			check("failed", res.Failed(), tt.failed)
			check("skipped", res.Skipped(), tt.skipped)
			check("build errors", res.BuildErrors, tt.build)
			if !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("reason %q does not hold %q", res.Reason, tt.reason)
			}
			for _, test := range res.Tests {
				if test.Status == Failed && strings.TrimSpace(test.Output) == "" && !strings.HasPrefix(tt.name, "py_user") && tt.name != "go_panic" {
					t.Errorf("failed test %s has no output", test.ID)
				}
			}
			// Parse, the exported way in, agrees.
			p := Parse(rec.runner, rec.root, rec.exit, rec.output, rec.reports)
			if p.Class != res.Class || !slices.Equal(p.Passed(), res.Passed()) {
				t.Errorf("Parse: class %s, passed %q", p.Class, p.Passed())
			}
		})
	}
	files, _ := filepath.Glob("testdata/outputs/*.txtar")
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".txtar"); !seen[name] {
			t.Errorf("%s has no expectations in the recorded table", f)
		}
	}
}

// TestRecordingsAreReal checks that every scenario was recorded, with its runner's version.
func TestRecordingsAreReal(t *testing.T) {
	scenarios, _ := filepath.Glob("testdata/scenarios/*.txtar")
	if len(scenarios) == 0 {
		t.Fatal("no scenarios")
	}
	for _, s := range scenarios {
		out := filepath.Join("testdata", "outputs", filepath.Base(s))
		if _, err := os.Stat(out); err != nil {
			t.Errorf("scenario %s has no recording: run go test ./testrun -run TestRecord -record", s)
			continue
		}
		if rec := loadRecording(t, out); rec.version == "" || rec.root == "" {
			t.Errorf("%s: no version or root in its header", out)
		}
	}
}

// TestGoOutputReadsLikeGoTest checks the text Result.Output gives for go test -json: what
// go test prints without -json, the failures with their messages under their headers.
func TestGoOutputReadsLikeGoTest(t *testing.T) {
	res := loadRecording(t, "testdata/outputs/go_fail.txtar").parse()
	want := "--- FAIL: TestNegative (0.00s)\n    calc_test.go:13: Add(-1, -2) = 0, want -3\n" +
		"--- FAIL: TestTable (0.00s)\n--- FAIL: TestTable/minus_one (0.00s)\n    calc_test.go:24: Add(-1, 0) = 0, want -1\n" +
		"FAIL\nFAIL\texample.com/calc\t"
	if !strings.HasPrefix(res.Output, want) {
		t.Errorf("output:\n%s\nwant it to start with:\n%s", res.Output, want)
	}
	if strings.Contains(res.Output, "=== RUN") || strings.Contains(res.Output, `"Action"`) {
		t.Errorf("output holds run lines or JSON:\n%s", res.Output)
	}
	for _, l := range []string{"ok  \texample.com/calc/strs"} {
		if !strings.Contains(res.Output, l) {
			t.Errorf("output lacks %q", l)
		}
	}
	// With -v, every test's output is kept.
	v := loadRecording(t, "testdata/outputs/go_verbose.txtar").parse()
	if !strings.Contains(v.Output, "calc_test.go:6: adding") || !strings.Contains(v.Output, "--- PASS: TestAdd") {
		t.Errorf("verbose output:\n%s", v.Output)
	}
	// A failed test's own output starts with its header.
	for _, tt := range res.Tests {
		if tt.ID == "example.com/calc.TestNegative" && !strings.HasPrefix(tt.Output, "--- FAIL: TestNegative") {
			t.Errorf("TestNegative output %q", tt.Output)
		}
	}
}
