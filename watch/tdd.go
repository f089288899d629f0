package watch

// The TDD cycle of one requirement (SPEC §9, `orchestrator tdd FR-ID`): its tasks run
// through this loop like any other, and these hooks give them their roles, their prompts,
// their gates and their budgets.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/tdd"
)

// Roles of a cycle's agents.
const (
	roleTestWriter  = "test-writer"
	roleImplementer = "implementer"
	roleRefactorer  = "refactorer"
)

// ReemitPrompt is the whole prompt of the one retry a format violation gets in a TDD cycle
// (failure mode D, SPEC §9).
const ReemitPrompt = "re-emit your last message with one valid tdd-result block"

// Budgets of a cycle's task (SPEC §9): attempts per role per AC that end in a semantic
// failure (modes A, B, C, E), and format violations (mode D), the last of which halts.
const (
	cycleSemanticBudget = 2
	cycleFormatBudget   = 2
)

// A cycle is where a task stands in its requirement's TDD cycle.
type cycle struct {
	fr   string
	role string
	ac   string   // the implementer's acceptance criterion
	red  string   // the test writer's task
	acs  []string // every AC of the requirement, in order (the RED task's Test IDs)
	// builders are the implementers' tasks, by AC, and texts the ACs' texts as their
	// tasks hold them.
	builders map[string]string
	texts    map[string]string
}

// cycleOf returns task t's place in a TDD cycle, or nil for a task of no cycle: one
// without an FR field.
func cycleOf(d *queue.Doc, t queue.Task) *cycle {
	if d == nil || t.Record == nil {
		return nil
	}
	fr := strings.TrimSpace(d.Get(t.Record, tdd.FieldFR))
	if queue.IsEmpty(fr) {
		return nil
	}
	c := &cycle{fr: fr, red: tdd.RedID(fr), builders: map[string]string{}, texts: map[string]string{}}
	switch {
	case t.Kind == queue.KindTest:
		c.role = roleTestWriter
	case t.Category == tdd.CategoryRefactor:
		c.role = roleRefactorer
	case !queue.IsEmpty(d.Get(t.Record, tdd.FieldAC)):
		c.role, c.ac = roleImplementer, strings.TrimSpace(d.Get(t.Record, tdd.FieldAC))
	default:
		return nil
	}
	if rec, ok := d.Record(c.red); ok {
		c.acs = d.Task(rec).TestIDs
	}
	for _, o := range d.Tasks() {
		if strings.TrimSpace(d.Get(o.Record, tdd.FieldFR)) != fr {
			continue
		}
		if ac := strings.TrimSpace(d.Get(o.Record, tdd.FieldAC)); !queue.IsEmpty(ac) {
			c.builders[ac] = o.ID
			c.texts[ac] = acDescription(proseBody(d, o.Record), ac)
		}
	}
	return c
}

// acDescription returns what an AC says, from its task's prose: the text after its ID.
func acDescription(body, ac string) string {
	_, after, ok := strings.Cut(body, ac)
	if !ok {
		after = body
	}
	return strings.TrimSpace(strings.TrimLeft(after, "*_:`—– -\t"))
}

// index returns the position of ac in the cycle (-1 if it is not one of its ACs).
func (c *cycle) index(ac string) int { return slices.Index(c.acs, ac) }

// setCycle gives an attempt its place in a cycle, from the queue it was started from.
func (a *attempt) setCycle(tasks *queue.Doc) {
	a.cycle = cycleOf(tasks, a.task)
}

