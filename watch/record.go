package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/review"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
)

// outcomeSetup is the outcome of an attempt that a problem of the set-up, not its agent,
// kept from being judged (SPEC §7.6): the test command's program or runner is missing, the
// sandbox did not start, or a reviewer's or judge's answer could not be read after its
// re-emit.
const outcomeSetup = "setup_error"

// A SetupError stops a run for a problem of the set-up, not of an agent's work (SPEC §7.6).
// The attempt that met it counts for nothing: its task is back to pending with no retry
// used and no issue filed, and no agent starts until a person has fixed the set-up.
type SetupError struct {
	Task    string
	Attempt int
	Reason  string
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("%s attempt %d: %s; a problem of the set-up, not of the agent's work: the task is back to pending with no attempt counted, and nothing runs until it is fixed", e.Task, e.Attempt, e.Reason)
}

// setupReason returns why err is a problem of the set-up (a *testrun.SetupError: a test
// command's program or runner missing, a sandbox that did not start), or "".
func setupReason(err error) string {
	var se *testrun.SetupError
	if !errors.As(err, &se) {
		return ""
	}
	return se.Error()
}

// stopForSetup records an attempt that a problem of the set-up kept from being judged,
// puts its task back to pending as an interrupted one is (no retry used, no issue, its
// cost recorded: the agent did spend it), and returns the *SetupError that stops the run.
func (r *runner) stopForSetup(a *attempt, res result, log string) error {
	a.recordWithLog(res, log)
	r.releaseSlot(a)
	_ = r.fileAway(a)
	if _, err := r.setStatus(context.Background(), a.id, queue.StatusInProgress, queue.StatusPending, r.costOps(a, nil)...); err != nil {
		r.report.event(a.id, "warning", err.Error())
	}
	ev := r.fieldsOf(a, res)
	r.report.eventWith(a.id, "stopped", reasonLine(a.n, outcomeSetup, res.Reason, "not the agent's failure: back to pending, no attempt counted; the run stops", ev.GateLog), ev)
	return &SetupError{Task: a.id, Attempt: a.n, Reason: res.Reason}
}

// A decided attempt has its verdict; what is left is to record it in the queues.
type decided struct {
	a   *attempt
	res result
	log string
	// mark waits for the verified mark begun beside the records (nil: none begun), written
	// for the records written beside the decision (recordBeside; nil: written already).
	mark    func() error
	written func()
}

// wait waits for the attempt's records, when they are being written beside the decision.
func (d *decided) wait() {
	if d.written != nil {
		d.written()
	}
}

// putBack records an attempt that was interrupted and puts its task back to pending
// without using a retry.
func (r *runner) putBack(a *attempt, why string) {
	a.record(result{Outcome: "interrupted", Reason: why})
	if _, err := r.setStatus(context.Background(), a.id, queue.StatusInProgress, queue.StatusPending, r.costOps(a, nil)...); err != nil {
		r.report.event(a.id, "warning", err.Error())
	}
}

// apply records a decided attempt in the queues. If a queue file does not parse (a
// person's half-finished save), nothing is written: the decision waits, with a warning,
// until the files parse again (flushDeferred), and the agents that run go on.
func (r *runner) apply(ctx context.Context, d *decided) error {
	err := r.record(ctx, d)
	if err != nil {
		// Not recorded (yet): the readable copy, which record brings up to date after
		// the decision's line, is brought up to date here.
		d.wait()
		d.a.copyOut()
	}
	if isParseError(err) {
		r.deferred = append(r.deferred, d)
		r.report.event(d.a.id, "warning", fmt.Sprintf("attempt %d is decided (%s), but %v; it is recorded once the file parses", d.a.n, d.res.Outcome, err))
		return nil
	}
	return err
}

// flushDeferred records the decisions that waited for the queue files to parse.
func (r *runner) flushDeferred(ctx context.Context) error {
	waiting := r.deferred
	r.deferred = nil
	for i, d := range waiting {
		if err := r.apply(ctx, d); err != nil {
			r.deferred = append(r.deferred, waiting[i+1:]...)
			return err
		}
	}
	return nil
}

// isParseError reports whether err is a queue file that does not parse.
func isParseError(err error) bool {
	var pe *queue.ParseError
	var pes queue.ParseErrors
	return errors.As(err, &pe) || errors.As(err, &pes)
}

