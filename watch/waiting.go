package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/worktree"
)

// A waiting candidate is the verified work of a task that was blocked because landing it
// would have overwritten the person's uncommitted changes (SPEC §7.7): its attempt's record
// says so, and its commit waits under the attempt's ref. When the person sets the task back
// to pending, that candidate lands, judged again, and no agent runs.
type waiting struct {
	n         int    // the attempt whose candidate it is
	res       result // that attempt's record
	ref       string // refs/orchestrator/attempts/<ID>/<n>
	candidate string // the commit the ref points at now (rebased, if landing rebased it)
}

// waitingCandidate returns the candidate of task id's last attempt if it waits to land: the
// record, sealed in the orchestrator's state, says the attempt was blocked by a landing
// conflict, and its ref still names a commit. A record whose seal fails is no evidence: the
// task gets a new attempt.
func (r *runner) waitingCandidate(ctx context.Context, id string) (waiting, bool) {
	n := lastAttempt(r.runs, id)
	if n == 0 {
		return waiting{}, false
	}
	res, ok := readResult(filepath.Join(r.runs, id, strconv.Itoa(n)))
	if !ok || res.Outcome != "blocked" || res.Type != typeLandingConflict || res.Candidate == "" || res.Base == "" {
		return waiting{}, false
	}
	w := waiting{n: n, res: res, ref: fmt.Sprintf("refs/orchestrator/attempts/%s/%d", id, n)}
	if w.candidate = r.repo.Ref(ctx, w.ref); w.candidate == "" || w.candidate == res.Base {
		return waiting{}, false
	}
	return w, true
}

// typeLandingConflict is the type of an attempt whose verified candidate could not land
// because it would overwrite the person's uncommitted changes: the task is blocked, and the
// candidate waits (landWaiting).
const typeLandingConflict = "landing_conflict"

// landWaiting lands the waiting candidate w of task t, which advance has just set to
// in_progress, in place of a new attempt: no agent starts. Its record stays attempt w.n's.
// If the integration head moved, the candidate is rebased onto it first; either way it is
// judged again, since the decision is made again, never read back (SPEC §7.1). It passes:
// it lands (or is blocked again, when the person's changes are still in the way). It
// fails there: a failed attempt, through the retry rules. A rebase conflict: back to
// pending for a fresh attempt on the new head, no retry used.
func (r *runner) landWaiting(ctx context.Context, tasks *queue.Doc, t queue.Task, w waiting) error {
	l := r.o.Layout
	a := &attempt{
		id: t.ID, n: w.n, dir: filepath.Join(r.runs, t.ID, strconv.Itoa(w.n)), mirror: filepath.Join(l.Runs(), t.ID, strconv.Itoa(w.n)),
		task: t, started: time.Now(), agent: w.res.Agent, argv: w.res.Command,
		// What the attempt's agent spent stays its record.
		usage: w.res.Usage, usageRead: true,
	}
	if err := os.MkdirAll(a.mirror, 0o755); err != nil {
		return err
	}
	a.readTask(r.o.Config, tasks)
	config, err := r.repo.ConfigPrint(ctx)
	if err != nil {
		return err
	}
	a.config = config
	r.report.event(t.ID, "landing", fmt.Sprintf("attempt %d's verified candidate %.12s waited for your uncommitted changes; judging it again and landing it, with no new agent run", w.n, w.candidate))

	res, log := r.judgeWaiting(ctx, a, w)
	if r.reviewing(a) && ctx.Err() == nil {
		log += r.review(ctx, a, &res)
	}
	if res.Outcome == "completed" {
		log += r.landVerified(ctx, a, &res)
	}
	if a.fatal != nil {
		return r.stopForConfig(a, a.fatal)
	}
	r.wantAudit(ctx)
	if (ctx.Err() != nil && res.Commit == "") || res.Outcome == outcomeSetup {
		// Nothing was learned: the candidate waits on, under the same record, and the
		// task goes back to pending with no retry used.
		if _, err := r.setStatus(context.Background(), a.id, queue.StatusInProgress, queue.StatusPending); err != nil {
			r.report.event(a.id, "warning", err.Error())
		}
		if res.Outcome == outcomeSetup {
			ev := r.fieldsOf(a, res)
			r.report.eventWith(a.id, "stopped", reasonLine(a.n, outcomeSetup, res.Reason, "not the agent's failure: back to pending, the candidate waits on; the run stops", ev.GateLog), ev)
			return &SetupError{Task: a.id, Attempt: a.n, Reason: res.Reason}
		}
		return nil
	}
	// The attempt's first decision stays in its gate.log, above this one.
	prev, _ := os.ReadFile(filepath.Join(a.dir, "gate.log"))
	a.write("gate.log", append(prev, log...))
	a.record(res)
	a.copyOut()
	return r.apply(ctx, &decided{a: a, res: res, log: log})
}

// judgeWaiting judges a waiting candidate again: on its base if that is still the
// integration head, else rebased onto the head (its ref follows). It returns the result
// and the text of gate.log.
func (r *runner) judgeWaiting(ctx context.Context, a *attempt, w waiting) (result, string) {
	var log strings.Builder
	fmt.Fprintf(&log, "task %s attempt %d (%s task): its candidate %.12s passed its gate and waited under %s for the person's uncommitted changes; judged again, with no new agent run\n",
		a.id, a.n, a.task.Kind, w.candidate, w.ref)
	res := result{Outcome: "failed", Claim: w.res.Claim}
	cand := w.candidate
	base, err := r.repo.Parent(ctx, cand)
	head, herr := r.repo.Head(ctx)
	if err = errors.Join(err, herr); err == nil && base != head {
		var rebased string
		rebased, err = r.rebaseOnto(ctx, a, cand, head)
		var ce *worktree.ConflictError
		if errors.As(err, &ce) {
			res.Outcome, res.Type, res.Reason = "requeue", "rebase_conflict", fmt.Sprintf("%v: %v", errRebaseConflict, ce)
			fmt.Fprintf(&log, "decision: %s: %s\n", res.Outcome, res.Reason)
			return res, log.String()
		}
		if err == nil {
			fmt.Fprintf(&log, "the integration branch moved: rebased onto %.12s as %.12s\n", head, rebased)
			cand, base = rebased, head
			err = r.repo.SetRef(ctx, w.ref, cand)
		}
	}
	if err == nil {
		a.base, a.candidate = base, cand
		a.changes, err = r.repo.Diff(ctx, base, cand)
	}
	if err != nil {
		res.Type, res.Reason = "gate_error", "the waiting candidate could not be read: "+err.Error()
		fmt.Fprintf(&log, "decision: %s: %s\n", res.Outcome, res.Reason)
		return res, log.String()
	}
	fmt.Fprintf(&log, "candidate: %s (%d changes from %.12s)\n", a.candidate, len(a.changes), a.base)
	r.gateCandidate(ctx, a, &res, &log)
	fmt.Fprintf(&log, "decision: %s: %s\n", res.Outcome, res.Reason)
	return res, log.String()
}
