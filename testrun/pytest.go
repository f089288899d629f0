package testrun

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// pytestParser reads pytest's JUnit XML report and, for what the report lacks (collection
// errors of a conftest, a run that wrote no report), its console output with -rA.
type pytestParser struct {
	root string
	// sessions is how many pytest commands the command line has (0: unknown).
	sessions int
	// The console section being read: "ERROR collecting <file>" or a conftest that failed
	// to load.
	section     string
	sectionFile string
	text        capped
	errors      []pyError
	summary     []Test // the -rA short summary, used when there is no report
	inSummary   bool
}

// A pyError is an error that kept a module from being collected.
type pyError struct {
	file string // the module being collected
	text string // pytest's report of it
}

func newPytestParser(root string, sessions int) *pytestParser {
	return &pytestParser{root: root, sessions: sessions}
}

var (
	pySubRE     = lazyre.New(`^_{3,} (.+?) _{3,}$`)
	pySectionRE = lazyre.New(`^={3,} (.+?) ={3,}$`)
	pyConftest  = lazyre.New(`^ImportError while loading conftest '(.+)'\.$`)
	pySummaryRE = lazyre.New(`^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+)(?: - (.*))?$`)
)

func (p *pytestParser) line(s string) {
	if m := pySubRE().FindStringSubmatch(s); m != nil {
		p.endSection()
		if f, ok := strings.CutPrefix(m[1], "ERROR collecting "); ok {
			p.section, p.sectionFile = m[1], f
		}
		return
	}
	if m := pySectionRE().FindStringSubmatch(s); m != nil {
		p.endSection()
		p.inSummary = m[1] == "short test summary info"
		return
	}
	if m := pyConftest().FindStringSubmatch(s); m != nil {
		p.endSection()
		p.section, p.sectionFile = s, p.rel(m[1])
		return
	}
	if p.section != "" {
		p.text.WriteString(s)
		p.text.WriteString("\n")
		return
	}
	if p.inSummary {
		if m := pySummaryRE().FindStringSubmatch(s); m != nil {
			id := m[2]
			if !strings.Contains(id, "::") {
				return // a module that failed to collect
			}
			t := Test{ID: id, Status: Passed, File: id[:strings.Index(id, "::")]}
			switch m[1] {
			case "FAILED", "ERROR", "XPASS":
				t.Status, t.Output = Failed, m[3]
			case "XFAIL":
				t.Status = Skipped
			}
			p.summary = append(p.summary, t)
		}
	}
}

func (p *pytestParser) endSection() {
	if p.section != "" {
		p.errors = append(p.errors, pyError{file: p.sectionFile, text: p.text.String()})
	}
	p.section, p.sectionFile = "", ""
	p.text = capped{max: 64 << 10}
}