// record writes a decided attempt's outcome: the task's status (through the retry rules on
// a failure), its issue, and the tasks it made ready, which it then launches.
func (r *runner) record(ctx context.Context, d *decided) error {
	a, res, log := d.a, d.res, d.log
	l := r.o.Layout
	status, more, halt := r.statusAfter(a, res)
	more = append(more, r.costOps(a, &res)...) // Cost and Tokens, in the same write as the status
	if res.Type == review.TypeRewriteTests {
		// The judge says the tests are wrong: a person rewrites them, not the implementer.
		id, err := retry.Ask(ctx, l, a.id, a.task.Category, res.Reason, time.Now())
		if err != nil {
			return err
		}
		more = append(more, queue.SetField{ID: a.id, Field: "Remediation", Value: id})
	}
	if res.Outcome == "issue" && status == queue.StatusBlocked {
		// Asked again as often as it may be: the question goes to a person as an issue.
		id, err := retry.Ask(ctx, l, a.id, a.task.Category, res.Message, time.Now())
		if err != nil {
			return err
		}
		more = append(more, queue.SetField{ID: a.id, Field: "Remediation", Value: id})
	}
	// The task's status is written once the records say the same (recordBeside).
	fin := &transition{id: a.id, to: status, ops: more, ready: func() error { d.wait(); return nil }}
	var f retry.Failure
	if status == queue.StatusFailed {
		// A failure: the retry rules decide (SPEC §8) and record the task's issue; their
		// decision goes into the same write of the task queue as everything else.
		f = r.failure(a, res, log, halt)
		r.cycleBudget(a, res, &f)
		var forgot []int
		f.Forget, forgot = r.forgotten(a)
		dec, _, err := retry.Prepare(ctx, l, f, retry.Limits(r.o.Config.Retries))
		if err != nil {
			return err
		}
		fin.to, fin.decision = dec.Status, &dec
		res.Signature, res.Forgot = dec.Signature, forgot
		if len(forgot) > 0 {
			// Without a task, so that the live table shows it above itself.
			r.report.event("", "history", fmt.Sprintf("%s: the failures of attempts %s ran on commits %s no longer holds (its history was rewritten): they no longer count toward the task's retries and halts",
				a.id, joinInts(forgot), r.repo.Branch))
		}
	}
	var mark func() error
	if fin.to == queue.StatusCompleted {
		// The loop's own record that the task was verified at its commit, before the
		// status too: the queue's Commit field alone proves nothing. The candidate has
		// landed, so the mark holds whatever the queue's write decides.
		if mark = d.mark; mark == nil {
			mark = r.markVerified(a.id, res.Commit)
		}
		fin.ready = func() error {
			d.wait()
			return mark()
		}
	}
	// Record the outcome and start what it made ready in one write of the queue.
	doc, picks, err := r.advance(ctx, fin)
	d.wait() // a write of the queue that changed nothing did not wait
	if mark != nil {
		if merr := mark(); err == nil {
			err = merr
		}
	}
	if err != nil {
		if fin.decision != nil {
			err = errors.Join(err, fin.decision.GiveBack(ctx, l))
		}
		return err
	}
	status = fin.to
	if !fin.applied {
		status = "" // a person's edit won
		if st, ok := r.statusNow(a.id); ok && st == queue.StatusCompleted && !slices.Contains(r.byHand, a.id) {
			r.byHand = append(r.byHand, a.id)
		}
		if fin.decision != nil {
			if err := fin.decision.GiveBack(ctx, l); err != nil {
				return err
			}
		}
	}
	if fin.decision != nil {
		// The decision's signature in the attempt's record, whatever won: a later
		// decision reads it (forgotten).
		res.Retried = fin.decision.Retry
		a.record(res)
	}
	// What the events say of the attempt: the failure type is the issue's Root Cause
	// when the retry rules judged a failure, the attempt's own otherwise (a block).
	ev := r.fieldsOf(a, res)
	if fin.decision != nil {
		ev.FailureType = string(f.Type)
	}
	haltSaid := false
	if d := fin.decision; d != nil && fin.applied {
		r.capped = r.capped || d.Deferred
		r.spendBudget(a, res, *d, f)
		if d.Halt || d.Deferred {
			text, err := retry.WriteHaltReport(l, *d, f)
			if err != nil {
				return err
			}
			r.report.block(a.id, "halted", reasonLine(a.n, ev.FailureType, d.HaltReason, "last: "+oneLine(res.Reason), ev.GateLog), text, ev)
			haltSaid = d.Halt
		}
	}
	// A rejection, a halt or a block is one line that says why and where its gate.log is.
	var then string
	if d := fin.decision; d != nil {
		then = strings.TrimPrefix(d.Reason, status+": ")
	}
	switch status {
	case "":
		// A person's edit won; nothing to report.
	case queue.StatusCompleted:
		r.report.eventWith(a.id, "completed", fmt.Sprintf("attempt %d: %s", a.n, res.Reason), ev)
	case queue.StatusPending:
		if res.Outcome == "rate_limited" {
			break // holdAgent said why, and how long it waits
		}
		if r.o.Only != "" {
			r.report.eventWith(a.id, "failed", reasonLine(a.n, ev.FailureType, res.Reason, "its next attempt is due (watch, or run it again)", ev.GateLog), ev)
		} else {
			again := "trying again"
			if then != "" {
				again += " (" + then + ")"
			}
			r.report.eventWith(a.id, "retry", reasonLine(a.n, ev.FailureType, res.Reason, again, ev.GateLog), ev)
		}
	case queue.StatusHalted:
		if haltSaid {
			break // its line, and its report, are above
		}
		r.report.eventWith(a.id, status, reasonLine(a.n, ev.FailureType, res.Reason, "", ev.GateLog), ev)
	case queue.StatusSkipped:
		// Its reason names its type (no_change) first.
		r.report.eventWith(a.id, status, reasonLine(a.n, "", res.Reason, "", ev.GateLog), ev)
	case queue.StatusFailed:
		if then != "" {
			then = "not retried: " + then
		}
		r.report.eventWith(a.id, status, reasonLine(a.n, ev.FailureType, res.Reason, then, ev.GateLog), ev)
	default:
		r.report.eventWith(a.id, status, reasonLine(a.n, ev.FailureType, res.Reason, "", ev.GateLog), ev)
	}
	// What follows the line is not part of the decision, and no one waits on it: the
	// notifiers (a process each), the marker put away and the readable copy brought up
	// to date (files made, a tenth of a millisecond and more each).
	if d := fin.decision; d != nil && fin.applied {
		r.notifyAfter(ctx, a, status, res, d.Halt, d.HaltReason)
	} else if fin.applied {
		r.notifyAfter(ctx, a, status, res, false, "")
	}
	if err := r.fileAway(a); err != nil {
		r.report.event(a.id, "warning", "marker: "+err.Error())
	}
	if status == queue.StatusCompleted || status == queue.StatusSkipped {
		if a.n > 1 {
			// A retried task passed: its issue is resolved.
			if err := retry.Resolve(ctx, l, a.id, time.Now()); err != nil {
				r.report.event(a.id, "warning", "issue: "+err.Error())
			}
		}
		if status == queue.StatusCompleted {
			// A skipped task's gate ran at its base, which may no longer be the head.
			r.growBaseline(a, res.Commit)
		}
	}
	return r.launchAll(ctx, doc, picks)
}

