package testrun

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// Classify says why a run ended as it did (SPEC §7.2), and gives the line that decided it.
// globs name the test files (nil: DefaultGlobs); they tell a test file that does not
// compile (ClassBrokenTest) from code under test that does not.
//
// In order: a run that timed out or could not start its command (exit 126 or 127) is
// ClassError. An Exit run is ClassPass on exit 0 and ClassAssertionFailure otherwise. Then:
// a syntax error in a test file is ClassBrokenTest; a build error of a test that names code
// that does not exist (Go "undefined:", Python ImportError, TypeScript "Cannot find module",
// Rust E0425...) is ClassMissingImplementation; failed tests are ClassAssertionFailure, or
// ClassMissingImplementation when every one of them failed because a function is missing
// ("is not a function", Python's "module has no attribute"); any other build error is
// ClassError; exit 0 with a passed test is ClassPass; nothing run, with exit 0 or 5 or the
// runner saying so, is ClassNoTests; anything else is ClassError.
func Classify(r *Result, globs []string) (Class, string) {
	if globs == nil {
		globs = DefaultGlobs
	}
	switch {
	case r.TimedOut:
		return ClassError, "timed out"
	case r.ExitCode == 126 || r.ExitCode == 127:
		return ClassError, fmt.Sprintf("exit %d: %s", r.ExitCode, lastLine(r.Output))
	case r.Runner == Exit || r.Runner == "":
		switch r.ExitCode {
		case 0:
			return ClassPass, ""
		case -1:
			return ClassError, "ended by a signal"
		}
		return ClassAssertionFailure, fmt.Sprintf("exit %d: %s", r.ExitCode, lastLine(r.Output))
	}
	var broken, missing string
	for _, e := range r.BuildErrors {
		switch errorKind(r.Runner, e, globs) {
		case ClassBrokenTest:
			if broken == "" {
				broken = e
			}
		case ClassMissingImplementation:
			if missing == "" {
				missing = e
			}
		}
	}
	switch {
	case broken != "":
		return ClassBrokenTest, broken
	case missing != "":
		return ClassMissingImplementation, missing
	}
	var failed []Test
	passed := 0
	for _, t := range r.Tests {
		switch t.Status {
		case Failed:
			failed = append(failed, t)
		case Passed:
			passed++
		}
	}
	if len(failed) > 0 {
		allMissing := true
		for _, t := range failed {
			if !missingRE().MatchString(t.Output) {
				allMissing = false
				break
			}
		}
		if allMissing {
			t := failed[0]
			return ClassMissingImplementation, t.ID + ": " + lineAround(t.Output, missingRE().FindString(t.Output))
		}
		for _, t := range failed {
			if l := firstLine(t.Output); l != "" {
				return ClassAssertionFailure, t.ID + ": " + l
			}
		}
		return ClassAssertionFailure, failed[0].ID
	}
	switch {
	case len(r.BuildErrors) > 0:
		return ClassError, r.BuildErrors[0]
	case passed > 0 && r.ExitCode == 0:
		return ClassPass, ""
	case passed == 0 && (r.ExitCode == 0 || r.ExitCode == 5 || noTestsRE().MatchString(r.Output)):
		if m := noTestsRE().FindString(r.Output); m != "" {
			return ClassNoTests, m
		}
		return ClassNoTests, "no tests ran"
	}
	return ClassError, fmt.Sprintf("exit %d: %s", r.ExitCode, lastLine(r.Output))
}

var (
	// locRE reads the location of a build error: "path/x_test.go:7:13: message".
	locRE = lazyre.New(`^([^\s:]+):(\d+)(?::\d+)?: `)

	// missingRE matches what runners say when a test calls code that does not exist yet.
	missingRE = lazyre.New(strings.Join([]string{
		// Go
		`undefined: `, `has no field or method`, `unknown field \w+ in struct literal`, `no required module provides package`,
		`is not in std`, `cannot find package`, `could not import`,
		// Python
		`ModuleNotFoundError`, `ImportError`, `cannot import name`, `module '[^']+' has no attribute`,
		// JavaScript and TypeScript
		`Cannot find module`, `has no exported member`, `Failed to load url`, `Failed to resolve import`,
		`does not provide an export named`, `is not a function`, `is not a constructor`,
		`does not exist on type 'typeof import`,
		// Rust
		`error\[E0(?:425|432|433|412|422|599|609|560)\]`, `cannot find (?:function|value|type|struct|module|macro|trait)`,
		`unresolved import`,
	}, "|"))

	// syntaxRE matches a syntax error, per runner.
	syntaxRE = sync.OnceValue(func() map[Runner]*regexp.Regexp {
		return map[Runner]*regexp.Regexp{
			Go:     regexp.MustCompile(`: (?:syntax error|expected |illegal character|invalid character)`),
			Pytest: regexp.MustCompile(`\b(?:SyntaxError|IndentationError|TabError)\b`),
			Vitest: jsSyntaxRE(),
			Jest:   jsSyntaxRE(),
			// rustc gives error codes to its type and name errors, not to its parse errors.
			Cargo: regexp.MustCompile(`: error: |unclosed delimiter|closing delimiter|expected one of`),
		}
	})
	jsSyntaxRE = lazyre.New(`Transform failed|PARSE_ERROR|SyntaxError|Parse failure|Unexpected token|Expression expected|error TS1\d\d\d|Unterminated`)

	// noTestsRE matches what runners say when they ran no test.
	noTestsRE = lazyre.New(`no test files|No test files found|No tests found|no tests ran|no tests to run|running 0 tests`)
)

// errorKind says whether a build error is a broken test file, missing code called from a
// test, or something else (ClassError).
func errorKind(r Runner, e string, globs []string) Class {
	file := ""
	if m := locRE().FindStringSubmatch(e); m != nil {
		file = m[1]
	} else if f, _, ok := strings.Cut(e, ": "); ok && !strings.ContainsAny(f, " \t") && strings.Contains(f, ".") {
		file = f // "tests/test_x.py: ModuleNotFoundError: ..."
	}
	inTest := file != "" && IsTestFile(file, globs)
	if re := syntaxRE()[r]; re != nil && inTest && re.MatchString(e) {
		if !(r == Cargo && missingRE().MatchString(e)) { // "error: cannot find macro" has no code
			return ClassBrokenTest
		}
	}
	// Code missing for a test: named from a test file, or from nowhere in particular. Rust
	// keeps unit tests inside the code, so any file will do.
	if missingRE().MatchString(e) && (file == "" || inTest || r == Cargo) {
		return ClassMissingImplementation
	}
	// Any other build error located in a test file (a type error, an unused variable, a
	// NameError at import) is the test file's own: a broken test, even beside an
	// "undefined:" that would have made a RED.
	if inTest {
		return ClassBrokenTest
	}
	return ClassError
}

// firstLine returns the first line of a test's output that says something: not a Go
// "--- FAIL" or "=== RUN" line.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "=== ") {
			continue
		}
		return l
	}
	return ""
}

// lastLine returns the last line of s that is not blank.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// lineAround returns the line of s that holds sub.
func lineAround(s, sub string) string {
	i := strings.Index(s, sub)
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s) - i
	}
	l := strings.TrimSpace(s[start : i+end])
	if strings.HasPrefix(l, "E ") { // pytest marks the exception's line
		l = strings.TrimSpace(l[2:])
	}
	return l
}
