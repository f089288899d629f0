package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/review"
	"github.com/orchestrator/orchestrator/spotcheck"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// reviewing reports whether a's change goes to the reviewer and the judge before it lands:
// a BUILD task's, when config review names either.
func (r *runner) reviewing(a *attempt) bool {
	return r.o.Config.Review.Reviewing() && a.task.Kind == queue.KindBuild
}

// reviewChange runs the pre-checks, the reviewer and the judge on a change whose GREEN gate
// passed (tampered, when not "", is the test_tampered finding the judge must rule on), and
// turns res into their decision: it stays completed on a pass; a fail is a failed attempt
// (review_rejected) through the normal retry rules; a judge that wants the tests rewritten
// blocks the task with an issue for a person; an answer that cannot be read even after its
// re-emit is a problem of the set-up, which stops the run (outcomeSetup) with nothing
// counted against the implementer. It returns the lines for gate.log; the
// reasons are in review.json, never in gate.log, so that under retry_feedback: raw they
// reach nobody.
func (r *runner) reviewChange(ctx context.Context, a *attempt, res *result, tampered string) string {
	rec := &review.Record{Tampered: tampered}
	defer func() {
		b, _ := json.MarshalIndent(rec, "", "  ")
		a.write("review.json", append(b, '\n'))
	}()
	decide := func(d review.Decision) string {
		rec.Decision, rec.Reason = d.Decision, d.Reason
		res.Outcome, res.Type, res.Reason = d.Outcome, d.Type, d.Reason
		if d.Primary != "" {
			res.Primary = d.Primary
		}
		return fmt.Sprintf("review: %s: %s\n", d.Decision, d.Reason)
	}
	failed := func(f *roleFailure) string {
		if f.setup {
			return decide(review.Decision{Decision: review.DecisionError, Outcome: outcomeSetup, Reason: f.reason})
		}
		return decide(review.Decision{Decision: review.DecisionError, Outcome: "failed", Type: f.typ, Reason: f.reason, Primary: f.primary})
	}
	r.report.event(a.id, "review", fmt.Sprintf("attempt %d: its tests pass; to the %s", a.n, review.Reviewers(r.o.Config.Review.Reviewer, r.o.Config.Review.Judge)))
	ev, err := r.evidence(ctx, a, rec)
	if err != nil {
		return decide(review.Decision{Decision: review.DecisionError, Outcome: "failed", Type: "review_error",
			Reason: "the review could not run: " + err.Error(), Primary: "review_error: the evidence could not be read"})
	}
	var notes review.Notes
	if name := r.o.Config.Review.Reviewer; name != "" {
		run, _, failure := r.runRole(ctx, a, agents.RoleReviewer, name, ev, func(text string) error {
			n, _, err := review.ParseNotes(text)
			notes = n
			return err
		})
		rec.Reviewer = run
		run.Notes = notes
		if failure != nil {
			return failed(failure)
		}
		ev = append(ev, prompts.Evidence{Title: "The reviewer's notes", Content: notes.Text()})
	}
	var d review.Decision
	judge := r.o.Config.Review.Judge
	if judge == "" {
		// A reviewer alone: its answers decide.
		d = review.OnNotes(r.o.Config.Review.Reviewer, notes, tampered)
	} else {
		var verdict *review.Verdict
		run, _, failure := r.runRole(ctx, a, agents.RoleJudge, judge, ev, func(text string) error {
			v, _, err := review.ParseVerdict(text)
			verdict = v
			return err
		})
		rec.Judge = run
		run.Verdict = verdict
		if failure != nil {
			return failed(failure)
		}
		d = review.OnVerdict(judge, verdict, tampered)
	}
	if d.Decision != review.DecisionPass {
		return decide(d)
	}
	// A pass keeps the gate's outcome and its reason, with the ruling added.
	rec.Decision, rec.Reason = d.Decision, d.Reason
	a.ruling = d.Ruling
	res.Reason += "; " + a.ruling
	if judge != "" {
		return fmt.Sprintf("review: pass: judge %s\n", judge)
	}
	return "review: pass: " + rec.Reason + "\n"
}

