package testrun

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// goEvent is one line of go test -json (cmd/test2json), with the build events of Go 1.24.
type goEvent struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// testOutput is the buffer of one test's output: its start, and the end of what does not
// fit, so that a test cannot hide its own panic behind a long log (the panic decides
// whether a RED is false, SPEC §7.2).
func testOutput() capped { return capped{max: maxTestOutput / 2, tail: maxTestOutput / 2} }

// goParser reads go test -json. Lines that are not JSON (build errors before Go 1.24, go
// command errors) are read as text.
type goParser struct {
	verbose bool
	sawJSON bool
	out     capped // what go test would print without -json
	tests   []Test
	open    map[string]*goOpen // running tests by package and name
	build   []string
	seen    map[string]bool // build error lines already kept
	// ended holds the outcome of every test that ended, by package and name; repeats says
	// that the command runs each test more than once (-count=N), when a test that ends
	// twice is no forgery.
	ended   map[string]string
	repeats bool
	forged  *ForgedError
	// pkgs is how each package ended (Result.Packages).
	pkgs map[string]Status
}

// goOpen is a test that has started and not yet ended.
type goOpen struct {
	out capped
}

func newGoParser(verbose bool, command string) *goParser {
	repeats := false
	if m := goCountRE().FindStringSubmatch(command); m != nil && m[1] != "1" {
		repeats = true
	}
	return &goParser{
		verbose: verbose,
		out:     capped{max: maxOutput},
		open:    map[string]*goOpen{},
		seen:    map[string]bool{},
		ended:   map[string]string{},
		repeats: repeats,
	}
}

// goCountRE finds go test's -count flag and its value.
var goCountRE = lazyre.New(`(?:^|\s)--?(?:test\.)?count[= ](\d+)`)

func (p *goParser) line(s string) {
	if len(s) > 0 && s[0] == '{' {
		var e goEvent
		if json.Unmarshal([]byte(s), &e) == nil && e.Action != "" {
			p.sawJSON = true
			p.event(&e)
			return
		}
	}
	p.out.WriteString(s)
	p.out.WriteString("\n")
	p.buildLine(s)
}

func (p *goParser) event(e *goEvent) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		p.out.WriteString(e.Output)
		for _, l := range strings.Split(strings.TrimRight(e.Output, "\n"), "\n") {
			p.buildLine(l)
		}
	case "run":
		p.open[key] = &goOpen{out: testOutput()}
	case "output":
		if e.Test == "" {
			p.out.WriteString(e.Output)
			return
		}
		if p.verbose {
			p.out.WriteString(e.Output)
		}
		o := p.open[key]
		if o == nil {
			o = &goOpen{out: testOutput()}
			p.open[key] = o
		}
		if !strings.HasPrefix(e.Output, "=== ") { // === RUN, PAUSE, CONT, NAME
			o.out.WriteString(e.Output)
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			p.endPackage(e)
			return
		}
		p.endTest(e.Package, e.Test, e.Action)
	}
}

// endTest records a test that ended. The output of a failed subtest goes into its parent's,
// so that the parent's failure shows it in place, as go test prints it.
func (p *goParser) endTest(pkg, name, action string) {
	key := pkg + "\x00" + name
	if first, ok := p.ended[key]; ok && !p.repeats && p.forged == nil {
		// go test reports each test once: a second outcome was printed by something
		// in the test binary (an init function, a TestMain) to pass for the runner.
		p.forged = &ForgedError{Where: "package " + pkg, Stream: true,
			What: fmt.Sprintf("test %s is reported twice (%s, then %s)", name, first, action)}
	}
	p.ended[key] = action
	o := p.open[key]
	delete(p.open, key)
	t := Test{ID: pkg + "." + name, Status: Passed}
	switch action {
	case "fail":
		t.Status = Failed
	case "skip":
		t.Status = Skipped
	}
	if o != nil && t.Status != Passed {
		t.Output = headerFirst(o.out.String(), name)
		if o.out.lost {
			// The end is kept too: a panic after a long log is what says who failed.
			t.Output += "\n…(cut)…\n" + o.out.Tail()
		}
	}
	if t.Status == Failed {
		if i := strings.LastIndexByte(name, '/'); i > 0 && p.open[pkg+"\x00"+name[:i]] != nil {
			p.open[pkg+"\x00"+name[:i]].out.WriteString(t.Output)
		} else if !p.verbose {
			p.out.WriteString(t.Output)
		}
	}
	p.tests = append(p.tests, t)
}

