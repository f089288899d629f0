package spotcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/retry"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// Options say which task to spot-check, and how.
type Options struct {
	Layout queue.Layout
	Config *config.Config
	Task   string
	// Mutate adds the mutation of the covered BUILD tasks' landed changes.
	Mutate bool
	// Commit is what is checked; "" is the integration head.
	Commit string
	// Env, when set, is the environment the tests run in (the gate's pinned one).
	Env []string
	// Jail, when set, is the sandbox the tests and the mutants run in (SPEC §7.6); Env
	// is then the jail's.
	Jail *gate.Jail
	// NoIssues leaves the issue queue alone (the watch loop records its own).
	NoIssues bool
}

// A Report is a spot check's outcome.
type Report struct {
	Task      string            `json:"task"`
	Commit    string            `json:"commit"`
	Decision  string            `json:"decision"`
	Command   string            `json:"command"`
	Selection []Category        `json:"categories"`
	Mutations []*MutationResult `json:"mutations,omitempty"`
	Mismatch  []string          `json:"mismatch,omitempty"` // tasks whose implementer claimed all passed
	Issues    []string          `json:"issues,omitempty"`
	Path      string            `json:"report"`
	Output    string            `json:"-"` // the selected tests' run

	// NotMutated are the covered BUILD tasks with no landed change to mutate, each with
	// why: the report says so rather than pass over them.
	NotMutated []NotMutated `json:"not_mutated,omitempty"`
}

// A NotMutated task is a covered BUILD task whose tests --mutate could not put to the test.
type NotMutated struct {
	Task   string `json:"task"`
	Reason string `json:"reason"`
}

// ErrNoPlan is returned when the project has no test plan to sample.
var ErrNoPlan = errors.New("no test plan")

// Run spot-checks a task (SPEC §11.1): it samples the plan, runs the selected tests by
// name in a scratch checkout of the integration head, decides by the matrix, mutates the
// covered BUILD tasks' landed changes when asked, writes the report and, on FAIL, the
// issues. Nothing of the person's tree or of the integration branch changes.
func Run(ctx context.Context, o Options) (*Report, error) {
	l, cfg := o.Layout, o.Config
	tasks, err := queue.Load(l.Tasks())
	if err != nil {
		return nil, err
	}
	rec, ok := tasks.Record(o.Task)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %s", tasks.Path, queue.ErrNotFound, o.Task)
	}
	task := tasks.Task(rec)
	plan, err := queue.LoadPlan(l.Plan())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", l.Plan(), ErrNoPlan)
		}
		return nil, err
	}
	repo, err := worktree.Open(ctx, l.Root)
	if err != nil {
		return nil, err
	}
	key, err := repo.Key()
	if err != nil {
		return nil, err
	}
	commit := o.Commit
	if commit == "" {
		if commit, err = repo.Head(ctx); err != nil {
			return nil, err
		}
	}
	command := strings.TrimSpace(tasks.Get(rec, "Test Command"))
	if queue.IsEmpty(command) {
		command = cfg.Commands.Test
		if command == "" {
			command = tasks.ProjectCommand("Test")
		}
	}
	if command == "" {
		return nil, fmt.Errorf("%s: no test command: neither the task, the config nor the Project Commands table gives one", o.Task)
	}
	dir, done, err := Scratch(ctx, l.Root, commit)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := testrun.RemoveBytecode(dir); err != nil {
		return nil, err
	}
	opts := gate.RunOptions(gate.Input{Root: dir, Checkout: dir, Env: o.Env, Jail: o.Jail}, command)
	tests, err := Discover(dir, command, cfg.TestGlobs)
	if err != nil {
		return nil, err
	}
	sel := Select(o.Task, plan, task.TestIDs, tests)
	res, err := sel.Run(ctx, dir, command, cfg.TaskTimeout.Duration, opts...)
	if err != nil {
		return nil, err
	}
	rep := &Report{Task: o.Task, Commit: commit, Decision: sel.Decide(), Command: command, Selection: sel.Categories}
	if res != nil {
		rep.Command, rep.Output = res.Command, res.Output
	}
	// The implementers that claimed their work done, while the spot check finds failures.
	if rep.Decision == Fail || rep.Decision == Critical {
		for _, dep := range task.Deps {
			if r, ok := tasks.Record(dep); ok && tasks.Task(r).Kind == queue.KindBuild && claimedDone(key, repo.State(), dep) {
				rep.Mismatch = append(rep.Mismatch, dep)
			}
		}
	}
	if o.Mutate {
		for _, dep := range task.Deps {
			r, ok := tasks.Record(dep)
			if !ok || tasks.Task(r).Kind != queue.KindBuild {
				continue
			}
			m, err := mutateTask(ctx, repo, tasks, tasks.Task(r), plan, command, cfg, opts)
			if err != nil {
				return nil, fmt.Errorf("mutation of %s: %w", dep, err)
			}
			if m == nil {
				why := "it has no landing commit on the integration branch (not landed yet), so no landed change to mutate"
				if st := tasks.Task(r).Status; st == queue.StatusCompleted {
					why = "it is completed but has no landing commit on the integration branch (completed by hand, or its landing is no longer in the history), so no landed change to mutate"
				}
				rep.NotMutated = append(rep.NotMutated, NotMutated{Task: dep, Reason: why})
				continue
			}
			rep.Mutations = append(rep.Mutations, m)
			if err := writeRecord(key, seal.KindMutation, MutationPath(repo.State(), dep), m); err != nil {
				return nil, err
			}
			rep.Decision = worse(rep.Decision, m.Decision)
		}
	}
	if err := rep.write(l, repo.State(), key); err != nil {
		return nil, err
	}
	if !o.NoIssues {
		if err := rep.fileIssues(ctx, l, task.Category); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// claimedDone reports whether the last attempt of task that completed was claimed done by
// its agent, from the attempt records the orchestrator keeps: a record whose seal fails
// (key) is not evidence, and is passed over.
func claimedDone(key *seal.Key, state, task string) bool {
	entries, _ := os.ReadDir(filepath.Join(state, "runs", task))
	best := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > best {
			best = n
		}
	}
	for n := best; n > 0; n-- {
		b, err := key.ReadJSON(seal.KindResult, filepath.Join(state, "runs", task, strconv.Itoa(n), "result.json"))
		if err != nil {
			continue
		}
		var r struct {
			Outcome string `json:"outcome"`
			Claim   string `json:"claim"`
		}
		if json.Unmarshal(b, &r) == nil && r.Outcome == "completed" {
			return r.Claim == "done"
		}
	}
	return false
}

