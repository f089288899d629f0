package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/worktree"
)

// The merge queue judges candidates beside the loop, several at once, and lands them in the
// order they entered it (SPEC §7.7), the way CI systems gate parallel changes: the first
// candidate is judged on the integration head, each one behind it on the head as it will be
// once those ahead of it land (their candidates, rebased in order). A candidate whose gate
// passes lands once everything ahead of it has landed, if what it was judged on is still what
// it lands on; those behind a candidate that does not land are judged again without it.
//
// Invariants: the candidates whose gates run or have run are a prefix of the queue (pump
// starts them in order); a candidate whose gate was made stale is not started again before
// that gate has ended (its gate writes to its attempt folder); a QA task's spot check runs
// alone, at the front.

// A queued candidate waits in the merge queue.
type queued struct {
	a *attempt
	// pre is the pre-checks' result, res it completed by its gate's verdict.
	pre, res result
	log      *strings.Builder // gate.log so far
	// orig is the candidate as its agent made it, on its attempt's base; a.candidate is it
	// rebased onto on, the commit it is judged on: the integration head, or the candidate of
	// ahead, the task in front of it.
	orig, on, ahead string
	// baseAt are the baseline's passing tests when its gate started: a test the baseline
	// gained since must pass in its run too (holds).
	baseAt []string
	// gen counts its gates: a gate's end that carries another is stale. running is set
	// while a gate of its runs, stale or not; done is the end of its current gate.
	gen     int
	running bool
	current bool
	cancel  context.CancelFunc
	done    *judged
}

// judged is a gate's end, sent to the loop.
type judged struct {
	q   *queued
	gen int
	gateOutcome
}

// enqueue puts an attempt whose claim stands for the gate at the back of the merge queue.
func (r *runner) enqueue(ctx context.Context, a *attempt, res result, log *strings.Builder) error {
	r.merge = append(r.merge, &queued{a: a, pre: res, res: res, log: log, orig: a.candidate})
	return r.pump(ctx)
}

// pump starts the gates of the queue's candidates, in order, while a gate slot is free.
func (r *runner) pump(ctx context.Context) error {
	tip, err := r.repo.Head(ctx)
	if err != nil {
		return err
	}
	ahead := ""
	for i := 0; i < len(r.merge); i++ {
		q := r.merge[i]
		qa := q.a.task.Kind == queue.KindQA
		if q.current {
			if qa {
				return nil // a spot check runs alone
			}
			tip, ahead = q.a.candidate, q.a.id
			continue
		}
		if q.running || qa && i > 0 {
			return nil // its stale gate still writes its attempt folder; or a QA waits to be first
		}
		s, ok, err := r.tryGate(ctx)
		if err != nil {
			return err
		}
		if !ok {
			r.starved = true // the loop's own gate may hold the last slot: pump again
			return nil
		}
		err = r.onto(ctx, q, tip, ahead)
		var ce *worktree.ConflictError
		switch {
		case errors.As(err, &ce) && ahead != "":
			// It does not apply on top of the candidates ahead: it waits for them.
			r.putGate(s)
			return nil
		case err != nil:
			r.putGate(s)
			r.merge = slices.Delete(r.merge, i, i+1)
			i--
			res := q.pre
			if errors.As(err, &ce) {
				// Not the agent's failure: a fresh attempt on the new head (statusAfter).
				res.Outcome, res.Type, res.Reason = "requeue", "rebase_conflict", fmt.Sprintf("%v: %v", errRebaseConflict, ce)
			} else {
				res.Type, res.Reason = "gate_error", "the candidate could not be rebased onto the integration head: "+err.Error()
				res.Primary = retry.Normalize(res.Reason)
			}
			if _, err := r.afterGate(ctx, q.a, res, q.log); err != nil {
				return err
			}
			continue
		}
		q.a.redsAhead = nil
		for _, o := range r.merge[:i] {
			if o.a.task.Kind == queue.KindTest {
				q.a.redsAhead = append(q.a.redsAhead, o.a.candidate)
			}
		}
		r.startGate(ctx, q, s)
		tip, ahead = q.a.candidate, q.a.id
		if qa {
			return nil
		}
	}
	return nil
}

// onto makes the candidate of q its original rebased onto tip, the commit it will be
// judged on (the integration head, or the candidate of task ahead), and says so in its
// gate.log and as an event. Its ref follows the candidate. A conflict is a
// *worktree.ConflictError naming the paths.
func (r *runner) onto(ctx context.Context, q *queued, tip, ahead string) error {
	a := q.a
	a.candidate, a.onto, q.on, q.ahead = q.orig, "", tip, ahead
	if tip == a.base {
		return nil
	}
	rebased := tip
	if q.orig != a.base {
		var err error
		rebased, err = r.rebaseOnto(ctx, a, q.orig, tip)
		if err != nil {
			return err
		}
	}
	a.candidate, a.onto = rebased, tip
	if err := r.repo.SetRef(ctx, a.ref(), rebased); err != nil {
		return err
	}
	if ahead != "" {
		fmt.Fprintf(q.log, "judged behind %s: rebased onto its candidate %.12s as %.12s, the head as it will be once it lands\n", ahead, tip, rebased)
		r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: judging it behind %s, on the head as it will be once %s lands", a.n, ahead, ahead))
		return nil
	}
	if rebased == tip {
		fmt.Fprintf(q.log, "the integration branch moved since %.12s: the candidate changes nothing, so it is judged at the head %.12s\n", a.base, tip)
	} else {
		fmt.Fprintf(q.log, "the integration branch moved since %.12s: rebased onto %.12s as %.12s, and judged there\n", a.base, tip, rebased)
	}
	r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: the integration branch moved since its base; judging it on %.12s", a.n, tip))
	return nil
}

