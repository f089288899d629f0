package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// gateResult is what result.json keeps of the gate: its verdict and the commands it ran
// with their exit codes (gate.log has their output).
type gateResult struct {
	Pass bool       `json:"pass"`
	Runs []gate.Run `json:"runs"`
}

// finish decides an attempt whose agent has ended: it reads the claim (marker, or result
// block in the agent's final message), checks it with the gate, records the attempt and
// moves the task's Status with compare-and-set.
func (r *runner) finish(ctx context.Context, a *attempt) error {
	delete(r.running, a.id)
	if a.timeout != nil {
		a.timeout.Stop()
	}
	if a.graceTimer != nil {
		a.graceTimer.Stop()
	}
	l := r.o.Layout
	if kill, err := markers.Path(l.Markers(), a.id, markers.Kill); err == nil {
		defer os.Remove(kill)
	}
	// The agent has exited, but what it started in its process group may still run: end
	// it before judging, so that nothing the agent left changes files under the gate. So
	// is what left its group and lost its parent (ours now, as the child subreaper).
	a.stop(r.o.Config.StopGrace.Duration)
	r.reapOrphans()
	r.endPrivate(a)
	r.readAgentUsage(a)
	if a.stopReason != reasonSignal {
		// The agent is gone: what it did to the repository's own configuration (a filter
		// driver, a hook) stops the run before any git command of ours meets it.
		if err := r.checkConfig(ctx, a, "its agent's run"); err != nil {
			return r.stopForConfig(a, err)
		}
	}
	switch a.stopReason {
	case reasonSignal:
		return nil // interrupt puts the task back to pending
	case reasonPerson:
		a.record(result{Outcome: "stopped", Reason: "a person changed the task's status"})
		if m, _ := markers.Find(l.Markers(), a.id); m != nil {
			_ = m.Consume(a.dir)
		}
		r.releaseSlot(a)
		a.copyOut()
		// The person's edit may have made other tasks ready (or left them so).
		return r.schedule(ctx)
	}
	// A person may have reset the integration branch while the agent worked: the gate
	// judges against a baseline of the history the candidate lands on (SPEC §7.5).
	if err := r.followHistory(ctx); err != nil {
		return r.stopForConfig(a, err)
	}
	// What the agent did, as git sees it, whatever it claims.
	candErr := r.makeCandidate(ctx, a)
	res, log := r.decide(ctx, a, candErr)
	if r.reviewing(a) && ctx.Err() == nil {
		log += r.review(ctx, a, &res)
	}
	if res.Outcome == "completed" {
		// Nothing lands for a task whose status someone else moved while it ran (the
		// agent itself, with `orchestrator set` or sed, or a person).
		if st, ok := r.statusNow(a.id); ok && st != queue.StatusInProgress {
			res.Outcome, res.Reason = "stopped", fmt.Sprintf("its status was set to %s while its attempt ran; nothing landed", orNone(st))
			if st == queue.StatusCompleted {
				r.byHand = append(r.byHand, a.id)
			}
			r.report.event(a.id, "stopped", res.Reason)
		} else if why := r.nothingToLand(ctx, a); why != "" {
			res.Outcome, res.Type, res.Reason = "skipped", typeNoChange, why
			log += "after the gate: skipped: " + why + "\n"
		} else {
			log += r.landVerified(ctx, a, &res)
		}
	}
	if a.fatal != nil {
		// The configuration changed under the gate, or its checkout is not the commit.
		return r.stopForConfig(a, a.fatal)
	}
	r.reportEdited(ctx)
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
	a.write("gate.log", []byte(log))
	a.record(res)
	r.releaseSlot(a)
	a.copyOut()
	if res.Outcome == "stopped" {
		// Not the loop's to record: whoever moved the status decided.
		if m, _ := markers.Find(l.Markers(), a.id); m != nil {
			_ = m.Consume(a.dir)
		}
		return r.schedule(ctx)
	}
	return r.apply(ctx, &decided{a: a, res: res, log: log})
}

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
	a.write("gate.log", []byte(log))
	a.record(res)
	r.releaseSlot(a)
	if m, _ := markers.Find(r.o.Layout.Markers(), a.id); m != nil {
		_ = m.Consume(a.dir)
	}
	a.copyOut()
	if _, err := r.setStatus(context.Background(), a.id, queue.StatusInProgress, queue.StatusPending, r.costOps(a)...); err != nil {
		r.report.event(a.id, "warning", err.Error())
	}
	ev := r.fieldsOf(a, res)
	r.report.eventWith(a.id, "stopped", reasonLine(a.n, outcomeSetup, res.Reason, "not the agent's failure: back to pending, no attempt counted; the run stops", ev.GateLog), ev)
	return &SetupError{Task: a.id, Attempt: a.n, Reason: res.Reason}
}

