package testrun

import "testing"

// TestClassify covers the cases the recordings do not: the exit runner, timeouts, and the
// rules that decide between classes.
func TestClassify(t *testing.T) {
	pass := Test{ID: "a", Status: Passed}
	fail := func(out string) Test { return Test{ID: "b", Status: Failed, Output: out} }
	for _, tt := range []struct {
		name string
		r    Result
		want Class
	}{
		{"exit 0", Result{Runner: Exit, ExitCode: 0}, ClassPass},
		{"exit 1", Result{Runner: Exit, ExitCode: 1}, ClassAssertionFailure},
		{"exit not found", Result{Runner: Exit, ExitCode: 127, Output: "sh: 1: x: not found\n"}, ClassError},
		{"exit killed", Result{Runner: Exit, ExitCode: -1}, ClassError},
		{"timed out", Result{Runner: Go, ExitCode: -1, TimedOut: true, Tests: []Test{pass}}, ClassError},
		{"go not installed", Result{Runner: Go, ExitCode: 127}, ClassError},
		{"pass", Result{Runner: Go, Tests: []Test{pass}}, ClassPass},
		{"exit 0 with a failure", Result{Runner: Go, Tests: []Test{pass, fail("x")}}, ClassAssertionFailure},
		{"failed exit without failures", Result{Runner: Go, ExitCode: 1, Tests: []Test{pass}}, ClassError},
		{"only skipped", Result{Runner: Pytest, ExitCode: 0, Tests: []Test{{ID: "s", Status: Skipped}}}, ClassNoTests},
		{"pytest exit 5", Result{Runner: Pytest, ExitCode: 5}, ClassNoTests},
		{"exit 2 nothing said", Result{Runner: Pytest, ExitCode: 2}, ClassError},
		{"broken beats missing",
			Result{Runner: Go, ExitCode: 1, BuildErrors: []string{"./a_test.go:3:1: undefined: X", "./b_test.go:4:2: syntax error: unexpected }"}},
			ClassBrokenTest},
		{"syntax error outside the tests",
			Result{Runner: Go, ExitCode: 1, BuildErrors: []string{"./calc.go:3:1: syntax error: unexpected }"}}, ClassError},
		{"undefined outside the tests",
			Result{Runner: Go, ExitCode: 1, BuildErrors: []string{"./calc.go:3:1: undefined: helper"}}, ClassError},
		{"configured globs",
			Result{Runner: Pytest, ExitCode: 2, BuildErrors: []string{"spec/check_x.py:3: SyntaxError: invalid syntax"}}, ClassError},
		{"python import from the code",
			Result{Runner: Pytest, ExitCode: 2, BuildErrors: []string{"calc.py:1: ModuleNotFoundError: No module named 'numpy'"}}, ClassError},
		{"rust missing in the library's own tests",
			Result{Runner: Cargo, ExitCode: 101, BuildErrors: []string{"src/lib.rs:9: error[E0425]: cannot find function `sub` in this scope"}}, ClassMissingImplementation},
		{"rust type error in a test file",
			Result{Runner: Cargo, ExitCode: 101, BuildErrors: []string{"tests/a.rs:3: error[E0308]: mismatched types"}}, ClassBrokenTest},
		{"rust type error in the code",
			Result{Runner: Cargo, ExitCode: 101, BuildErrors: []string{"src/lib.rs:3: error[E0308]: mismatched types"}}, ClassError},
		{"go type error beside an undefined",
			Result{Runner: Go, ExitCode: 1, BuildErrors: []string{"./a_test.go:3:1: undefined: Mul", `./a_test.go:9:5: cannot use "x" (untyped string constant) as int value in assignment`}},
			ClassBrokenTest},
		{"pytest NameError at a test module's import beside a missing module",
			Result{Runner: Pytest, ExitCode: 2, BuildErrors: []string{"tests/test_a.py:1: ModuleNotFoundError: No module named 'calc'", "tests/test_b.py:3: NameError: name 'x' is not defined"}},
			ClassBrokenTest},
		{"rust missing macro has no code",
			Result{Runner: Cargo, ExitCode: 101, BuildErrors: []string{"tests/a.rs:3: error: cannot find macro `nope` in this scope"}}, ClassMissingImplementation},
		{"some failures are not missing code",
			Result{Runner: Vitest, ExitCode: 1, Tests: []Test{fail("TypeError: sub is not a function"), fail("AssertionError: expected 1 to be 2")}},
			ClassAssertionFailure},
		{"ts syntax error in a test",
			Result{Runner: Vitest, ExitCode: 1, BuildErrors: []string{"src/a.test.ts:3: error TS1005: ',' expected."}}, ClassBrokenTest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			globs := []string(nil)
			if tt.name == "configured globs" {
				globs = []string{"tests/**"}
			}
			if got, reason := Classify(&tt.r, globs); got != tt.want {
				t.Errorf("Classify = %s (%s), want %s", got, reason, tt.want)
			}
		})
	}
}
