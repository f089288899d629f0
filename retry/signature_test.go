package retry

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorded reads a runner output recorded by testdata/outputs/record.sh.
func recorded(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "outputs", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failures groups the recorded outputs by failure: the outputs of one group are the same
// failure in different runs (other temp folders, timings, addresses, goroutine and thread
// numbers, colour), and every group is a different failure.
var failures = []struct {
	name  string
	typ   Type
	runs  []string
	error string // the primary error of the first run, normalized
	test  string // the failing test
}{
	{"go assertion", TestFails, []string{"go-entries-run1", "go-entries-run2", "go-entries-verbose"},
		"calc_test.go:17: Entries(<TMP>/app.conf) = 3, <nil> after <DUR>; want 4", "TestEntries"},
	{"go assertion, other value", TestFails, []string{"go-entries-plus"},
		"calc_test.go:17: Entries(<TMP>/app.conf) = 5, <nil> after <DUR>; want 4", "TestEntries"},
	{"go panic", TestFails, []string{"go-panic-run1", "go-panic-run2"},
		"panic: assignment to entry in nil map [recovered, repanicked]", "TestPut"},
	{"go build", BuildFails, []string{"go-undefined"},
		"calc/add_test.go:6:5: undefined: Add", ""},
	{"pytest assertion", TestFails, []string{"pytest-entries-run1", "pytest-entries-run2"},
		"E AssertionError: read <TMP>/app.conf: got 3 entries", "test_cfg.py::test_entries"},
	{"pytest import", BuildFails, []string{"pytest-import"},
		"E ModuleNotFoundError: No module named 'calc'", "test_calc.py"},
	{"vitest assertion", TestFails, []string{"vitest-sum-run1", "vitest-sum-run2"},
		"AssertionError: expected 5 to be 4 // Object.is equality", "sum.test.js > sum > adds"},
	{"vitest missing module", BuildFails, []string{"vitest-missing"},
		"Error: Cannot find module './missing.js' imported from <TMP>/sum.test.js", "sum.test.js"},
	{"jest assertion", TestFails, []string{"jest-sum-run1", "jest-sum-run2"},
		"expect(received).toBe(expected) // Object.is equality; Expected: 4; Received: 5", "sum.test.js > sum > adds"},
	{"jest assertion, other value", TestFails, []string{"jest-sum-minus"},
		"expect(received).toBe(expected) // Object.is equality; Expected: 4; Received: 3", "sum.test.js > sum > adds"},
	{"jest missing module", BuildFails, []string{"jest-missing"},
		"Cannot find module './missing' from 'sum.test.js'", "sum.test.js"},
	{"cargo assertion", TestFails, []string{"cargo-sum-run1", "cargo-sum-run2"},
		"thread 'tests::adds' (<PID>) panicked at src/lib.rs:11:9: assertion `left == right` failed; left: 5; right: 4", "tests::adds"},
	{"cargo assertion, other value", TestFails, []string{"cargo-sum-minus"},
		"thread 'tests::adds' (<PID>) panicked at src/lib.rs:11:9: assertion `left == right` failed; left: 3; right: 4", "tests::adds"},
	{"cargo build", BuildFails, []string{"cargo-undefined"},
		"error[E0425]: cannot find function `add` in this scope", ""},
}

// TestRecordedFailures checks signatures on real runner output: the same failure in two
// runs has one signature, different failures have different ones.
func TestRecordedFailures(t *testing.T) {
	seen := map[string]string{} // signature -> failure
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			var want string
			outputs := map[string]string{}
			for _, run := range f.runs {
				out := recorded(t, run)
				if prev, dup := outputs[out]; dup {
					t.Fatalf("%s and %s are the same bytes: they do not show two runs", prev, run)
				}
				outputs[out] = run
				primary, test := PrimaryError(out), FailingTest(out)
				if got := Normalize(primary); got != f.error {
					t.Errorf("%s: normalized primary error\n got %q\nwant %q", run, got, f.error)
				}
				if test != f.test {
					t.Errorf("%s: failing test %q, want %q", run, test, f.test)
				}
				sig := Signature(f.typ, primary, test, "")
				if want == "" {
					want = sig
				} else if sig != want {
					t.Errorf("%s: signature %s, want %s (the same failure as %s)", run, sig, want, f.runs[0])
				}
			}
			if other, dup := seen[want]; dup {
				t.Errorf("signature %s is also %s's", want, other)
			}
			seen[want] = f.name
		})
	}
}