// junitCase is a <testcase> of a JUnit XML report.
type junitCase struct {
	Classname string     `xml:"classname,attr"`
	Name      string     `xml:"name,attr"`
	File      string     `xml:"file,attr"`
	Failure   []junitMsg `xml:"failure"`
	Error     []junitMsg `xml:"error"`
	Skipped   []junitMsg `xml:"skipped"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func (p *pytestParser) finish(res *Result, reports [][]byte) {
	p.endSection()
	var tests []Test
	index := map[string]int{}
	parsed := false
	for _, r := range reports {
		if len(r) > 0 && r[0] == '{' {
			st := p.readStream(r)
			if st.started {
				parsed = true
				tests = append(tests, st.tests...)
			}
			if st.forged != nil && res.Forged == nil {
				res.Forged = st.forged
			}
			continue
		}
		cases, err := junitCases(r)
		if err != nil {
			continue
		}
		parsed = true
		for _, c := range cases {
			if len(c.Error) > 0 && c.Error[0].Message == "collection failure" {
				file := c.File
				if file == "" {
					file = p.moduleFile(c.Name)
				}
				p.errors = append(p.errors, pyError{file: p.rel(file), text: c.Error[0].Text})
				continue
			}
			t := p.junitTest(c)
			if i, ok := index[t.ID]; ok {
				// A test that passed and then failed in teardown is reported twice.
				if t.Status == Failed {
					tests[i] = t
				}
				continue
			}
			index[t.ID] = len(tests)
			tests = append(tests, t)
		}
	}
	if !parsed {
		tests = p.summary
	}
	res.Tests = tests
	seen := map[string]bool{}
	for _, e := range p.errors {
		for _, l := range p.pythonErrors(e.file, e.text) {
			if !seen[l] {
				seen[l] = true
				res.BuildErrors = append(res.BuildErrors, l)
			}
		}
	}
}

// junitCases returns every <testcase> of a JUnit XML report, however nested.
func junitCases(report []byte) ([]junitCase, error) {
	d := xml.NewDecoder(bytes.NewReader(report))
	var cases []junitCase
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return cases, nil
		}
		if err != nil {
			return cases, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "testcase" {
			var c junitCase
			if err := d.DecodeElement(&c, &se); err != nil {
				return cases, err
			}
			cases = append(cases, c)
		}
	}
}

// junitTest turns a <testcase> into a Test with the pytest node ID it was made from.
func (p *pytestParser) junitTest(c junitCase) Test {
	file := p.rel(c.File)
	if file == "" {
		file = p.moduleFile(c.Classname)
	}
	parts := []string{file}
	if file == "" {
		parts[0] = strings.ReplaceAll(c.Classname, ".", "/") + ".py"
	} else {
		// pytest makes the classname from the node ID: the file's path with dots for
		// slashes and no .py, then the classes.
		mod := strings.ReplaceAll(strings.TrimSuffix(filepath.ToSlash(file), ".py"), "/", ".")
		if rest, ok := strings.CutPrefix(c.Classname, mod); ok && rest != "" && rest[0] == '.' {
			parts = append(parts, strings.Split(rest[1:], ".")...)
		} else if !ok && c.Classname != "" {
			parts = append(parts, c.Classname)
		}
	}
	parts = append(parts, c.Name)
	t := Test{ID: strings.Join(parts, "::"), Status: Passed, File: file}
	switch {
	case len(c.Failure) > 0:
		t.Status = Failed
		t.Output = capString(joinMsg(c.Failure[0]), maxTestOutput)
	case len(c.Error) > 0:
		t.Status = Failed
		t.Output = capString(joinMsg(c.Error[0]), maxTestOutput)
	case len(c.Skipped) > 0:
		t.Status = Skipped
		t.Output = capString(c.Skipped[0].Message, maxTestOutput)
	}
	return t
}

func joinMsg(m junitMsg) string {
	text := strings.TrimSpace(m.Text)
	if m.Message == "" || strings.Contains(text, m.Message) {
		return text
	}
	return m.Message + "\n" + text
}

// moduleFile finds the file of a dotted module name ("tests.test_x.TestC"): the longest
// prefix that is a .py file under the root.
func (p *pytestParser) moduleFile(dotted string) string {
	parts := strings.Split(dotted, ".")
	for n := len(parts); n > 0; n-- {
		f := strings.Join(parts[:n], "/") + ".py"
		if p.root != "" {
			if _, err := os.Stat(filepath.Join(p.root, f)); err == nil {
				return f
			}
		}
	}
	return ""
}

// rel makes a path relative to the root when it is inside it.
func (p *pytestParser) rel(path string) string {
	return relTo(p.root, path)
}

// relTo makes path relative to root when it is an absolute path inside root, with slashes.
func relTo(root, path string) string {
	if root != "" && filepath.IsAbs(path) {
		if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
		// The root may be reached through a symbolic link (macOS /tmp, t.TempDir()).
		if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
			if r, err := filepath.Rel(real, path); err == nil && !strings.HasPrefix(r, "..") {
				return filepath.ToSlash(r)
			}
		}
	}
	return filepath.ToSlash(path)
}

var (
	// pyExcRE matches the exception line pytest marks with E: "E   ModuleNotFoundError: ...".
	pyExcRE = lazyre.New(`^E\s+((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit)\b.*)$`)
	// pyFileRE matches the location Python gives a SyntaxError: E     File "x.py", line 3.
	pyFileRE = lazyre.New(`^E\s+File "(.+)", line (\d+)`)
	// pyWhereRE matches a traceback entry: "tests/test_x.py:1: in <module>".
	pyWhereRE = lazyre.New(`^(\S+\.py):(\d+): in `)
)

// pythonErrors reads pytest's report of a module that failed to import and returns its
// errors, one line each, as "file:line: Exception: message". A SyntaxError names the file
// that has it; another error names the last place of the traceback.
func (p *pytestParser) pythonErrors(module, text string) []string {
	var out []string
	file, line := "", ""
	for _, l := range strings.Split(text, "\n") {
		if m := pyFileRE().FindStringSubmatch(l); m != nil {
			file, line = p.rel(m[1]), m[2]
			continue
		}
		if m := pyWhereRE().FindStringSubmatch(l); m != nil {
			file, line = p.rel(m[1]), m[2]
			continue
		}
		if m := pyExcRE().FindStringSubmatch(l); m != nil {
			where := module
			if file != "" {
				where = file + ":" + line
			}
			if where == "" {
				out = append(out, m[1])
			} else {
				out = append(out, where+": "+m[1])
			}
			file, line = "", ""
		}
	}
	if len(out) == 0 {
		// No marked exception: keep the report's last line that says something.
		lines := strings.Split(strings.TrimSpace(text), "\n")
		last := strings.TrimSpace(lines[len(lines)-1])
		if last != "" {
			if module != "" {
				last = module + ": " + last
			}
			out = append(out, last)
		}
	}
	return out
}

// A pyReport is one line the orchestrator's pytest reporter wrote (reporterSource).
type pyReport struct {
	Event   string `json:"event"`
	NodeID  string `json:"nodeid"`
	When    string `json:"when"`
	Outcome string `json:"outcome"`
	XFail   bool   `json:"xfail"`
	File    string `json:"file"`
	Message string `json:"message"`
	Text    string `json:"text"`
}

// A pyStream is what the reporter's lines say: the tests, in the order of their first
// report, and why the lines cannot be trusted (nil when nothing says so).
type pyStream struct {
	started bool
	tests   []Test
	forged  *ForgedError
}

// readStream reads the reporter's lines of a run. Every pytest session of the run writes a
// start line, a line per report of each test's phases (setup, call, teardown) and of each
// module that failed to collect, and an end line. A test is failed when one of its phases
// failed, skipped when one was skipped (an xfail too), else passed. Within a session, a
// phase of a test reported twice (but after a report of outcome "rerun", which starts the
// test again), a line after the session ended, a line that is not the reporter's, or more
// sessions than the command runs, are forgeries: something other than the reporter wrote
// to its pipe. A test reported by two sessions failed if it failed in either.
func (p *pytestParser) readStream(b []byte) pyStream {
	var st pyStream
	type phase struct{ outcome, message, text string }
	type test struct {
		file   string
		phases map[string]phase
		order  []string
	}
	index := map[string]int{}
	var merged []Test
	var session map[string]*test
	var order []string
	inSession := false
	sessions := 0
	forged := func(where, format string, args ...any) {
		if st.forged == nil {
			st.forged = &ForgedError{Where: where, What: fmt.Sprintf(format, args...), Stream: true}
		}
	}
	endSession := func() {
		for _, id := range order {
			t := session[id]
			out := Test{ID: id, Status: Passed, File: p.rel(t.file)}
			if out.File == "" {
				out.File, _, _ = strings.Cut(id, "::")
			}
			for _, w := range t.order {
				ph := t.phases[w]
				switch {
				case ph.outcome == "failed" && out.Status != Failed:
					out.Status = Failed
					out.Output = capString(joinMsg(junitMsg{Message: ph.message, Text: ph.text}), maxTestOutput)
				case ph.outcome == "skipped" && out.Status == Passed:
					out.Status = Skipped
					out.Output = capString(strings.TrimPrefix(ph.message, "Skipped: "), maxTestOutput)
				}
			}
			if i, ok := index[id]; ok {
				if out.Status == Failed && merged[i].Status != Failed {
					merged[i] = out
				}
				continue
			}
			index[id] = len(merged)
			merged = append(merged, out)
		}
		session, order = nil, nil
	}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if line == "" && i == len(lines)-1 {
			break
		}
		var r pyReport
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Event == "" {
			forged("the report stream", "the test report holds a line the orchestrator's reporter did not write")
			continue
		}
		switch r.Event {
		case "start":
			if inSession {
				forged("the report stream", "a pytest session was reported to start inside another")
				continue
			}
			st.started, inSession = true, true
			sessions++
			if p.sessions > 0 && sessions > p.sessions {
				forged("the report stream", "the test report holds more pytest sessions than the command runs")
			}
			session = map[string]*test{}
		case "end":
			if !inSession {
				forged("the report stream", "the test report says a session ended twice")
				continue
			}
			inSession = false
			endSession()
		case "collect":
			if !inSession {
				forged(where(r.NodeID), "a report of %s came after the run ended", r.NodeID)
				continue
			}
			if r.Outcome == "failed" {
				p.errors = append(p.errors, pyError{file: p.rel(r.NodeID), text: strings.TrimSpace(r.Text)})
			}
		case "test":
			if !inSession {
				forged(where(r.NodeID), "a report of %s came after the run ended", r.NodeID)
				continue
			}
			t := session[r.NodeID]
			if t == nil {
				t = &test{file: r.File, phases: map[string]phase{}}
				session[r.NodeID] = t
				order = append(order, r.NodeID)
			}
			if r.Outcome == "rerun" {
				t.phases, t.order = map[string]phase{}, nil
				continue
			}
			if prev, ok := t.phases[r.When]; ok {
				if prev.outcome != r.Outcome {
					forged(where(r.NodeID), "%s was reported twice, %s and %s", r.NodeID, prev.outcome, r.Outcome)
				} else {
					forged(where(r.NodeID), "%s was reported twice", r.NodeID)
				}
				continue
			}
			t.phases[r.When] = phase{outcome: r.Outcome, message: r.Message, text: r.Text}
			t.order = append(t.order, r.When)
		default:
			forged("the report stream", "the test report holds a line the orchestrator's reporter did not write")
		}
	}
	if inSession {
		endSession() // the run was cut short: what it reported stands
	}
	st.tests = merged
	return st
}

// where names the folder of a test's file, for a ForgedError: a name that is the same in
// every run, whatever the canaries are called.
func where(nodeID string) string {
	file, _, _ := strings.Cut(nodeID, "::")
	dir := path.Dir(filepath.ToSlash(file))
	if dir == "." {
		return "the project's root folder"
	}
	return "folder " + dir
}
