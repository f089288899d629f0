// Package review holds what the reviewer and the judge (SPEC §11.2) are given besides the
// change itself: deterministic pre-checks of a change, computed from its patch and the
// tests it is judged by, and recorded whatever the reviewer says; the parsing of the
// reviewer's notes and the judge's verdict; and what a review decides from them, with its
// record (review.json).
//
// The pre-checks catch what a passing suite can hide: tests the change skipped or deleted,
// assertions it removed, the tests' expected values written into the implementation
// (answers hard-coded for the tests' inputs), behaviour switched by the environment (a stub
// behind a flag), and tests the implementer wrote itself. They are evidence, not verdicts:
// a literal may appear in honest code, and the judge decides.
package review

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// The kinds of a Finding.
const (
	KindTestDeleted      = "test_deleted"      // a test file or a test function removed
	KindTestSkipped      = "test_skipped"      // a skip added to a test
	KindAssertionRemoved = "assertion_removed" // an assertion line removed from a test
	KindHardCoded        = "hard_coded"        // a test's value written in the implementation
	KindEnvSwitch        = "env_switch"        // implementation that reads the environment or flags
	KindNewTest          = "new_test"          // a test the implementer wrote
)

// A Finding is one piece of evidence, at a file and line of the change (the new file's
// line for what was added, the old file's for what was removed).
type Finding struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	Detail string `json:"detail"`
	Text   string `json:"text,omitempty"` // the line itself, trimmed
}

func (f Finding) String() string {
	s := fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Kind, f.Detail)
	if f.Text != "" {
		s += ": " + f.Text
	}
	return s
}

// Prechecks are the pre-checks of one change.
type Prechecks struct {
	Findings []Finding `json:"findings"`
	// Mutation summarizes the last mutation run of the task's tests ("none" when none ran).
	Mutation string `json:"mutation"`
}

