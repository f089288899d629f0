package retry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// The failure most tests record, and its signature.
const addLine = "add_test.go:9: Add(2, 2) = 5, want 4"

var addSig = Signature(TestFails, addLine, "TestAdd", "calc/add.go")

// withIssue appends an open failure-remediation issue of TASK-003 to the issue queue, with
// fields overriding the defaults (a value "" removes the row).
func withIssue(t *testing.T, l queue.Layout, id string, fields ...string) {
	t.Helper()
	rows := [][2]string{
		{"Status", "pending"}, {"Priority", "critical"}, {"Type", "failure-remediation"},
		{"Source", "generated"}, {"Category", "backend"}, {"Created", "2026-11-21T09:00:00Z"},
		{"Source Task", "TASK-003"}, {"Root Cause", "test_fails"},
		{"Failure-Signature", "1111111111111111"}, {"Previous-Signatures", "[]"},
		{"Signature-Repeat-Count", "0"}, {"Auto-Retry", "true"}, {"Retry-Count", "1"},
		{"Max-Retries", "10"}, {"Halted", "false"}, {"Blocking", "true"},
	}
	for i := 0; i+1 < len(fields); i += 2 {
		found := false
		for j := range rows {
			if rows[j][0] == fields[i] {
				rows[j][1], found = fields[i+1], true
			}
		}
		if !found {
			rows = append(rows, [2]string{fields[i], fields[i+1]})
		}
	}
	text := "### " + id + "\n\n| Field | Value |\n|-------|-------|\n"
	for _, r := range rows {
		if r[1] != "" {
			text += "| " + r[0] + " | " + r[1] + " |\n"
		}
	}
	text += "\n**Summary:** an earlier failure\n"
	_, err := queue.Update(context.Background(), l.Issues(), queue.Issues, func(d *queue.Doc) ([]queue.Op, error) {
		return []queue.Op{queue.AppendRecord{Text: text}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setFields sets fields of a record of the task queue.
func setFields(t *testing.T, l queue.Layout, id string, fields ...string) {
	t.Helper()
	_, err := queue.Update(context.Background(), l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		var ops []queue.Op
		for i := 0; i+1 < len(fields); i += 2 {
			ops = append(ops, queue.SetField{ID: id, Field: fields[i], Value: fields[i+1]})
		}
		return ops, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setTotalRetries writes the run's auto-retry count.
func setTotalRetries(t *testing.T, l queue.Layout, n int) {
	t.Helper()
	err := updateSession(context.Background(), l, func(d *queue.Doc) ([]queue.Op, error) {
		return []queue.Op{setTotal(d, n, t0, "")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fields reads a record's fields.
func fields(t *testing.T, path, id string) map[string]string {
	t.Helper()
	d, err := queue.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := d.Record(id)
	if !ok {
		t.Fatalf("%s: no %s", path, id)
	}
	out := map[string]string{}
	for _, f := range d.Fields(r) {
		out[queue.CanonicalName(d.Name(f))] = d.Value(f)
	}
	return out
}

// TestRetryConditions checks each condition of SPEC §8.3 and §8.4 on its own.
func TestRetryConditions(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, l queue.Layout)
		lim    Limits
		want   string // retry, failed or halt
		reason string // the halt reason, or a part of the reason
		retry  int    // Retry-Count after
		repeat int    // Signature-Repeat-Count after
		issue  string // the issue recorded
		total  int    // total_auto_retries after
	}{
		{name: "first failure", want: "retry", reason: "retry 1 of 10", retry: 1, issue: "ISSUE-20261121-001", total: 1},
		{name: "no_auto_retry file", setup: func(t *testing.T, l queue.Layout) {
			if err := os.WriteFile(NoAutoRetryPath(l), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: "failed", reason: "auto-retry is off", issue: "ISSUE-20261121-001"},
		{name: "issue has Auto-Retry false", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-007", "Auto-Retry", "false")
		}, want: "failed", reason: "ISSUE-20261121-007 has Auto-Retry false", retry: 1, issue: "ISSUE-20261121-007"},
		{name: "issue without Auto-Retry retries", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-007", "Auto-Retry", "")
		}, want: "retry", retry: 2, issue: "ISSUE-20261121-007", total: 1},
		{name: "issue is halted", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-007", "Halted", "true")
		}, want: "failed", reason: "ISSUE-20261121-007 is halted", retry: 1, issue: "ISSUE-20261121-007"},
		{name: "same signature a second time", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Failure-Signature", addSig)
		}, want: "retry", retry: 2, repeat: 1, issue: "ISSUE-20261121-001", total: 1},
		{name: "same signature a third time", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Failure-Signature", addSig, "Previous-Signatures", "["+addSig+"]", "Retry-Count", "2")
		}, want: "halt", reason: "Repeated identical failure (3x)", retry: 2, repeat: 2, issue: "ISSUE-20261121-001"},
		{name: "same signature counted over the whole history", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Failure-Signature", "2222222222222222",
				"Previous-Signatures", "["+addSig+", 3333333333333333, "+addSig+"]", "Retry-Count", "4")
		}, want: "halt", reason: "Repeated identical failure (3x)", retry: 4, repeat: 2, issue: "ISSUE-20261121-001"},
		{name: "SameSignatureHalt 2", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Failure-Signature", addSig)
		}, lim: Limits{SameSignatureHalt: 2}, want: "halt", reason: "Repeated identical failure (2x)", retry: 1, repeat: 1, issue: "ISSUE-20261121-001"},
		{name: "last retry", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Retry-Count", "9")
		}, want: "retry", reason: "retry 10 of 10", retry: 10, issue: "ISSUE-20261121-001", total: 1},
		{name: "Max-Retries reached", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Retry-Count", "10")
		}, want: "halt", reason: "Max retries reached (10)", retry: 10, issue: "ISSUE-20261121-001"},
		{name: "the issue's Max-Retries wins", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Retry-Count", "2", "Max-Retries", "2")
		}, lim: Limits{MaxRetries: 20}, want: "halt", reason: "Max retries reached (2)", retry: 2, issue: "ISSUE-20261121-001"},
		{name: "Limits.MaxRetries without a Max-Retries field", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Retry-Count", "3", "Max-Retries", "")
		}, lim: Limits{MaxRetries: 3}, want: "halt", reason: "Max retries reached (3)", retry: 3, issue: "ISSUE-20261121-001"},
		{name: "the task's fields without an open issue", setup: func(t *testing.T, l queue.Layout) {
			// A task that `issues convert` made carries the count of its issue.
			setFields(t, l, "TASK-003", "Retry-Count", "10", "Max-Retries", "10")
		}, want: "halt", reason: "Max retries reached (10)", retry: 10, issue: "ISSUE-20261121-001"},
		{name: "below the global cap", setup: func(t *testing.T, l queue.Layout) {
			setTotalRetries(t, l, 14)
		}, want: "retry", retry: 1, issue: "ISSUE-20261121-001", total: 15},
		{name: "global cap reached", setup: func(t *testing.T, l queue.Layout) {
			setTotalRetries(t, l, 15)
		}, want: "deferred", reason: "global cap; no more auto-retries this run", retry: 1, issue: "ISSUE-20261121-001", total: 15},
		{name: "Limits.GlobalCap", setup: func(t *testing.T, l queue.Layout) {
			setTotalRetries(t, l, 2)
		}, lim: Limits{GlobalCap: 2}, want: "deferred", reason: "the run's 2 auto-retries reached the global cap", retry: 1, issue: "ISSUE-20261121-001", total: 2},
		{name: "a closed issue is not reused", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Status", "completed", "Retry-Count", "10")
		}, want: "retry", retry: 1, issue: "ISSUE-20261121-002", total: 1},
		{name: "a won't-fix issue is not reused", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Status", "wont_fix")
		}, want: "retry", retry: 1, issue: "ISSUE-20261121-002", total: 1},
		{name: "an issue handed to another task is not reused", setup: func(t *testing.T, l queue.Layout) {
			withIssue(t, l, "ISSUE-20261121-001", "Status", "accepted", "Task Ref", "TASK-099")
		}, want: "retry", retry: 1, issue: "ISSUE-20261121-002", total: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newRepo(t, filepath.Join("record", "new-issue"))
			if tt.setup != nil {
				tt.setup(t, l)
			}
			before, _ := AutoRetries(l)
			d := record(t, l, failure("TASK-003", addLine, 0), tt.lim, tt.want)
			switch {
			case tt.want == "halt" && d.HaltReason != tt.reason:
				t.Errorf("HaltReason %q, want %q", d.HaltReason, tt.reason)
			case tt.want != "halt" && !strings.Contains(d.Reason, tt.reason):
				t.Errorf("Reason %q, want it to say %q", d.Reason, tt.reason)
			}
			if d.Signature != addSig || d.RetryCount != tt.retry || d.RepeatCount != tt.repeat || d.IssueID != tt.issue {
				t.Errorf("decision %+v, want signature %s, retry count %d, repeat count %d, issue %s", d, addSig, tt.retry, tt.repeat, tt.issue)
			}
			total, err := AutoRetries(l)
			if err != nil {
				t.Fatal(err)
			}
			wantTotal := tt.total
			if tt.want != "retry" && tt.total == 0 {
				wantTotal = before
			}
			if total != wantTotal || d.TotalAutoRetries != wantTotal {
				t.Errorf("total_auto_retries %d (decision %d), want %d", total, d.TotalAutoRetries, wantTotal)
			}

			// The task and its issue say the same.
			task := fields(t, l.Tasks(), "TASK-003")
			issue := fields(t, l.Issues(), d.IssueID)
			wantStatus := map[string]string{"retry": "pending", "failed": "failed", "halt": "halted", "deferred": "failed"}[tt.want]
			if task["Status"] != wantStatus || d.Status != wantStatus {
				t.Errorf("task Status %q (decision %q), want %q", task["Status"], d.Status, wantStatus)
			}
			for _, name := range []string{"Retry-Count", "Failure-Signature", "Previous-Signatures", "Signature-Repeat-Count"} {
				if task[name] != issue[name] {
					t.Errorf("%s: task has %q, issue %q", name, task[name], issue[name])
				}
			}
			if task["Remediation"] != d.IssueID {
				t.Errorf("task Remediation %q, want %s", task["Remediation"], d.IssueID)
			}
			if tt.want == "halt" {
				if task["Halted"] != "true" || task["Halt-Reason"] != tt.reason {
					t.Errorf("task Halted %q, Halt-Reason %q", task["Halted"], task["Halt-Reason"])
				}
				if issue["Halted"] != "true" || issue["Halt-Reason"] != tt.reason || issue["Auto-Retry"] != "false" {
					t.Errorf("issue Halted %q, Halt-Reason %q, Auto-Retry %q", issue["Halted"], issue["Halt-Reason"], issue["Auto-Retry"])
				}
			} else if _, ok := task["Halted"]; ok {
				t.Errorf("task got Halted %q", task["Halted"])
			}
			if err := validate(l); err != nil {
				t.Error(err)
			}
		})
	}
}

