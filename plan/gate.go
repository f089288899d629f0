package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/queue"
)

// A Verdict is the gate's judgement of one output of the planner.
type Verdict struct {
	// Findings are every problem found, as validate reports them: those of the scratch file
	// itself first (it does not parse, an ID is taken, a new task is not pending), then
	// those of the candidate queue, then those of the test plan (IDs no TEST task maps).
	Findings []queue.Finding
	// New are the IDs of the planner's new tasks, in its file's order (a task of the queue
	// that it copied unchanged is not new).
	New []string
	// Candidate is the task queue with the new tasks appended and the coverage matrix
	// written: exactly what would be written. It is nil when the scratch file could not be
	// appended (it does not parse, or holds no task, or reuses an ID).
	Candidate []byte
	// Coverage is the candidate's coverage of the plan.
	Coverage *queue.CoverageReport

	ops []queue.Op // the edits that turn the queue into Candidate
}

// OK reports whether the output passes: it could be appended and nothing is an error.
func (v *Verdict) OK() bool { return v.Candidate != nil && v.Errors() == 0 }

// Errors counts the findings that are errors (warnings do not reject an output).
func (v *Verdict) Errors() int {
	n := 0
	for _, f := range v.Findings {
		if f.Severity == queue.Error {
			n++
		}
	}
	return n
}

// Text returns the findings as validate prints them, one a line.
func (v *Verdict) Text() string { return FindingsText(v.Findings) }

// FindingsText returns findings as validate prints them, one a line, each ending with a
// newline.
func FindingsText(fs []queue.Finding) string {
	var b []byte
	for _, f := range fs {
		b = append(f.AppendText(b), '\n')
	}
	return string(b)
}

// Judge checks the planner's scratch file, src at scratchPath, against the task queue as it
// is (existing) and the test plan. The candidate queue is named candidatePath in the
// findings (the copy of it kept in the round's folder): its line numbers are not those of
// the queue file until it is written.
func Judge(existing *queue.Doc, scratchPath string, src []byte, plan *queue.Plan, candidatePath string) *Verdict {
	v := &Verdict{}
	scratch, err := queue.Parse(scratchPath, src, queue.Tasks)
	if err != nil {
		v.Findings = parseFindings(scratchPath, err)
		return v
	}
	if len(scratch.Records) == 0 {
		v.Findings = append(v.Findings, queue.Finding{Path: scratchPath, Line: 1, Severity: queue.Error,
			Message: "no tasks: write each task as a heading that starts with its ID, followed by a | Field | Value | table"})
		return v
	}
	taken := false
	var fresh []*queue.Record
	for i := range scratch.Records {
		r := &scratch.Records[i]
		if old, ok := existing.Record(r.ID); ok {
			// A planner that copies the whole queue may: a task of the queue copied as it
			// is, is not new and is left alone. Anything else under its ID would overwrite
			// it.
			if recordText(scratch, r) == recordText(existing, old) {
				continue
			}
			taken = true
			v.Findings = append(v.Findings, queue.Finding{Path: scratchPath, Line: r.Line, ID: r.ID, Severity: queue.Error,
				Message: fmt.Sprintf("duplicate ID: the queue has a task %s already (%s:%d); give new tasks new IDs", r.ID, existing.Path, old.Line)})
			continue
		}
		fresh = append(fresh, r)
		v.New = append(v.New, r.ID)
		v.Findings = append(v.Findings, newTaskFindings(scratch, r)...)
	}
	if taken {
		return v
	}
	// The candidate: the new records appended as §3.5 appends them, then the matrix of the
	// queue they make.
	ops := make([]queue.Op, 0, len(fresh)+1)
	for _, r := range fresh {
		ops = append(ops, queue.AppendRecord{Text: recordText(scratch, r)})
	}
	appended, err := queue.Apply(existing, ops...)
	if err == nil {
		var d *queue.Doc
		if d, err = queue.Parse(candidatePath, appended, queue.Tasks); err == nil {
			v.Coverage = queue.Coverage(d, plan)
			ops = append(ops, queue.ReplaceSection{Title: queue.CoverageTitle, Text: v.Coverage.Render()})
			v.Candidate, err = queue.Apply(existing, ops...)
		}
	}
	if err != nil {
		v.Findings = append(v.Findings, parseFindings(candidatePath, err)...)
		v.Candidate = nil
		return v
	}
	d, err := queue.Parse(candidatePath, v.Candidate, queue.Tasks)
	if err != nil {
		v.Findings = append(v.Findings, parseFindings(candidatePath, err)...)
		v.Candidate = nil
		return v
	}
	v.ops = ops
	v.Findings = append(v.Findings, queue.Check(d, plan)...)
	return v
}