// Of returns the findings of one kind.
func (p *Prechecks) Of(kind string) []Finding {
	var out []Finding
	for _, f := range p.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// Text is the pre-checks as the reviewer and the judge read them: one finding per line.
func (p *Prechecks) Text() string {
	var b strings.Builder
	if len(p.Findings) == 0 {
		b.WriteString("no findings: no test skipped, deleted or weakened; no test value in the implementation's changed lines; no environment switch; no new test by the implementer\n")
	}
	for _, f := range p.Findings {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "mutation: %s\n", p.Mutation)
	return b.String()
}

// Input is what the pre-checks read.
type Input struct {
	// Patch is the change as `git diff` prints it (base to candidate).
	Patch string
	// IsTest says whether a path is a test file (config test_globs).
	IsTest func(path string) bool
	// Tests are the contents of the tests the change is judged by, by path: the tests of
	// the task's TEST dependencies, as they are in the candidate.
	Tests map[string]string
	// Mutation summarizes the last mutation run, "" for none.
	Mutation string
}

// Check computes the pre-checks of a change.
func Check(in Input) *Prechecks {
	p := &Prechecks{Mutation: in.Mutation}
	if p.Mutation == "" {
		p.Mutation = "none"
	}
	files := ParsePatch(in.Patch)
	values := expectedValues(in.Tests)
	for _, f := range files {
		path := f.New
		if f.Deleted {
			path = f.Old
		}
		if in.IsTest(path) {
			p.Findings = append(p.Findings, testFindings(f, path)...)
			continue
		}
		for _, l := range f.Added {
			code := strings.TrimSpace(l.Text)
			if code == "" || isComment(code) {
				continue
			}
			for _, lit := range literals(stripComment(code)) {
				if src, ok := values[lit]; ok {
					p.Findings = append(p.Findings, Finding{Kind: KindHardCoded, File: path, Line: l.N,
						Detail: fmt.Sprintf("%s, a value of the tests (%s), in the implementation", lit, src), Text: code})
				}
			}
			if envSwitch().MatchString(code) {
				p.Findings = append(p.Findings, Finding{Kind: KindEnvSwitch, File: path, Line: l.N,
					Detail: "the implementation reads the environment or a flag", Text: code})
			}
		}
	}
	return p
}

// testFindings are the findings in a test file's part of the patch.
func testFindings(f FilePatch, path string) []Finding {
	var out []Finding
	if f.Deleted {
		return []Finding{{Kind: KindTestDeleted, File: path, Line: 1, Detail: "test file deleted"}}
	}
	added := map[string]bool{}
	for _, l := range f.Added {
		added[strings.TrimSpace(l.Text)] = true
	}
	removedAsserts := 0
	for _, l := range f.Removed {
		t := strings.TrimSpace(l.Text)
		if added[t] {
			continue // moved, not removed
		}
		if name := testName(t); name != "" {
			out = append(out, Finding{Kind: KindTestDeleted, File: path, Line: l.N, Detail: "test " + name + " removed", Text: t})
		} else if assertion().MatchString(t) {
			removedAsserts++
			out = append(out, Finding{Kind: KindAssertionRemoved, File: path, Line: l.N, Detail: "assertion removed", Text: t})
		}
	}
	for _, l := range f.Added {
		t := strings.TrimSpace(l.Text)
		if skip().MatchString(t) {
			out = append(out, Finding{Kind: KindTestSkipped, File: path, Line: l.N, Detail: "skip added", Text: t})
		}
		if name := testName(t); name != "" {
			out = append(out, Finding{Kind: KindNewTest, File: path, Line: l.N, Detail: "test " + name + " added by the implementer", Text: t})
		}
	}
	if f.Created {
		out = append(out, Finding{Kind: KindNewTest, File: path, Line: 1, Detail: "test file added by the implementer"})
	}
	return out
}

var (
	goTest     = lazyre.New(`^func\s+(Test\w*)\s*\(`)
	pyTest     = lazyre.New(`^(?:async\s+)?def\s+(test\w*)\s*\(`)
	jsTest     = lazyre.New(`^(?:it|test)(?:\.only)?\s*\(\s*(['"` + "`" + `])(.*?)['"` + "`" + `]`)
	assertion  = lazyre.New(`\bassert|\bexpect\s*\(|\bt\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\b|\brequire\.|\bassert\.|\.toBe|\.toEqual|\bself\.assert|\bpanic\(`)
	skip       = lazyre.New(`\bt\.Skip(f|Now)?\s*\(|@pytest\.mark\.(skip|skipif|xfail)\b|\bpytest\.skip\s*\(|@unittest\.skip|\b(it|test|describe)\.skip\s*\(|\bx(it|describe|test)\s*\(|\.todo\s*\(`)
	envSwitch  = lazyre.New(`\bos\.(Getenv|LookupEnv|Environ)\b|\bos\.environ\b|\bos\.getenv\b|\bprocess\.env\b|\bflag\.(Bool|String|Int|Parse)\b|\bsys\.argv\b|\btesting\.Testing\(\)|PYTEST_CURRENT_TEST|"testing"|\bsys\.modules\b`)
	numberLit  = lazyre.New(`(?:^|[^\w.])(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\b`)
	stringLit  = lazyre.New(`"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'`)
	valueLine  = lazyre.New(`\bassert|\bexpect|\bwant|\bexpected|\bEqual|==|!=|\.toBe|\.toEqual|\bt\.(Error|Fatal)`)
	testCaseKV = lazyre.New(`^\{.*\},?$|^\(.*\),?$|^\[.*\],?$`)
)

func testName(line string) string {
	for _, re := range [](func() *regexp.Regexp){goTest, pyTest} {
		if m := re().FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	if m := jsTest().FindStringSubmatch(line); m != nil {
		return strconv.Quote(m[2])
	}
	return ""
}

func isComment(code string) bool {
	return strings.HasPrefix(code, "//") || strings.HasPrefix(code, "#") || strings.HasPrefix(code, "/*") || strings.HasPrefix(code, "*")
}

// stripComment cuts a trailing // or # comment (outside strings, roughly: the last
// marker after the last quote).
func stripComment(code string) string {
	q := strings.LastIndexAny(code, `"'`)
	for _, m := range []string{"//", " #"} {
		if i := strings.LastIndex(code, m); i > q && i >= 0 {
			code = code[:i]
		}
	}
	return code
}

// trivial literals say nothing about hard-coding: they are in every program.
var trivial = map[string]bool{"0": true, "1": true, "-1": true, "0.0": true, "1.0": true, `""`: true, `''`: true}

// literals returns the number and string literals of a line of code, strings quoted with
// double quotes whatever the source used, in order and without repeats.
func literals(code string) []string {
	var out []string
	add := func(s string) {
		if !trivial[s] && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	rest := code
	for _, m := range stringLit().FindAllStringSubmatch(code, -1) {
		s := m[1]
		if m[0][0] == '\'' {
			s = m[2]
		}
		rest = strings.Replace(rest, m[0], " ", 1)
		if meaningfulString(s) {
			add(strconv.Quote(s))
		}
	}
	for _, m := range numberLit().FindAllStringSubmatch(rest, -1) {
		add(m[1])
	}
	return out
}

// meaningfulString reports whether a string literal can be an expected value, not a
// message format or an import path.
func meaningfulString(s string) bool {
	if len(s) < 2 || strings.Contains(s, "%") || strings.Contains(s, "{") {
		return false
	}
	return !strings.Contains(s, "/") || strings.Contains(s, " ")
}

// expectedValues returns the literals of the tests' assertion and test-case lines (the
// values a hard-coded implementation would copy), each with where it was first seen.
func expectedValues(tests map[string]string) map[string]string {
	values := map[string]string{}
	paths := make([]string, 0, len(tests))
	for p := range tests {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		for i, line := range strings.Split(tests[p], "\n") {
			t := strings.TrimSpace(line)
			if t == "" || isComment(t) || strings.HasPrefix(t, "import") || strings.HasPrefix(t, "package") || strings.HasPrefix(t, "from ") {
				continue
			}
			if !valueLine().MatchString(t) && !testCaseKV().MatchString(t) {
				continue
			}
			for _, lit := range literals(stripComment(t)) {
				if _, ok := values[lit]; !ok {
					values[lit] = fmt.Sprintf("%s:%d", p, i+1)
				}
			}
		}
	}
	return values
}

// A Line is a line of a patch, with its number in its file.
type Line struct {
	N    int
	Text string
}

// A FilePatch is one file's part of a patch.
type FilePatch struct {
	Old, New         string
	Created, Deleted bool
	Added, Removed   []Line
}

// ParsePatch reads a `git diff` patch into its files' added and removed lines.
func ParsePatch(patch string) []FilePatch {
	var files []FilePatch
	var cur *FilePatch
	oldN, newN := 0, 0
	inHunk := false
	for _, line := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			files = append(files, FilePatch{})
			cur = &files[len(files)-1]
			inHunk = false
			if a, b, ok := strings.Cut(strings.TrimPrefix(line, "diff --git "), " b/"); ok {
				cur.Old, cur.New = strings.TrimPrefix(a, "a/"), b
			}
		case cur == nil:
		case !inHunk && strings.HasPrefix(line, "new file mode"):
			cur.Created = true
		case !inHunk && strings.HasPrefix(line, "deleted file mode"):
			cur.Deleted = true
		case !inHunk && strings.HasPrefix(line, "--- "):
			if p := strings.TrimPrefix(line, "--- "); strings.HasPrefix(p, "a/") {
				cur.Old = p[2:]
			}
		case !inHunk && strings.HasPrefix(line, "+++ "):
			if p := strings.TrimPrefix(line, "+++ "); strings.HasPrefix(p, "b/") {
				cur.New = p[2:]
			}
		case strings.HasPrefix(line, "@@ "):
			inHunk = true
			var a, b int
			hdr := strings.Fields(line)
			if len(hdr) >= 3 {
				a = atoiRange(hdr[1])
				b = atoiRange(hdr[2])
			}
			oldN, newN = a, b
		case inHunk && strings.HasPrefix(line, "+"):
			cur.Added = append(cur.Added, Line{newN, line[1:]})
			newN++
		case inHunk && strings.HasPrefix(line, "-"):
			cur.Removed = append(cur.Removed, Line{oldN, line[1:]})
			oldN++
		case inHunk && strings.HasPrefix(line, " "):
			oldN++
			newN++
		}
	}
	return files
}

// atoiRange reads the start of a hunk range, "-12,3" or "+7".
func atoiRange(s string) int {
	s = strings.TrimLeft(s, "-+")
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	n, _ := strconv.Atoi(s)
	return n
}