// validate checks that the queues are valid after the edits.
func validate(l queue.Layout) error {
	for _, p := range []string{l.Tasks(), l.Issues(), l.Session()} {
		if _, err := queue.Load(p); err != nil {
			return err
		}
	}
	return nil
}

// TestGlobalCapAcrossTasks checks that the cap counts the retries of every task of the run,
// and that ResetRun starts a new run.
func TestGlobalCapAcrossTasks(t *testing.T) {
	l := newRepo(t, filepath.Join("record", "new-issue"))
	lim := Limits{GlobalCap: 3}
	steps := []struct {
		task, want string
		total      int
	}{
		{"TASK-003", "retry", 1},
		{"TASK-004", "retry", 2},
		{"TASK-003", "retry", 3},
		{"TASK-004", "deferred", 3},
	}
	for i, s := range steps {
		// A different failure each time: no signature repeats.
		d := record(t, l, failure(s.task, fmt.Sprintf("x_test.go:%d: wrong", i+1), i), lim, s.want)
		if d.TotalAutoRetries != s.total {
			t.Errorf("step %d: total %d, want %d", i+1, d.TotalAutoRetries, s.total)
		}
		if s.want == "retry" {
			setStatus(t, l, s.task, "in_progress")
		}
	}
	if got := fields(t, l.Tasks(), "TASK-004"); got["Retry-Deferred"] != "Global auto-retry cap reached (3)" || got["Status"] != "failed" || got["Halted"] != "" {
		t.Errorf("TASK-004 Retry-Deferred %q, Status %q, Halted %q; want the cap's reason, failed, not halted", got["Retry-Deferred"], got["Status"], got["Halted"])
	}
	if err := ResetRun(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if n, _ := AutoRetries(l); n != 0 {
		t.Fatalf("after ResetRun, total %d", n)
	}
	// A new run: TASK-003 (not halted) gets its retries again.
	record(t, l, failure("TASK-003", "x_test.go:9: wrong again", 9), lim, "retry")
}

// TestRecordConcurrent records failures of many tasks at once: the cap holds exactly.
func TestRecordConcurrent(t *testing.T) {
	l := newRepo(t, filepath.Join("record", "new-issue"))
	var b strings.Builder
	b.WriteString("# Tasks\n")
	const n = 8
	for i := range n {
		fmt.Fprintf(&b, "\n### TASK-%03d\n\n| Field | Value |\n|-------|-------|\n| Status | in_progress |\n| Category | backend |\n", 100+i)
	}
	if err := os.WriteFile(l.Tasks(), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	decisions := make([]Decision, n)
	for i := range n {
		wg.Go(func() {
			d, err := Record(context.Background(), l, failure(fmt.Sprintf("TASK-%03d", 100+i), "x_test.go:1: no", i), Limits{GlobalCap: 5})
			if err != nil {
				t.Error(err)
			}
			decisions[i] = d
		})
	}
	wg.Wait()
	retries, deferred := 0, 0
	ids := map[string]bool{}
	for _, d := range decisions {
		if d.Retry {
			retries++
		}
		if d.Deferred {
			deferred++
		}
		ids[d.IssueID] = true
	}
	if retries != 5 || deferred != 3 || len(ids) != n {
		t.Errorf("%d retries, %d held back by the cap, %d issues; want 5, 3, %d", retries, deferred, len(ids), n)
	}
	if total, _ := AutoRetries(l); total != 5 {
		t.Errorf("total_auto_retries %d, want 5", total)
	}
	if err := validate(l); err != nil {
		t.Error(err)
	}
}

// TestPersonEditWins changes the task while its failure is recorded: the person's Status
// stays, the issue is recorded, and the run's counter is given back.
func TestPersonEditWins(t *testing.T) {
	l := newRepo(t, filepath.Join("record", "new-issue"))
	testHookBeforeTaskWrite = func() { setFields(t, l, "TASK-003", "Status", "skipped") }
	defer func() { testHookBeforeTaskWrite = nil }()
	d, err := Record(context.Background(), l, failure("TASK-003", addLine, 0), Limits{})
	if !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("Record: %v, want a conflict", err)
	}
	if d.Retry || d.IssueID != "ISSUE-20261121-001" {
		t.Errorf("decision %+v", d)
	}
	if got := fields(t, l.Tasks(), "TASK-003"); got["Status"] != "skipped" || got["Retry-Count"] != "" {
		t.Errorf("task %v: the person's edit was overwritten", got)
	}
	if _, ok := fields(t, l.Issues(), "ISSUE-20261121-001")["Status"]; !ok {
		t.Error("issue not recorded")
	}
	if n, _ := AutoRetries(l); n != 0 {
		t.Errorf("total_auto_retries %d, want 0", n)
	}
}

func TestRecordErrors(t *testing.T) {
	ctx := context.Background()
	l := newRepo(t, filepath.Join("record", "new-issue"))
	if _, err := Record(ctx, l, failure("TASK-404", addLine, 0), Limits{}); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := Record(ctx, l, Failure{Task: "TASK-003", Type: "flaky"}, Limits{}); err == nil || !strings.Contains(err.Error(), "unknown failure type") {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := Record(ctx, l, Failure{Task: "task 3", Type: TestFails}, Limits{}); err == nil {
		t.Error("bad ID: no error")
	}
	withIssue(t, l, "ISSUE-20261121-001", "Retry-Count", "lots")
	before := tree(t, l.Dir())
	_, err := Record(ctx, l, failure("TASK-003", addLine, 0), Limits{})
	var pe *queue.ParseError
	if !errors.As(err, &pe) || pe.Line == 0 || !strings.Contains(err.Error(), "Retry-Count") {
		t.Errorf("bad Retry-Count: %v, want a ParseError at its line", err)
	}
	for name, b := range tree(t, l.Dir()) {
		if string(before[name]) != string(b) {
			t.Errorf("%s changed after an error", name)
		}
	}
}

// TestFailureDetails records output that looks like markdown structure: it stays inside
// its fence, and the next issue goes below the marker, not inside the fence.
func TestFailureDetails(t *testing.T) {
	l := newRepo(t, filepath.Join("record", "new-issue"))
	out := "```go\nfunc x() {}\n````\n### TASK-999\n\n| Field | Value |\n|---|---|\n| Status | pending |\n" +
		queue.IssuesMarker + "\n\x1b[31mred\x1b[0m\r\nend\r" + strings.Repeat("é", 3000)
	f := Failure{Task: "TASK-003", Type: BuildFails, Output: out, At: t0}
	record(t, l, f, Limits{}, "retry")
	record(t, l, failure("TASK-004", addLine, 1), Limits{}, "retry")
	d, err := queue.Load(l.Issues())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.IDs(), " "); got != "ISSUE-20261121-001 ISSUE-20261121-002" {
		t.Fatalf("records %s", got)
	}
	r, _ := d.Record("ISSUE-20261121-001")
	body := d.Body(r)
	for _, want := range []string{
		"\n`````\n```go\nfunc x() {}\n````\n### TASK-999\n",
		"\nred\nend\n",
		"\n… (first 2000 of ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("details lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "\x1b") || strings.Contains(body, "\r") {
		t.Error("details keep escape codes or CRs")
	}
	if n := strings.Count(body, "é"); n == 0 || n >= 2000 {
		t.Errorf("%d of 3000 é kept: the first 2000 characters are the whole output's", n)
	}
	if strings.Count(d.Body(r), "`````") != 2 {
		t.Error("the fence is not five backticks")
	}
	r2, _ := d.Record("ISSUE-20261121-002")
	if r2.Start < r.End {
		t.Error("the second issue is inside the first")
	}
}

// TestSectionRowsAligned checks that a count in an aligned Queue Status table keeps the
// table aligned.
func TestSectionRowsAligned(t *testing.T) {
	src := "# Issues\n\n## Queue Status\n\n| Field        | Value |\n|--------------|-------|\n| Last Updated | -     |\n| Pending      | 0     |\n| Won't Fix    |       |\n\n## Issues\n"
	d, err := queue.Parse("issue_queue.md", []byte(src), queue.Issues)
	if err != nil {
		t.Fatal(err)
	}
	op := countsOp(d, nil, 12, t0)
	got, err := queue.Apply(d, op)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Issues\n\n## Queue Status\n\n| Field        | Value |\n|--------------|-------|\n| Last Updated | 2026-11-21T10:00:00Z |\n| Pending      | 12    |\n| Won't Fix    | 0 |\n\n## Issues\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestNextIssueID(t *testing.T) {
	src := "# Issues\n\n### ISSUE-20261121-009\n\n| Field | Value |\n|---|---|\n| Status | pending |\n\n### ISSUE-20261121-010\n\n| Field | Value |\n|---|---|\n| Status | completed |\n\n### ISSUE-20261122-042\n\n| Field | Value |\n|---|---|\n| Status | pending |\n"
	d, err := queue.Parse("issue_queue.md", []byte(src), queue.Issues)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ day, want string }{
		{"2026-11-21", "ISSUE-20261121-011"},
		{"2026-11-22", "ISSUE-20261122-043"},
		{"2026-11-23", "ISSUE-20261123-001"},
	} {
		day, _ := time.Parse("2006-01-02", tt.day)
		if got := NextIssueID(d, day); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.day, got, tt.want)
		}
	}
}