// evidence gathers what the reviewer and the judge examine: the change, the tests it is
// judged by, their results, and the pre-checks (recorded in rec).
func (r *runner) evidence(ctx context.Context, a *attempt, rec *review.Record) ([]prompts.Evidence, error) {
	base := a.base
	if a.onto != "" {
		base = a.onto // the candidate was rebased onto the head before its gate
	}
	patch, err := r.repo.Patch(ctx, base, a.candidate)
	if err != nil {
		return nil, err
	}
	globs := r.o.Config.TestGlobs
	if len(globs) == 0 {
		globs = testrun.DefaultGlobs
	}
	isTest := func(p string) bool { return testrun.IsTestFile(p, globs) }
	tests := map[string]string{}
	var order []string
	addTest := func(p string) {
		if _, ok := tests[p]; ok || !isTest(p) {
			return
		}
		if b, err := r.repo.Show(ctx, a.candidate, p); err == nil {
			tests[p] = string(b)
			order = append(order, p)
		}
	}
	for _, dep := range a.depTests {
		red := r.repo.LastLanding(ctx, dep)
		if red == "" {
			continue
		}
		parent, err := r.repo.Parent(ctx, red)
		if err != nil {
			continue
		}
		changes, err := r.repo.Diff(ctx, parent, red)
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			addTest(c.Path)
		}
	}
	for _, c := range a.changes {
		addTest(c.Path)
	}
	rec.Prechecks = review.Check(review.Input{Patch: patch, IsTest: isTest, Tests: tests, Mutation: r.mutationSummary(a.id)})
	var testText strings.Builder
	for _, p := range order {
		fmt.Fprintf(&testText, "==> %s <==\n%s\n", p, tests[p])
	}
	results := ""
	if a.verdict != nil {
		results = a.verdict.Reason + "\n"
		if a.verdict.Full != nil {
			results += a.verdict.Full.Output
		}
	}
	ev := []prompts.Evidence{
		{Title: "The change (git diff)", Content: review.Cap(patch)},
		{Title: "The tests", Content: review.Cap(testText.String())},
		{Title: "The test results", Content: review.Cap(results)},
		{Title: "The pre-checks", Content: rec.Prechecks.Text()},
	}
	if rec.Tampered != "" {
		ev = append(ev, prompts.Evidence{Title: "The gate's finding to rule on", Content: rec.Tampered})
	}
	return ev, nil
}

// mutationSummary is the last mutation result of a task's QA spot check, "none" when no
// spot check with mutation ran.
func (r *runner) mutationSummary(id string) string {
	m, err := spotcheck.ReadMutation(sealKey(), r.repo.State(), id)
	switch {
	case err != nil:
		return "none that is evidence: " + err.Error()
	case m == nil:
		return "none"
	}
	return m.Summary()
}

// A roleFailure is why a reviewer's or a judge's run gave no answer. setup marks one that
// is no failure of the change under review (SPEC §7.6): an answer that could not be read
// even after its re-emit.
type roleFailure struct {
	typ, reason, primary string
	setup                bool
}

// runRole runs a reviewer or a judge on the evidence in the gate's checkout of the
// candidate, read-only, and parses its final message with parse. A format violation gets
// one re-prompt with only review.Reemit; a second is a problem of the set-up (the reviewer
// or judge program cannot give an answer the orchestrator reads), not of the change it
// was to judge: the run stops (roleFailure.setup). A change to the checkout is a
// scope_violation.
func (r *runner) runRole(ctx context.Context, a *attempt, role, name string, ev []prompts.Evidence, parse func(string) error) (*review.RoleRun, string, *roleFailure) {
	run := &review.RoleRun{Agent: name}
	fail := func(typ, reason, primary string) (*review.RoleRun, string, *roleFailure) {
		run.Error = reason
		return run, "", &roleFailure{typ: typ, reason: reason, primary: primary}
	}
	prompt, err := prompts.Render(prompts.Input{
		Role: role, TaskID: a.id, Title: a.title, Body: a.body, TestCommand: a.testCmd, Evidence: ev,
	}, filepath.Join(r.o.Layout.Dir(), "prompts"))
	if err != nil {
		return fail("review_error", fmt.Sprintf("the %s's prompt: %v", role, err), "review_error: "+role+" prompt")
	}
	a.write(role+"-prompt.md", []byte(prompt))
	var resume []string
	for round := 1; round <= 2; round++ {
		final, next, err := r.runOnce(ctx, a, role, name, prompt, resume)
		var scope *scopeChange
		switch {
		case errors.As(err, &scope):
			return fail(gate.TypeScope, fmt.Sprintf("scope_violation: the %s (%s) changed files: %s; nothing landed", role, name, scope.paths),
				"scope_violation: the "+role+" changed files")
		case err != nil:
			return fail("review_error", fmt.Sprintf("the %s (%s) did not answer: %v", role, name, err), "review_error: the "+role+" did not answer")
		}
		err = parse(final)
		if err == nil {
			return run, final, nil
		}
		if round == 2 {
			// The implementer's work passed its gate; the answer on it cannot be read. Failing
			// the implementer for it would pay it again for the judge's fault.
			run, _, f := fail(string(retry.FormatViolation), fmt.Sprintf("the %s (%s) gave no answer that can be read, even after its re-emit: %v", role, name, err), "")
			f.setup = true
			return run, "", f
		}
		if !errors.Is(err, agents.ErrFormat) {
			return fail(string(retry.FormatViolation), fmt.Sprintf("format_violation: the %s (%s): %v", role, name, err),
				"format_violation: the "+role+"'s result block")
		}
		// Mode D: one narrow retry, outside every other budget: in the same session where
		// the program can resume one, so that the agent has its last message to re-emit.
		run.Reemit = true
		prompt, resume = review.Reemit, next
		r.report.event(a.id, "review", fmt.Sprintf("attempt %d: the %s's result block is not valid (%v); asking it once to re-emit it", a.n, role, err))
	}
	panic("unreachable")
}

// A scopeChange is a reviewer's or a judge's change to the checkout it reads.
type scopeChange struct{ paths string }

