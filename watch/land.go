package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/worktree"
)

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

// landingMessage is the landed commit's message: the task's ID and title, and trailers
// that say what was verified (SPEC §7.7).
func landingMessage(a *attempt, title string, v *gate.Verdict, red string) string {
	var b strings.Builder
	subject := a.id
	if title = strings.TrimSpace(title); title != "" {
		subject += ": " + title
	}
	fmt.Fprintf(&b, "%s\n\nOrchestrator-Task: %s\nOrchestrator-Attempt: %d\nOrchestrator-Gate: %s\n", subject, a.id, a.n, oneLine(v.Reason))
	if red != "" {
		fmt.Fprintf(&b, "Orchestrator-Red: %s\n", red)
	}
	if a.ruling != "" {
		fmt.Fprintf(&b, "Orchestrator-Review: %s\n", oneLine(a.ruling))
	}
	if len(v.ChangedTests) > 0 {
		// Existing tests a TEST task rewrote to state new behaviour (SPEC §7.2): people see them.
		fmt.Fprintf(&b, "Orchestrator-Changed-Tests: %s\n", strings.Join(v.ChangedTests, ", "))
	}
	return b.String()
}

// Landing results beside a plain pass.
var (
	// errLandingConflict: the landing would overwrite the person's uncommitted changes.
	errLandingConflict = errors.New("landing conflict")
	// errRebaseConflict: the candidate does not apply to the new integration head.
	errRebaseConflict = errors.New("rebase conflict")
)

// maxRebaseConflicts is how many times in a row a task goes back to pending for a rebase
// conflict before it is blocked (SPEC §7.7).
const maxRebaseConflicts = 3

// land puts a verified candidate on the integration branch (SPEC §7.7) and returns the
// commit that verifies the task. A candidate that changes nothing lands no commit: the
// head it was verified at is its commit. One whose base is no longer the integration head
// is rebased onto it and judged again there by rejudge (two tasks that pass alone and
// break together never both land): a verdict that fails then is returned as is. A rebase
// conflict is errRebaseConflict, a landing that would overwrite the person's uncommitted
// changes errLandingConflict, both naming the paths.
func (r *runner) land(ctx context.Context, a *attempt, message string, rejudge func(commit string) (*gate.Verdict, error)) (string, *gate.Verdict, error) {
	if a.unchanged() {
		return a.candidate, nil, nil
	}
	cand := a.candidate
	for tries := 0; ; tries++ {
		commit, err := r.repo.Land(ctx, cand, message)
		var ce *worktree.ConflictError
		switch {
		case errors.As(err, &ce):
			return "", nil, fmt.Errorf("%w: %v", errLandingConflict, ce)
		case errors.Is(err, worktree.ErrMoved) && tries < 3:
			// Another task landed, or the person committed: rebase onto the new head and
			// judge it again there.
			head, err := r.repo.Head(ctx)
			if err != nil {
				return "", nil, err
			}
			rebased, err := r.rebaseOnto(ctx, a, cand, head)
			if errors.As(err, &ce) {
				return "", nil, fmt.Errorf("%w: %v", errRebaseConflict, ce)
			}
			if err != nil {
				return "", nil, err
			}
			cand = rebased
			_ = r.repo.SetRef(ctx, a.ref(), cand)
			r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: the integration branch moved; judging it again on %.12s", a.n, head))
			v, err := rejudge(cand)
			if err != nil || !v.Pass {
				return "", v, err
			}
			a.verdict = v // the run on the new head is the one the baseline grows from
			continue
		case err != nil:
			return "", nil, err
		}
		if r.remote != nil {
			r.remote.bundleAhead(commit) // the next jobs' base
		}
		return commit, nil, nil
	}
}

// landing is the attempt's landing stage, for a candidate its gate (and review) passed:
// nothing lands for a task whose status someone else moved while it ran, or for a BUILD
// candidate with nothing of its own to land; else the candidate lands (landVerified).
// res becomes what landing made of it. It returns the lines it adds to gate.log.
func (r *runner) landing(ctx context.Context, a *attempt, res *result) string {
	// Nothing lands for a task whose status someone else moved while it ran (the agent
	// itself, with `orchestrator set` or sed, or a person).
	if st, ok := r.statusNow(a.id); ok && st != queue.StatusInProgress {
		res.Outcome, res.Reason = "stopped", fmt.Sprintf("its status was set to %s while its attempt ran; nothing landed", orNone(st))
		if st == queue.StatusCompleted {
			r.byHand = append(r.byHand, a.id)
		}
		r.report.event(a.id, "stopped", res.Reason)
		return ""
	}
	if why := r.nothingToLand(ctx, a); why != "" {
		res.Outcome, res.Type, res.Reason = "skipped", typeNoChange, why
		return "after the gate: skipped: " + why + "\n"
	}
	return r.landVerified(ctx, a, res)
}
