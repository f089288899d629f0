package retry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// ReportsDir returns the folder of halt and other reports (SPEC §2).
func ReportsDir(l queue.Layout) string { return filepath.Join(l.Dir(), "reports") }

// An OpenIssue is one line of a halt report's "Unresolved issues" listing.
type OpenIssue struct {
	ID         string `json:"id"`
	Summary    string `json:"summary"`
	Status     string `json:"status"`
	RetryCount int    `json:"retry_count"`
	MaxRetries int    `json:"max_retries"`
	Halted     bool   `json:"halted"`
	HaltReason string `json:"halt_reason,omitempty"`
}

// A HaltReport is the JSON twin of a halt report (SPEC §8.4).
type HaltReport struct {
	FinalState      string `json:"final_state"` // always "Halt"
	Reason          string `json:"reason"`
	UnresolvedState string `json:"unresolved_state"` // "Failure": a failure that retries did not resolve
	Task            string `json:"task"`
	Issue           string `json:"issue"`
	FailureMode     Type   `json:"failure_mode"`
	// TDDMode, Role and AC are set for a task of a TDD cycle (SPEC §9): its failure mode
	// (A to E), the role of its agent and the acceptance criterion.
	TDDMode          string      `json:"tdd_mode,omitempty"`
	Role             string      `json:"role,omitempty"`
	AC               string      `json:"ac,omitempty"`
	LastBlock        string      `json:"last_block,omitempty"`
	PrimaryError     string      `json:"primary_error"`
	FailingTest      string      `json:"failing_test,omitempty"`
	File             string      `json:"file,omitempty"`
	Signature        string      `json:"signature"`
	RetryCount       int         `json:"retry_count"`
	MaxRetries       int         `json:"max_retries"`
	RepeatCount      int         `json:"signature_repeat_count"`
	TotalAutoRetries int         `json:"total_auto_retries"`
	Signatures       []string    `json:"signatures"`
	LastOutput       string      `json:"last_output"`
	UnresolvedIssues []OpenIssue `json:"unresolved_issues"`
	Created          string      `json:"created"`
	Markdown         string      `json:"markdown"` // the report's path
}

// WriteHaltReport writes the report of a halt (SPEC §8.4) to
// .orchestrator/reports/halt-<TASK>-<time>.md and its JSON twin (.json), and returns the
// markdown, which the command prints. The report says why the task halted, the failure mode,
// the retry counts, the signatures, the last raw output (its first DetailsLimit characters)
// and, as the RFC's "Unresolved issues" listing, every open issue of the issue queue with
// its attempts and whether it halted. The time is f.At (Now() when zero); a report of the
// same task and second gets a -2, -3... suffix.
func WriteHaltReport(l queue.Layout, d Decision, f Failure) (string, error) {
	at := f.At
	if at.IsZero() {
		at = Now()
	}
	at = at.UTC()
	if f.PrimaryError == "" {
		f.PrimaryError = PrimaryError(f.Output)
	}
	if f.FailingTest == "" {
		f.FailingTest = FailingTest(f.Output)
	}
	open, err := openIssues(l)
	if err != nil {
		return "", err
	}
	rep := HaltReport{
		FinalState:       "Halt",
		Reason:           d.HaltReason,
		UnresolvedState:  "Failure",
		Task:             f.Task,
		Issue:            d.IssueID,
		FailureMode:      f.Type,
		TDDMode:          f.Mode,
		Role:             f.Role,
		AC:               f.AC,
		LastBlock:        f.LastBlock,
		PrimaryError:     f.PrimaryError,
		FailingTest:      f.FailingTest,
		File:             f.File,
		Signature:        d.Signature,
		RetryCount:       d.RetryCount,
		MaxRetries:       d.MaxRetries,
		RepeatCount:      d.RepeatCount,
		TotalAutoRetries: d.TotalAutoRetries,
		Signatures:       append([]string{}, d.Signatures...),
		LastOutput:       details(f.Output),
		UnresolvedIssues: open,
		Created:          at.Format(time.RFC3339),
	}
	if rep.Reason == "" {
		rep.Reason = d.Reason
	}
	dir := ReportsDir(l)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := "halt-" + f.Task + "-" + at.Format("20060102T150405Z")
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		mdPath := filepath.Join(dir, name+".md")
		rep.Markdown = filepath.ToSlash(filepath.Join(queue.DirName, "reports", name+".md"))
		md := haltMarkdown(rep)
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return "", err
		}
		// The JSON twin goes first: whoever sees the markdown finds the twin there.
		err = createFile(filepath.Join(dir, name+".json"), append(js, '\n'))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := createFile(mdPath, []byte(md)); err != nil {
			return "", err
		}
		return md, nil
	}
}