// mutateTask mutates the non-test lines of a BUILD task's landed commit, in a scratch
// checkout of that commit, against the tests named after its and its TEST dependencies'
// Test IDs (all of the project's tests when none is named). nil when it never landed.
func mutateTask(ctx context.Context, repo *worktree.Repo, tasks *queue.Doc, t queue.Task, plan *queue.Plan, command string, cfg *config.Config, opts []testrun.Option) (*MutationResult, error) {
	commit := repo.LastLanding(ctx, t.ID)
	if commit == "" {
		return nil, nil
	}
	parent, err := repo.Parent(ctx, commit)
	if err != nil {
		return nil, err
	}
	diff, err := worktree.GitCommand(ctx, repo.Root, "diff", "-U0", "--no-ext-diff", "--no-textconv", "--no-color", parent, commit)
	if err != nil {
		return nil, err
	}
	patch, err := diff.Output()
	if err != nil {
		return nil, fmt.Errorf("git diff: %w", err)
	}
	globs := cfg.TestGlobs
	if len(globs) == 0 {
		globs = testrun.DefaultGlobs
	}
	lines := ChangedLines(string(patch))
	for f := range lines {
		if testrun.IsTestFile(f, globs) {
			delete(lines, f)
		}
	}
	dir, done, err := Scratch(ctx, repo.Root, commit)
	if err != nil {
		return nil, err
	}
	defer done()
	ids := slices.Clone(t.TestIDs)
	for _, dep := range t.Deps {
		if r, ok := tasks.Record(dep); ok && tasks.Task(r).Kind == queue.KindTest {
			ids = append(ids, tasks.Task(r).TestIDs...)
		}
	}
	tests, err := Discover(dir, command, cfg.TestGlobs)
	if err != nil {
		return nil, err
	}
	var run []string
	for _, pt := range tests {
		for _, id := range ids {
			if named(pt.Name, id) && !slices.Contains(run, pt.ID) {
				run = append(run, pt.ID)
			}
		}
	}
	cmd := command
	if len(run) > 0 {
		cmd = testrun.RegressionCommandFor(dir, command, run)
	}
	timeout := cfg.TaskTimeout.Duration
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return Mutate(mctx, MutateOptions{
		Task: t.ID, Commit: commit, Dir: dir, Lines: lines, Limit: cfg.MutantsPerTask,
		Killed: func(ctx context.Context) (bool, error) {
			res, err := testrun.Run(ctx, dir, cmd, timeout, opts...)
			if err != nil {
				return false, err
			}
			return res.ExitCode != 0 || len(res.Failed()) > 0, nil
		},
	})
}

