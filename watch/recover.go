package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
)

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
		if r.remote != nil && (prev.Remote || r.remoteSubmitted(ctx, a)) {
			// Its agent ran on a worker: its outcome, accepted or still to come, is in
			// the workers' stream, never lost for want of a local process.
			if err := r.recoverRemote(ctx, a, prev); err != nil {
				return err
			}
			continue
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
	// What the gates of the recovered attempts decide is recorded before the run goes on.
	return r.settleQueue(ctx)
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
		if r.remoteSubmitted(context.Background(), a) {
			return true // its job went to the workers just before the stop
		}
		if fi, err := os.Stat(filepath.Join(a.mirror, "agent.log")); err == nil && fi.Size() > 0 {
			return true
		}
		return m != nil
	}
	return m != nil && prev.Outcome != "not_started"
}
