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

// typeRewriteTests is the outcome type of a change whose judge says the tests themselves
// are wrong: the task is blocked with an issue for a person (SPEC §11.2).
const typeRewriteTests = "rewrite_tests"

// maxEvidence bounds each part of the evidence a reviewer or a judge is given.
const maxEvidence = 48 << 10

// A reviewRecord is review.json of an attempt: the pre-checks, recorded whatever the
// reviewer says, and what the reviewer and the judge answered.
type reviewRecord struct {
	Prechecks *review.Prechecks `json:"prechecks"`
	Tampered  string            `json:"test_tampered,omitempty"`
	Reviewer  *roleRun          `json:"reviewer,omitempty"`
	Judge     *roleRun          `json:"judge,omitempty"`
	Decision  string            `json:"decision"` // pass, fail, rewrite_tests, error
	Reason    string            `json:"reason"`
}

// A roleRun is one reviewer's or judge's run: its agent, how it ended, and what it said.
type roleRun struct {
	Agent   string          `json:"agent"`
	Reemit  bool            `json:"reemit,omitempty"` // it was asked once to re-emit its block
	Error   string          `json:"error,omitempty"`
	Notes   review.Notes    `json:"notes,omitempty"`
	Verdict *review.Verdict `json:"verdict,omitempty"`
}

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
	rec := &reviewRecord{Tampered: tampered}
	defer func() {
		b, _ := json.MarshalIndent(rec, "", "  ")
		a.write("review.json", append(b, '\n'))
	}()
	decide := func(outcome, typ, reason string) string {
		res.Outcome, res.Type, res.Reason = outcome, typ, reason
		rec.Reason = reason
		return fmt.Sprintf("review: %s: %s\n", rec.Decision, reason)
	}
	r.report.event(a.id, "review", fmt.Sprintf("attempt %d: its tests pass; to the %s", a.n, reviewers(r.o.Config.Review.Reviewer, r.o.Config.Review.Judge)))
	ev, err := r.evidence(ctx, a, rec)
	if err != nil {
		rec.Decision = "error"
		res.Primary = "review_error: the evidence could not be read"
		return decide("failed", "review_error", "the review could not run: "+err.Error())
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
			rec.Decision = "error"
			if failure.setup {
				return decide(outcomeSetup, "", failure.reason)
			}
			res.Primary = failure.primary
			return decide("failed", failure.typ, failure.reason)
		}
		ev = append(ev, prompts.Evidence{Title: "The reviewer's notes", Content: notesText(notes)})
	}
	name := r.o.Config.Review.Judge
	if name == "" {
		// A reviewer alone: its answers decide. Every answer must be yes.
		if no := notes.No(); len(no) > 0 {
			rec.Decision = "fail"
			var why []string
			for _, q := range no {
				why = append(why, q+": "+notes[q].Evidence)
			}
			res.Primary = "review_rejected: the reviewer answered no to " + strings.Join(no, ", ")
			return decide("failed", string(retry.ReviewRejected), "the reviewer answered no: "+strings.Join(why, "; "))
		}
		if tampered != "" {
			rec.Decision = "fail"
			res.Primary = "test_tampered: no judge to rule on the test change"
			return decide("failed", gate.TypeTampered, tampered+" (only a judge can rule a test change justified)")
		}
		rec.Decision = "pass"
		rec.Reason = "the reviewer answered yes to all four questions"
		a.ruling = "reviewer " + r.o.Config.Review.Reviewer + ": yes to all four questions"
		res.Reason += "; " + a.ruling
		return "review: pass: " + rec.Reason + "\n"
	}
	var verdict *review.Verdict
	run, _, failure := r.runRole(ctx, a, agents.RoleJudge, name, ev, func(text string) error {
		v, _, err := review.ParseVerdict(text)
		verdict = v
		return err
	})
	rec.Judge = run
	run.Verdict = verdict
	if failure != nil {
		rec.Decision = "error"
		if failure.setup {
			return decide(outcomeSetup, "", failure.reason)
		}
		res.Primary = failure.primary
		return decide("failed", failure.typ, failure.reason)
	}
	reasons := strings.Join(verdict.Reasons, "; ")
	switch {
	case !verdict.Pass() && verdict.RewriteTests:
		rec.Decision = typeRewriteTests
		return decide("blocked", typeRewriteTests, fmt.Sprintf("the judge (%s) recommends rewriting the tests: %s", name, reasons))
	case !verdict.Pass():
		rec.Decision = "fail"
		res.Primary = "review_rejected: " + retry.Normalize(verdict.Reasons[0])
		return decide("failed", string(retry.ReviewRejected), fmt.Sprintf("the judge (%s) failed the change", name))
	case tampered != "" && !verdict.TestChangeJustified:
		rec.Decision = "fail"
		res.Primary = "test_tampered: the judge did not rule the test change justified"
		return decide("failed", gate.TypeTampered, tampered+"; the judge did not rule the change justified")
	}
	rec.Decision = "pass"
	rec.Reason = "the judge passed the change: " + reasons
	a.ruling = fmt.Sprintf("judge %s: pass: %s", name, reasons)
	if tampered != "" {
		a.ruling = fmt.Sprintf("judge %s: test change justified: %s", name, reasons)
	}
	res.Reason += "; " + a.ruling
	return fmt.Sprintf("review: pass: judge %s\n", name)
}

