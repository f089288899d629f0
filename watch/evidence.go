package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/spotcheck"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// Evidence is sealed (SPEC §15.2 item 4): the verified marks, the RED and GREEN hand-offs,
// the baseline, the attempt records and the landings' trailers carry an HMAC made with the
// person's key (package seal). A record whose seal fails is not evidence: its reader
// ignores it. The audit here names such records, for `status` and for watch's warnings,
// and the repository's own configuration is watched from each attempt's start to its end.

// sealKey returns the person's key, or nil when it cannot be read (every record is then
// not evidence). watch reads it when it starts (openRepo), and fails there if it cannot.
func sealKey() *seal.Key {
	k, _ := seal.User()
	return k
}

// EditedState returns the records of the orchestrator's state in the repository of l that
// are not evidence because their seal is missing or does not match: each says that
// orchestrator state was edited outside the orchestrator, naming the record. None outside
// a git repository.
func EditedState(ctx context.Context, l queue.Layout) ([]string, error) {
	repo, err := worktree.Open(ctx, l.Root)
	if err != nil {
		return nil, nil
	}
	if _, err := repo.Key(); err != nil {
		return nil, err
	}
	return editedRecords(ctx, repo, nil), nil
}

// editedRecords audits every sealed record of the repository's orchestrator state, and
// the landings of its integration branch. audit, if not nil, spares reading again the
// records it found sealed and that have not changed since.
func editedRecords(ctx context.Context, repo *worktree.Repo, audit *seal.Audit) []string {
	k := sealKey()
	var errs []error
	errs = append(errs, repo.EditedMarks(audit)...)
	// Check skips a record that is not there (seal.Audit).
	baseline := filepath.Join(repo.State(), "baseline.json")
	if err := audit.Check(baseline, func() error {
		_, err := testrun.ReadSealedBaseline(baseline, k)
		return err
	}); err != nil {
		errs = append(errs, err)
	}
	runs := stateRuns(repo)
	tasks, _ := os.ReadDir(runs)
	for _, t := range tasks {
		attempts, _ := os.ReadDir(filepath.Join(runs, t.Name()))
		for _, at := range attempts {
			n, err := strconv.Atoi(at.Name())
			if err != nil || !at.IsDir() {
				continue
			}
			dir := filepath.Join(runs, t.Name(), at.Name())
			if err := audit.Check(filepath.Join(dir, "result.json"), func() error {
				_, err := openResult(k, dir)
				return err
			}); err != nil {
				errs = append(errs, err)
			}
			for _, name := range []string{"handoff-red.json", "handoff-green.json"} {
				path := filepath.Join(dir, name)
				if err := audit.Check(path, func() error {
					_, err := gate.OpenManifest(k, path, t.Name(), n)
					return err
				}); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	errs = append(errs, spotcheck.EditedRecords(k, repo.State(), audit)...)
	errs = append(errs, repo.EditedLandings(ctx)...)
	var out []string
	for _, err := range errs {
		var ee *seal.EditedError
		if errors.As(err, &ee) {
			out = append(out, describeRecord(repo, ee))
		}
	}
	return out
}

// describeRecord names an edited record for people: its path relative to the repository
// (.git/orchestrator/...), and why it is not evidence.
func describeRecord(repo *worktree.Repo, ee *seal.EditedError) string {
	name := ee.Record
	if rel, err := filepath.Rel(repo.Root, name); err == nil && !strings.HasPrefix(rel, "..") {
		name = rel
	}
	return fmt.Sprintf("%s (%v)", name, ee.Err)
}

// reportEdited says once per record, as a warning, that orchestrator state was edited
// outside the orchestrator: at the start and the end of a run, and after each decision
// (through the auditor).
func (r *runner) reportEdited(ctx context.Context) {
	r.reportRecords(editedRecords(ctx, r.repo, &r.audit))
}

// reportRecords warns once of each record in found that an audit found edited.
func (r *runner) reportRecords(found []string) {
	for _, rec := range found {
		if r.edited[rec] {
			continue
		}
		if r.edited == nil {
			r.edited = map[string]bool{}
		}
		r.edited[rec] = true
		r.report.event("", "warning", "orchestrator state was edited outside the orchestrator, and is not evidence: "+rec)
	}
}

// auditPause is the least time between two audits of the auditor.
var auditPause = time.Second

// An auditor runs the audit of the records that decisions ask for. The audit reads every
// record of the state: its cost grows with the run's attempts (4 ms at 200 here, a third
// of the orchestrator's CPU in a run of 200 quick tasks), and it decides nothing. So it
// runs on a goroutine of its own, not on the loop between one agent's marker and its
// task's status, and at most once a pause (auditPause): a decision asks for one
// (wantAudit), asks made meanwhile are one more, and what it finds comes back to the loop
// (audited), which warns of it. The run's first and last audits, and status's, are the
// loop's own.
type auditor struct {
	want  chan struct{} // an audit is asked for; one waiting is enough
	found chan []string // what an audit found, for the loop to report
	done  chan struct{} // closed when the goroutine has ended
	stop  context.CancelFunc
	runs  atomic.Int32 // the audits it made
}

// startAuditor starts the goroutine that audits the records when the loop asks.
func (r *runner) startAuditor(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	a := &auditor{want: make(chan struct{}, 1), found: make(chan []string, 1), done: make(chan struct{}), stop: cancel}
	r.auditor = a
	go func() {
		defer close(a.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.want:
			}
			found := editedRecords(ctx, r.repo, &r.audit)
			a.runs.Add(1)
			select {
			case a.found <- found:
			case <-ctx.Done():
				return
			}
			// At most one audit a pause: the decisions made meanwhile are one audit.
			pause := time.NewTimer(auditPause)
			select {
			case <-pause.C:
			case <-ctx.Done():
				pause.Stop()
				return
			}
		}
	}()
}

// wantAudit asks the auditor for an audit of the records, or audits them on the loop when
// no auditor runs.
func (r *runner) wantAudit(ctx context.Context) {
	if r.auditor == nil {
		r.reportEdited(ctx)
		return
	}
	select {
	case r.auditor.want <- struct{}{}:
	default: // one is asked for already, and will see this decision's records too
	}
}

// stopAuditor ends the auditor's goroutine, then audits the records on the loop one last
// time, so that a run ends having said all the audits it asked for would have said: what
// an audit found and the loop has not taken yet is found again (the audit remembers only
// the records it found sealed).
func (r *runner) stopAuditor(ctx context.Context) {
	a := r.auditor
	if a == nil {
		return
	}
	r.auditor = nil
	a.stop()
	<-a.done
	r.reportEdited(ctx)
}

// audited is where the auditor's findings reach the loop; nil, which never delivers,
// when no auditor runs.
func (r *runner) audited() <-chan []string {
	if r.auditor == nil {
		return nil
	}
	return r.auditor.found
}

// checkConfig compares the repository's own configuration with the fingerprint taken
// when the attempt started (SPEC §15.2 item 4): a change is a *worktree.ConfigChangedError
// naming it, which stops the run. The fingerprint moves on to what is checked, so that one
// change is reported once.
func (r *runner) checkConfig(ctx context.Context, a *attempt, when string) error {
	if a.config == nil {
		return nil // an adopted attempt of an earlier run: its start is unknown
	}
	now, err := r.repo.ConfigPrint(ctx)
	if err != nil {
		return err
	}
	if changed := a.config.Changed(now); len(changed) > 0 {
		a.config = now
		return &worktree.ConfigChangedError{During: fmt.Sprintf("attempt %d of %s (%s)", a.n, a.id, when), Paths: changed}
	}
	return nil
}

// stopForConfig records an attempt whose run stops because the repository's configuration
// or the gate's checkout changed under it (err): its task is blocked with the reason, so
// that no agent runs on it again before a person looks, and the error stops the run
// (exit 2).
func (r *runner) stopForConfig(a *attempt, err error) error {
	why := oneLine(err.Error())
	res := result{Outcome: "blocked", Type: "config_changed", Reason: why}
	a.record(res)
	a.write("gate.log", []byte("the run stopped: "+why+"\n"))
	r.releaseSlot(a)
	a.copyOut()
	ev := r.fieldsOf(a, res)
	r.report.eventWith(a.id, "blocked", reasonLine(a.n, ev.FailureType, why, "", ev.GateLog), ev)
	if _, serr := r.setStatus(context.Background(), a.id, queue.StatusInProgress, queue.StatusBlocked,
		queue.SetField{ID: a.id, Field: "Blocked-Reason", Value: why}); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// stopsRun reports whether err must stop the run with exit 2: the repository's own
// configuration changed, or a checkout the orchestrator made is not its commit.
func stopsRun(err error) bool {
	var ce *worktree.ConfigChangedError
	var co *worktree.CheckoutError
	return errors.As(err, &ce) || errors.As(err, &co)
}