// write writes the report (SPEC §11.1's results table) to .orchestrator/reports/, the
// readable copy, and the task's last decision to the orchestrator's state, sealed with key
// (record.go).
func (rep *Report) write(l queue.Layout, state string, key *seal.Key) error {
	dir := filepath.Join(l.Dir(), "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rep.Path = filepath.Join(dir, "spotcheck-"+rep.Task+".md")
	if err := os.WriteFile(rep.Path, []byte(rep.Markdown()), 0o644); err != nil {
		return err
	}
	d := Decision{Task: rep.Task, Decision: rep.Decision, Commit: rep.Commit, At: time.Now().UTC().Format(time.RFC3339)}
	return writeRecord(key, seal.KindSpot, DecisionPath(state, rep.Task), d)
}

// Markdown is the report: the `## Spot Check Results` table, the failures and the mutants.
func (rep *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Spot check of %s\n\nCommit %.12s; command `%s`.\n\n## Spot Check Results\n\n", rep.Task, rep.Commit, rep.Command)
	b.WriteString("| Category | Planned | Available | Selected | Passed | Rate | Result |\n|---|---|---|---|---|---|---|\n")
	for _, c := range rep.Selection {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d%% | %s |\n", c.Name, c.Planned, c.Available, c.Selected, c.Passed, c.Rate(), c.Decision)
	}
	fmt.Fprintf(&b, "\n**Decision: %s**\n", rep.Decision)
	var failed []string
	for _, c := range rep.Selection {
		for _, p := range c.Picks {
			if !p.Passed {
				failed = append(failed, fmt.Sprintf("- %s `%s`: %s", c.Name, p.ID, p.Why))
			}
		}
	}
	if len(failed) > 0 {
		b.WriteString("\n## Failed\n\n" + strings.Join(failed, "\n") + "\n")
	}
	if len(rep.Mismatch) > 0 {
		fmt.Fprintf(&b, "\n## Mismatch\n\nClaimed done by their implementers, and failing here: %s\n", strings.Join(rep.Mismatch, ", "))
	}
	if len(rep.Mutations) > 0 || len(rep.NotMutated) > 0 {
		b.WriteString("\n## Can these tests fail?\n\n")
	}
	for _, n := range rep.NotMutated {
		fmt.Fprintf(&b, "%s was not mutated: %s.\n\n", n.Task, n.Reason)
	}
	if len(rep.Mutations) > 0 {
		b.WriteString("| Task | Commit | Mutants | Killed | Result |\n|---|---|---|---|---|\n")
		for _, m := range rep.Mutations {
			fmt.Fprintf(&b, "| %s | %.12s | %d | %d | %s |\n", m.Task, m.Commit, m.Mutants, m.Killed, m.Decision)
		}
		for _, m := range rep.Mutations {
			if len(m.Survivors) > 0 {
				fmt.Fprintf(&b, "\nSurviving mutants of %s:\n\n", m.Task)
				for _, s := range m.Survivors {
					fmt.Fprintf(&b, "- %s\n", s)
				}
			}
		}
	}
	return b.String()
}

// fileIssues records a FAIL or CRITICAL as a qa_failure issue, and each mismatch as a
// qa_mismatch one.
func (rep *Report) fileIssues(ctx context.Context, l queue.Layout, category string) error {
	if rep.Decision != Fail && rep.Decision != Critical {
		return nil
	}
	why := rep.Failures()
	details := strings.Join(why, "\n") + "\n\nReport: " + rep.Path
	id, err := retry.QAIssue(ctx, l, rep.Task, category, "qa_failure", fmt.Sprintf("spot check %s: %d findings", rep.Decision, len(why)), details, time.Time{})
	if err != nil {
		return err
	}
	rep.Issues = append(rep.Issues, id)
	for _, dep := range rep.Mismatch {
		id, err := retry.QAIssue(ctx, l, dep, category, "qa_mismatch",
			fmt.Sprintf("its implementer claimed the tests passed; the spot check of %s finds failures", rep.Task), details, time.Time{})
		if err != nil {
			return err
		}
		rep.Issues = append(rep.Issues, id)
	}
	return nil
}
