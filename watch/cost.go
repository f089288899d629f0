package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/cost"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/worktree"
)

// addUsage records what one run of an agent program within the attempt spent, from the
// program's standard output (its own final report, see agents.ReadUsage), priced with the
// config's prices when the program reports tokens only. Every agent run of an attempt
// calls it once: the attempt's own agent when it ends, and a reviewer or a judge after
// theirs, with their role. It is written to result.json with the attempt's next record,
// and counts toward the task's Cost and Tokens and its budget.
func (r *runner) addUsage(a *attempt, role, agent, model string, stdout []byte) agents.Usage {
	program := agent
	if ad, err := r.adapterOf(agent); err == nil {
		program = ad.Name()
	}
	u := agents.ReadUsage(program, stdout)
	if p, ok := r.o.Config.PriceOf(model); ok {
		u = u.Priced(p)
	}
	a.usage = append(a.usage, cost.Run{Role: role, Agent: agent, Model: model, Usage: u})
	return u
}

// adapterOf returns the adapter of the agent called name, as the config defines it.
func (r *runner) adapterOf(name string) (agents.Adapter, error) {
	configured := map[string][]string{}
	for k, v := range r.o.Config.Agents {
		configured[k] = v.Command
	}
	if name == agents.Replay {
		return agents.NewReplay("", ""), nil
	}
	return agents.Lookup(name, configured)
}

// readAgentUsage records the usage of the attempt's own agent, once it has ended: from
// its output, or for an agent of an earlier run, its log. It also reads whether the
// program reported a rate or usage limit.
func (r *runner) readAgentUsage(a *attempt) {
	if a.adapter == nil || a.usageRead {
		return
	}
	a.usageRead = true
	r.forgetSpent(a.id)
	var out []byte
	if a.proc != nil {
		out = []byte(a.proc.Stdout())
	} else {
		out = []byte(tail(filepath.Join(a.mirror, "agent.log"), agents.MaxStdout))
	}
	r.addUsage(a, roleOf(a), a.agent, r.modelOf(a), out)
	a.limit = agents.RateLimitOf(a.adapter.Name(), out, time.Now())
}

// roleOf is the role the attempt's agent was invoked as: its prompt's.
func roleOf(a *attempt) string {
	if role := prompts.RoleFor(a.task.Kind.String()); role != "" {
		return role
	}
	return agents.RoleImplementer
}

// modelOf returns the model the attempt's command line asked for ("" when it named none:
// Codex then uses its own configuration's model, which the orchestrator does not know).
func (r *runner) modelOf(a *attempt) string { return argModel(a.argv) }

