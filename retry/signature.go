package retry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// A Type is the kind of a failed attempt (SPEC §8.1). It is the first input of a failure
// signature and is written as an issue's Root Cause.
type Type string

// The failure types of SPEC §8.1, and broken_test: the false RED of a broken test file
// (§7.2), told apart from the others so that its retry prompt and issue say so.
const (
	BuildFails      Type = "build_fails"      // the build (or the test build) does not compile
	TestFails       Type = "test_fails"       // tests ran and some failed
	FalseRed        Type = "false_red"        // a RED gate failed for the wrong reason (§7.2)
	BrokenTest      Type = "broken_test"      // a false RED: a test file does not build, or fails by what its own code raised (§7.2)
	NoMarker        Type = "no_marker"        // the agent exited with no marker and no result block
	Timeout         Type = "timeout"          // the attempt ran out of time
	AgentLost       Type = "agent_lost"       // the agent was gone after a crash of the orchestrator
	TestTampered    Type = "test_tampered"    // a RED test file changed during GREEN (§7.3)
	Regression      Type = "regression"       // a baseline test no longer passes (§7.5)
	FormatViolation Type = "format_violation" // no valid tdd-result block (§10.3)
	ScopeViolation  Type = "scope_violation"  // the agent changed files it may not change
	QAFailure       Type = "qa_failure"       // the spot check failed (§11.1)
	VerifyFails     Type = "verify_fails"     // a VERIFY task's tests failed (§7.4)
	ReviewRejected  Type = "review_rejected"  // the judge failed a change whose tests pass (§11.2)
	// ForgedResults: the test runner's report cannot be trusted (§7.6). The gate plants two
	// tests of its own beside the tests it runs, one that must pass and one that must fail,
	// named at random for the run; the report got them wrong, so something in the run (a
	// TestMain, an init function, a conftest.py hook, a runner plugin) rewrote the results,
	// and none of them count.
	ForgedResults Type = "forged_results"
)

// Types lists every Type, in the order of SPEC §8.1, then forged_results (§7.6).
var Types = []Type{
	BuildFails, TestFails, FalseRed, BrokenTest, NoMarker, Timeout, AgentLost, TestTampered, Regression,
	FormatViolation, ScopeViolation, QAFailure, VerifyFails, ForgedResults, ReviewRejected,
}

// Valid reports whether t is one of Types.
func (t Type) Valid() bool { return slices.Contains(Types, t) }

// ParseType returns the Type named s, or an error that lists the valid ones.
func ParseType(s string) (Type, error) {
	t := Type(strings.TrimSpace(s))
	if !t.Valid() {
		names := make([]string, len(Types))
		for i, k := range Types {
			names[i] = string(k)
		}
		return "", fmt.Errorf("unknown failure type %q (want one of %s)", s, strings.Join(names, ", "))
	}
	return t, nil
}

// Signature returns the failure signature of SPEC §8.1: the first 16 hex digits of
// SHA-256(type + "\n" + Normalize(primaryError) + "\n" + failingTest + "\n" + file). The test
// name and the file are used as given, less surrounding spaces: callers pass the runner's
// test name and a path relative to the repository, which do not change between runs.
func Signature(t Type, primaryError, failingTest, file string) string {
	sum := sha256.Sum256([]byte(string(t) + "\n" + Normalize(primaryError) + "\n" +
		strings.TrimSpace(failingTest) + "\n" + strings.TrimSpace(file)))
	return hex.EncodeToString(sum[:8])
}

// Placeholders that Normalize writes in place of what changes from run to run.
const (
	phTemp = "<TMP>"
	phDur  = "<DUR>"
	phTime = "<TIME>"
	phAddr = "<ADDR>"
	phNum  = "<N>"
	phPID  = "<PID>"
)

