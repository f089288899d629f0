package retry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/templates"
)

// DetailsLimit is how much of a gate's output an issue's Failure Details and a halt report
// keep, in characters (SPEC §8.2).
const DetailsLimit = 2000

// QueueStatusTitle is the heading of the issue queue's counts section (SPEC §3.6).
const QueueStatusTitle = "Queue Status"

var issueIDRE = lazyre.New(`^ISSUE-(\d{8})-(\d+)$`)

// NextIssueID returns the ID for a new issue created at t in the issue queue d:
// ISSUE-YYYYMMDD-NNN (the date in UTC), NNN one more than the highest of that day in the
// file, at least three digits.
func NextIssueID(d *queue.Doc, t time.Time) string {
	day := t.UTC().Format("20060102")
	n := 0
	for i := range d.Records {
		m := issueIDRE().FindStringSubmatch(d.Records[i].ID)
		if m == nil || m[1] != day {
			continue
		}
		if k, err := strconv.Atoi(m[2]); err == nil && k > n {
			n = k
		}
	}
	return fmt.Sprintf("ISSUE-%s-%03d", day, n+1)
}

// writeIssue appends the task's issue or updates its open one, and the Queue Status counts.
// It sets d.IssueID.
func writeIssue(ctx context.Context, l queue.Layout, f Failure, d *Decision) error {
	_, err := queue.Update(ctx, l.Issues(), queue.Issues, func(doc *queue.Doc) ([]queue.Op, error) {
		var ops []queue.Op
		added := 0
		if r := openIssue(doc, f.Task); r != nil {
			d.IssueID = r.ID
			set := func(name, value string) {
				ops = append(ops, queue.SetField{ID: r.ID, Field: name, Value: value})
			}
			if strings.EqualFold(strings.TrimSpace(doc.Get(r, "Type")), "failure-remediation") {
				set("Root Cause", string(f.Type))
			}
			set("Failure-Signature", d.Signature)
			set("Previous-Signatures", listValue(d.Signatures[:len(d.Signatures)-1]))
			set("Signature-Repeat-Count", strconv.Itoa(d.RepeatCount))
			set("Retry-Count", strconv.Itoa(d.RetryCount))
			set("Max-Retries", strconv.Itoa(d.MaxRetries))
			switch {
			case d.Halt:
				set("Auto-Retry", "false")
				set("Halted", "true")
				set("Halt-Reason", d.HaltReason)
			case d.unhalt:
				set("Auto-Retry", "true")
				set("Halted", "false")
				set("Halt-Reason", "")
			}
		} else {
			d.IssueID = NextIssueID(doc, f.At)
			ops = append(ops, queue.AppendRecord{Text: issueText(doc, d.IssueID, f, d)})
			added = 1
		}
		if op := countsOp(doc, nil, added, f.At); op != nil {
			ops = append(ops, op)
		}
		return ops, nil
	})
	return err
}

// issueText renders a new issue record (SPEC §8.2).
func issueText(doc *queue.Doc, id string, f Failure, d *Decision) string {
	category := strings.TrimSpace(f.Category)
	if category == "" {
		category = "-"
	}
	rows := [][2]string{
		{"Status", "pending"},
		{"Priority", "critical"},
		{"Type", "failure-remediation"},
		{"Source", "generated"},
		{"Category", category},
		{"Created", f.At.Format(time.RFC3339)},
		{"Source Task", f.Task},
		{"Root Cause", string(f.Type)},
		{"Failure-Signature", d.Signature},
		{"Previous-Signatures", listValue(d.Signatures[:len(d.Signatures)-1])},
		{"Signature-Repeat-Count", strconv.Itoa(d.RepeatCount)},
		{"Auto-Retry", strconv.FormatBool(!d.Halt)},
		{"Retry-Count", strconv.Itoa(d.RetryCount)},
		{"Max-Retries", strconv.Itoa(d.MaxRetries)},
		{"Halted", strconv.FormatBool(d.Halt)},
	}
	if d.Halt {
		rows = append(rows, [2]string{"Halt-Reason", d.HaltReason})
	}
	rows = append(rows, [2]string{"Blocking", "true"})

	return recordText(issueLevel(doc), id, rows) +
		"\n**Summary:** " + summary(f) + "\n\n" +
		"**Failure Details:**\n\n" +
		fenced(details(f.Output))
}

