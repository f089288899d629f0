package testrun

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// cargoParser reads cargo test's output: cargo's compile errors, and libtest's human
// output of each test binary (one "test name ... ok" line per test, then the failures).
type cargoParser struct {
	tests []Test
	build []string
	file  string         // the source of the test binary now running
	index map[string]int // tests of the binary now running, by name
	// The compile error being read, waiting for its location.
	pending string
	// The failure output being read: "---- name stdout ----" until the next one.
	failing string
	out     capped
}

var (
	cargoTestRE    = lazyre.New(`^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?)$`)
	cargoRunningRE = lazyre.New(`^\s*Running (?:unittests )?(\S+)`)
	cargoDocRE     = lazyre.New(`^\s*Doc-tests (\S+)`)
	cargoStdoutRE  = lazyre.New(`^---- (.+) stdout ----$`)
	cargoErrorRE   = lazyre.New(`^error(\[E\d+\])?: (.*)$`)
	cargoLocRE     = lazyre.New(`^\s*--> (\S+?):(\d+):\d+`)
)

// cargoSummaryErrors are error lines that sum up, rather than report, a failure.
var cargoSummaryErrors = []string{"could not compile", "test failed, to rerun", "target failed", "targets failed", "aborting due to", "build failed", "no library targets"}

func (p *cargoParser) line(s string) {
	if m := cargoErrorRE().FindStringSubmatch(s); m != nil {
		p.flushError()
		for _, sum := range cargoSummaryErrors {
			if strings.Contains(m[2], sum) {
				return
			}
		}
		p.pending = "error" + m[1] + ": " + m[2]
		return
	}
	if p.pending != "" {
		if m := cargoLocRE().FindStringSubmatch(s); m != nil {
			p.build = append(p.build, m[1]+":"+m[2]+": "+p.pending)
			p.pending = ""
			return
		}
	}
	if m := cargoRunningRE().FindStringSubmatch(s); m != nil {
		p.endFailure()
		p.file, p.index = m[1], map[string]int{}
		return
	}
	if m := cargoDocRE().FindStringSubmatch(s); m != nil {
		p.endFailure()
		p.file, p.index = "", map[string]int{}
		return
	}
	if m := cargoTestRE().FindStringSubmatch(s); m != nil {
		name := strings.TrimSuffix(m[1], " - should panic")
		t := Test{ID: name, Status: Passed, File: p.file}
		if p.file == "" {
			if f, _, ok := strings.Cut(name, " - "); ok { // a doc test: "src/lib.rs - add (line 3)"
				t.File = f
			}
		}
		switch {
		case m[2] == "FAILED":
			t.Status = Failed
		case strings.HasPrefix(m[2], "ignored"):
			t.Status = Skipped
		}
		if p.index == nil {
			p.index = map[string]int{}
		}
		p.index[name] = len(p.tests)
		p.tests = append(p.tests, t)
		return
	}
	if m := cargoStdoutRE().FindStringSubmatch(s); m != nil {
		p.endFailure()
		p.failing = strings.TrimSuffix(m[1], " - should panic")
		p.out = capped{max: maxTestOutput}
		return
	}
	if p.failing != "" {
		if s == "failures:" || strings.HasPrefix(s, "test result:") {
			p.endFailure()
			return
		}
		p.out.WriteString(s)
		p.out.WriteString("\n")
	}
}

// flushError keeps a compile error that had no location.
func (p *cargoParser) flushError() {
	if p.pending != "" {
		p.build = append(p.build, p.pending)
		p.pending = ""
	}
}

// endFailure gives the failure output read so far to its test.
func (p *cargoParser) endFailure() {
	if p.failing == "" {
		return
	}
	if i, ok := p.index[p.failing]; ok {
		p.tests[i].Output = strings.TrimSpace(p.out.String())
	}
	p.failing = ""
}

func (p *cargoParser) finish(res *Result, _ [][]byte) {
	p.flushError()
	p.endFailure()
	res.Tests = p.tests
	res.BuildErrors = p.build
}

// docLineRE matches a doc test's name as libtest gives it: "src/lib.rs - add (line 3)".
var docLineRE = lazyre.New(`^(.+ - .+) \(line (\d+)\)$`)

// DocTestIDs names the doc tests among ids (libtest's "src/lib.rs - add (line 3)") by what
// they test rather than where: "src/lib.rs - add", and "src/lib.rs - add (#2)" for the
// second code block of the same item, in line order. Code added above an item moves its
// doc tests' lines, not what they test: compared by line, every such change would read as
// the baseline's doc tests gone missing. (A test's ID keeps its line: it is the name that
// runs it, cargo test -- --exact.) Other IDs are as they were; ids is not changed.
func DocTestIDs(ids []string) []string {
	type doc struct {
		i, line int
	}
	groups := map[string][]doc{}
	for i, id := range ids {
		if m := docLineRE().FindStringSubmatch(id); m != nil {
			n, _ := strconv.Atoi(m[2])
			groups[m[1]] = append(groups[m[1]], doc{i, n})
		}
	}
	out := slices.Clone(ids)
	for base, g := range groups {
		slices.SortFunc(g, func(a, b doc) int { return cmp.Compare(a.line, b.line) })
		for k, d := range g {
			out[d.i] = base
			if k > 0 {
				out[d.i] = base + " (#" + strconv.Itoa(k+1) + ")"
			}
		}
	}
	return out
}