func (e *scopeChange) Error() string { return "changed " + e.paths }

// runOnce starts the agent with prompt (with argv resume instead of its command when
// set), waits for it (the task timeout bounds it), and returns its final message and the
// command that resumes its session (nil when its program cannot). Its marker folder is its
// own, so that nothing it writes there is taken for the task's marker.
func (r *runner) runOnce(ctx context.Context, a *attempt, role, name, prompt string, resume []string) (string, []string, error) {
	dir, err := r.gateDir(ctx, a.candidate)
	if stopsRun(err) {
		a.fatal = err
	}
	if err != nil {
		return "", nil, err
	}
	before, err := worktree.StateOf(ctx, dir)
	if err != nil {
		return "", nil, err
	}
	argv, adapter, err := r.command(name, a.complexity)
	if err != nil {
		return "", nil, err
	}
	if resume != nil {
		argv = resume
	}
	runDir := filepath.Join(a.dir, role)
	markerDir := filepath.Join(runDir, "markers")
	if err := os.MkdirAll(markerDir, 0o755); err != nil {
		return "", nil, err
	}
	// The same jail as the attempt's agent, with the checkout read-only: it writes its own
	// marker folder, its program's private state and config sandbox_writable. Its
	// sessions stay in its run's folder, for the prompt that resumes one.
	sb := r.sandbox(a, name, argv, dir, runDir, markerDir)
	if sb != nil {
		sb.ReadOnlyDir = true
		if sb.Sessions != "" {
			sb.Sessions = filepath.Join(runDir, "sessions")
		}
	}
	env := append(os.Environ(),
		"ORCHESTRATOR_TASK_ID="+a.id,
		"ORCHESTRATOR_ROLE="+role,
		"ORCHESTRATOR_MARKER_DIR="+markerDir,
		"ORCHESTRATOR_ATTEMPT_DIR="+runDir,
		"ORCHESTRATOR_ROOT="+dir,
	)
	p, err := agents.Start(agents.StartOptions{
		Command: argv, Dir: dir, Prompt: prompt, Env: env, LogPath: filepath.Join(a.mirror, role+".log"), Sandbox: sb,
	})
	if err != nil {
		return "", nil, fmt.Errorf("start %s: %w", strings.Join(argv, " "), err)
	}
	timeout := time.NewTimer(r.o.Config.TaskTimeout.Duration)
	defer timeout.Stop()
	select {
	case <-p.Done():
	case <-timeout.C:
		err = fmt.Errorf("no answer within the task timeout (%v)", r.o.Config.TaskTimeout.Duration)
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.Stop(r.o.Config.StopGrace.Duration)
	agents.StopAdopted(p.PID(), p.StartTime(), "ORCHESTRATOR_ATTEMPT_DIR", runDir, r.o.Config.StopGrace.Duration)
	out := p.Stdout()
	r.addUsage(a, role, name, argModel(argv), []byte(out))
	after, serr := worktree.StateOf(ctx, dir)
	if serr != nil {
		return "", nil, serr
	}
	if changed := before.Changed(after); changed != "" {
		return "", nil, &scopeChange{paths: changed}
	}
	if err != nil {
		return "", nil, err
	}
	final, err := adapter.FinalText([]byte(out))
	return final, agents.ResumeCommand(adapter.Name(), argv, []byte(out)), err
}

// reviewFeedback returns why the review failed the attempt before attempt, "" when it did
// not: what the next implementer is told under retry_feedback: review.
func reviewFeedback(runs, id string, attempt int) string {
	if attempt < 2 {
		return ""
	}
	return review.FailReasons(filepath.Join(runs, id, strconv.Itoa(attempt-1), "review.json"))
}

// review puts a BUILD task's change to the reviewer and the judge: one whose GREEN gate
// passed, or one the gate refused only for changing tests fixed at RED, which may land
// when the judge rules the change justified (SPEC §7.3). It returns the lines for gate.log.
func (r *runner) review(ctx context.Context, a *attempt, res *result) string {
	switch {
	case res.Outcome == "completed":
		return r.reviewChange(ctx, a, res, "")
	case res.Type == gate.TypeTampered && res.Claim == "done" && r.o.Config.Review.Judge != "" && a.candidate != "":
		finding := strings.TrimPrefix(res.Reason, "claim rejected: ")
		a.reviewTests = true
		v, err := r.judge(ctx, a, a.candidate)
		if why := setupReason(err); why != "" {
			a.reviewTests = false
			res.Outcome, res.Type, res.Reason = outcomeSetup, "", why
			return "review: the change's tests could not run for the judge: " + why + "\n"
		}
		if err != nil || !v.Pass {
			a.reviewTests = false
			return "review: with its test change, the change does not pass its gate either; not put to the judge\n"
		}
		a.verdict, a.gateOutput = v, v.Output
		res.Gate = &gateResult{Pass: true, Runs: v.Runs}
		res.Outcome, res.Type, res.FailingTest, res.File = "completed", "", "", ""
		res.Reason = "claim verified: " + v.Reason
		return v.Log.String() + r.reviewChange(ctx, a, res, finding)
	}
	return ""
}