// startGate readies the gate of q's candidate in the loop and runs it beside the loop in
// slot s, which it gives back when it ends.
func (r *runner) startGate(ctx context.Context, q *queued, s *worktree.Slot) {
	gctx, cancel := context.WithCancel(ctx)
	q.gen++
	q.running, q.current, q.cancel, q.done = true, true, cancel, nil
	q.baseAt = nil
	if b := r.readBaseline(); b != nil {
		q.baseAt = slices.Clone(b.PassingTests)
	}
	run := r.prepareGate(gctx, q.a, q.a.candidate, s)
	gen := q.gen
	r.gatesRunning++
	r.gating.Add(1)
	// The pool as it is now: the run's end makes a new one (removeSlots) while a gate of
	// this one may still be giving its slot back.
	pool := r.gates
	go func() {
		defer r.gating.Done()
		o := run(gctx)
		pool.free <- s
		r.gated <- judged{q: q, gen: gen, gateOutcome: o}
	}()
}

// gateDone takes the end of a gate of the merge queue, and lands or records what it can.
func (r *runner) gateDone(ctx context.Context, j judged) error {
	q := j.q
	q.running = false
	if r.gatesRunning--; r.gatesRunning == 0 && r.reapLater {
		r.reapWhenIdle()
	}
	if j.gen != q.gen || !q.current {
		return r.pump(ctx) // a stale gate: its candidate may start again
	}
	q.cancel()
	j.v, j.err = r.gateEnded(ctx, q.a, j.v, j.err)
	q.a.fresh, q.done = j.fresh, &j
	// Its gate.log and verdict now, in the order things happened: a verdict judged again
	// keeps its lines above the next.
	q.res = q.pre
	r.verdictInto(q.a, j.v, j.err, &q.res, q.log)
	if q.a.fatal != nil {
		// The configuration changed under its gate, or its checkout is not the commit:
		// the run stops now, whatever is ahead of it.
		r.merge = slices.DeleteFunc(r.merge, func(o *queued) bool { return o == q })
		return r.stopForConfig(q.a, q.a.fatal)
	}
	return r.settleFront(ctx)
}

// settleFront settles the candidates at the front of the queue whose gates have ended, in
// order, then starts what can start: the next gates first, then the agents of the tasks
// those landings made ready. The gates are the queue's narrow part, and an agent's start
// (its slot, a worker's job and its base's bundle) would hold the next one up.
func (r *runner) settleFront(ctx context.Context) error {
	if r.held != nil {
		return r.settle(ctx) // within a settling already: its launches wait for it
	}
	r.held = &heldLaunches{}
	err := r.settle(ctx)
	held := r.held
	r.held = nil
	for _, l := range held.launches {
		if err == nil {
			err = r.launchAll(ctx, l.doc, l.picks)
			continue
		}
		// The run stops before they start: its next start picks them again.
		err = errors.Join(err, r.backToPending(l.picks))
	}
	return err
}

// heldLaunches are the tasks set in_progress while the merge queue settled its front,
// each write's picks with the queue that write read: a task's record is read from the
// document it was picked from.
type heldLaunches struct {
	launches []heldLaunch
}

type heldLaunch struct {
	doc   *queue.Doc
	picks []queue.Task
}

func (h *heldLaunches) add(doc *queue.Doc, picks []queue.Task) {
	if len(picks) > 0 {
		h.launches = append(h.launches, heldLaunch{doc, picks})
	}
}

// settle is settleFront's work: the front's candidates, then the next gates.
func (r *runner) settle(ctx context.Context) error {
	for len(r.merge) > 0 && r.merge[0].done != nil {
		q := r.merge[0]
		a := q.a
		if q.res.Outcome == "completed" {
			if why := r.holds(ctx, q); why != "" {
				// Judged on what it no longer lands on: judged again, and those behind
				// it (judged on top of it) too.
				r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: %s; judging it again", a.n, why))
				r.resetFrom(0, why)
				break
			}
		}
		r.merge = r.merge[1:]
		landed, err := r.afterGate(ctx, a, q.res, q.log)
		if err != nil {
			return err
		}
		if !landed {
			// Those behind were judged on top of its candidate.
			r.resetFrom(0, fmt.Sprintf("%s, judged ahead of it, did not land", a.id))
		}
	}
	return r.pump(ctx)
}

