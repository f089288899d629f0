package watch

// The TDD cycle of one requirement (SPEC §9, `orchestrator tdd FR-ID`): its tasks run
// through this loop like any other, and these hooks give them their roles, their prompts,
// their gates and their budgets.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/tdd"
)

// setCycle gives an attempt its place in a cycle, from the queue it was started from.
func (a *attempt) setCycle(tasks *queue.Doc) {
	a.cycle = tdd.PlaceOf(tasks, a.task)
}

// role returns the role an attempt's agent plays: its cycle's, else its kind's.
func (a *attempt) role() string {
	if a.cycle != nil {
		return a.cycle.Role
	}
	return prompts.RoleFor(a.task.Kind.String())
}

// cyclePrompt renders the prompt of a task of a cycle, and reports false for any other
// task. The retry after a format violation gets ReemitPrompt and nothing else; an
// implementer gets its own AC's text, its own tests (cut out of the test files the RED
// hand-off lists) with their output at RED, and the command that runs them by name; never
// the other ACs' texts or tests, nor the test writer's reasoning. The refactorer gets
// every implementation file the implementers changed.
func cyclePrompt(l queue.Layout, at place, tasks *queue.Doc, t queue.Task, testCmd string, attempt int) (string, bool, error) {
	c := tdd.PlaceOf(tasks, t)
	if c == nil {
		return "", false, nil
	}
	if reemitDue(at.runs, t.ID, attempt) {
		return tdd.ReemitPrompt, true, nil
	}
	rec := t.Record
	in := prompts.Input{
		Role:           c.Role,
		TaskID:         t.ID,
		Title:          tasks.TitleText(rec),
		Body:           strings.TrimSpace(tasks.ProseText(rec)),
		Root:           at.root,
		TestCommand:    testCmd,
		Attempt:        attempt,
		LastGateOutput: lastGateOutput(at.runs, t.ID, attempt),
	}
	for _, f := range tasks.Fields(rec) {
		in.Fields = append(in.Fields, prompts.Field{Name: tasks.Name(f), Value: tasks.Value(f)})
	}
	switch c.Role {
	case tdd.RoleTestWriter:
		return "", false, nil // the test writer's prompt is the TEST task's, with every AC
	case tdd.RoleImplementer:
		m, err := gate.FindRed(sealKey(), at.runs, c.Red)
		if err != nil {
			return "", true, err
		}
		others, otherIDs := c.OtherTexts(), c.OtherIDs()
		if m != nil {
			in.Allowlist = m.TestFiles
			own := m.Tests[c.AC]
			names := tdd.BareNames(own)
			for _, f := range m.TestFiles {
				b, err := os.ReadFile(filepath.Join(at.root, filepath.FromSlash(f)))
				if err != nil {
					continue
				}
				if src := tdd.TestSource(f, string(b), names); src != "" {
					in.Excerpts = append(in.Excerpts, prompts.Excerpt{Path: f, Name: "the tests of " + c.AC, Content: tdd.Scrub(src, others, otherIDs)})
				}
			}
			in.RedOutput = tdd.Scrub(tdd.RedOutput(m, own), others, otherIDs)
			ids := gate.CycleTests(at.root, testCmd, m)[c.AC]
			if cmd := gate.ByName(at.root, testCmd, ids); cmd != "" {
				in.TestCommand = cmd
			}
		}
		in.LastGateOutput = tdd.Scrub(in.LastGateOutput, others, nil)
		in.Body = tdd.RedactIDs(tdd.Scrub(in.Body, others, nil), otherIDs)
	case tdd.RoleRefactorer:
		files := implementationFiles(at, c)
		in.Allowlist, in.Include = files, files
	}
	text, err := prompts.Render(in, filepath.Join(l.Dir(), "prompts"))
	return text, true, err
}

// implementationFiles returns the implementation files the cycle's implementers changed,
// from the GREEN hand-offs of their verified attempts, that exist in the tree.
func implementationFiles(at place, c *tdd.Place) []string {
	var out []string
	for _, ac := range c.ACs {
		id := c.Builders[ac]
		if id == "" {
			continue
		}
		for n := lastAttempt(at.runs, id); n >= 1; n-- {
			m, err := gate.OpenManifest(sealKey(), filepath.Join(at.runs, id, strconv.Itoa(n), "handoff-green.json"), id, n)
			if err != nil {
				continue
			}
			for _, f := range m.ImplementationFiles {
				if slices.Contains(out, f) {
					continue
				}
				if fi, err := os.Stat(filepath.Join(at.root, filepath.FromSlash(f))); err == nil && fi.Mode().IsRegular() {
					out = append(out, f)
				}
			}
			break
		}
	}
	slices.Sort(out)
	return out
}

// reemitDue reports whether attempt is the one retry of a format violation: the attempt
// before it broke the format, and no attempt of the task had before.
func reemitDue(runs, id string, attempt int) bool {
	if attempt < 2 {
		return false
	}
	prev, ok := readResult(filepath.Join(runs, id, strconv.Itoa(attempt-1)))
	if !ok || prev.Type != "format_violation" {
		return false
	}
	n := 0
	for i := budgetStart(runs, id, attempt-1); i < attempt; i++ {
		if res, ok := readResult(filepath.Join(runs, id, strconv.Itoa(i))); ok && res.Type == "format_violation" {
			n++
		}
	}
	return n == 1
}

