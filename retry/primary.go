package retry

import (
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// Patterns of error lines in the output of the runners of SPEC §7.5. Lines are matched
// after their ANSI codes are removed.
var (
	// go test
	goCompileRE = lazyre.New(`^(?:\.{1,2}/)?[\w.\-/]+\.go:\d+(?::\d+)?: \S`) // ./x.go:3:5: undefined: Add
	goFailRE    = lazyre.New(`^(\s*)--- FAIL: (\S+)`)                        // --- FAIL: TestX (0.00s)
	goLogRE     = lazyre.New(`^\s+[\w.\-]+\.go:\d+: \S`)                     //     x_test.go:8: got 5, want 4
	goRunRE     = lazyre.New(`^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)`)
	goPanicRE   = lazyre.New(`^(?:panic: |fatal error: )`)
	goPkgFailRE = lazyre.New(`^FAIL\t\S`) // FAIL	example.com/calc [build failed]

	// pytest
	pyELineRE      = lazyre.New(`^E\s+\S`)                            // E   AssertionError: ...
	pyFailedRE     = lazyre.New(`^(?:FAILED|ERROR) (\S+)(?: - .*)?$`) // FAILED tests/x.py::test_y - ...
	pyCollectingRE = lazyre.New(`^_+ ERROR collecting (\S+) _+$`)
	pyHeaderRE     = lazyre.New(`^_{3,} (\S.*?) _{3,}$`) // ____ test_entries ____

	// vitest and jest
	jsFailRE  = lazyre.New(`^\s*FAIL {1,2}(\S.*)$`) // " FAIL  x.test.ts > a > b" (vitest), "FAIL ./x.test.js" (jest)
	jsErrorRE = lazyre.New(`^\s*(?:[A-Z]\w*)?Error(?:\s*\[[\w-]+\])?: \S`)
	jestDotRE = lazyre.New(`^\s*● (.+)$`)
	tsErrorRE = lazyre.New(`\berror TS\d+: `)

	// cargo test
	rustErrorRE = lazyre.New(`^error(?:\[E\d+\])?: \S`)
	rustPanicRE = lazyre.New(`^thread '([^']*)'(?: \(\d+\))? panicked at `)
	rustTestRE  = lazyre.New(`^---- (\S+) stdout ----$`)

	// valueRE matches the lines after a generic assertion message that hold the values
	// compared: jest's "Expected: 4" / "Received: 5", Rust's "left: 5" / "right: 4".
	valueRE = lazyre.New(`^\s*(?:Expected|Received|left|right): \S`)

	// decorationRE matches lines that are only rules and banners: ====, ----, ⎯⎯⎯⎯.
	decorationRE = lazyre.New(`^[\s=\-_*#~⎯─━.]*$`)
)

// lines splits output into lines without their line endings and without ANSI codes.
func lines(output string) []string {
	out := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	for i, l := range out {
		if strings.IndexByte(l, 0x1b) >= 0 {
			l = ansiRE().ReplaceAllString(l, "")
		}
		out[i] = strings.TrimRight(l, " \t\r")
	}
	return out
}

// PrimaryError returns the first error line of a gate's output (SPEC §8.1), without ANSI
// codes and surrounding spaces. It knows the runners of SPEC §7.5:
//
//   - go test: a compile error (./x.go:3:5: undefined: Add), a panic or fatal error, or a
//     failed test: for "--- FAIL: TestX" the first line the test logged (x_test.go:8: got
//     5, want 4, found after the FAIL line, or before it in -v output) or the panic that
//     follows it, else the FAIL line itself; "FAIL\tpkg" only when there is nothing better;
//   - pytest: the first "E   ..." line (AssertionError: ..., ModuleNotFoundError: ...), else
//     a "FAILED x.py::test_y - ..." or "ERROR x.py" line, else "ERROR collecting x.py";
//   - vitest and jest: the error under the first FAIL heading (AssertionError: expected 2
//     to be 3; Error: Cannot find module ...; for jest, the first line under "● ..."), else
//     the FAIL line; a TypeScript compile error (error TS2305: ...);
//   - cargo test: an error[E0425]: ... line, or "thread '...' panicked at src/x.rs:3:5:"
//     joined with the message on the next line, as Rust printed it before 1.73.
//
// Where the message does not show the values compared (jest's "expect(received).toBe(
// expected)", Rust's "assertion `left == right` failed"), the value lines that follow it
// are joined to it ("; Expected: 4; Received: 5"), so that a different wrong value is a
// different failure.
//
// Of these, the one that comes first in the output wins. Failing that, it returns the first
// line that looks like an error (Error: ..., SomethingError: ..., error: ...), and failing
// that the first non-empty line that is not a rule of = or - signs. Output with no text
// gives "".
func PrimaryError(output string) string {
	ls := lines(output)
	if text := earliest(ls, goPrimary, pytestPrimary, jsPrimary, cargoPrimary); text != "" {
		return text
	}
	for _, l := range ls {
		if goPkgFailRE().MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range ls {
		if jsErrorRE().MatchString(l) || rustErrorRE().MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range ls {
		if !decorationRE().MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// goPrimary finds the first go test error line: its index and its text.
func goPrimary(ls []string) (int, string) {
	for i, l := range ls {
		switch {
		case strings.Contains(l, ".go:") && goCompileRE().MatchString(l), goPanicRE().MatchString(l):
			return i, l
		case goFailRE().MatchString(l):
			return i, goFailMessage(ls, i)
		}
	}
	return -1, ""
}

// goFailMessage returns the message of the failed test whose "--- FAIL" line is ls[i].
func goFailMessage(ls []string, i int) string {
	// Without -v, what the test logged follows its FAIL line, indented (with the FAIL lines
	// of its subtests), and a panic follows unindented.
	j := i + 1
	for ; j < len(ls) && (strings.HasPrefix(ls[j], " ") || strings.HasPrefix(ls[j], "\t")); j++ {
		if goLogRE().MatchString(ls[j]) {
			return ls[j]
		}
	}
	if j < len(ls) && goPanicRE().MatchString(ls[j]) {
		return ls[j]
	}
	// With -v, it comes before: after the test's own === RUN (or CONT, NAME) line.
	name := goFailRE().FindStringSubmatch(ls[i])[2]
	start := -1
	for k := i - 1; k >= 0; k-- {
		if m := goRunRE().FindStringSubmatch(ls[k]); m != nil {
			if m[1] == name || strings.HasPrefix(m[1], name+"/") {
				start = k
				continue
			}
			break
		}
	}
	if start >= 0 {
		for k := start + 1; k < i; k++ {
			if goLogRE().MatchString(ls[k]) {
				return ls[k]
			}
		}
	}
	return ls[i]
}

// pytestPrimary finds pytest's first error line.
func pytestPrimary(ls []string) (int, string) {
	for i, l := range ls {
		if pyELineRE().MatchString(l) {
			return i, l
		}
	}
	for i, l := range ls {
		if pyFailedRE().MatchString(l) {
			return i, l
		}
	}
	for i, l := range ls {
		if m := pyCollectingRE().FindStringSubmatch(l); m != nil {
			return i, "ERROR collecting " + m[1]
		}
	}
	return -1, ""
}

// jsPrimary finds the first vitest or jest failure: the error under its FAIL heading.
func jsPrimary(ls []string) (int, string) {
	for i, l := range ls {
		if strings.Contains(l, "error TS") && tsErrorRE().MatchString(l) {
			return i, l
		}
		if !jsFailRE().MatchString(l) || strings.HasPrefix(l, "FAIL\t") {
			continue
		}
		for j := i + 1; j < len(ls) && j <= i+40; j++ {
			if jsFailRE().MatchString(ls[j]) {
				break
			}
			if jsErrorRE().MatchString(ls[j]) {
				return i, ls[j]
			}
			if jestDotRE().MatchString(ls[j]) {
				for k := j + 1; k < len(ls); k++ {
					if strings.TrimSpace(ls[k]) != "" {
						return i, withValues(ls, k)
					}
				}
			}
		}
		return i, l
	}
	return -1, ""
}

// cargoPrimary finds the first compile error or panic of cargo test.
func cargoPrimary(ls []string) (int, string) {
	for i, l := range ls {
		if rustErrorRE().MatchString(l) && !strings.HasPrefix(l, "error: test failed") {
			return i, l
		}
		if rustPanicRE().MatchString(l) {
			// Since Rust 1.73 the message is on the next line: "panicked at src/lib.rs:11:9:".
			if strings.HasSuffix(l, ":") && i+1 < len(ls) && strings.TrimSpace(ls[i+1]) != "" {
				return i, strings.TrimSpace(l + " " + withValues(ls, i+1))
			}
			return i, l
		}
	}
	return -1, ""
}

// withValues returns ls[k] with the values that the lines after it show, when ls[k] is a
// message that does not show them itself: jest's "expect(received).toBe(expected)" and
// Rust's "assertion `left == right` failed" read the same whatever the values were, and an
// attempt that turns a 5 into a 3 has not failed in the same way.
func withValues(ls []string, k int) string {
	out := strings.TrimSpace(ls[k])
	seen := 0
	for j := k + 1; j < len(ls) && j <= k+6 && seen < 2; j++ {
		l := strings.TrimSpace(ls[j])
		switch {
		case l == "" && seen == 0:
			continue
		case valueRE().MatchString(ls[j]):
			out += "; " + l
			seen++
			continue
		}
		break
	}
	return out
}

// FailingTest returns the name of the first failing test in a gate's output, in the
// runner's own terms (SPEC §7.5): TestX or TestX/sub for go test (the innermost failed
// subtest of the first failure), a node ID (tests/x.py::test_y) for pytest, "file > describe
// > name" for vitest and jest, tests::name for cargo test. A file that failed to load gives
// the file's name. It returns "" when it finds none.
func FailingTest(output string) string {
	return earliest(lines(output), goFailingTest, pytestFailingTest, jsFailingTest, cargoFailingTest)
}

// earliest runs each runner's finder on ls and returns the text found at the smallest line
// index (the first finder's on a tie), trimmed, or "" when none finds anything.
func earliest(ls []string, finders ...func([]string) (int, string)) string {
	best, text := len(ls), ""
	for _, find := range finders {
		if i, s := find(ls); i >= 0 && i < best && s != "" {
			best, text = i, strings.TrimSpace(s)
		}
	}
	return text
}

func goFailingTest(ls []string) (int, string) {
	for i, l := range ls {
		m := goFailRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := m[2]
		for j := i + 1; j < len(ls) && (strings.HasPrefix(ls[j], " ") || strings.HasPrefix(ls[j], "\t")); j++ {
			if goLogRE().MatchString(ls[j]) {
				break
			}
			if n := goFailRE().FindStringSubmatch(ls[j]); n != nil && strings.HasPrefix(n[2], name+"/") {
				name = n[2]
			}
		}
		return i, name
	}
	return -1, ""
}

func pytestFailingTest(ls []string) (int, string) {
	// The short summary names the test by node ID; it comes last, but the test failed where
	// its section begins.
	for i, l := range ls {
		if m := pyCollectingRE().FindStringSubmatch(l); m != nil {
			return i, m[1]
		}
	}
	first := -1
	for i, l := range ls {
		if strings.Contains(l, " FAILURES ") && strings.HasPrefix(l, "=") {
			if i+1 < len(ls) {
				first = i + 1
			}
			break
		}
	}
	for _, l := range ls {
		if m := pyFailedRE().FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "FAILED") {
			if first < 0 {
				first = 0
			}
			return first, m[1]
		}
	}
	if first >= 0 && first < len(ls) {
		if m := pyHeaderRE().FindStringSubmatch(ls[first]); m != nil {
			return first, m[1]
		}
	}
	return -1, ""
}

func jsFailingTest(ls []string) (int, string) {
	for i, l := range ls {
		m := jsFailRE().FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(l, "FAIL\t") {
			continue
		}
		head := strings.TrimSpace(m[1])
		// vitest: "x.test.ts > a > b", or "x.test.ts [ x.test.ts ]" for a file that failed.
		if k := strings.Index(head, " [ "); k >= 0 {
			head = head[:k]
		}
		if strings.Contains(head, " > ") {
			return i, head
		}
		file := strings.TrimPrefix(head, "./")
		// jest: "FAIL ./x.test.js" with "● a › b" under it.
		for j := i + 1; j < len(ls); j++ {
			if jsFailRE().MatchString(ls[j]) {
				break
			}
			if d := jestDotRE().FindStringSubmatch(ls[j]); d != nil {
				if d[1] == "Test suite failed to run" {
					break
				}
				return i, file + " > " + strings.Join(strings.Split(d[1], " › "), " > ")
			}
		}
		return i, file
	}
	return -1, ""
}

func cargoFailingTest(ls []string) (int, string) {
	for i, l := range ls {
		if m := rustTestRE().FindStringSubmatch(l); m != nil {
			return i, m[1]
		}
		if m := rustPanicRE().FindStringSubmatch(l); m != nil && m[1] != "main" && m[1] != "<unnamed>" {
			return i, m[1]
		}
	}
	return -1, ""
}
