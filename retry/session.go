package retry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// AutoRetryTitle is the heading of session_state.md's section whose `Field | Value` table
// counts the run's auto-retries in its total_auto_retries row (SPEC §2, §8.3).
const AutoRetryTitle = "Auto-Retry State"

const totalRow = "total_auto_retries"

// autoRetrySection is the section written when session_state.md has none.
func autoRetrySection(total int, at time.Time) string {
	return "## " + AutoRetryTitle + "\n\n| Field | Value |\n|-------|-------|\n| " + totalRow +
		" | " + strconv.Itoa(total) + " |\n| Last Updated | " + at.UTC().Format(time.RFC3339) + " |\n"
}

// readTotal returns total_auto_retries from a parsed session_state.md, and whether the file
// has that row (0 when it has none).
func readTotal(d *queue.Doc) (int, bool, error) {
	t, ok := d.SectionTable(AutoRetryTitle, "Field")
	if !ok {
		return 0, false, nil
	}
	for _, r := range t.Rows {
		if !queue.SameName(d.CellText(r, 0), totalRow) {
			continue
		}
		n, err := queue.Int(d.CellText(r, 1))
		if err != nil {
			return 0, true, &queue.ParseError{Path: d.Path, Line: r.Line, Msg: fmt.Sprintf("%s: %v", totalRow, err)}
		}
		return n, true, nil
	}
	return 0, false, nil
}

// setTotal returns the op that writes total into session_state.md: the row's cell, the row
// when the table lacks it, or the whole section when the file lacks it. The section's Last
// Updated row and claudestrator's last_retry_reason row are kept current where they exist.
func setTotal(d *queue.Doc, total int, at time.Time, reason string) queue.Op {
	rows := []row{
		{name: totalRow, value: strconv.Itoa(total), add: true},
		{name: "Last Updated", value: at.UTC().Format(time.RFC3339)},
	}
	if reason != "" {
		rows = append(rows, row{name: "last_retry_reason", value: reason})
	}
	if op, ok := setSectionRows(d, AutoRetryTitle, rows); ok {
		return op
	}
	return queue.ReplaceSection{Title: AutoRetryTitle, Text: autoRetrySection(total, at)}
}

// updateSession edits session_state.md, creating it from the init template when missing.
func updateSession(ctx context.Context, l queue.Layout, edit queue.EditFunc) error {
	if err := ensureFile(l.Session(), "session_state.md"); err != nil {
		return err
	}
	_, err := queue.Update(ctx, l.Session(), queue.Tasks, edit)
	return err
}

// takeAutoRetry raises the run's auto-retry count if it is below limit, in one locked
// write. It returns the count after, and whether it was raised.
func takeAutoRetry(ctx context.Context, l queue.Layout, limit int, f Failure, d Decision) (int, bool, error) {
	var total int
	var ok bool
	reason := fmt.Sprintf("%s: %s %s (retry %d of %d)", f.Task, f.Type, d.Signature, d.RetryCount, d.MaxRetries)
	err := updateSession(ctx, l, func(doc *queue.Doc) ([]queue.Op, error) {
		n, _, err := readTotal(doc)
		if err != nil {
			return nil, err
		}
		if n >= limit {
			total, ok = n, false
			return nil, nil
		}
		total, ok = n+1, true
		return []queue.Op{setTotal(doc, n+1, f.At, reason)}, nil
	})
	return total, ok, err
}

// giveBackAutoRetry lowers the run's auto-retry count by one, for a retry that did not
// happen after all.
func giveBackAutoRetry(ctx context.Context, l queue.Layout) error {
	return updateSession(ctx, l, func(doc *queue.Doc) ([]queue.Op, error) {
		n, _, err := readTotal(doc)
		if err != nil || n == 0 {
			return nil, err
		}
		return []queue.Op{setTotal(doc, n-1, Now(), "")}, nil
	})
}

// AutoRetries returns the run's auto-retries so far: total_auto_retries in session_state.md
// (0 when the file, the section or the row is missing).
func AutoRetries(l queue.Layout) (int, error) {
	d, err := queue.Load(l.Session())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _, err := readTotal(d)
	return n, err
}

// ResetRun sets the run's auto-retry count back to 0: the watch loop calls it when a run
// starts, since the global cap is per run (SPEC §8.3). It creates session_state.md or its
// section when missing, and writes nothing when the count is already 0.
func ResetRun(ctx context.Context, l queue.Layout) error {
	mu.Lock()
	defer mu.Unlock()
	return updateSession(ctx, l, func(doc *queue.Doc) ([]queue.Op, error) {
		n, found, err := readTotal(doc)
		if err != nil {
			return nil, err
		}
		if found && n == 0 {
			return nil, nil
		}
		return []queue.Op{setTotal(doc, 0, Now(), "")}, nil
	})
}

// Requeue starts a new run's deferred retries: every task that is failed with a
// Retry-Deferred reason (the previous run's global cap stopped its retry) goes back to
// pending, with compare-and-set, so that a person's edit wins. It returns their IDs.
func Requeue(ctx context.Context, l queue.Layout) ([]string, error) {
	mu.Lock()
	defer mu.Unlock()
	var ids []string
	_, err := queue.Update(ctx, l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		ids = nil
		var ops []queue.Op
		for _, t := range d.Tasks() {
			if t.Status != queue.StatusFailed || queue.IsEmpty(d.Get(t.Record, "Retry-Deferred")) {
				continue
			}
			ids = append(ids, t.ID)
			ops = append(ops,
				queue.CompareAndSet{ID: t.ID, Field: "Status", Expect: queue.StatusFailed, Value: queue.StatusPending},
				queue.SetField{ID: t.ID, Field: "Retry-Deferred", Value: ""})
		}
		return ops, nil
	})
	return ids, err
}
