package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// A HaltReport is the JSON twin of a planning run's halt report (SPEC §8.4, §17).
type HaltReport struct {
	FinalState      string          `json:"final_state"`      // always "Halt"
	Reason          string          `json:"reason"`           // why the run halted
	UnresolvedState string          `json:"unresolved_state"` // "Rejected" or "Refused"
	Command         string          `json:"command"`          // "plan"
	PRD             string          `json:"prd"`
	Plan            string          `json:"plan"`
	Queue           string          `json:"queue"` // untouched
	MaxRetries      int             `json:"max_retries"`
	Rounds          []Round         `json:"rounds"`
	StillWrong      []queue.Finding `json:"still_wrong"` // the last round's findings
	LastProblem     string          `json:"last_problem,omitempty"`
	Records         string          `json:"records"` // the run's folder
	Created         string          `json:"created"`
	Markdown        string          `json:"markdown"`
}

// halt writes the halt report of res to .orchestrator/reports/plan-<time>.md and its JSON
// twin, and puts the markdown in res.
func (r *runner) halt(res *Result) error {
	rep := HaltReport{
		FinalState: "Halt", Reason: res.Reason, UnresolvedState: "Rejected", Command: "plan",
		PRD: r.o.PRDPath, Plan: r.o.Plan.Path, Queue: r.o.Layout.Tasks(), MaxRetries: r.o.MaxRetries,
		Rounds: res.Rounds, StillWrong: []queue.Finding{}, Records: r.rel(r.dir),
		Created: time.Now().UTC().Format(time.RFC3339),
	}
	if n := len(res.Rounds); n > 0 {
		last := res.Rounds[n-1]
		rep.StillWrong = append(rep.StillWrong, last.Findings...)
		rep.LastProblem = last.Problem
		if len(last.Changed) > 0 {
			rep.UnresolvedState = "Refused"
		}
	}
	dir := filepath.Join(r.o.Layout.Dir(), "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := "plan-" + time.Now().UTC().Format("20060102T150405Z")
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		rep.Markdown = filepath.ToSlash(filepath.Join(queue.DirName, "reports", name+".md"))
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		err = createFile(filepath.Join(dir, name+".json"), append(js, '\n'))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		res.Report = haltMarkdown(rep)
		res.ReportPath = filepath.Join(dir, name+".md")
		return createFile(res.ReportPath, []byte(res.Report))
	}
}

// rel returns path relative to the repository root, for reports.
func (r *runner) rel(path string) string {
	if rel, err := filepath.Rel(r.o.Layout.Root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

func createFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// haltMarkdown renders the report for people.
func haltMarkdown(r HaltReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Halt: plan\n\n")
	fmt.Fprintf(&b, "Planning halted: %s. Nothing was written: %s is as it was. It needs a person: "+
		"read what is still wrong below, then mend the requirements or the test plan, or write the tasks by hand, "+
		"and run `orchestrator plan` again.\n\n", r.Reason, r.Queue)
	fmt.Fprintf(&b, "- Requirements: %s\n- Test plan: %s\n- Retries allowed: %d\n- Records: %s\n\n", r.PRD, r.Plan, r.MaxRetries, r.Records)
	b.WriteString("## Rounds\n\n| Round | Agent | Exit | Elapsed | Outcome |\n|-------|-------|------|---------|---------|\n")
	for _, rd := range r.Rounds {
		outcome := "rejected: " + errorCount(rd.Errors)
		switch {
		case len(rd.Changed) > 0:
			outcome = "refused: changed " + strings.Join(rd.Changed, ", ")
		case rd.Problem != "":
			outcome = "rejected: " + rd.Problem
		case rd.Accepted:
			outcome = "accepted"
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %s | %s |\n", rd.N, rd.Agent, rd.ExitCode, rd.Elapsed, queue.EscapeCell(oneLine(outcome)))
	}
	b.WriteString("\n## What is still wrong\n\n")
	switch {
	case len(r.StillWrong) > 0:
		fmt.Fprintf(&b, "The findings on the last round's output, as `orchestrator validate` gives them:\n\n```\n%s```\n", FindingsText(r.StillWrong))
	case r.LastProblem != "":
		fmt.Fprintf(&b, "The last round's output could not be judged: %s\n", r.LastProblem)
	default:
		b.WriteString("Nothing was judged.\n")
	}
	return b.String()
}