// holds returns why the passing verdict of q, at the front of the queue, no longer holds
// for the head it would land on, or "". It holds when the head has the tree it was judged
// on (the candidates ahead of it landed as they were judged), its candidate then moved onto
// the head with the same tree; and when every test the baseline gained since its gate
// started passed in its run (a test a candidate ahead made pass, which it must not break).
func (r *runner) holds(ctx context.Context, q *queued) string {
	a := q.a
	head, err := r.repo.Head(ctx)
	if err != nil {
		return err.Error()
	}
	if q.on != head {
		same, err := r.repo.SameTree(ctx, q.on, head)
		if err != nil || !same {
			return fmt.Sprintf("the integration branch is at %.12s, not at what it was judged on (%.12s)", head, q.on)
		}
		moved := head
		if a.candidate != q.on {
			if moved, err = r.rebaseOnto(ctx, a, a.candidate, head); err != nil {
				return err.Error()
			}
		}
		if err := r.repo.SetRef(ctx, a.ref(), moved); err != nil {
			return err.Error()
		}
		fmt.Fprintf(q.log, "the integration branch is at %.12s, with the tree it was judged on: its candidate moves onto it as %.12s\n", head, moved)
		a.candidate, a.onto, q.on = moved, head, head
	}
	var grown []string
	if b := r.readBaseline(); b != nil {
		// Sets, not lists: a baseline of 10,000 tests is met at every landing.
		known := make(map[string]bool, len(q.baseAt))
		for _, id := range q.baseAt {
			known[id] = true
		}
		if a.fresh != nil {
			for _, id := range a.fresh.PassingTests {
				known[id] = true
			}
		}
		for _, id := range b.PassingTests {
			if !known[id] {
				grown = append(grown, id)
			}
		}
	}
	if len(grown) > 0 {
		return fmt.Sprintf("the baseline gained %d test(s) since its gate began that its run did not pass (%s)", len(grown), strings.Join(grown[:min(3, len(grown))], ", "))
	}
	return ""
}

// resetFrom makes the gates of the candidates from index i on stale, saying why in their
// gate.log: each goes back to its original candidate, to be judged again (pump) once its
// stale gate has ended.
func (r *runner) resetFrom(i int, why string) {
	for _, q := range r.merge[i:] {
		if !q.current {
			continue
		}
		fmt.Fprintf(q.log, "judged again: %s\n", why)
		if q.running {
			q.cancel()
		}
		q.current, q.done, q.res = false, nil, q.pre
		q.a.candidate, q.a.onto, q.a.verdict, q.a.fresh, q.a.gateOutput = q.orig, "", nil, nil, ""
	}
}

// dropQueue ends the merge queue's gates when the run stops, and puts their tasks back to
// pending with no retry used: nothing was decided.
func (r *runner) dropQueue(why string) {
	for _, q := range r.merge {
		if q.running {
			q.cancel()
		}
	}
	r.gating.Wait()
	r.gatesRunning = 0
	for _, q := range r.merge {
		r.releaseSlot(q.a)
		r.putBack(q.a, why)
		q.a.copyOut()
	}
	r.merge = nil
}

// settleQueue waits for the merge queue to empty: crash recovery judges what it finds
// before the run goes on.
func (r *runner) settleQueue(ctx context.Context) error {
	for len(r.merge) > 0 {
		// The loop's own gate slot (a baseline measured for a rewritten history) may be
		// the one the queue waits for.
		r.dropGate()
		if r.starved {
			r.starved = false
			if err := r.pump(ctx); err != nil {
				return err
			}
		}
		select {
		case j := <-r.gated:
			if err := r.gateDone(ctx, j); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// dropMoved takes out of the merge queue the candidates whose task a person moved out of
// in_progress (d is the queue as it is now): nothing of theirs lands, as nothing does of an
// agent stopped by a status change. It reports whether it took any.
func (r *runner) dropMoved(d *queue.Doc) bool {
	took := false
	for i := 0; i < len(r.merge); i++ {
		a := r.merge[i].a
		status := ""
		if rec, ok := d.Record(a.id); ok {
			status = d.Task(rec).Status
		}
		if status == queue.StatusInProgress {
			continue
		}
		r.resetFrom(i, a.id+"'s status was set by hand while its gate ran") // its gate, and those judged on top of it
		r.merge = slices.Delete(r.merge, i, i+1)
		i--
		took = true
		if status == queue.StatusCompleted {
			r.byHand = append(r.byHand, a.id) // completed by hand, not by the gate
		}
		r.report.event(a.id, "stopped", fmt.Sprintf("status set to %q by hand; attempt %d leaves the merge queue, and nothing of it lands", status, a.n))
		a.record(result{Outcome: "stopped", Reason: "a person changed the task's status while its gate ran"})
		r.releaseSlot(a)
		_ = r.fileAway(a)
	}
	return took
}
