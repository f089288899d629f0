package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/sandbox"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// gateResult is what result.json keeps of the gate: its verdict and the commands it ran
// with their exit codes (gate.log has their output).
type gateResult struct {
	Pass bool       `json:"pass"`
	Runs []gate.Run `json:"runs"`
}

// gateCandidate judges the attempt's candidate on the integration head, in the loop, and
// turns res into the verdict (verdictInto). The merge queue (mergequeue.go) judges
// candidates beside the loop instead; a waiting candidate (waiting.go) is judged here.
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
	r.verdictInto(a, v, err, res, log)
}

// verdictInto turns the gate's verdict on the attempt's candidate into res: completed when
// it passes, else failed with the gate's reason (or a set-up problem, or a gate that could
// not run). The gate's log goes to log.
func (r *runner) verdictInto(a *attempt, v *gate.Verdict, err error, res *result, log *strings.Builder) {
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
		rebased, err = r.rebaseOnto(ctx, a, a.candidate, head)
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
	if err := r.repo.SetRef(ctx, a.ref(), rebased); err != nil {
		return err
	}
	r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: the integration branch moved since its base; judging it on %.12s", a.n, head))
	return nil
}

// testCommand returns the command that checks a task: its Test Command, else the project's
// test command from config, else the task queue's Project Commands table.
func testCommand(cfg *config.Config, tasks *queue.Doc, rec *queue.Record) string {
	if v := tasks.Get(rec, "Test Command"); !queue.IsEmpty(v) {
		return strings.TrimSpace(v)
	}
	return projectTestCommand(cfg, tasks)
}

// judge checks a claim of done with the gate for the task's kind (SPEC §7.2–7.4), in the
// loop, in a pristine checkout of commit: RED for a TEST task, GREEN for a BUILD task,
// VERIFY for a VERIFY or QA task. A change under .orchestrator/ is refused before any test
// runs.
//
// The repository's own configuration is compared with the attempt's start before the gate
// runs and after: a change is a *worktree.ConfigChangedError, which stops the run.
func (r *runner) judge(ctx context.Context, a *attempt, commit string) (*gate.Verdict, error) {
	s, err := r.loopGate(ctx)
	if err != nil {
		return nil, err
	}
	o := r.prepareGate(ctx, a, commit, s)(ctx)
	a.fresh = o.fresh
	return r.gateEnded(ctx, a, o.v, o.err)
}

// A gateOutcome is what a gate run returns: its verdict or error, and the part of the
// baseline its whole-suite run would add once the candidate lands (nil without one).
type gateOutcome struct {
	v     *gate.Verdict
	err   error
	fresh *testrun.Baseline
}

// A gateRun is a gate prepared in the loop, its checkout made and its input read, that runs
// anywhere: nothing it does touches the runner or the attempt.
type gateRun func(ctx context.Context) gateOutcome

// prepareGate readies the gate of the attempt's task kind on commit in slot s: the checks
// made before any test runs (the orchestrator's files, the repository's configuration), the
// checkout, and the gate's input. What it decides at once, a refusal or an error, the run
// returns as it is.
func (r *runner) prepareGate(ctx context.Context, a *attempt, commit string, s *worktree.Slot) gateRun {
	start := time.Now()
	changed, forbidden := r.changedPaths(a)
	if len(forbidden) > 0 {
		return decidedRun(gate.Refuse(gate.TypeScope, "scope_violation: the agent changed the orchestrator's files: %s", strings.Join(forbidden, ", ")), nil)
	}
	if err := r.checkConfig(ctx, a, "before its gate"); err != nil {
		return decidedRun(nil, err)
	}
	run, err := r.gateFor(ctx, a, commit, changed, s)
	if err != nil {
		return decidedRun(nil, err)
	}
	setup := time.Since(start)
	root, globs := r.projectDir(s.Dir), r.o.Config.TestGlobs
	return func(ctx context.Context) gateOutcome {
		// Its time is its set-up's and its run's, not the wait for its turn in the
		// merge queue.
		start := time.Now()
		defer func() { a.addStage("gate", setup+time.Since(start)) }()
		v, err := run(ctx)
		o := gateOutcome{v: v, err: err}
		if err == nil && v != nil && v.Pass && v.Full != nil {
			// The checkout still holds the candidate: what its run adds to the baseline
			// is read now, while the slot is ours.
			o.fresh, _ = testrun.NewBaseline(root, v.Full, globs)
		}
		return o
	}
}

// decidedRun is the run of a gate decided before any test ran.
func decidedRun(v *gate.Verdict, err error) gateRun {
	return func(context.Context) gateOutcome { return gateOutcome{v: v, err: err} }
}

// gateEnded compares the repository's configuration with the attempt's start once its gate
// has run the candidate's code: a change stops the run. A verdict or error that stops the
// run is kept in a.fatal.
func (r *runner) gateEnded(ctx context.Context, a *attempt, v *gate.Verdict, err error) (*gate.Verdict, error) {
	if cerr := r.checkConfig(ctx, a, "its gate's run of the candidate's code"); cerr != nil {
		a.fatal = cerr
		return v, cerr
	}
	if stopsRun(err) {
		a.fatal = err
	}
	return v, err
}