// recordText renders the heading of a new record at level and its `Field | Value` table.
func recordText(level int, id string, rows [][2]string) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("#", level) + " " + id + "\n\n")
	b.WriteString("| Field | Value |\n|-------|-------|\n")
	for _, r := range rows {
		b.WriteString("| " + r[0] + " | " + queue.EscapeCell(r[1]) + " |\n")
	}
	return b.String()
}

// issueLevel returns the heading level of the file's issues (the last one's), or 3.
func issueLevel(doc *queue.Doc) int {
	for i := len(doc.Records) - 1; i >= 0; i-- {
		if strings.HasPrefix(doc.Records[i].ID, "ISSUE-") {
			return doc.Records[i].Level
		}
	}
	return 3
}

// summary returns the failure's one-line summary.
func summary(f Failure) string {
	s := oneLine(f.Summary)
	if s == "" {
		s = f.Task + ": " + string(f.Type)
		if p := oneLine(f.PrimaryError); p != "" {
			s += ": " + p
		}
	}
	if utf8.RuneCountInString(s) > 300 {
		s = string([]rune(s)[:299]) + "…"
	}
	return s
}

// oneLine makes s one line of plain text: no escape codes, no line breaks.
func oneLine(s string) string {
	s = cleanText(s)
	return strings.Join(strings.Fields(s), " ")
}

// cleanText removes ANSI codes and control characters other than tab and newline, and
// turns CRLF and lone CR line endings into LF.
func cleanText(s string) string {
	s = ansiRE().ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// details returns the first DetailsLimit characters of a gate's output, cleaned for a
// markdown file (cleanText), with a note of how much was left out.
func details(output string) string {
	s := strings.TrimRight(cleanText(output), "\n")
	if n := utf8.RuneCountInString(s); n > DetailsLimit {
		s = string([]rune(s)[:DetailsLimit]) + fmt.Sprintf("\n… (first %d of %d characters)", DetailsLimit, n)
	}
	// The issue queue's append marker is found by its text; a copy inside the output must
	// not be taken for it.
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.TrimSpace(line) == queue.IssuesMarker {
			line = strings.Replace(line, "<!--", "<!-\u200b-", 1)
		}
		b.WriteString(line)
	}
	return b.String()
}

// fenced puts text in a fenced code block whose fence is longer than any run of backticks
// in it, so that nothing inside can close it.
func fenced(text string) string {
	longest := queue.LongestBacktickRun(text)
	fence := strings.Repeat("`", max(3, longest+1))
	if text != "" {
		text += "\n"
	}
	return fence + "\n" + text + fence + "\n"
}

// countsOp returns the op that brings the Queue Status table up to date, as if the issues
// in status had those statuses and added more were pending; nil when there is no table.
func countsOp(doc *queue.Doc, status map[string]string, added int, at time.Time) queue.Op {
	counts := map[string]int{"pending": added}
	for i := range doc.Records {
		r := &doc.Records[i]
		s, ok := status[r.ID]
		if !ok {
			s, _ = queue.NormalizeStatus(queue.Issues, doc.Get(r, "Status"))
		}
		counts[s]++
	}
	op, ok := setSectionRows(doc, QueueStatusTitle, []row{
		{name: "Pending", value: strconv.Itoa(counts["pending"])},
		{name: "Accepted", value: strconv.Itoa(counts["accepted"])},
		{name: "In Progress", value: strconv.Itoa(counts["in_progress"])},
		{name: "Completed", value: strconv.Itoa(counts["completed"])},
		{name: "Won't Fix", value: strconv.Itoa(counts["wont_fix"])},
		{name: "Last Updated", value: at.UTC().Format(time.RFC3339)},
	})
	if !ok {
		return nil
	}
	return op
}

// ensureFile creates a missing .orchestrator file from the template `orchestrator init`
// writes. It never replaces a file: a person's file that appeared meanwhile stays.
func ensureFile(path, template string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	text, err := fs.ReadFile(templates.Files(), template)
	if err != nil {
		return err
	}
	if err := createFile(path, text); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// createFile writes a new file whole: a temp file in the same folder, fsynced, then linked
// to path, which fails with fs.ErrExist when path exists. A reader never sees it half
// written, and nothing is overwritten.
func createFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) && errors.Is(le.Err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", path, fs.ErrExist)
		}
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