// recordText returns the bytes of record r of d, from its heading to its last non-blank
// line, with LF line endings (AppendRecord writes them in the queue's own).
func recordText(d *queue.Doc, r *queue.Record) string {
	s := strings.ReplaceAll(string(d.Src[r.Start:r.End]), "\r\n", "\n")
	return strings.TrimRight(s, " \t\n") + "\n"
}

// parseFindings turns a parse error of the file at path into findings.
func parseFindings(path string, err error) []queue.Finding {
	if fs := queue.FindingsFromParse(err); fs != nil {
		return fs
	}
	var pe *queue.ParseError
	if errors.As(err, &pe) {
		return []queue.Finding{{Path: pe.Path, Line: pe.Line, ID: pe.ID, Severity: queue.Error, Message: pe.Msg}}
	}
	return []queue.Finding{{Path: path, Line: 1, Severity: queue.Error, Message: err.Error()}}
}

// stateFields are the fields that only the orchestrator (or a person) writes, with the
// value a new task may have for each ("" for none): a planner that fills them would make
// its tasks look done, tried or halted.
var stateFields = []struct{ name, zero string }{
	{"Commit", ""},
	{"Retry-Count", "0"},
	{"Failure-Signature", ""},
	{"Previous-Signatures", ""},
	{"Signature-Repeat-Count", "0"},
	{"Halted", "false"},
	{"Halt-Reason", ""},
	{"Retry-Deferred", ""},
	{"Remediation", ""},
	{"Cost", ""},
	{"Tokens", ""},
}

// newTaskFindings reports what a new task may not have: a Status other than pending, the
// orchestrator's state fields, a TDD exemption.
func newTaskFindings(d *queue.Doc, r *queue.Record) []queue.Finding {
	var out []queue.Finding
	add := func(line int, format string, args ...any) {
		out = append(out, queue.Finding{Path: d.Path, Line: line, ID: r.ID, Severity: queue.Error, Message: fmt.Sprintf(format, args...)})
	}
	t := d.Task(r)
	if t.Status != queue.StatusPending {
		line := r.Line
		if f, ok := d.Lookup(r, "Status"); ok {
			line = f.Line()
		}
		status := t.Status
		if status == "" {
			status = "missing"
		}
		add(line, "a new task's Status is pending, not %s: the orchestrator records progress", status)
	}
	for _, sf := range stateFields {
		f, ok := d.Lookup(r, sf.name)
		if !ok {
			continue
		}
		v := strings.TrimSpace(d.Value(f))
		if queue.IsEmpty(v) || sf.zero != "" && strings.EqualFold(v, sf.zero) {
			continue
		}
		add(f.Line(), "%s is %q: a new task leaves the fields the orchestrator keeps empty", d.Name(f), v)
	}
	if f, ok := d.Lookup(r, "TDD"); ok && !queue.IsEmpty(d.Value(f)) {
		add(f.Line(), "TDD is %q: only a person may take a task out of TDD ordering", strings.TrimSpace(d.Value(f)))
	}
	return out
}

// PreCheck reports the errors of the existing queue that no planner can mend, because it may
// only add tasks: everything validate finds on it but the plan's unmapped IDs (the planner's
// work) and a stale matrix (the plan command writes it). The queue is checked with its
// matrix made current.
func PreCheck(existing *queue.Doc, plan *queue.Plan) ([]queue.Finding, error) {
	rep := queue.Coverage(existing, plan)
	src, err := queue.Apply(existing, queue.ReplaceSection{Title: queue.CoverageTitle, Text: rep.Render()})
	if err != nil {
		return nil, err
	}
	d, err := queue.Parse(existing.Path, src, queue.Tasks)
	if err != nil {
		return nil, err
	}
	var out []queue.Finding
	for _, f := range queue.Check(d, plan) {
		if f.Severity == queue.Error && f.Path != plan.Path {
			out = append(out, f)
		}
	}
	return out, nil
}
