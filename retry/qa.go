package retry

import (
	"context"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// QAIssue appends an issue of a QA spot check to the issue queue (SPEC §11.1): typ is
// qa_failure, or qa_mismatch when an implementer claimed that every test passed and the
// spot check found failures (then it is also the issue's Source). It returns the issue's ID.
func QAIssue(ctx context.Context, l queue.Layout, task, category, typ, summary, details string, at time.Time) (string, error) {
	if at.IsZero() {
		at = Now()
	}
	if err := ensureFile(l.Issues(), "issue_queue.md"); err != nil {
		return "", err
	}
	if strings.TrimSpace(category) == "" {
		category = "-"
	}
	source := "generated"
	if typ == "qa_mismatch" {
		source = "qa_mismatch"
	}
	var id string
	_, err := queue.Update(ctx, l.Issues(), queue.Issues, func(doc *queue.Doc) ([]queue.Op, error) {
		id = NextIssueID(doc, at)
		rows := [][2]string{
			{"Status", "pending"},
			{"Priority", "critical"},
			{"Type", typ},
			{"Source", source},
			{"Category", category},
			{"Created", at.UTC().Format(time.RFC3339)},
			{"Source Task", task},
			{"Root Cause", string(QAFailure)},
			{"Auto-Retry", "false"},
			{"Halted", "false"},
			{"Blocking", "true"},
		}
		text := recordText(issueLevel(doc), id, rows) +
			"\n**Summary:** " + oneLine(task+": "+summary) + "\n\n" +
			"**Details:**\n\n" + fenced(cleanText(details))
		ops := []queue.Op{queue.AppendRecord{Text: text}}
		if op := countsOp(doc, nil, 1, at); op != nil {
			ops = append(ops, op)
		}
		return ops, nil
	})
	return id, err
}