func TestSignatureFormula(t *testing.T) {
	sum := sha256.Sum256([]byte("test_fails\nE AssertionError: read <TMP>/app.conf\ntests/test_cfg.py::test_entries\ncfg.py"))
	want := hex.EncodeToString(sum[:])[:16]
	got := Signature(TestFails, "E   AssertionError: read /tmp/pytest-of-root/pytest-7/test_entries0/app.conf  ", "tests/test_cfg.py::test_entries", "cfg.py")
	if got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}
	if len(got) != 16 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("Signature = %q, want 16 lower-case hex digits", got)
	}
	// Every input counts.
	base := Signature(TestFails, "x", "t", "f")
	for _, other := range []string{
		Signature(BuildFails, "x", "t", "f"), Signature(TestFails, "y", "t", "f"),
		Signature(TestFails, "x", "u", "f"), Signature(TestFails, "x", "t", "g"),
	} {
		if other == base {
			t.Errorf("a changed input kept the signature %s", base)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "undefined: Add", "undefined: Add"},
		{"ansi", "\x1b[31m\x1b[1mAssertionError\x1b[22m: expected 5 to be 4\x1b[39m", "AssertionError: expected 5 to be 4"},
		{"osc link", "see \x1b]8;;file:///x\x07x.go\x1b]8;;\x07 here", "see x.go here"},
		{"go duration", "--- FAIL: TestAdd (0.01s)", "--- FAIL: TestAdd (<DUR>)"},
		{"ms", "took 12ms", "took <DUR>"},
		{"parenthesized", "ok (1.23s)", "ok (<DUR>)"},
		{"in seconds", "1 failed in 0.52s", "1 failed in <DUR>"},
		{"compound", "after 1m2.5s and 3.2µs and 150ns", "after <DUR> and <DUR> and <DUR>"},
		{"jest ms", "✕ adds (3 ms)", "✕ adds (<DUR>)"},
		{"seconds word", "1 failed in 0.05 seconds", "1 failed in <DUR>"},
		{"rfc3339", "at 2026-01-07T10:00:00Z: boom", "at <TIME>: boom"},
		{"rfc3339 fraction zone", "at 2026-01-07T10:00:00.123+01:00 boom", "at <TIME> boom"},
		{"sql timestamp", "2026-01-07 10:00:00 ERROR boom", "<TIME> ERROR boom"},
		{"go log", "2026/01/07 10:00:00 listen: address in use", "<TIME> listen: address in use"},
		{"time of day", "Start at 06:46:30", "Start at <TIME>"},
		{"time with fraction", "10:00:00.123 boom", "<TIME> boom"},
		{"date alone stays", "expires 2026-01-07", "expires 2026-01-07"},
		{"address", "conn 0xc000123456 closed", "conn <ADDR> closed"},
		{"small hex stays", "flags 0xff", "flags 0xff"},
		{"goroutine", "goroutine 17 [running]:", "goroutine <N> [running]:"},
		{"pid", "killed pid 1234 and PID: 99 and pid=7", "killed pid <PID> and PID: <PID> and pid=<PID>"},
		{"bracket pid", "myapp[1234]: crashed", "myapp[<PID>]: crashed"},
		{"small bracket stays", "expected [1] got [2]", "expected [1] got [2]"},
		{"rust thread", "thread 'tests::adds' (31748) panicked at src/lib.rs:11:9:", "thread 'tests::adds' (<PID>) panicked at src/lib.rs:11:9:"},
		{"t.TempDir", "open /tmp/TestFoo123456/001/x.json: no such file", "open <TMP>/x.json: no such file"},
		{"temp folder itself", "rootdir: /tmp/tmp.NdLRE9TRYb", "rootdir: <TMP>"},
		{"temp root", "cd /tmp", "cd <TMP>"},
		{"pytest tmp_path", "read /tmp/pytest-of-root/pytest-3/test_x0/app.conf: got 3", "read <TMP>/app.conf: got 3"},
		{"temp in quotes", "module '/tmp/tmp.BARMxhHnnz/test_calc.py'.", "module '<TMP>/test_calc.py'."},
		{"temp with position", "/tmp/go-build123/b001/x_test.go:3:5: undefined", "<TMP>/x_test.go:3:5: undefined"},
		{"macOS", "open /var/folders/xy/abc123/T/TestFoo99/001/x: denied", "open <TMP>/x: denied"},
		{"macOS private", "/private/var/folders/xy/abc123/T/tmp.1", "<TMP>"},
		{"not a temp path", "open /home/me/tmp/x.go", "open /home/me/tmp/x.go"},
		{"tmpfoo is not tmp", "/tmpfoo/x", "/tmpfoo/x"},
		{"positions stay", "./calc.go:3:5: undefined: Add", "./calc.go:3:5: undefined: Add"},
		{"position then numbers", "src/lib.rs:11:9: left: 5", "src/lib.rs:11:9: left: 5"},
		{"spaces", "  E       assert   3 == 4\t ", "E assert 3 == 4"},
		{"word with digits stays", "test_1s_timeout TestV2", "test_1s_timeout TestV2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(tt.in)
			if got != tt.want {
				t.Errorf("Normalize(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := Normalize(got); again != got {
				t.Errorf("Normalize is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestPrimaryError(t *testing.T) {
	tests := []struct{ name, out, want string }{
		{"empty", "", ""},
		{"only rules", "=====\n-----\n", ""},
		{"first non-empty line", "\n\n  something odd happened  \nmore\n", "something odd happened"},
		{"skips rules", "==== test session starts ====\n", "==== test session starts ===="},
		{"go subtest", "--- FAIL: TestX (0.00s)\n    --- FAIL: TestX/a (0.00s)\n        x_test.go:9: got 1, want 2\nFAIL\n", "x_test.go:9: got 1, want 2"},
		{"go fail without message", "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\tpkg\t0.01s\n", "--- FAIL: TestX (0.00s)"},
		{"go build failed only", "FAIL\texample.com/x [setup failed]\n", "FAIL\texample.com/x [setup failed]"},
		{"go fatal", "fatal error: concurrent map writes\n\ngoroutine 5 [running]:\n", "fatal error: concurrent map writes"},
		{"pytest summary only", "FAILED tests/x.py::test_y - assert 1 == 2\n", "FAILED tests/x.py::test_y - assert 1 == 2"},
		{"pytest collecting", "____ ERROR collecting tests/x.py ____\n", "ERROR collecting tests/x.py"},
		{"typescript", "src/a.ts(3,10): error TS2305: Module './calc' has no exported member 'add'.\n", "src/a.ts(3,10): error TS2305: Module './calc' has no exported member 'add'."},
		{"node crash", "node:internal/x\n    throw err;\n\nTypeError: sum is not a function\n    at x.js:3\n", "TypeError: sum is not a function"},
		{"python traceback", "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad\n", "ValueError: bad"},
		{"earliest wins", "x.go:1:1: expected 'package'\nE   oops\n", "x.go:1:1: expected 'package'"},
		{"crlf", "--- FAIL: TestX (0.00s)\r\n    x_test.go:3: no\r\n", "x_test.go:3: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrimaryError(tt.out); got != tt.want {
				t.Errorf("PrimaryError\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFailingTest(t *testing.T) {
	tests := []struct{ name, out, want string }{
		{"none", "all good\n", ""},
		{"go subtest", "--- FAIL: TestX (0.00s)\n    --- FAIL: TestX/a (0.00s)\n        x_test.go:9: got 1\n", "TestX/a"},
		{"pytest header only", "=== FAILURES ===\n____ test_y ____\n\nE  assert 0\n", "test_y"},
		{"cargo panic", "thread 'tests::b' panicked at src/lib.rs:1:1:\n", "tests::b"},
		{"cargo main", "thread 'main' panicked at src/main.rs:1:1:\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailingTest(tt.out); got != tt.want {
				t.Errorf("FailingTest = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseType(t *testing.T) {
	for _, typ := range Types {
		if got, err := ParseType(string(typ)); err != nil || got != typ {
			t.Errorf("ParseType(%q) = %q, %v", typ, got, err)
		}
	}
	if len(Types) != 15 {
		t.Errorf("%d types, want 15: the 12 of SPEC §8.1, broken_test, forged_results (§7.6) and review_rejected (§11.2)", len(Types))
	}
	if _, err := ParseType("flaky"); err == nil || !strings.Contains(err.Error(), "build_fails") {
		t.Errorf("ParseType(flaky) = %v, want an error that lists the types", err)
	}
}

// FuzzNormalize checks that Normalize does not panic, is idempotent, leaves no line break
// or run of spaces, and that PrimaryError returns one line.
func FuzzNormalize(f *testing.F) {
	for _, fl := range failures {
		for _, run := range fl.runs {
			b, err := os.ReadFile(filepath.Join("testdata", "outputs", run+".txt"))
			if err == nil {
				f.Add(string(b))
			}
		}
	}
	f.Add("/tmp/a/b/c 0.1s 10:00:00 0xc000123456 goroutine 1 pid 3 [123]")
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if Normalize(n) != n {
			t.Errorf("not idempotent: %q -> %q -> %q", s, n, Normalize(n))
		}
		if strings.ContainsAny(n, "\n\r\t") || strings.Contains(n, "  ") {
			t.Errorf("Normalize(%q) = %q: spaces not collapsed", s, n)
		}
		if p := PrimaryError(s); strings.ContainsAny(p, "\n") {
			t.Errorf("PrimaryError(%q) = %q: more than one line", s, p)
		}
	})
}
