package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/worktree"
)

// TailLines is how many of its last lines of output `orchestrator show` gives of an
// agent, and maxTailLine how long each may be (an agent program that streams JSON writes
// long lines; its agent.log has them whole).
const (
	TailLines   = 20
	maxTailLine = 400
)

// A TaskReport is what `orchestrator show TASK-ID` says of one task: its row, its last
// decision, its issue, where its files are and how its agent's output ended. Paths are
// relative to the repository root.
type TaskReport struct {
	Task     string `json:"task"`
	Title    string `json:"title,omitempty"`
	Status   string `json:"status"` // as `status` shows it: a hand-completed task says so
	Kind     string `json:"kind"`
	Category string `json:"category"`
	// Agent is the task's Agent field, or when it has none the configured agent of its
	// next attempt (AgentFrom "config").
	Agent     string `json:"agent"`
	AgentFrom string `json:"agent_from"` // task or config
	// BlockedReason and HaltReason are the task's Blocked-Reason and Halt-Reason fields.
	BlockedReason string `json:"blocked_reason,omitempty"`
	HaltReason    string `json:"halt_reason,omitempty"`
	Attempts      int    `json:"attempts"`
	// Last is the decision on its last attempt; nil before its first.
	Last  *LastDecision `json:"last_decision"`
	Issue *TaskIssue    `json:"issue"` // nil when it has none
	Paths TaskPaths     `json:"paths"`
	// AgentTail is the end of its last attempt's agent.log, at most TailLines lines.
	AgentTail []string `json:"agent_tail"`
}