// landVerified lands the candidate of an attempt its gate passed, and turns res into what
// landing made of it: completed with its commit; failed when, rebased onto a moved
// integration head, it no longer passes; back to pending after a rebase conflict; blocked
// when it would overwrite the person's uncommitted changes.
func (r *runner) landVerified(ctx context.Context, a *attempt, res *result) string {
	var log strings.Builder
	msg := landingMessage(a, a.title, a.verdict, r.redCommit(a))
	commit, v, err := r.land(ctx, a, msg, func(c string) (*gate.Verdict, error) { return r.judge(ctx, a, c) })
	switch {
	case errors.Is(err, errLandingConflict):
		res.Outcome, res.Type, res.Reason = "blocked", typeLandingConflict, fmt.Sprintf("%v; the verified candidate waits under refs/orchestrator/attempts/%s/%d: commit or undo those changes and set the task back to pending, and it lands with no new agent run", err, a.id, a.n)
	case errors.Is(err, errRebaseConflict):
		res.Outcome, res.Type, res.Reason = "requeue", "rebase_conflict", err.Error()
	case setupReason(err) != "":
		res.Outcome, res.Type, res.Reason = outcomeSetup, "", setupReason(err)
	case err != nil:
		res.Outcome, res.Type, res.Reason = "failed", "gate_error", "landing failed: "+err.Error()
		res.Primary = retry.Normalize(res.Reason)
	case v != nil:
		// Judged again on the new head, and refused there.
		log.WriteString(v.Log.String())
		a.gateOutput = v.Output
		res.Outcome, res.Type, res.FailingTest, res.File = "failed", v.Type, v.FailingTest, v.File
		res.Gate = &gateResult{Pass: false, Runs: v.Runs}
		res.Reason = "claim rejected on the new integration head: " + v.Reason
	default:
		res.Commit = commit
		if a.task.Kind == queue.KindTest {
			r.markRed(a, commit)
		}
		if !a.unchanged() {
			fmt.Fprintf(&log, "landed: %s on %s\n", commit, r.repo.Branch)
		}
	}
	fmt.Fprintf(&log, "after landing: %s: %s\n", res.Outcome, res.Reason)
	return log.String()
}

// typeNoChange is the type of a BUILD attempt whose agent changed nothing while its gate
// passed, after the RED of a TEST task it depends on landed: the tests that RED made fail
// pass without it, so the work is another commit's (another task's, or the person's), and
// the task is skipped rather than completed at a commit that is not its own (issue 27).
const typeNoChange = "no_change"

// nothingToLand returns why a BUILD attempt whose gate passed has nothing of its own to
// land, or "". Its agent changed nothing (its candidate is its base) and a TEST task it
// depends on has landed its RED: recorded as completed at its base, the task would claim
// a landing that is another's. Left as SPEC §7.7 has it (completed at the head it was
// verified at): VERIFY and QA tasks, which change nothing by design; a BUILD task with no
// landed RED to make pass (TDD-exempt, or started early with `run`); and the tasks of a
// TDD cycle, whose later ACs the earlier ACs' code may already satisfy. A TEST task that
// changes nothing never passes RED.
func (r *runner) nothingToLand(ctx context.Context, a *attempt) string {
	if a.task.Kind != queue.KindBuild || a.cycle != nil || a.candidate == "" || !a.unchanged() {
		return ""
	}
	for _, dep := range a.depTests {
		if red := r.repo.LastLanding(ctx, dep); red != "" {
			return fmt.Sprintf("no_change: the agent changed nothing, and the tests of %s (RED landed as %.12s) already pass at %.12s: the work is another commit's; nothing lands, and the task is skipped, not completed with a commit that is not its own (set it back to pending for a new attempt)", dep, red, a.candidate)
		}
	}
	return ""
}