var (
	// ansiRE matches terminal escape sequences: CSI (colours, cursor moves) and OSC (titles,
	// links).
	ansiRE = lazyre.New("\x1b\\[[0-9;?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\\\-_]")

	// tempRE matches a path under a temporary folder (/tmp, macOS's /var/folders/xx/yyyy/T),
	// at the start of a word: not /home/me/tmp/x.
	tempRE = lazyre.New(`(^|[^\w./~>-])((?:/private)?/var/folders(?:/[^\s'"` + "`" + `:,;()\[\]{}<>]*)?|/tmp(?:/[^\s'"` + "`" + `:,;()\[\]{}<>]*|\b))`)

	// timestampRE matches dates with a time: RFC 3339 (2026-01-07T10:00:00.123Z,
	// 2026-01-07T10:00:00+01:00), 2026-01-07 10:00:00 and Go's log format 2026/01/07 10:00:00.
	timestampRE = lazyre.New(`\b\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?)?`)

	// clockRE matches a time of day, 10:00:00 or 10:00:00.123. The caller checks that it is
	// not the line:col part of a position (file.go:10:20:30 does not occur, but a position
	// followed by a number might).
	clockRE = lazyre.New(`\b(?:[01]?\d|2[0-3]):[0-5]\d:[0-5]\d(?:[.,]\d+)?\b`)

	// durationRE matches durations: 0.01s, 12ms, 1m2.5s, 3.2µs, 150ns, "3 ms" (jest),
	// "0.05 seconds". A bare number is never a duration.
	durationRE = lazyre.New(`\b(?:\d+(?:\.\d+)?(?:h|m(?:in)?|s|ms|us|µs|ns))+\b|\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|secs?|seconds?|minutes?)\b|\d+(?:\.\d+)?µs`)

	// addrRE matches memory addresses such as 0xc000123456 or 0x55c980: six hex digits or
	// more, so that small constants (0x0, 0xff) in messages stay.
	addrRE = lazyre.New(`\b0x[0-9a-fA-F]{6,}\b`)

	goroutineRE = lazyre.New(`\bgoroutine \d+\b`)

	// pidRE matches "pid 1234", "pid=1234" and "PID: 1234"; bracketRE a number of three or
	// more digits in brackets ("[1234]"), as loggers print a process ID.
	pidRE      = lazyre.New(`(?i)\b(pid)(\s*[=:]?\s*)\d+\b`)
	bracketRE  = lazyre.New(`\[\d{3,}\]`)
	threadIDRE = lazyre.New(`(thread '[^']*') \(\d+\)`) // Rust 1.89+: thread 'x' (12345) panicked
	spacesRE   = lazyre.New(`\s+`)
)

// Normalize rewrites one line of runner output so that the same failure reads the same in
// every run (SPEC §8.1): it removes ANSI escape codes and replaces temp folders (/tmp/...,
// /var/folders/...: only the path's last element is kept, as <TMP>/name), timestamps and
// times of day (<TIME>), durations (<DUR>), memory addresses (<ADDR>), goroutine numbers
// (goroutine <N>), process and thread IDs (<PID>) with placeholders; then it collapses runs
// of white space to one space and trims the ends. Positions such as file.go:3:5 stay: they
// tell failures apart.
func Normalize(line string) string {
	s := strings.ReplaceAll(ansiRE().ReplaceAllString(line, ""), "\x1b", "") // and a stray ESC
	s = spacesRE().ReplaceAllString(s, " ")
	s = replaceTemp(s)
	s = timestampRE().ReplaceAllStringFunc(s, func(m string) string {
		if !strings.Contains(m[10:], ":") {
			return m // a date alone is not a timestamp of the run
		}
		return phTime
	})
	s = replaceClock(s)
	s = addrRE().ReplaceAllString(s, phAddr)
	s = goroutineRE().ReplaceAllString(s, "goroutine "+phNum)
	s = threadIDRE().ReplaceAllString(s, "$1 ("+phPID+")")
	s = pidRE().ReplaceAllString(s, "${1}${2}"+phPID)
	s = bracketRE().ReplaceAllString(s, "["+phPID+"]")
	s = durationRE().ReplaceAllString(s, phDur)
	s = spacesRE().ReplaceAllString(s, " ")
	return strings.TrimSpace(s)
}

// replaceClock replaces times of day that are not part of a file:line:col position.
func replaceClock(s string) string {
	ms := clockRE().FindAllStringIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if m[0] > 0 && s[m[0]-1] == ':' {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(phTime)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// replaceTemp replaces paths under a temporary folder. Test frameworks name the folders
// between the temp root and the file at random or number them per run
// (/tmp/TestFoo123456/001/x, /tmp/pytest-of-root/pytest-3/test_x0/x, go-build folders,
// mktemp's tmp.XXXXXXXXXX), so only the last element of a path is kept (<TMP>/x), and a
// path that names a folder just under the temp root is <TMP> alone.
func replaceTemp(s string) string {
	ms := tempRE().FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		start, end := m[4], m[5]
		p := s[start:end]
		trimmed := strings.TrimRight(p, "/.")
		elems := strings.Split(strings.Trim(trimmed, "/"), "/")
		// The temp root: /tmp, or macOS's [/private]/var/folders/xx/yyyy/T.
		root := 1
		switch elems[0] {
		case "var":
			root = 5
		case "private":
			root = 6
		}
		rest := elems[min(root, len(elems)):]
		b.WriteString(s[last:start])
		b.WriteString(phTemp)
		if len(rest) >= 2 {
			b.WriteString("/" + rest[len(rest)-1])
		}
		b.WriteString(p[len(trimmed):])
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}