// A LastDecision is the outcome of a task's last attempt, from the attempt's record.
type LastDecision struct {
	Attempt int    `json:"attempt"`
	Agent   string `json:"agent,omitempty"`
	// Worker is the worker its agent ran on (SPEC §18); "" for one that ran here.
	Worker  string `json:"worker,omitempty"`
	Outcome string `json:"outcome"`
	// FailureType is the failure's type as its issue's Root Cause names it (SPEC §8.1),
	// or the attempt's own for an outcome that is not a failure (a block).
	FailureType string    `json:"failure_type,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	// Decided is when the decision was made: its start and how long it took.
	Decided time.Time `json:"decided,omitzero"`
	// Stages are how long each stage after its agent's run took, in order.
	Stages []StageTime `json:"stages,omitempty"`
	// Note says that the sealed record could not be read, and the decision shown is the
	// readable copy's: for a person, never evidence.
	Note string `json:"note,omitempty"`
}

// A TaskIssue is the task's issue in issue_queue.md: the one its Remediation names, else
// the last one whose Source Task it is.
type TaskIssue struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	RootCause  string `json:"root_cause,omitempty"`
	RetryCount string `json:"retry_count,omitempty"`
	Halted     bool   `json:"halted"`
	Summary    string `json:"summary,omitempty"`
}

// TaskPaths are where a task's last attempt keeps its files, relative to the repository
// root; a path is empty when the file is not there.
type TaskPaths struct {
	Runs     string `json:"runs"`
	GateLog  string `json:"gate_log,omitempty"`
	AgentLog string `json:"agent_log,omitempty"`
}

// Show returns the TaskReport of task id, or an error wrapping queue.ErrNotFound that
// names the task queue when it has no such task.
func Show(ctx context.Context, l queue.Layout, cfg *config.Config, id string) (*TaskReport, error) {
	tasks, err := queue.Load(l.Tasks())
	if err != nil {
		return nil, err
	}
	rec, ok := tasks.Record(id)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %s", tasks.Path, queue.ErrNotFound, id)
	}
	t := tasks.Task(rec)
	runs := l.Runs()
	var verified func(id, commit string) bool
	if repo, err := worktree.Open(ctx, l.Root); err == nil {
		runs, verified = stateRuns(repo), repo.IsVerified
	}
	rep := &TaskReport{
		Task: id, Title: tasks.TitleText(rec), Status: orNone(tasks.ShownStatus(t, verified)),
		Kind: t.Kind.String(), Category: orNone(t.Category), Agent: tasks.Get(rec, "Agent"), AgentFrom: "task",
		BlockedReason: nonEmpty(tasks.Get(rec, "Blocked-Reason")), HaltReason: nonEmpty(tasks.Get(rec, "Halt-Reason")),
		Attempts: lastAttempt(runs, id), AgentTail: []string{},
	}
	if queue.IsEmpty(rep.Agent) {
		rep.Agent, rep.AgentFrom = cfg.AgentFor(rep.Attempts+1), "config"
	}
	rep.Paths.Runs = rel(l.Root, filepath.Join(l.Runs(), id)) + string(filepath.Separator)
	if n := rep.Attempts; n > 0 {
		mirror := filepath.Join(l.Runs(), id, strconv.Itoa(n))
		rep.Paths.Runs = rel(l.Root, mirror) + string(filepath.Separator)
		rep.Last = lastDecision(filepath.Join(runs, id, strconv.Itoa(n)), mirror)
		for name, p := range map[string]*string{"gate.log": &rep.Paths.GateLog, "agent.log": &rep.Paths.AgentLog} {
			if _, err := os.Stat(filepath.Join(mirror, name)); err == nil {
				*p = rel(l.Root, filepath.Join(mirror, name))
			}
		}
		rep.AgentTail = lastLines(tail(filepath.Join(mirror, "agent.log"), 64<<10), TailLines)
	}
	if rep.Issue, err = taskIssue(l, tasks, rec, id); err != nil {
		return nil, err
	}
	return rep, nil
}

// lastDecision reads the record of an attempt: the sealed one in the orchestrator's state
// (dir), else the readable copy (mirror) with a note that says so; nil when neither reads.
func lastDecision(dir, mirror string) *LastDecision {
	res, err := openResult(sealKey(), dir)
	note := ""
	if err != nil {
		b, rerr := os.ReadFile(filepath.Join(mirror, "result.json"))
		if rerr != nil || json.Unmarshal(b, &res) != nil {
			return &LastDecision{Attempt: attemptOf(dir), Outcome: "unknown", Note: "its record cannot be read: " + err.Error()}
		}
		note = "the sealed record cannot be read (" + err.Error() + "); this is its readable copy, which is not evidence"
	}
	d := &LastDecision{Attempt: res.Attempt, Agent: res.Agent, Worker: res.Worker, Outcome: res.Outcome, Reason: oneLine(res.Reason), Commit: res.Commit, Started: res.Started, Note: note}
	if d.Attempt == 0 {
		d.Attempt = attemptOf(dir)
	}
	if res.Type != "" || res.Outcome == "failed" {
		d.FailureType = res.Type
		if res.Outcome == "failed" {
			d.FailureType = string(rootCause(res))
		}
	}
	if el, err := time.ParseDuration(res.Elapsed); err == nil && !res.Started.IsZero() {
		d.Decided = res.Started.Add(el)
	}
	d.Stages = res.Stages
	return d
}

// attemptOf returns the attempt number of an attempt folder (runs/<ID>/<n>).
func attemptOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(dir))
	return n
}

// taskIssue returns the task's issue: the one its Remediation field names, else the last
// one whose Source Task it is; nil when there is no issue queue or no such issue.
func taskIssue(l queue.Layout, tasks *queue.Doc, rec *queue.Record, id string) (*TaskIssue, error) {
	issues, err := queue.Load(l.Issues())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ir *queue.Record
	for _, ref := range queue.List(tasks.Get(rec, "Remediation")) {
		if r, ok := issues.Record(ref); ok {
			ir = r
		}
	}
	if ir == nil {
		for i := range issues.Records {
			if slices.Contains(queue.List(issues.Get(&issues.Records[i], "Source Task")), id) {
				ir = &issues.Records[i]
			}
		}
	}
	if ir == nil {
		return nil, nil
	}
	halted, _ := queue.Bool(issues.Get(ir, "Halted"))
	summary := ""
	for _, f := range issues.Prose(ir) {
		if issues.Name(f) == "Summary" {
			summary = oneLine(issues.Value(f))
		}
	}
	return &TaskIssue{
		ID: ir.ID, Status: orNone(issues.Get(ir, "Status")), RootCause: nonEmpty(issues.Get(ir, "Root Cause")),
		RetryCount: nonEmpty(issues.Get(ir, "Retry-Count")), Halted: halted, Summary: summary,
	}, nil
}

// nonEmpty returns a field's value, or "" for the empty markers ("", "-", "none").
func nonEmpty(v string) string {
	if queue.IsEmpty(v) {
		return ""
	}
	return v
}

// rel returns path relative to root, or path when it is not below root.
func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// lastLines returns the last n lines of text, each cut to maxTailLine bytes, with no
// empty trailing line.
func lastLines(text string, n int) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{}
	}
	lines = lines[max(len(lines)-n, 0):]
	for i, ln := range lines {
		ln = strings.TrimRight(ln, "\r")
		lines[i] = clipReason(ln, maxTailLine)
	}
	return lines
}