// headerFirst moves a test's "--- FAIL: name (0.00s)" line, which test2json reports after
// the test's messages, before them, where go test without -json prints it.
func headerFirst(out, name string) string {
	for _, verb := range []string{"--- FAIL: ", "--- SKIP: "} {
		h := verb + name + " ("
		i := strings.Index(out, h)
		if i <= 0 || out[i-1] != '\n' {
			continue
		}
		end := strings.IndexByte(out[i:], '\n')
		if end < 0 {
			return out[i:] + "\n" + out[:i]
		}
		return out[i:i+end+1] + out[:i] + out[i+end+1:]
	}
	return out
}

// endPackage closes a package: tests still running when its test binary failed (a panic, a
// timeout, os.Exit) failed with it.
func (p *goParser) endPackage(e *goEvent) {
	if p.pkgs == nil {
		p.pkgs = map[string]Status{}
	}
	switch {
	case e.Action == "fail" || p.pkgs[e.Package] == Failed:
		p.pkgs[e.Package] = Failed // a second report does not undo a failure
	case e.Action == "skip":
		p.pkgs[e.Package] = Skipped
	default:
		p.pkgs[e.Package] = Passed
	}
	prefix := e.Package + "\x00"
	var running []string
	for k := range p.open {
		if strings.HasPrefix(k, prefix) {
			running = append(running, k[len(prefix):])
		}
	}
	if e.Action == "fail" && len(running) > 0 {
		// Deepest first, so that subtests end before their parents.
		sortByDepth(running)
		for _, name := range running {
			p.endTest(e.Package, name, "fail")
		}
		return
	}
	for _, name := range running {
		delete(p.open, prefix+name)
	}
}

// sortByDepth sorts test names deepest first, then by name.
func sortByDepth(names []string) {
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if di != dj {
			return di > dj
		}
		return names[i] < names[j]
	})
}

// goErrRE matches a compiler or vet error line: "./calc_test.go:7:13: undefined: Add".
var goErrRE = lazyre.New(`^\s*(\S+\.go):(\d+)(?::\d+)?: `)

// buildLine keeps a line of build output that reports an error.
func (p *goParser) buildLine(s string) {
	s = strings.TrimRight(s, " \t")
	switch {
	case goErrRE().MatchString(s):
		s = strings.TrimSpace(s)
	case strings.HasPrefix(s, "go: "):
		for _, quiet := range []string{"go: downloading ", "go: warning: ", "go: finding ", "go: extracting ", "go: found "} {
			if strings.HasPrefix(s, quiet) {
				return
			}
		}
	case strings.HasPrefix(s, "package ") && (strings.Contains(s, "is not in std") || strings.Contains(s, "no required module provides")),
		strings.Contains(s, ": no required module provides package"),
		strings.HasPrefix(s, "no required module provides package"):
	default:
		return
	}
	if !p.seen[s] {
		p.seen[s] = true
		p.build = append(p.build, s)
	}
}

func (p *goParser) finish(res *Result, _ [][]byte) {
	res.Tests = p.tests
	res.BuildErrors = p.build
	res.Packages = p.pkgs
	if p.forged != nil && res.Forged == nil {
		res.Forged = p.forged
	}
	if p.sawJSON {
		res.Output = p.out.String()
		if p.out.lost {
			res.Output += "\n…(output cut at 256 KiB)\n"
		}
	}
}
