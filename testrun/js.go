package testrun

import (
	"encoding/json"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// jsParser reads the JSON report that vitest and jest write (the same shape: jest's
// aggregated results, which vitest copies).
type jsParser struct {
	root string
}

// jsReport is the part of a vitest or jest JSON report that Run reads.
type jsReport struct {
	TestResults []struct {
		Name             string `json:"name"`
		Message          string `json:"message"`
		AssertionResults []struct {
			AncestorTitles  []string `json:"ancestorTitles"`
			Title           string   `json:"title"`
			Status          string   `json:"status"`
			FailureMessages []string `json:"failureMessages"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// jsSep joins a file and the titles of a test into its ID.
const jsSep = " > "

func (p *jsParser) line(string) {}

func (p *jsParser) finish(res *Result, reports [][]byte) {
	for _, data := range reports {
		var rep jsReport
		if err := json.Unmarshal(data, &rep); err != nil {
			continue
		}
		for _, file := range rep.TestResults {
			rel := relTo(p.root, file.Name)
			for _, a := range file.AssertionResults {
				parts := append([]string{rel}, a.AncestorTitles...)
				t := Test{ID: strings.Join(append(parts, a.Title), jsSep), File: rel}
				switch a.Status {
				case "passed":
					t.Status = Passed
				case "failed":
					t.Status = Failed
					t.Output = capString(stripANSI(strings.Join(a.FailureMessages, "\n")), maxTestOutput)
				default: // skipped, pending, todo, disabled
					t.Status = Skipped
				}
				res.Tests = append(res.Tests, t)
			}
			if msg := strings.TrimSpace(file.Message); msg != "" && (len(file.AssertionResults) == 0 || strings.Contains(msg, "Test suite failed to run")) {
				res.BuildErrors = append(res.BuildErrors, p.suiteError(rel, msg))
			}
		}
	}
}

// jsLocRE matches a source location in a JavaScript tool's message: "src/x.test.ts:6:1",
// "/abs/x.test.js: Unexpected token".
var jsLocRE = lazyre.New(`((?:[\w@.-]*/)*[\w@.-]+\.(?:[cm]?[jt]sx?))(?::(\d+)(?::\d+)?|:\s|\b)`)

// tsDiagRE matches a TypeScript diagnostic as ts-jest reports it.
var tsDiagRE = lazyre.New(`^(\S+?):(\d+):\d+ - (error TS\d+: .*)$`)

// suiteError turns the message of a test file that failed to run into one line:
// "location: message", where the location is the first source file the message points at
// (outside node_modules), else the test file.
func (p *jsParser) suiteError(file, msg string) string {
	msg = stripANSI(msg)
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "●") {
			continue
		}
		lines = append(lines, l)
	}
	text := ""
	if len(lines) > 0 {
		text = lines[0]
		if strings.HasSuffix(text, ":") && len(lines) > 1 {
			text += " " + lines[1]
		}
	}
	if m := tsDiagRE().FindStringSubmatch(text); m != nil {
		// A TypeScript diagnostic names its own place: "src/x.test.ts:1:15 - error TS2305: ...".
		return relTo(p.root, m[1]) + ":" + m[2] + ": " + m[3]
	}
	loc := file
	for _, m := range jsLocRE().FindAllStringSubmatchIndex(msg, -1) {
		path := msg[m[2]:m[3]]
		hasLine := m[4] >= 0
		if strings.Contains(path, "node_modules/") || !hasLine && !strings.HasPrefix(path, "/") {
			continue
		}
		loc = relTo(p.root, path)
		if hasLine {
			loc += ":" + msg[m[4]:m[5]]
		}
		break
	}
	return loc + ": " + text
}