// argModel is the model an agent's command line names ("" for none).
func argModel(argv []string) string {
	for i, arg := range argv {
		if (arg == "--model" || arg == "-m") && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}

// Task cost, as the Cost and Tokens fields of a task say it.

// runsOf returns the agent runs of an attempt record (ok is false when the attempt folder
// has none): its usage records; for an agent that ran and has none (an attempt recorded
// before usage was), or a folder without a record, one run whose usage is unknown; none
// for an attempt whose agent never started or still runs.
func runsOf(res result, ok bool) []cost.Run {
	if len(res.Usage) > 0 {
		return res.Usage
	}
	if !ok || res.PID != 0 && res.Outcome != "running" && res.Outcome != "starting" {
		return []cost.Run{{Role: "unknown", Agent: orNone(res.Agent)}}
	}
	return nil
}

// taskSpent reads what the finished attempts of task id spent, from the attempt folders
// under runs.
func taskSpent(runs, id string) cost.Spent { return taskSpentWith(runs, id, 0, nil) }

// taskSpentWith is taskSpent with the record of attempt n given as own, rather than read.
func taskSpentWith(runs, id string, n int, own *result) cost.Spent {
	var s cost.Spent
	for i := 1; i <= max(lastAttempt(runs, id), n); i++ {
		var rs []cost.Run
		if own != nil && i == n {
			rs = runsOf(*own, true)
		} else {
			rs = runsOf(readResult(filepath.Join(runs, id, strconv.Itoa(i))))
		}
		if len(rs) > 0 {
			s.Add(rs)
		}
	}
	return s
}

// costOps returns the task's Cost and Tokens fields after attempt a, written in the same
// write of the queue as its status. own, when given, is the outcome a's record is being
// written with (recordBeside): its runs are counted from it, without waiting for the write.
func (r *runner) costOps(a *attempt, own *result) []queue.Op {
	var s cost.Spent
	if own != nil {
		rec := a.filled(*own)
		s = taskSpentWith(r.runs, a.id, a.n, &rec)
	} else {
		s = taskSpent(r.runs, a.id)
	}
	// The sum is the task's as of now: the scheduler's budget check reads it (cachedSpent).
	if r.spentCache != nil {
		r.spentCache[a.id] = s
	}
	if s.Attempts == 0 {
		return nil
	}
	usd, tokens := cost.FormatUSD(s.Total.CostUSD), cost.FormatTokens(s.Total.Tokens())
	r.report.cost(a.id, usd)
	return []queue.Op{queue.SetField{ID: a.id, Field: "Cost", Value: usd}, queue.SetField{ID: a.id, Field: "Tokens", Value: tokens}}
}

// Budgets (SPEC §16).

// overBudget says which budget an attempt of task t that started now would pass, or ""
// (cost.Over): the task's sums are read from its attempt records, the run's from every
// task's, as cached.
func (r *runner) overBudget(tasks *queue.Doc, t queue.Task) string {
	return cost.Over(r.o.Config.Budget, t.ID, func() cost.Spent { return taskSpent(r.runs, t.ID) }, func() cost.Spent {
		var run cost.Spent
		for _, other := range tasks.Tasks() {
			run.Merge(r.cachedSpent(other.ID))
		}
		return run
	})
}

// cachedSpent is taskSpent for the run budget, which sums every task's attempts before
// each launch: a task's sum is read again only after one of its attempts was decided
// (forgetSpent).
func (r *runner) cachedSpent(id string) cost.Spent {
	if s, ok := r.spentCache[id]; ok {
		return s
	}
	if r.spentCache == nil {
		r.spentCache = map[string]cost.Spent{}
	}
	s := taskSpent(r.runs, id)
	r.spentCache[id] = s
	return s
}

// forgetSpent drops a task's cached sum: an attempt of it ended.
func (r *runner) forgetSpent(id string) { delete(r.spentCache, id) }

// haltForBudget halts task t, whose attempt would pass a budget, before its agent starts:
// no attempt is used. The halt has its report, and the halt notifier hears of it.
func (r *runner) haltForBudget(ctx context.Context, tasks *queue.Doc, t queue.Task, why string) error {
	reason := "Budget reached: " + why
	applied, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusHalted,
		queue.SetField{ID: t.ID, Field: "Halted", Value: "true"},
		queue.SetField{ID: t.ID, Field: "Halt-Reason", Value: oneLine(reason)})
	if err != nil || !applied {
		return err
	}
	s := taskSpent(r.runs, t.ID)
	// The report's retry fields are the task's, as its last failure left them.
	d := retry.Decision{Halt: true, HaltReason: reason, Status: queue.StatusHalted, MaxRetries: r.o.Config.Retries.MaxRetries,
		Signature: tasks.Get(t.Record, "Failure-Signature"), Signatures: queue.List(tasks.Get(t.Record, "Previous-Signatures"))}
	d.RetryCount, _ = strconv.Atoi(tasks.Get(t.Record, "Retry-Count"))
	d.RepeatCount, _ = strconv.Atoi(tasks.Get(t.Record, "Signature-Repeat-Count"))
	if n, err := strconv.Atoi(tasks.Get(t.Record, "Max-Retries")); err == nil {
		d.MaxRetries = n
	}
	if !queue.IsEmpty(d.Signature) {
		d.Signatures = append(d.Signatures, d.Signature)
	}
	text, err := retry.WriteHaltReport(r.o.Layout, d,
		retry.Failure{Task: t.ID, Category: t.Category, Type: "budget", PrimaryError: why,
			Output: fmt.Sprintf("%s\n\nwhat %s's attempts spent: cost %s, tokens %s\n", why, t.ID, cost.FormatUSD(s.Total.CostUSD), cost.FormatTokens(s.Total.Tokens())), At: time.Now()})
	if err != nil {
		return err
	}
	r.report.block(t.ID, "halted", "no attempt used: "+oneLine(reason), text, eventFields{Outcome: queue.StatusHalted, FailureType: "budget"})
	r.notify(ctx, "halt", notifyEvent{Task: t.ID, Status: queue.StatusHalted, Attempt: lastAttempt(r.runs, t.ID), Reason: reason})
	return nil
}