// markRed records, in the RED evidence, the commit that landed the tests. A hand-off whose
// seal fails is left as it is (not evidence): sealing it again would make it so.
func (r *runner) markRed(a *attempt, commit string) {
	path := filepath.Join(a.dir, "handoff-red.json")
	m, err := gate.OpenManifest(sealKey(), path, a.id, a.n)
	if err != nil {
		return
	}
	m.Commit = commit
	_ = m.Write(path, sealKey())
}

// redCommit returns the commit that landed the RED of a BUILD task's first TEST
// dependency, for its landing's trailer.
func (r *runner) redCommit(a *attempt) string {
	for _, dep := range a.depTests {
		if m, err := gate.FindRed(sealKey(), r.runs, dep); err == nil && m != nil && m.Commit != "" {
			return m.Commit
		}
	}
	return ""
}

// A decided attempt has its verdict; what is left is to record it in the queues.
type decided struct {
	a   *attempt
	res result
	log string
}

// putBack records an attempt that was interrupted and puts its task back to pending
// without using a retry.
func (r *runner) putBack(a *attempt, why string) {
	a.record(result{Outcome: "interrupted", Reason: why})
	if _, err := r.setStatus(context.Background(), a.id, queue.StatusInProgress, queue.StatusPending, r.costOps(a)...); err != nil {
		r.report.event(a.id, "warning", err.Error())
	}
}

