package retry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/queue"
)

// A Conversion is what Convert did with one pending issue.
type Conversion struct {
	Issue string `json:"issue"`
	Task  string `json:"task,omitempty"` // the task made from it (or found made from it before)
	// Skipped says why the issue was not converted; empty when it was.
	Skipped string `json:"skipped,omitempty"`
	// Note is a warning about the task made: one that depends on no TEST task breaks the
	// TDD ordering rule of `orchestrator validate` until a person adds one.
	Note string `json:"note,omitempty"`
}

var (
	taskNumRE = lazyre.New(`^TASK-(\d+)$`)
	hex16RE   = lazyre.New(`^[0-9a-f]{16}$`)
)

// Convert turns the issue queue's pending issues into tasks (SPEC §8.3; RFC-001 Diff 5), in
// file order. An issue is converted when its Status is pending, it is not Halted, and it is
// not a failure-remediation issue of a task that exists (those are the retry loop's). Its
// task is appended to the task queue as TASK-<next number> (in the width the queue's
// numbered tasks use), with Status pending, the issue's Category and Complexity, Depends On
// the TEST tasks of the issue's Source Task (the Source Task itself if it is one), Source
// Issue, and the issue's retry fields (Retry-Count, Max-Retries, Failure-Signature,
// Previous-Signatures, Signature-Repeat-Count; defaults where it has none); its objective
// is the issue's summary and its body the issue's text. The issue then gets Status accepted
// and Task Ref, and the Queue Status counts follow. A halted issue is skipped, with a
// Conversion that says so. Running Convert again converts nothing twice: an issue whose
// task exists (a task's Source Issue names it) is only marked accepted.
func Convert(ctx context.Context, l queue.Layout, lim Limits, at time.Time) ([]Conversion, error) {
	mu.Lock()
	defer mu.Unlock()
	lim = lim.orDefaults()
	if at.IsZero() {
		at = Now()
	}
	at = at.UTC().Truncate(time.Second)
	issues, err := queue.Load(l.Issues())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tasks, err := queue.Load(l.Tasks())
	if err != nil {
		return nil, err
	}
	out := []Conversion{}
	for i := range issues.Records {
		r := &issues.Records[i]
		if s, _ := queue.NormalizeStatus(queue.Issues, issues.Get(r, "Status")); s != "pending" {
			continue
		}
		if halted, _ := queue.Bool(issues.Get(r, "Halted")); halted {
			why := "halted"
			if reason := oneLine(issues.Get(r, "Halt-Reason")); reason != "" {
				why += " (" + reason + ")"
			}
			out = append(out, Conversion{Issue: r.ID, Skipped: why + "; it needs a person"})
			continue
		}
		if strings.EqualFold(strings.TrimSpace(issues.Get(r, "Type")), "failure-remediation") {
			if _, ok := tasks.Record(firstID(issues.Get(r, "Source Task"))); ok {
				continue // the retry loop's issue of a task that exists
			}
		}
		c, err := convertOne(ctx, l, issues, r, lim, at)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func firstID(v string) string {
	if l := queue.List(v); len(l) > 0 {
		return l[0]
	}
	return ""
}

// convertOne appends the task of issue r (unless a task made from it exists) and marks the
// issue accepted.
func convertOne(ctx context.Context, l queue.Layout, issues *queue.Doc, r *queue.Record, lim Limits, at time.Time) (Conversion, error) {
	c := Conversion{Issue: r.ID}
	_, err := queue.Update(ctx, l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		for i := range d.Records {
			if slices.Contains(queue.List(d.Get(&d.Records[i], "Source Issue")), r.ID) {
				c.Task = d.Records[i].ID // converted before; the issue was not marked
				return nil, nil
			}
		}
		c.Task = nextTaskID(d)
		deps := testDeps(d, firstID(issues.Get(r, "Source Task")))
		text := taskText(d, c.Task, issues, r, deps, lim)
		c.Note = ""
		if len(deps) == 0 && needsTestTask(text) {
			c.Note = c.Task + " depends on no TEST task: add one before it runs, or mark it | TDD | exempt |"
		}
		return []queue.Op{queue.AppendRecord{Text: text}}, nil
	})
	if err != nil {
		return c, err
	}
	_, err = queue.Update(ctx, l.Issues(), queue.Issues, func(d *queue.Doc) ([]queue.Op, error) {
		ops := []queue.Op{
			queue.CompareAndSet{ID: r.ID, Field: "Status", Expect: "pending", Value: "accepted"},
			queue.SetField{ID: r.ID, Field: "Task Ref", Value: c.Task},
		}
		if op := countsOp(d, map[string]string{r.ID: "accepted"}, 0, at); op != nil {
			ops = append(ops, op)
		}
		return ops, nil
	})
	return c, err
}

// nextTaskID returns TASK-<n> for one more than the highest numbered task, with as many
// digits as that task's number has (at least three when there is none).
func nextTaskID(d *queue.Doc) string {
	n, width := 0, 3
	for i := range d.Records {
		m := taskNumRE().FindStringSubmatch(d.Records[i].ID)
		if m == nil {
			continue
		}
		if k, err := strconv.Atoi(m[1]); err == nil && k >= n {
			n, width = k, len(m[1])
		}
	}
	for {
		n++
		id := fmt.Sprintf("TASK-%0*d", width, n)
		if _, taken := d.Record(id); !taken {
			return id
		}
	}
}

// testDeps returns the TEST tasks a fix found in task source depends on: source itself if
// it is a TEST task, else the TEST tasks it depends on directly.
func testDeps(d *queue.Doc, source string) []string {
	r, ok := d.Record(source)
	if !ok {
		return nil
	}
	if d.Task(r).Kind == queue.KindTest {
		return []string{source}
	}
	var out []string
	for _, dep := range d.Deps(r) {
		if dr, ok := d.Record(dep); ok && d.Task(dr).Kind == queue.KindTest {
			out = append(out, dep)
		}
	}
	return out
}

// needsTestTask reports whether the task in text is one that SPEC §6.1 wants to depend on a
// TEST task: a BUILD task whose category is not devops or docs.
func needsTestTask(text string) bool {
	d, err := queue.Parse("task", []byte(text), queue.Tasks)
	if err != nil || len(d.Records) != 1 {
		return false
	}
	t := d.Task(&d.Records[0])
	return t.Kind == queue.KindBuild && t.Category != "devops" && t.Category != "docs"
}

// taskText renders the task made from issue r.
func taskText(d *queue.Doc, id string, issues *queue.Doc, r *queue.Record, deps []string, lim Limits) string {
	get := func(name string) string { return oneLine(issues.Get(r, name)) }
	num := func(name string, def int) string {
		if v := get(name); !queue.IsEmpty(v) {
			if n, err := queue.Int(v); err == nil {
				return strconv.Itoa(n)
			}
		}
		return strconv.Itoa(def)
	}
	sig := "-"
	if s := get("Failure-Signature"); hex16RE().MatchString(s) {
		sig = s
	}
	var prev []string
	for _, s := range queue.List(get("Previous-Signatures")) {
		if hex16RE().MatchString(s) {
			prev = append(prev, s)
		}
	}
	rows := [][2]string{{"Status", "pending"}}
	if c := get("Category"); !queue.IsEmpty(c) {
		rows = append(rows, [2]string{"Category", c})
	}
	if c := strings.ToLower(get("Complexity")); queue.CheckValue(queue.Tasks, "Complexity", c) == nil && !queue.IsEmpty(c) {
		rows = append(rows, [2]string{"Complexity", c})
	}
	if len(deps) > 0 {
		rows = append(rows, [2]string{"Depends On", strings.Join(deps, ", ")})
	}
	rows = append(rows,
		[2]string{"Source Issue", r.ID},
		[2]string{"Retry-Count", num("Retry-Count", 0)},
		[2]string{"Max-Retries", num("Max-Retries", lim.MaxRetries)},
		[2]string{"Failure-Signature", sig},
		[2]string{"Previous-Signatures", listValue(prev)},
		[2]string{"Signature-Repeat-Count", num("Signature-Repeat-Count", 0)},
	)
	level := 3
	if n := len(d.Records); n > 0 {
		level = d.Records[n-1].Level
	}
	head := recordText(level, id, rows)
	objective := issueSummary(issues, r)
	if objective == "" || objective == r.ID {
		objective = "Resolve " + r.ID
	}
	head += "\n**Objective:** " + objective + "\n"
	if body := issueBody(issues, r); body != "" {
		whole := head + "\n" + body + "\n"
		if sameTask(whole, id, rows, deps) {
			return whole
		}
	}
	return head
}

// issueBody returns the text of issue r after its field table, for the task made from it:
// without its **Summary:** line (the task's objective) and its orchestrator-filled **Task
// Ref:** line, with headings outside code blocks turned into bold labels, so that the text
// cannot end the task's record or start another.
func issueBody(issues *queue.Doc, r *queue.Record) string {
	start := r.Start
	for _, ti := range issues.FieldTables(r) {
		start = max(start, issues.Tables[ti].End)
	}
	if start == r.Start {
		return ""
	}
	text := strings.ReplaceAll(string(issues.Src[start:r.End]), "\r\n", "\n")
	var out []string
	fence := ""
	inSummary := false // under a Summary heading, which is the task's objective
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if inSummary && fence == "" && !strings.HasPrefix(t, "#") {
			continue
		}
		inSummary = false
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
			for _, c := range t[3:] {
				if string(c) != fence[:1] {
					break
				}
				fence += fence[:1]
			}
		case strings.HasPrefix(t, "#"):
			title := strings.TrimSpace(strings.Trim(strings.TrimLeft(t, "#"), "#"))
			if title == "" {
				continue
			}
			if strings.EqualFold(title, "summary") {
				inSummary = true
				continue
			}
			line = "**" + title + ":**"
		case strings.HasPrefix(t, "**Summary:**"), strings.HasPrefix(t, "**Task Ref:**"),
			t == "---" || t == "***" || t == "___":
			continue
		}
		out = append(out, line)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// sameTask reports whether text, read alone as a queue file, is one task record with
// exactly the fields rows and the dependencies deps: the issue's text did not change the
// task.
func sameTask(text, id string, rows [][2]string, deps []string) bool {
	d, err := queue.Parse("task", []byte(text), queue.Tasks)
	if err != nil || len(d.Records) != 1 || d.Records[0].ID != id {
		return false
	}
	r := &d.Records[0]
	if len(d.Fields(r)) != len(rows) || strings.Join(d.Deps(r), ",") != strings.Join(deps, ",") {
		return false
	}
	for _, row := range rows {
		if d.Get(r, row[0]) != row[1] {
			return false
		}
	}
	return true
}