// seedReemit gives the re-emit attempt of a format violation the work of the attempt it
// re-emits: its worktree holds that attempt's candidate, on the same base, so that the
// re-emitted message is judged against the work it describes (on a worker, the job's seed
// is that candidate). When the integration head moved meanwhile, it starts from the head
// like any attempt.
func (r *runner) seedReemit(ctx context.Context, a *attempt) error {
	if a.cycle == nil || !reemitDue(r.runs, a.id, a.n) {
		return nil
	}
	prev, ok := readResult(filepath.Join(r.runs, a.id, strconv.Itoa(a.n-1)))
	if !ok || prev.Candidate == "" || prev.Base != a.base || prev.Candidate == prev.Base {
		return nil
	}
	if parent, err := r.repo.Parent(ctx, prev.Candidate); err != nil || parent != a.base {
		// Moved onto a later head before its gate (ontoHead), which a person has since
		// reset: that head's work is not this base's.
		return nil
	}
	if r.remote != nil {
		// Its agent runs on a worker, whose checkout starts from the seed (workers.Job).
		a.seed = prev.Candidate
		return nil
	}
	if err := a.slot.Reset(ctx, prev.Candidate); err != nil {
		return err
	}
	return r.linkShared(a.slot.Dir)
}

// errNoBlock is the format violation of a cycle's agent that ends without a tdd-result
// block: in a cycle the block is the only return channel (SPEC §9).
var errNoBlock = &agents.FormatError{Rule: agents.RuleNoBlock, Msg: "no tdd-result block: in a TDD cycle the tdd-result block is the only return channel (a marker alone is no claim)"}

// cycleClaim turns a claim without a result block into a format violation, for a task of
// a cycle. Out of turns (mode E), a timeout and a lost agent stay what they are.
func cycleClaim(a *attempt, claim string, block *agents.Result, claimErr error, agentErr *agents.AgentError) error {
	if a.cycle == nil || claimErr != nil || block != nil {
		return claimErr
	}
	if a.stopReason == reasonTimeout || agentErr != nil && agentErr.Mode == agents.ModeOutOfTurns {
		return nil
	}
	if claim == "" && a.proc == nil && !a.adopted {
		return nil // lost, and left nothing: agent_lost
	}
	return errNoBlock
}

// judgeCycle runs the gate of a cycle's implementer (GREEN of its AC) or refactorer
// (REFACTOR); in holds GREEN's input.
func (r *runner) judgeCycle(ctx context.Context, a *attempt, in gate.Input) (*gate.Verdict, error) {
	c := a.cycle
	if c.Role == tdd.RoleRefactorer {
		return gate.Refactor(ctx, in)
	}
	var m *gate.Manifest
	for _, d := range in.Deps {
		if d.Task == c.Red {
			m = d
		}
	}
	if m == nil {
		return gate.Refuse(gate.TypeTampered, "test_tampered: %s has no RED evidence; the tests of %s cannot be checked", c.Red, c.AC), nil
	}
	command := in.FullCommand
	if command == "" {
		command = m.Command
	}
	t := c.ACTests(gate.CycleTests(in.Root, command, m))
	t.Command = gate.ByName(in.Root, command, append(slices.Clone(t.Earlier), t.Own...))
	return gate.GreenAC(ctx, in, t)
}

// cycleBudget applies a cycle's budgets to a failed attempt (SPEC §9): a format violation
// gets one re-prompt and halts at the second; a semantic failure gets two attempts per role
// per AC, then halts, except the refactorer's, which is dropped (the task fails, the cycle
// keeps its GREEN state). It fills f's mode, role, AC and evidence for the halt report.
func (r *runner) cycleBudget(a *attempt, res result, f *retry.Failure) {
	c := a.cycle
	if c == nil {
		return
	}
	mode, what := tdd.Mode(c.Role, res.Type, res.Reason)
	f.Mode, f.Role, f.AC = mode, c.Role, c.FailedAC(res.Reason)
	f.LastBlock = tdd.ResultBlock(a.final)
	counts := func(p result) bool { return p.Outcome == "failed" && p.Type != "format_violation" }
	if mode == "D" {
		f.Output = "the agent's last message (it holds no valid tdd-result block):\n" + orNone(a.final)
		counts = func(p result) bool { return p.Type == "format_violation" }
	}
	halt, stop := c.Spent(mode, what, f.AC, r.countBudget(a, counts))
	if halt != "" {
		f.Halt = halt
	}
	if stop != "" {
		f.Stop = stop
	}
}

// budgetStart returns the first attempt, up to last, that counts against a cycle task's
// budget: the one after the last attempt that spent it (a halt a person has since lifted).
func budgetStart(runs, id string, last int) int {
	for i := last; i >= 1; i-- {
		if res, ok := readResult(filepath.Join(runs, id, strconv.Itoa(i))); ok && res.BudgetSpent {
			return i + 1
		}
	}
	return 1
}

// countBudget counts the task's attempts of its current budget (this one included) that
// match.
func (r *runner) countBudget(a *attempt, match func(result) bool) int {
	n := 0
	for i := budgetStart(r.runs, a.id, a.n-1); i <= a.n; i++ {
		if res, ok := readResult(filepath.Join(r.runs, a.id, strconv.Itoa(i))); ok && match(res) && r.inHistory(res.Base, a.base) {
			n++
		}
	}
	return n
}

// spendBudget records, in the attempt's record, that it spent its cycle task's budget:
// the task halted, or was dropped, on it.
func (r *runner) spendBudget(a *attempt, res result, d retry.Decision, f retry.Failure) {
	if a.cycle == nil || !d.Halt && f.Stop == "" {
		return
	}
	res.BudgetSpent = true
	a.record(res)
}