// gateFor checks commit out in slot s and returns the gate for the attempt's task kind
// there.
func (r *runner) gateFor(ctx context.Context, a *attempt, commit string, changed []string, s *worktree.Slot) (func(context.Context) (*gate.Verdict, error), error) {
	root, err := r.checkout(ctx, s, commit)
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
	in = r.gateInput(in, s.Dir)
	if k := sealKey(); k != nil {
		// GREEN and VERIFY run only the Go packages whose inputs have no sealed record.
		in.Impact = &gate.Impact{Dir: gate.ImpactDir(), Key: k, Commit: commit, Repo: r.repo.Root}
	}
	in.Restore = func() error {
		_, err := r.checkout(ctx, s, commit)
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
		return func(ctx context.Context) (*gate.Verdict, error) { return gate.Red(ctx, in) }, nil
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
				return refusedRun(gate.Refuse(gate.TypeTampered, "test_tampered: TEST dependency %s has no RED evidence; its tests cannot be checked", dep)), nil
			}
			if red != "" {
				if f, what, err := r.touchedRed(ctx, a, red); err != nil {
					return nil, err
				} else if f != "" && !a.reviewTests {
					v := gate.Refuse(gate.TypeTampered, "test_tampered: %s was %s after RED (%s, landed as %.12s)", f, what, dep, red)
					v.File = f
					return refusedRun(v), nil
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
			return func(ctx context.Context) (*gate.Verdict, error) { return r.judgeCycle(ctx, a, in) }, nil
		}
		return func(ctx context.Context) (*gate.Verdict, error) { return gate.Green(ctx, in) }, nil
	case queue.KindQA:
		return func(ctx context.Context) (*gate.Verdict, error) {
			return r.judgeQA(ctx, a, commit, func() (*gate.Verdict, error) { return gate.Verify(ctx, in) })
		}, nil
	}
	return func(ctx context.Context) (*gate.Verdict, error) { return gate.Verify(ctx, in) }, nil
}

// refusedRun is the gate of a verdict reached before any test ran.
func refusedRun(v *gate.Verdict) func(context.Context) (*gate.Verdict, error) {
	return func(context.Context) (*gate.Verdict, error) { return v, nil }
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

// projectTestCommand returns the project's test command: config commands.test, else the
// task queue's Project Commands table.
func projectTestCommand(cfg *config.Config, tasks *queue.Doc) string {
	if cfg.Commands.Test != "" {
		return cfg.Commands.Test
	}
	return tasks.ProjectCommand("Test")
}

// gateDir makes the loop's pristine checkout of commit (loopGate, checkout) and returns
// the project folder in it: for a gate, the baseline's run, a reviewer's reading.
func (r *runner) gateDir(ctx context.Context, commit string) (string, error) {
	s, err := r.loopGate(ctx)
	if err != nil {
		return "", err
	}
	return r.checkout(ctx, s, commit)
}

// checkout makes slot s the gate's pristine checkout of commit (SPEC §7.6): a slot of the
// gate's own, never an agent's worktree, so that files the agent left untracked or ignored
// are not there, and whose bytes are the commit's blobs (else a *worktree.CheckoutError
// naming the file, which stops the run). It returns the project folder in it.
func (r *runner) checkout(ctx context.Context, s *worktree.Slot, commit string) (string, error) {
	if err := s.Reset(ctx, commit); err != nil {
		return "", err
	}
	if err := s.CheckCheckout(ctx, commit); err != nil {
		return "", err
	}
	if err := r.linkShared(s.Dir); err != nil {
		return "", err
	}
	return r.projectDir(s.Dir), nil
}

// openSandbox decides at the start of a run whether agents and the gate's commands run in
// bubblewrap (SPEC §7.6, §15.2): config sandbox auto uses it where it runs and says once
// when it does not; bwrap refuses to start without it; off never uses it. Without it, the
// run says that the gate trusts the candidate's code.
func (r *runner) openSandbox() error {
	switch r.o.Config.Sandbox {
	case "off":
		r.report.event("", "warning", "sandbox: off: the gate runs the candidates' tests and code with your user's rights, and trusts them")
		return nil
	case "bwrap":
		if err := sandbox.Available(); err != nil {
			return fmt.Errorf("sandbox: bwrap: %w", err)
		}
	default:
		if err := sandbox.Available(); err != nil {
			r.report.event("", "warning", "agents and the gate's test runs go without a sandbox, and the gate trusts the candidates' code: "+err.Error())
			return nil
		}
	}
	r.jail = true
	spec := gate.JailSpec{
		Env:      r.env,
		Hide:     []string{r.o.Layout.Root, r.repo.Root, r.repo.Common, r.repo.State(), gate.ImpactDir()},
		Readable: r.readable(),
		Cache:    gate.CacheDir(),
		Network:  r.o.Config.GateNetwork == "host",
	}
	j, err := gate.NewJail(spec)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	r.gateJail = j
	return nil
}

// readable are the paths the sandboxes show read-only that they would hide otherwise: the
// shared folders of the person's tree that checkouts link to, and config sandbox_readable.
func (r *runner) readable() []string {
	var out []string
	for _, d := range sharedDirs {
		src := filepath.Join(r.o.Layout.Root, d)
		if fi, err := os.Stat(src); err == nil && fi.IsDir() {
			out = append(out, src)
		}
	}
	for _, d := range r.o.Config.SandboxReadable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.o.Layout.Root, d)
		}
		out = append(out, d)
	}
	return out
}

// gateInput fills the sandbox of the gate's commands into in, for a run in checkout: the
// jail and its environment, or the pinned environment without one.
func (r *runner) gateInput(in gate.Input, checkout string) gate.Input {
	in.Env = r.env
	if r.gateJail != nil {
		in.Jail, in.Env, in.Checkout = r.gateJail, r.gateJail.Env, checkout
	}
	return in
}