// reviewers names who reviews: "reviewer claude and judge codex".
func reviewers(reviewer, judge string) string {
	switch {
	case reviewer == "":
		return "judge " + judge
	case judge == "":
		return "reviewer " + reviewer
	}
	return "reviewer " + reviewer + " and judge " + judge
}

// notesText shows the reviewer's answers, one question per line.
func notesText(n review.Notes) string {
	var b strings.Builder
	for _, q := range review.Questions {
		fmt.Fprintf(&b, "%s: %s: %s\n", q, n[q].Answer, n[q].Evidence)
	}
	return b.String()
}

// evidence gathers what the reviewer and the judge examine: the change, the tests it is
// judged by, their results, and the pre-checks (recorded in rec).
func (r *runner) evidence(ctx context.Context, a *attempt, rec *reviewRecord) ([]prompts.Evidence, error) {
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
		{Title: "The change (git diff)", Content: capText(patch)},
		{Title: "The tests", Content: capText(testText.String())},
		{Title: "The test results", Content: capText(results)},
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

func capText(s string) string {
	if len(s) > maxEvidence {
		return s[:maxEvidence] + fmt.Sprintf("\n[... %d bytes cut]\n", len(s)-maxEvidence)
	}
	return s
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
func (r *runner) runRole(ctx context.Context, a *attempt, role, name string, ev []prompts.Evidence, parse func(string) error) (*roleRun, string, *roleFailure) {
	run := &roleRun{Agent: name}
	fail := func(typ, reason, primary string) (*roleRun, string, *roleFailure) {
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
	before, err := treeState(ctx, dir)
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
	after, serr := treeState(ctx, dir)
	if serr != nil {
		return "", nil, serr
	}
	if changed := diffStates(before, after); changed != "" {
		return "", nil, &scopeChange{paths: changed}
	}
	if err != nil {
		return "", nil, err
	}
	final, err := adapter.FinalText([]byte(out))
	return final, agents.ResumeCommand(adapter.Name(), argv, []byte(out)), err
}

// treeState is what git sees of a checkout: every path that differs from its commit,
// ignored files included, with its size and time, so that a change to any file shows.
func treeState(ctx context.Context, dir string) (map[string]string, error) {
	cmd, err := worktree.GitCommand(ctx, dir, "status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git status in %s: %w", dir, err)
	}
	state := map[string]string{}
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) < 4 {
			continue
		}
		path := e[3:]
		mark := e[:2]
		if fi, err := os.Lstat(filepath.Join(dir, path)); err == nil {
			mark += fmt.Sprintf(" %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
		state[path] = mark
	}
	return state, nil
}

// diffStates lists the paths whose state differs, "" when none does.
func diffStates(before, after map[string]string) string {
	var changed []string
	for p, s := range after {
		if before[p] != s {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	if len(changed) > 10 {
		changed = append(changed[:10], "and "+strconv.Itoa(len(changed)-10)+" more")
	}
	return strings.Join(changed, ", ")
}

// judgeReasons returns the judge's reasons for failing the attempt before attempt, ""
// when the judge did not fail it: what the next implementer is told under retry_feedback:
// review.
func judgeReasons(runs, id string, attempt int) string {
	if attempt < 2 {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(runs, id, strconv.Itoa(attempt-1), "review.json"))
	if err != nil {
		return ""
	}
	var rec reviewRecord
	if json.Unmarshal(b, &rec) != nil || rec.Decision != "fail" {
		return ""
	}
	if rec.Judge != nil && rec.Judge.Verdict != nil {
		return strings.Join(rec.Judge.Verdict.Reasons, "\n")
	}
	return rec.Reason
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
