package retry

import (
	"context"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// Ask appends an issue for a person to the issue queue: an agent is stuck on an unclear
// requirement and was asked again as often as it may be (SPEC §10.3). The issue holds the
// agent's question; it is not retried automatically. It returns the issue's ID.
func Ask(ctx context.Context, l queue.Layout, task, category, question string, at time.Time) (string, error) {
	if at.IsZero() {
		at = Now()
	}
	if err := ensureFile(l.Issues(), "issue_queue.md"); err != nil {
		return "", err
	}
	if strings.TrimSpace(category) == "" {
		category = "-"
	}
	var id string
	_, err := queue.Update(ctx, l.Issues(), queue.Issues, func(doc *queue.Doc) ([]queue.Op, error) {
		id = NextIssueID(doc, at)
		rows := [][2]string{
			{"Status", "pending"},
			{"Priority", "high"},
			{"Type", "question"},
			{"Source", "generated"},
			{"Category", category},
			{"Created", at.UTC().Format(time.RFC3339)},
			{"Source Task", task},
			{"Auto-Retry", "false"},
			{"Halted", "false"},
			{"Blocking", "true"},
		}
		text := recordText(issueLevel(doc), id, rows) +
			"\n**Summary:** " + oneLine(task+": the agent needs an answer: "+question) + "\n\n" +
			"**Details:** The agent asked this and was asked to go on twice; answer it in the task's record, then set the task back to pending.\n\n" +
			fenced(cleanText(question))
		ops := []queue.Op{queue.AppendRecord{Text: text}}
		if op := countsOp(doc, nil, 1, at); op != nil {
			ops = append(ops, op)
		}
		return ops, nil
	})
	return id, err
}