// haltMarkdown renders the report.
func haltMarkdown(r HaltReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Halt: %s\n\n", r.Task)
	fmt.Fprintf(&b, "%s halted: %s. It needs a person: find the cause in the output below, fix it, then set the task's Status to pending and Halted to false", r.Task, r.Reason)
	if r.Issue != "" {
		fmt.Fprintf(&b, " (and %s's Halted to false, Auto-Retry to true)", r.Issue)
	}
	b.WriteString(".\n\n")
	b.WriteString("| Field | Value |\n|-------|-------|\n")
	cell := func(name, value string) {
		if value != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", name, queue.EscapeCell(oneLine(value)))
		}
	}
	cell("Final State", r.FinalState)
	cell("Reason", r.Reason)
	cell("Unresolved State", r.UnresolvedState)
	cell("Task", r.Task)
	cell("Issue", r.Issue)
	cell("Failure Mode", string(r.FailureMode))
	cell("TDD Failure Mode", r.TDDMode)
	cell("Role", r.Role)
	cell("AC", r.AC)
	cell("Primary Error", codeSpan(r.PrimaryError))
	cell("Failing Test", r.FailingTest)
	cell("File", r.File)
	cell("Retry-Count", fmt.Sprintf("%d of %d", r.RetryCount, r.MaxRetries))
	cell("Failure-Signature", r.Signature)
	cell("Signature-Repeat-Count", strconv.Itoa(r.RepeatCount))
	cell("Auto-Retries This Run", strconv.Itoa(r.TotalAutoRetries))
	cell("Created", r.Created)
	b.WriteString("\n## Signatures\n\nOldest first; the last is this failure's.\n\n")
	for i, s := range r.Signatures {
		fmt.Fprintf(&b, "%d. `%s`\n", i+1, s)
	}
	if r.LastBlock != "" {
		b.WriteString("\n## Last tdd-result block\n\n")
		b.WriteString(fenced(r.LastBlock))
	}
	b.WriteString("\n## Last output\n\n")
	b.WriteString(fenced(r.LastOutput))
	b.WriteString("\n## Unresolved issues\n\n")
	if len(r.UnresolvedIssues) == 0 {
		b.WriteString("None.\n")
	} else {
		for _, o := range r.UnresolvedIssues {
			fmt.Fprintf(&b, "  - %s: %s\n", o.ID, o.Summary)
			fmt.Fprintf(&b, "    Attempts: %d/%d\n", o.RetryCount, o.MaxRetries)
			if o.Halted {
				reason := o.HaltReason
				if reason == "" {
					reason = "repeated failure - same fix tried 3x"
				}
				fmt.Fprintf(&b, "    STATUS: HALTED (%s)\n", reason)
			}
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// codeSpan writes s as inline code, with a fence longer than any backtick run in it.
func codeSpan(s string) string {
	if s == "" {
		return ""
	}
	longest := queue.LongestBacktickRun(s)
	tick := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return tick + " " + s + " " + tick
	}
	return tick + s + tick
}

// openIssues lists the issue queue's open issues (Status not completed, wont_fix or
// duplicate), in file order.
func openIssues(l queue.Layout) ([]OpenIssue, error) {
	d, err := queue.Load(l.Issues())
	if errors.Is(err, fs.ErrNotExist) {
		return []OpenIssue{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []OpenIssue{}
	for i := range d.Records {
		r := &d.Records[i]
		if !isOpen(d, r) {
			continue
		}
		o := OpenIssue{ID: r.ID, Summary: issueSummary(d, r), Status: strings.TrimSpace(d.Get(r, "Status"))}
		o.RetryCount, _ = queue.Int(d.Get(r, "Retry-Count"))
		o.MaxRetries = DefaultLimits().MaxRetries
		if v := d.Get(r, "Max-Retries"); !queue.IsEmpty(v) {
			o.MaxRetries, _ = queue.Int(v)
		}
		o.Halted, _ = queue.Bool(d.Get(r, "Halted"))
		o.HaltReason = oneLine(d.Get(r, "Halt-Reason"))
		out = append(out, o)
	}
	return out, nil
}

// issueSummary returns an issue's one-line summary: its **Summary:** line, else the text
// under a Summary heading (as QA agents write it), else its heading's title.
func issueSummary(d *queue.Doc, r *queue.Record) string {
	if s := oneLine(d.Get(r, "Summary")); s != "" {
		return s
	}
	lines := strings.Split(d.Body(r), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if strings.HasPrefix(strings.TrimSpace(l), "#") && strings.EqualFold(t, "summary") {
			for _, next := range lines[i+1:] {
				if s := oneLine(next); s != "" {
					return s
				}
			}
		}
	}
	return oneLine(d.TitleText(r))
}

// Resolve marks the task's open issues completed, when the task finally passed its gate: the
// issue Record keeps for it, and an issue that `issues convert` turned into the task (Task
// Ref). The Queue Status counts and Last Updated follow. A missing issue queue or no open
// issue is not an error. A person's edit of an issue's Status made meanwhile wins.
func Resolve(ctx context.Context, l queue.Layout, task string, at time.Time) error {
	mu.Lock()
	defer mu.Unlock()
	if at.IsZero() {
		at = Now()
	}
	if _, err := os.Stat(l.Issues()); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, err := queue.Update(ctx, l.Issues(), queue.Issues, func(d *queue.Doc) ([]queue.Op, error) {
		var ops []queue.Op
		done := map[string]string{}
		for i := range d.Records {
			r := &d.Records[i]
			if !isOpen(d, r) {
				continue
			}
			ref := queue.List(d.Get(r, "Task Ref"))
			mine := slices.Contains(ref, task) ||
				(len(ref) == 0 && slices.Contains(queue.List(d.Get(r, "Source Task")), task))
			if !mine {
				continue
			}
			ops = append(ops, queue.CompareAndSet{ID: r.ID, Field: "Status", Expect: d.Get(r, "Status"), Value: "completed"})
			done[r.ID] = "completed"
		}
		if len(ops) == 0 {
			return nil, nil
		}
		if op := countsOp(d, done, 0, at); op != nil {
			ops = append(ops, op)
		}
		return ops, nil
	})
	return err
}