// apply records a decided attempt in the queues. If a queue file does not parse (a
// person's half-finished save), nothing is written: the decision waits, with a warning,
// until the files parse again (flushDeferred), and the agents that run go on.
func (r *runner) apply(ctx context.Context, d *decided) error {
	err := r.record(ctx, d)
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
	more = append(more, r.costOps(a)...) // Cost and Tokens, in the same write as the status
	if res.Type == typeRewriteTests {
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
	fin := &transition{id: a.id, to: status, ops: more}
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
	if fin.to == queue.StatusCompleted {
		// The loop's own record that the task was verified at its commit, first: the
		// queue's Commit field alone proves nothing.
		if err := r.repo.MarkVerified(a.id, res.Commit); err != nil {
			return err
		}
	}
	// Record the outcome and start what it made ready in one write of the queue.
	doc, picks, err := r.advance(ctx, fin)
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
		r.notifyAfter(ctx, a, status, res, d.Halt, d.HaltReason)
	} else if fin.applied {
		r.notifyAfter(ctx, a, status, res, false, "")
	}
	if m, _ := markers.Find(l.Markers(), a.id); m != nil {
		if err := m.Consume(a.dir); err != nil {
			r.report.event(a.id, "warning", "marker: "+err.Error())
		}
		a.copyOut()
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

// decide reads the claim and runs the gate for the task's kind. It returns the result and
// the text of gate.log.
func (r *runner) decide(ctx context.Context, a *attempt, candErr error) (result, string) {
	var log strings.Builder
	fmt.Fprintf(&log, "task %s attempt %d (%s task, agent %s)\n", a.id, a.n, a.task.Kind, a.agent)
	res := result{Outcome: "failed"}
	if a.proc != nil {
		code := a.proc.ExitCode()
		res.ExitCode = &code
		fmt.Fprintf(&log, "agent exit code: %d\n", code)
	}
	// The agent's final message, read once; or what the agent program itself reported
	// instead: an API error, or running out of turns.
	var agentErr *agents.AgentError
	text, err := a.finalText()
	if errors.As(err, &agentErr) {
		fmt.Fprintf(&log, "agent error: %s\n", agentErr.Error())
	}
	a.final = text
	claim, block, claimErr := r.claim(a, text)
	claimErr = cycleClaim(a, claim, block, claimErr, agentErr)
	res.Claim = claim
	fmt.Fprintf(&log, "claim: %s\n", orNone(claim))
	if block != nil && block.Message != "" {
		res.Message = block.Message
		fmt.Fprintf(&log, "message: %s\n", block.Message)
	}
	// A failure without test output takes a fixed description as its primary error (SPEC
	// §8.1), never text that changes from one attempt to the next: the same failure three
	// times must halt like any other.
	switch {
	case claimErr != nil:
		res.Type, res.Reason = "format_violation", "format_violation: "+claimErr.Error()
		res.Primary = "format_violation: " + retry.Normalize(claimErr.Error())
	case r.limitedFor(a, claim) != nil:
		// Not the agent's failure, and no retry: see cost.go.
		res.Outcome, res.Type, res.Reason = "rate_limited", "rate_limit", r.holdAgent(a)
	case claim == "" && a.stopReason == reasonTimeout:
		res.Type, res.Reason = "timeout", fmt.Sprintf("timeout: no marker after %v; the process group was killed", r.o.Config.TaskTimeout.Duration)
		res.Primary = "timeout: no marker within the task timeout"
	case claim == "" && agentErr != nil && agentErr.Mode == agents.ModeOutOfTurns:
		res.Type, res.Reason = "no_marker", "out of turns (failure mode E): "+agentErr.Error()
		res.Primary = "no_marker: out of turns"
	case claim == "" && agentErr != nil:
		res.Type, res.Reason = "no_marker", "agent error: "+agentErr.Error()
		res.Primary = "no_marker: agent error: " + retry.Normalize(agentErr.Error())
	case claim == "" && a.proc == nil && !a.adopted:
		res.Type, res.Reason = "agent_lost", "agent_lost: the agent's process is gone and left no marker"
		res.Primary = res.Reason
	case claim == "":
		res.Type, res.Reason = "no_marker", "no_marker: the agent exited without a marker or a result block"
		res.Primary = res.Reason
	case claim == "failed" && block != nil && block.State == agents.StateIssue:
		res.Outcome, res.Type, res.Reason = "issue", "issue", "the agent is stuck on an unclear requirement: "+orNone(block.Message)
	case claim == "failed" && block != nil && block.State == agents.StateDependency:
		res.Outcome, res.Type, res.Reason = "blocked", "dependency", "the agent needs something it cannot get: "+orNone(block.Message)
	case claim == "failed":
		res.Type, res.Reason = "agent_failed", "the agent reported failure"
		res.Primary = res.Reason
	case candErr != nil && a.slot == nil:
		res.Type, res.Reason = "agent_lost", "agent_lost: the agent's worktree is gone, and its changes with it"
		res.Primary = res.Reason
	case candErr != nil:
		res.Type, res.Reason = "gate_error", "the agent's changes could not be read: "+candErr.Error()
		res.Primary = retry.Normalize(res.Reason)
	default:
		fmt.Fprintf(&log, "candidate: %s (%d changes from %.12s)\n", a.candidate, len(a.changes), a.base)
		r.gateCandidate(ctx, a, &res, &log)
	}
	fmt.Fprintf(&log, "decision: %s: %s\n", res.Outcome, res.Reason)
	return res, log.String()
}

// gateCandidate judges the attempt's candidate with the gate for its task's kind and turns
// res into the verdict: completed when it passes, else failed with the gate's reason (or a
// set-up problem, or a gate that could not run). The gate's log goes to log.
func (r *runner) gateCandidate(ctx context.Context, a *attempt, res *result, log *strings.Builder) {
	err := r.ontoHead(ctx, a, log)
	var ce *worktree.ConflictError
	if errors.As(err, &ce) {
		// Not the agent's failure: a fresh attempt on the new head (statusAfter).
		res.Outcome, res.Type, res.Reason = "requeue", "rebase_conflict", fmt.Sprintf("%v: %v", errRebaseConflict, ce)
		return
	}
	if err != nil {
		res.Type, res.Reason = "gate_error", "the candidate could not be rebased onto the integration head: "+err.Error()
		res.Primary = retry.Normalize(res.Reason)
		return
	}
	v, err := r.judge(ctx, a, a.candidate)
	a.verdict = v
	if stopsRun(err) {
		a.fatal = err
	}
	if why := setupReason(err); why != "" {
		// No test ran: nothing was learned of the agent's work (SPEC §7.6).
		res.Outcome, res.Type, res.Reason = outcomeSetup, "", why
		return
	}
	if err != nil {
		res.Type, res.Reason = "gate_error", "the gate could not run: "+err.Error()
		res.Primary = retry.Normalize(res.Reason)
		return
	}
	log.WriteString(v.Log.String())
	a.gateOutput = v.Output
	res.Gate = &gateResult{Pass: v.Pass, Runs: v.Runs}
	res.Type, res.FailingTest, res.File = v.Type, v.FailingTest, v.File
	if v.Type == gate.TypeForged {
		// No test of a forged report counts, and the canaries' names are random: the
		// same forgery must get the same signature.
		res.FailingTest, res.File = "-", ""
	}
	if v.Pass {
		res.Outcome, res.Type, res.Reason = "completed", "", "claim verified: "+v.Reason
	} else {
		res.Reason = "claim rejected: " + v.Reason
		if a.onto != "" {
			res.Reason = "claim rejected on the new integration head: " + v.Reason
		}
		if v.Output == "" || v.Type == gate.TypeForged {
			// Refused before any test ran (scope, integrity), or on a forged report
			// whose output holds the canaries' random names: the reason is the error.
			res.Primary = retry.Normalize(v.Reason)
		}
	}
}

// ontoHead rebases the attempt's candidate onto the integration head before its gate
// when the head moved since the candidate's base (another task landed, or the person
// committed), so that the gate judges it on the head it would land on (SPEC §7.7). Judged
// on its older base, it would be compared with a baseline that grew meanwhile with the
// tests of the tasks that landed since (SPEC §7.5): tests its base never had, or that only
// the work of those tasks makes pass, would be its "regressions", and every retry would
// fail the same way while the head kept moving. On the head, a test that another task
// added is in the tree, with the work that makes it pass; one that this candidate breaks
// there is a real regression (two tasks that pass alone and break together).
//
// The candidate becomes the rebased commit (the head itself for a candidate that changes
// nothing), and its ref follows; a.base stays the commit the agent started from (crash
// recovery reads the agent's worktree against it), and a.onto is the head. A conflict is
// a *worktree.ConflictError naming the paths.
func (r *runner) ontoHead(ctx context.Context, a *attempt, log *strings.Builder) error {
	head, err := r.repo.Head(ctx)
	if err != nil || head == a.base {
		return err
	}
	rebased := head
	if a.candidate != a.base {
		rebased, err = r.repo.Rebase(ctx, a.candidate, head, fmt.Sprintf("%s attempt %d (candidate, on %.12s)\n", a.id, a.n, head))
		if err != nil {
			return err
		}
	}
	if rebased == head {
		fmt.Fprintf(log, "the integration branch moved since %.12s: the candidate changes nothing, so it is judged at the head %.12s\n", a.base, head)
	} else {
		fmt.Fprintf(log, "the integration branch moved since %.12s: rebased onto %.12s as %.12s, and judged there\n", a.base, head, rebased)
	}
	a.candidate, a.onto = rebased, head
	if err := r.repo.SetRef(ctx, fmt.Sprintf("refs/orchestrator/attempts/%s/%d", a.id, a.n), rebased); err != nil {
		return err
	}
	r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: the integration branch moved since its base; judging it on %.12s", a.n, head))
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// claim returns "done", "failed" or "" (no claim), and the result block if there is one. A
// result block, in the marker or in the agent's final message, is parsed strictly: a
// malformed block, two blocks or a wrong role is a format violation even when a marker says
// done. The marker's word decides the claim; without a marker, the block's state does.
// final is the agent's final message ("" when there is none).
func (r *runner) claim(a *attempt, final string) (string, *agents.Result, error) {
	// The role an agent's result block must name (SPEC §10.3) is the one its prompt gave it.
	role := a.role()
	var block *agents.Result
	if strings.Contains(final, "```tdd-result") {
		res, err := agents.ParseResult(final, role)
		if err != nil {
			return "", nil, err
		}
		block = res
	}
	if m, err := markers.Find(r.o.Layout.Markers(), a.id); err == nil && m != nil {
		if bytes.Contains(m.Body, []byte("```tdd-result")) {
			res, err := agents.ParseResult(string(m.Body), role)
			if err != nil {
				return "", nil, err
			}
			return stateClaim(res), res, nil
		}
		return m.Claim(), block, nil
	}
	if block != nil {
		return stateClaim(block), block, nil
	}
	return "", nil, nil
}

// stateClaim turns a result block's state into a claim: only success claims done.
func stateClaim(res *agents.Result) string {
	if res.State == agents.StateSuccess {
		return "done"
	}
	return "failed"
}

// testCommand returns the command that checks a task: its Test Command, else the project's
// test command from config, else the task queue's Project Commands table.
func testCommand(cfg *config.Config, tasks *queue.Doc, rec *queue.Record) string {
	if v := tasks.Get(rec, "Test Command"); !queue.IsEmpty(v) {
		return strings.TrimSpace(v)
	}
	return projectTestCommand(cfg, tasks)
}

// judge checks a claim of done with the gate for the task's kind (SPEC §7.2–7.4), in a
// pristine checkout of commit: RED for a TEST task, GREEN for a BUILD task, VERIFY for a
// VERIFY or QA task. A change under .orchestrator/ is refused before any test runs.
//
// The repository's own configuration is compared with the attempt's start before the gate
// runs and after: a change is a *worktree.ConfigChangedError, which stops the run.
func (r *runner) judge(ctx context.Context, a *attempt, commit string) (*gate.Verdict, error) {
	changed, forbidden := r.changedPaths(a)
	if len(forbidden) > 0 {
		return gate.Refuse(gate.TypeScope, "scope_violation: the agent changed the orchestrator's files: %s", strings.Join(forbidden, ", ")), nil
	}
	if err := r.checkConfig(ctx, a, "before its gate"); err != nil {
		a.fatal = err
		return nil, err
	}
	v, err := r.judgeIn(ctx, a, commit, changed)
	if cerr := r.checkConfig(ctx, a, "its gate's run of the candidate's code"); cerr != nil {
		a.fatal = cerr
		return v, cerr
	}
	if stopsRun(err) {
		a.fatal = err
	}
	return v, err
}

// judgeIn runs the gate for the attempt's task kind in a pristine checkout of commit.
func (r *runner) judgeIn(ctx context.Context, a *attempt, commit string, changed []string) (*gate.Verdict, error) {
	root, err := r.gateDir(ctx, commit)
	if err != nil {
		return nil, err
	}
	in := gate.Input{
		Root: root, AttemptDir: a.dir, Task: a.id, Attempt: a.n,
		TestIDs: a.task.TestIDs, TestCommand: a.testCmd, Globs: r.o.Config.TestGlobs,
		Timeout: r.o.Config.TaskTimeout.Duration, Changed: changed,
		Harness: r.harness(a), Contents: r.contents(ctx, a, commit),
		ReviewTestChange: a.reviewTests, Key: sealKey(),
	}
	in = r.gateInput(in, r.gate.Dir)
	if k := sealKey(); k != nil {
		// GREEN and VERIFY run only the Go packages whose inputs have no sealed pass.
		in.Impact = &gate.Impact{Dir: r.impactDir(), Key: k, Commit: commit}
	}
	in.Restore = func() error {
		_, err := r.gateDir(ctx, commit)
		return err
	}
	switch a.task.Kind {
	case queue.KindTest:
		in.ProjectCommand, in.TestFile = redTests(r.o.Layout.Tasks(), a.id, a.testCmd)
		// Tests the change fed new test data are evidence when they now fail where the
		// baseline has them passing (SPEC §7.2).
		if b := r.readBaseline(); b != nil {
			in.Baseline = b.PassingTests
		}
		in.TestIDNames = r.o.Config.TestIDs == "names"
		return gate.Red(ctx, in)
	case queue.KindBuild:
		// The queue as it is now, read once (nil if it does not parse just now).
		tasks, err := queue.Load(r.o.Layout.Tasks())
		if err != nil {
			tasks = nil
		}
		for _, dep := range a.depTests {
			// Git says whether the TEST task's tests landed, and which files they are:
			// the implementer may change none of them.
			red := r.repo.LastLanding(ctx, dep)
			m, err := gate.FindRed(sealKey(), r.runs, dep)
			if err != nil {
				return nil, err
			}
			if m == nil && red == "" && !completed(tasks, dep) {
				continue // not run yet: `run` started this task early, on the person's word
			}
			if m == nil {
				// Fail closed: without the RED evidence, the tests cannot be checked.
				return gate.Refuse(gate.TypeTampered, "test_tampered: TEST dependency %s has no RED evidence; its tests cannot be checked", dep), nil
			}
			if red != "" {
				if f, what, err := r.touchedRed(ctx, a, red); err != nil {
					return nil, err
				} else if f != "" && !a.reviewTests {
					v := gate.Refuse(gate.TypeTampered, "test_tampered: %s was %s after RED (%s, landed as %.12s)", f, what, dep, red)
					v.File = f
					return v, nil
				}
			}
			in.Deps = append(in.Deps, m)
		}
		if b := r.readBaseline(); b != nil {
			in.RegressionCommand, in.Baseline = b.RegressionCommand, b.PassingTests
		}
		// One run of the project's whole suite decides, when the project has a test
		// command; its outcome is what the baseline grows from once the candidate lands.
		if tasks != nil {
			in.FullCommand = projectTestCommand(r.o.Config, tasks)
			in.Owed = r.owedTests(ctx, tasks, a, root)
		}
		if a.cycle != nil {
			return r.judgeCycle(ctx, a, in)
		}
		return gate.Green(ctx, in)
	case queue.KindQA:
		return r.judgeQA(ctx, a, commit, func() (*gate.Verdict, error) { return gate.Verify(ctx, in) })
	}
	return gate.Verify(ctx, in)
}

// recoverAttempts handles tasks left in_progress by an orchestrator that died (SPEC §7.1).
// It trusts only what the agent could not write: git (the integration branch, the slots'
// contents as git sees them) and the attempt records in the orchestrator's state. A live
// agent is found by the attempt folder in its environment (and then by PID and start
// time). A decision is always made again, from the claim and the gate, never read back. An
// attempt that landed before the crash is recorded as such, never landed twice; an agent
// that still runs is adopted, waited for and judged like any other, result block included;
// one that is gone is judged from its marker, its log and its worktree, or counts as lost;
// one that never started used no attempt.
func (r *runner) recoverAttempts(ctx context.Context) error {
	r.recovering = true
	defer func() { r.recovering = false }()
	tasks, err := queue.Load(r.o.Layout.Tasks())
	if err != nil {
		return err
	}
	for _, t := range tasks.Tasks() {
		if t.Status != queue.StatusInProgress {
			continue
		}
		n := lastAttempt(r.runs, t.ID)
		dir := filepath.Join(r.runs, t.ID, strconv.Itoa(n))
		a := &attempt{id: t.ID, n: n, dir: dir, mirror: filepath.Join(r.o.Layout.Runs(), t.ID, strconv.Itoa(n)), task: t, title: tasks.TitleText(t.Record)}
		if n > 0 {
			_ = os.MkdirAll(a.mirror, 0o755)
			if commit := r.repo.Landed(ctx, t.ID, n); commit != "" {
				r.report.event(t.ID, "recovered", fmt.Sprintf("attempt %d landed as %.12s before the stop; recording it", n, commit))
				if err := r.repo.MarkVerified(t.ID, commit); err != nil {
					return err
				}
				if _, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusCompleted, queue.SetField{ID: t.ID, Field: "Commit", Value: commit}); err != nil {
					return err
				}
				continue
			}
		}
		prev, _ := readResult(dir)
		if n == 0 || !r.everStarted(a, prev) {
			// The agent never started: no attempt was used.
			if n > 0 && (prev.Outcome == "" || prev.Outcome == "starting") {
				a.record(result{Outcome: "not_started", Reason: "the orchestrator stopped before the agent started"})
			}
			r.report.event(t.ID, "recovered", "never started; back to pending")
			if _, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusPending); err != nil {
				return err
			}
			continue
		}
		a.agent, a.argv, a.base = prev.Agent, prev.Command, prev.Base
		if a.agent == "" {
			a.agent = tasks.Get(t.Record, "Agent")
			if queue.IsEmpty(a.agent) {
				a.agent = r.o.Config.AgentFor(n)
			}
		}
		if _, ad, err := r.command(a.agent, tasks.Get(t.Record, "Complexity")); err == nil {
			a.adapter = ad
		}
		a.testCmd = testCommand(r.o.Config, tasks, t.Record)
		a.depTests = depTests(tasks, t)
		a.setCycle(tasks)
		r.started[t.ID] = true
		if prev.Slot != "" && a.base != "" && r.repo.HasSlot(prev.Slot) {
			// The agent's worktree, as it left it.
			if err := r.holdSlot(ctx, a, prev.Slot, false); err != nil {
				return err
			}
		}
		if pid, start, ok := agents.FindByEnv("ORCHESTRATOR_ATTEMPT_DIR", dir); ok {
			if md := filepath.Join(dir, privateMarkers); r.jail {
				if _, err := os.Stat(md); err == nil {
					r.watchMarkers(t.ID, md)
				}
			}
			a.pid, a.start, a.adopted, a.started = pid, start, true, time.Now()
			r.report.eventWith(t.ID, "adopted", fmt.Sprintf("attempt %d's agent (pid %d) still runs; waiting for it", n, pid), eventFields{Attempt: n, Agent: a.agent})
			r.track(a, agents.WaitGone(pid, start, 20*time.Millisecond))
			continue
		}
		r.report.event(t.ID, "recovered", fmt.Sprintf("attempt %d's agent is gone (it was %s in slot %q); judging what it left", n, orNone(prev.Outcome), prev.Slot))
		r.attempts++
		if err := r.finish(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// everStarted tells whether the agent of the task's last attempt folder is the one the
// in_progress status is about, and ever ran. The record says "running" once the agent's
// PID is known; "starting" (or nothing) before that, when only what it left tells: a live
// process, output, or a marker. A record with an outcome means that attempt was decided:
// if its marker is still there, the queue write that follows the decision was lost (the
// decision is made again); if not, the status is a later launch's that stopped before its
// attempt folder was made.
func (r *runner) everStarted(a *attempt, prev result) bool {
	r.forwardMarker(a.id, filepath.Join(a.dir, privateMarkers))
	m, _ := markers.Find(r.o.Layout.Markers(), a.id)
	switch prev.Outcome {
	case "running":
		return true
	case "", "starting":
		if _, _, ok := agents.FindByEnv("ORCHESTRATOR_ATTEMPT_DIR", a.dir); ok {
			return true
		}
		if fi, err := os.Stat(filepath.Join(a.mirror, "agent.log")); err == nil && fi.Size() > 0 {
			return true
		}
		return m != nil
	}
	return m != nil && prev.Outcome != "not_started"
}

// completed reports whether task id is completed in tasks (false for a nil tasks).
func completed(tasks *queue.Doc, id string) bool {
	if tasks == nil {
		return false
	}
	rec, ok := tasks.Record(id)
	return ok && tasks.Task(rec).Status == queue.StatusCompleted
}

// touchedRed returns a file that the attempt's candidate changed among those the RED
// commit red landed (the tests), or "", and what was done to it: changed, deleted or
// renamed.
func (r *runner) touchedRed(ctx context.Context, a *attempt, red string) (string, string, error) {
	parent, err := r.repo.Parent(ctx, red)
	if err != nil {
		return "", "", err
	}
	tests, err := r.repo.Diff(ctx, parent, red)
	if err != nil {
		return "", "", err
	}
	landed := worktree.Paths(tests)
	for _, c := range a.changes {
		for _, p := range []string{c.From, c.Path} {
			if p == "" || !slices.Contains(landed, p) {
				continue
			}
			switch c.Status {
			case "D":
				return p, "deleted", nil
			case "R":
				return p, "renamed", nil
			}
			return p, "changed", nil
		}
	}
	return "", "", nil
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
		if res.Type == typeLandingConflict || res.Type == typeRewriteTests {
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

// projectTestCommand returns the project's test command: config commands.test, else the
// task queue's Project Commands table.
func projectTestCommand(cfg *config.Config, tasks *queue.Doc) string {
	if cfg.Commands.Test != "" {
		return cfg.Commands.Test
	}
	return tasks.ProjectCommand("Test")
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