// fileAway puts the attempt's completion marker, if its agent left one, into the attempt
// folder (the marker folder holds only what awaits a decision), then brings the readable
// copy of the folder up to date. It returns the marker's error; the copy is done anyway.
func (r *runner) fileAway(a *attempt) error {
	var err error
	if m, _ := markers.Find(r.o.Layout.Markers(), a.id); m != nil {
		err = m.Consume(a.dir)
	}
	a.dropAhead()
	a.copyOut()
	return err
}

// statusNow reads a task's Status from the queue as it is now; ok is false when the queue
// cannot be read just now.
func (r *runner) statusNow(id string) (string, bool) {
	d, err := queue.LoadOnly(r.o.Layout.Tasks(), id)
	if err != nil {
		return "", false
	}
	rec, ok := d.Record(id)
	if !ok {
		return "", true
	}
	return d.Task(rec).Status, true
}

// readResult reads the record of the attempt whose folder (in the orchestrator's state) is
// dir. A record that cannot be read, or whose seal fails, is not evidence: false.
func readResult(dir string) (result, bool) {
	res, err := openResult(sealKey(), dir)
	return res, err == nil
}

// openResult reads the record of the attempt whose folder is dir (runs/<ID>/<n>) and
// checks its seal with k, and that it is that attempt's (not one copied from another):
// else an *seal.EditedError naming it.
func openResult(k *seal.Key, dir string) (result, error) {
	awaitRecord(dir)
	var res result
	path := filepath.Join(dir, "result.json")
	doc, err := k.ReadJSON(seal.KindResult, path)
	if err != nil {
		return result{}, err
	}
	if err := json.Unmarshal(doc, &res); err != nil {
		return result{}, fmt.Errorf("%s: %w", path, err)
	}
	if res.Task != filepath.Base(filepath.Dir(dir)) || strconv.Itoa(res.Attempt) != filepath.Base(dir) {
		return result{}, seal.Edited(path, seal.ErrBroken)
	}
	return res, nil
}

// Agent states (SPEC §10.3): how many times an agent stuck on an unclear requirement is asked
// again, and how many false successes (a claim of done its gate rejected) halt a task.
const (
	maxIssueReprompts = 2
	falseSuccessHalt  = 3
)