// role returns the role an attempt's agent plays: its cycle's, else its kind's.
func (a *attempt) role() string {
	if a.cycle != nil {
		return a.cycle.role
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
	c := cycleOf(tasks, t)
	if c == nil {
		return "", false, nil
	}
	if reemitDue(at.runs, t.ID, attempt) {
		return ReemitPrompt, true, nil
	}
	rec := t.Record
	in := prompts.Input{
		Role:           c.role,
		TaskID:         t.ID,
		Title:          tasks.TitleText(rec),
		Body:           strings.TrimSpace(proseBody(tasks, rec)),
		Root:           at.root,
		TestCommand:    testCmd,
		Attempt:        attempt,
		LastGateOutput: lastGateOutput(at.runs, t.ID, attempt),
	}
	for _, f := range tasks.Fields(rec) {
		in.Fields = append(in.Fields, prompts.Field{Name: tasks.Name(f), Value: tasks.Value(f)})
	}
	switch c.role {
	case roleTestWriter:
		return "", false, nil // the test writer's prompt is the TEST task's, with every AC
	case roleImplementer:
		m, err := gate.FindRed(sealKey(), at.runs, c.red)
		if err != nil {
			return "", true, err
		}
		others := c.otherTexts()
		if m != nil {
			in.Allowlist = m.TestFiles
			own := m.Tests[c.ac]
			names := bareNames(own)
			for _, f := range m.TestFiles {
				b, err := os.ReadFile(filepath.Join(at.root, filepath.FromSlash(f)))
				if err != nil {
					continue
				}
				if src := tdd.TestSource(f, string(b), names); src != "" {
					in.Excerpts = append(in.Excerpts, prompts.Excerpt{Path: f, Name: "the tests of " + c.ac, Content: scrub(src, others, c.otherIDs())})
				}
			}
			in.RedOutput = scrub(redOutput(m, own), others, c.otherIDs())
			ids := gate.CycleTests(at.root, testCmd, m)[c.ac]
			if cmd := gate.ByName(at.root, testCmd, ids); cmd != "" {
				in.TestCommand = cmd
			}
		}
		in.LastGateOutput = scrub(in.LastGateOutput, others, nil)
		in.Body = redactIDs(scrub(in.Body, others, nil), c.otherIDs())
	case roleRefactorer:
		files := implementationFiles(at, c)
		in.Allowlist, in.Include = files, files
	}
	text, err := prompts.Render(in, filepath.Join(l.Dir(), "prompts"))
	return text, true, err
}

// otherTexts returns the texts of the ACs other than the cycle's own.
func (c *cycle) otherTexts() []string {
	var out []string
	for ac, text := range c.texts {
		if ac != c.ac && text != "" {
			out = append(out, text)
		}
	}
	return out
}

// otherIDs returns the IDs of the ACs other than the cycle's own.
func (c *cycle) otherIDs() []string {
	var out []string
	for _, ac := range c.acs {
		if ac != c.ac {
			out = append(out, ac)
		}
	}
	return out
}

// redOutput returns the RED output of the tests ids: their own outputs when the runner
// reported them, else (the build failed before any test ran) the run's output.
func redOutput(m *gate.Manifest, ids []string) string {
	var parts []string
	for _, id := range ids {
		if out := m.Outputs[id]; out != "" {
			parts = append(parts, "--- "+id+"\n"+strings.TrimRight(out, "\n"))
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n") + "\n"
	}
	return m.RunnerOutput
}

// scrub drops the lines of s that hold another AC's ID or its words: what an implementer
// is shown of one AC holds nothing of the others (SPEC §10.2).
func scrub(s string, texts, ids []string) string {
	if s == "" {
		return s
	}
	var tokens []string
	for _, id := range ids {
		tokens = append(tokens, strings.ToLower(id), tdd.TestToken(id))
	}
	norm := func(x string) string { return strings.Join(strings.Fields(strings.ToLower(x)), " ") }
	var others []string
	for _, t := range texts {
		if n := norm(t); len(n) >= 12 {
			others = append(others, n)
		}
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, line := range lines {
		low := strings.ToLower(line)
		drop := false
		for _, tok := range tokens {
			if containsWord(low, tok) {
				drop = true
			}
		}
		n := norm(strings.Trim(line, " \t#/*\"'`-"))
		for _, o := range others {
			if strings.Contains(n, o) || len(n) >= 20 && strings.Contains(o, n) {
				drop = true
			}
		}
		if !drop {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// redactIDs writes "[another AC]" for each of the IDs in s: an AC's text that refers to
// another keeps its own words and loses the reference.
func redactIDs(s string, ids []string) string {
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "[another AC]")
	}
	return s
}

// containsWord reports whether tok occurs in s not inside a longer word or number.
func containsWord(s, tok string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(tok)
		if (j == 0 || !alnum(s[j-1])) && (end == len(s) || !alnum(s[end])) {
			return true
		}
		i = j + 1
	}
}

func alnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// bareNames returns the test names of test IDs: TestX of pkg.TestX, test_x of
// file::test_x, the title of file > title.
func bareNames(ids []string) []string {
	var out []string
	for _, id := range ids {
		name := id
		switch {
		case strings.Contains(name, "::"):
			name = name[strings.LastIndex(name, "::")+2:]
		case strings.Contains(name, " > "):
			name = name[strings.LastIndex(name, " > ")+3:]
		default:
			if i := strings.LastIndex(name, "."); i >= 0 && strings.HasPrefix(name[i+1:], "Test") {
				name = name[i+1:]
			}
		}
		if i := strings.IndexAny(name, "[/"); i > 0 {
			name = name[:i]
		}
		out = append(out, name)
	}
	return out
}

// implementationFiles returns the implementation files the cycle's implementers changed,
// from the GREEN hand-offs of their verified attempts, that exist in the tree.
func implementationFiles(at place, c *cycle) []string {
	var out []string
	for _, ac := range c.acs {
		id := c.builders[ac]
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
	if c.role == roleRefactorer {
		return gate.Refactor(ctx, in)
	}
	var m *gate.Manifest
	for _, d := range in.Deps {
		if d.Task == c.red {
			m = d
		}
	}
	if m == nil {
		return gate.Refuse(gate.TypeTampered, "test_tampered: %s has no RED evidence; the tests of %s cannot be checked", c.red, c.ac), nil
	}
	command := in.FullCommand
	if command == "" {
		command = m.Command
	}
	tests := gate.CycleTests(in.Root, command, m)
	t := gate.ACTests{AC: c.ac, Own: tests[c.ac], Later: map[string][]string{}}
	at := c.index(c.ac)
	for i, ac := range c.acs {
		switch {
		case i < at:
			t.Earlier = append(t.Earlier, tests[ac]...)
		case i > at:
			t.Later[ac] = tests[ac]
			t.Order = append(t.Order, ac)
		}
	}
	t.Command = gate.ByName(in.Root, command, append(slices.Clone(t.Earlier), t.Own...))
	return gate.GreenAC(ctx, in, t)
}

// modeOf returns the failure mode of a failed attempt of a cycle (SPEC §9): D for a
// format violation, E for running out of turns or time, else A (test writer), B
// (implementer) or C (refactorer).
func modeOf(role string, res result) (string, string) {
	switch {
	case res.Type == "format_violation":
		return "D", "format violation"
	case res.Type == "timeout" || strings.Contains(res.Reason, "failure mode E"):
		return "E", "out of turns"
	case role == roleTestWriter:
		return "A", "false RED"
	case role == roleRefactorer:
		return "C", "refactor broke GREEN"
	}
	return "B", "no GREEN"
}

var acInReason = lazyre.New(`\bAC-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\.[0-9]+\b`)

// cycleBudget applies a cycle's budgets to a failed attempt (SPEC §9): a format violation
// gets one re-prompt and halts at the second; a semantic failure gets two attempts per role
// per AC, then halts, except the refactorer's, which is dropped (the task fails, the cycle
// keeps its GREEN state). It fills f's mode, role, AC and evidence for the halt report.
func (r *runner) cycleBudget(a *attempt, res result, f *retry.Failure) {
	c := a.cycle
	if c == nil {
		return
	}
	mode, what := modeOf(c.role, res)
	f.Mode, f.Role, f.AC = mode, c.role, c.ac
	if f.AC == "" {
		if m := acInReason().FindString(res.Reason); m != "" && c.role == roleTestWriter {
			f.AC = m
		} else {
			f.AC = strings.Join(c.acs, ", ")
		}
	}
	f.LastBlock = resultBlock(a.final)
	if mode == "D" {
		f.Output = "the agent's last message (it holds no valid tdd-result block):\n" + orNone(a.final)
		if n := r.countBudget(a, func(p result) bool { return p.Type == "format_violation" }); n >= cycleFormatBudget {
			f.Halt = fmt.Sprintf("failure mode D (%s), role %s, %s: %d format violations, the second after the re-emit prompt", what, c.role, f.AC, n)
		}
		return
	}
	n := r.countBudget(a, func(p result) bool {
		return (p.Outcome == "failed") && p.Type != "format_violation"
	})
	if n < cycleSemanticBudget {
		return
	}
	reason := fmt.Sprintf("failure mode %s (%s), role %s, %s: %d failed attempts, the budget of %d", mode, what, c.role, f.AC, n, cycleSemanticBudget)
	if c.role == roleRefactorer {
		f.Stop = reason + "; the refactor is dropped and the cycle keeps its GREEN state"
		return
	}
	f.Halt = reason
}

// resultBlock returns the tdd-result block of an agent's final message as it wrote it
// (the last one, when there are several), or "".
func resultBlock(final string) string {
	i := strings.LastIndex(final, "```tdd-result")
	if i < 0 {
		return ""
	}
	rest := final[i:]
	if j := strings.Index(rest[3:], "\n```"); j >= 0 {
		return rest[:3+j+4]
	}
	return rest
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