// Rate and usage limits (SPEC §16).

// limitedFor is the hook of decide: a rate or usage limit that the agent program
// reported, when the agent left no claim, makes the attempt neither a failure nor a retry.
func (r *runner) limitedFor(a *attempt, claim string) *agents.RateLimit {
	if claim != "" {
		return nil // it claimed something before it hit the limit: that claim is judged
	}
	return a.limit
}

// holdAgent keeps the agent program of a rate-limited attempt from starting again until
// the limit lifts: the reset time the program gave, else rate_limit_wait from now.
func (r *runner) holdAgent(a *attempt) string {
	until := a.limit.Reset
	said := "the reset time it gave"
	if until.IsZero() || until.Before(time.Now()) {
		until, said = time.Now().Add(r.o.Config.RateLimitWait.Duration), "rate_limit_wait"
	}
	if r.limits == nil {
		r.limits = map[string]time.Time{}
	}
	if until.After(r.limits[a.agent]) {
		r.limits[a.agent] = until
	}
	wake := r.wakeup()
	time.AfterFunc(time.Until(until), func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	msg := fmt.Sprintf("%s reported a rate or usage limit (%s); no retry used, %s is pending again; no %s agent starts before %s (%s, in %s)",
		a.agent, a.limit.Msg, a.id, a.agent, until.Format("15:04:05"), said, time.Until(until).Round(time.Second))
	r.report.event(a.id, "rate_limited", msg)
	return msg
}

// wakeup is the channel the loop hears when a rate limit lifts.
func (r *runner) wakeup() chan struct{} {
	if r.limitWake == nil {
		r.limitWake = make(chan struct{}, 1)
	}
	return r.limitWake
}

// heldBack reports whether task t's next agent is one whose program is waiting for a
// rate limit to lift.
func (r *runner) heldBack(d *queue.Doc, t queue.Task) bool {
	if len(r.limits) == 0 {
		return false
	}
	agent := d.Get(t.Record, "Agent")
	if queue.IsEmpty(agent) {
		agent = r.o.Config.AgentFor(nextAttempt(r.runs, t.ID))
	}
	until, ok := r.limits[agent]
	return ok && time.Now().Before(until)
}

// waitingForLimit reports whether an agent program is still held back by a rate limit:
// a run with --once waits for it rather than end (`run ID` does not).
func (r *runner) waitingForLimit() bool {
	if r.o.Only != "" {
		return false // `run ID` ran its one attempt; the task waits for the next run
	}
	for _, until := range r.limits {
		if time.Now().Before(until) {
			return true
		}
	}
	return false
}

// Notifications (SPEC §16).

// notifyEvent is the JSON a notifier reads on its standard input.
type notifyEvent struct {
	Event   string   `json:"event"` // halt or done
	Time    string   `json:"time"`
	Task    string   `json:"task"`
	Status  string   `json:"status"`
	Attempt int      `json:"attempt"`
	Reason  string   `json:"reason"`
	Commit  string   `json:"commit,omitempty"`
	CostUSD *float64 `json:"cost_usd"`
	Tokens  *int64   `json:"tokens"`
}

// notifyTimeout bounds a notifier's run: a notifier that hangs does not hold up the loop.
const notifyTimeout = 10 * time.Second

// notify runs the config's notifier for event (halt or done), without a shell, with the
// event as JSON on its standard input, its cost and tokens what the task's attempts spent
// (read from their records only when there is a notifier to tell). A notifier that cannot
// start, fails or hangs is reported as a warning; it never stops the loop.
func (r *runner) notify(ctx context.Context, event string, ev notifyEvent) {
	argv := r.o.Config.Notify.Done
	if event == "halt" {
		argv = r.o.Config.Notify.Halt
	}
	if len(argv) == 0 {
		return
	}
	ev.Event, ev.Time = event, time.Now().UTC().Format(time.RFC3339)
	spent := taskSpent(r.runs, ev.Task)
	ev.CostUSD, ev.Tokens = spent.Total.CostUSD, spent.Total.Tokens()
	b, _ := json.Marshal(ev)
	if err := runNotifier(context.WithoutCancel(ctx), r.o.Layout.Root, argv, append(b, '\n')); err != nil {
		r.report.event(ev.Task, "warning", fmt.Sprintf("notify %s: %s: %v", event, strings.Join(argv, " "), err))
	}
}

// notifyAfter is the hook of record: a task that completed, or halted, is told to the
// notifiers.
func (r *runner) notifyAfter(ctx context.Context, a *attempt, status string, res result, halted bool, why string) {
	ev := notifyEvent{Task: a.id, Attempt: a.n, Reason: res.Reason, Commit: res.Commit}
	switch {
	case status == queue.StatusCompleted:
		ev.Status = status
		r.notify(ctx, "done", ev)
	case halted:
		ev.Status, ev.Reason = queue.StatusHalted, why
		r.notify(ctx, "halt", ev)
	}
}

// ReadCosts reads the usage of every attempt of the tasks in tasks, from the attempt
// records the orchestrator keeps in its state (under .git), or outside a git repository
// the readable copies.
func ReadCosts(l queue.Layout, tasks *queue.Doc) []cost.Row {
	runs := l.Runs()
	if repo, err := worktree.Open(context.Background(), l.Root); err == nil {
		runs = stateRuns(repo)
	}
	// One read of the runs folder: most tasks of a long queue have no attempt yet.
	entries, _ := os.ReadDir(runs)
	tried := make(map[string]bool, len(entries))
	for _, e := range entries {
		tried[e.Name()] = true
	}
	var rows []cost.Row
	for _, t := range tasks.Tasks() {
		if !tried[t.ID] {
			continue
		}
		for n := 1; n <= lastAttempt(runs, t.ID); n++ {
			res, ok := readResult(filepath.Join(runs, t.ID, strconv.Itoa(n)))
			rs := runsOf(res, ok)
			if len(rs) == 0 {
				continue
			}
			rows = append(rows, cost.Row{Task: t.ID, Attempt: n, Outcome: res.Outcome, Verified: res.Outcome == "completed" && res.Commit != "", Runs: slices.Clone(rs)})
		}
	}
	return rows
}

// runNotifier runs argv in dir with stdin, within notifyTimeout.
func runNotifier(ctx context.Context, dir string, argv []string, stdin []byte) error {
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	return runArgv(ctx, dir, argv, stdin)
}

// runArgv runs argv in dir with stdin; its error says the exit status and the end of
// what it wrote to standard error.
func runArgv(ctx context.Context, dir string, argv []string, stdin []byte) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (ran past %v)", err, notifyTimeout)
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		err = fmt.Errorf("%w: %s", err, oneLine(clipTail(msg, 300)))
	}
	return err
}

// clipTail returns the last n bytes of s.
func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