// statusAfter decides the task's status after an attempt, any other fields to write with
// it, and for a failure that must halt whatever the retry budget says, why. A failure is
// "failed" here: the retry rules then make it pending (a retry), failed or halted.
func (r *runner) statusAfter(a *attempt, res result) (string, []queue.Op, string) {
	switch res.Outcome {
	case "rate_limited":
		return queue.StatusPending, nil, ""
	case "completed":
		// The status and the commit that verifies it, in one write.
		return queue.StatusCompleted, []queue.Op{queue.SetField{ID: a.id, Field: "Commit", Value: res.Commit}}, ""
	case "skipped":
		return queue.StatusSkipped, nil, ""
	case "requeue":
		// A rebase conflict is not the agent's failure: a fresh attempt on the new head,
		// no retry used; but not forever.
		n := r.trailing(a, func(p result) bool { return p.Outcome == "requeue" })
		if n < maxRebaseConflicts {
			return queue.StatusPending, nil, ""
		}
		return queue.StatusBlocked, []queue.Op{queue.SetField{ID: a.id, Field: "Blocked-Reason",
			Value: oneLine(fmt.Sprintf("%d rebase conflicts in a row: %s", n, res.Reason))}}, ""
	case "issue":
		if r.countAttempts(a, func(p result) bool { return p.Outcome == "issue" }) <= maxIssueReprompts {
			return queue.StatusPending, nil, "" // ask again, with the question recorded in the attempt
		}
		return queue.StatusBlocked, []queue.Op{queue.SetField{ID: a.id, Field: "Blocked-Reason",
			Value: oneLine("unclear requirement, needs a person: " + res.Message)}}, ""
	case "blocked":
		why := "dependency: " + res.Message
		if res.Type == typeLandingConflict || res.Type == review.TypeRewriteTests {
			why = res.Reason
		}
		return queue.StatusBlocked, []queue.Op{queue.SetField{ID: a.id, Field: "Blocked-Reason", Value: oneLine(why)}}, ""
	}
	// A TDD cycle's task has its own, smaller budget (cycleBudget).
	if a.cycle == nil && res.Claim == "done" && res.Gate != nil && !res.Gate.Pass {
		n := r.countAttempts(a, func(p result) bool { return p.Claim == "done" && p.Gate != nil && !p.Gate.Pass })
		if n >= falseSuccessHalt {
			return queue.StatusFailed, nil, fmt.Sprintf("False success (%dx): the agent claimed done and the gate disagreed", n)
		}
	}
	return queue.StatusFailed, nil, ""
}

// countAttempts counts the task's attempts (this one included) whose result.json matches,
// of the attempt's history only (inHistory): a reset inherits no count of the history it
// abandoned.
func (r *runner) countAttempts(a *attempt, match func(result) bool) int {
	n := 0
	for i := 1; i <= a.n; i++ {
		if res, ok := readResult(filepath.Join(r.runs, a.id, strconv.Itoa(i))); ok && match(res) && r.inHistory(res.Base, a.base) {
			n++
		}
	}
	return n
}

// trailing counts the task's last attempts (this one included) that match, in a row, of
// the attempt's history only.
func (r *runner) trailing(a *attempt, match func(result) bool) int {
	n := 0
	for i := a.n; i >= 1; i-- {
		res, ok := readResult(filepath.Join(r.runs, a.id, strconv.Itoa(i)))
		if !ok || !match(res) || !r.inHistory(res.Base, a.base) {
			break
		}
		n++
	}
	return n
}

// inHistory reports whether an attempt that started from commit base belongs to the
// history of commit head, the base of a later attempt: base is head or one of its
// ancestors. One of abandoned commits (a person reset or rewrote the integration branch
// between them) does not. An attempt that recorded no base, or a question git cannot
// answer, counts as of the history: the rules stay as strict as they were.
func (r *runner) inHistory(base, head string) bool {
	if base == "" || head == "" || base == head {
		return true
	}
	key := [2]string{base, head}
	if in, ok := r.ancestry[key]; ok {
		return in
	}
	in, err := r.repo.IsAncestor(context.Background(), base, head)
	if err != nil {
		return true
	}
	if r.ancestry == nil {
		r.ancestry = map[[2]string]bool{}
	}
	r.ancestry[key] = in
	return in
}

// forgotten returns the failures of the task's earlier attempts that ran on another
// history than this attempt's (inHistory) and that no decision has forgotten yet, for the
// retry rules to stop counting (retry.Failure.Forget), and those attempts' numbers.
func (r *runner) forgotten(a *attempt) ([]retry.Forgotten, []int) {
	var list []retry.Forgotten
	var nums []int
	done := map[int]bool{}
	earlier := make([]result, a.n)
	for i := 1; i < a.n; i++ {
		res, ok := readResult(filepath.Join(r.runs, a.id, strconv.Itoa(i)))
		if !ok {
			continue
		}
		earlier[i] = res
		for _, k := range res.Forgot {
			done[k] = true
		}
	}
	for i := 1; i < a.n; i++ {
		res := earlier[i]
		if res.Signature == "" || done[i] || r.inHistory(res.Base, a.base) {
			continue
		}
		list = append(list, retry.Forgotten{Signature: res.Signature, Retried: res.Retried})
		nums = append(nums, i)
	}
	return list, nums
}

// joinInts writes numbers as "1, 2 and 3".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// failureTypes maps the loop's own reasons to the failure types of SPEC §8.1.
var failureTypes = map[string]retry.Type{
	"agent_failed":         retry.TestFails,
	"gate_error":           retry.BuildFails,
	"review_error":         retry.BuildFails,
	gate.TypeNoTestCommand: retry.BuildFails,
}

// rootCause returns the failure type of a failed attempt as SPEC §8.1 names it: its
// issue's Root Cause.
func rootCause(res result) retry.Type {
	typ := retry.Type(res.Type)
	if t, ok := failureTypes[res.Type]; ok {
		typ = t
	}
	if !typ.Valid() {
		typ = retry.TestFails
	}
	return typ
}

// failure describes a failed attempt for the retry rules. halt, when set, halts the task
// whatever the retry budget says (a false success, SPEC §10.3).
func (r *runner) failure(a *attempt, res result, log, halt string) retry.Failure {
	typ := rootCause(res)
	out := a.gateOutput
	if out == "" {
		out = log
	}
	return retry.Failure{
		Task: a.id, Category: a.task.Category, Type: typ, FailingTest: res.FailingTest, File: res.File,
		Output: out, PrimaryError: res.Primary, Summary: fmt.Sprintf("%s: %s", a.id, res.Reason), At: time.Now(),
		Halt: halt,
	}
}

// conclude is the attempt's record stage: it writes gate.log and the attempt's sealed
// record, gives back its slot, and records the decision in the queues (apply), unless
// something stops the run first (a configuration change under the gate, a problem of the
// set-up) or the orchestrator was interrupted before a verdict.
func (r *runner) conclude(ctx context.Context, a *attempt, res result, log string) error {
	if a.fatal != nil {
		// The configuration changed under the gate, or its checkout is not the commit.
		return r.stopForConfig(a, a.fatal)
	}
	// The audit of the records is a warning about what happened meanwhile, not part of
	// this decision: it is asked for once the decision is recorded, and runs beside the
	// loop (the auditor), off the path from the next agent's marker to its task's status.
	defer r.wantAudit(ctx)
	if ctx.Err() != nil {
		// Interrupted while the gate ran or the candidate landed: its verdict is not a
		// verdict. The task goes back to pending with no retry used, like one whose agent
		// was running. (A landing is git's compare-and-swap: it happened or it did not.)
		if res.Commit == "" {
			r.releaseSlot(a)
			r.putBack(a, "orchestrator interrupted while the gate ran")
			a.copyOut()
			return nil
		}
	}
	if res.Outcome == outcomeSetup {
		return r.stopForSetup(a, res, log)
	}
	var mark func() error
	if res.Outcome == "completed" && res.Commit != "" {
		// The loop's mark that the task was verified at its commit, beside the records:
		// the candidate has landed, so it holds whatever the queue's write decides.
		mark = r.markVerified(a.id, res.Commit)
	}
	// The records are written beside the decision's first steps, and are on disk before
	// the task's status says what they say (the queue's write waits for them).
	written := a.recordBeside(res, log)
	r.releaseSlot(a)
	if res.Outcome == "stopped" {
		// Not the loop's to record: whoever moved the status decided.
		written()
		_ = r.fileAway(a)
		return r.schedule(ctx)
	}
	// The readable copy of what the agent left in the attempt folder is brought up to
	// date once the decision is told (record), or here when it has to wait (apply).
	return r.apply(ctx, &decided{a: a, res: res, log: log, mark: mark, written: written})
}

// markVerified writes the loop's mark that task was verified at commit, beside what the
// caller does next; the function it returns waits for the write and returns its error (it
// may be called again).
func (r *runner) markVerified(task, commit string) func() error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = r.repo.MarkVerified(task, commit)
	}()
	return func() error {
		<-done
		return err
	}
}
