package watch

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// The baseline (SPEC §7.5) lives in the orchestrator's state; .orchestrator/baseline.json is
// its readable copy. It only grows: a candidate's GREEN run of the whole suite, once the
// candidate has landed, adds the tests that pass in it, with no run more. A test leaves it
// only by a person's decision (`orchestrator baseline --drop`, or a baseline they made).

// baselinePath is the baseline the GREEN gate trusts.
func (r *runner) baselinePath() string { return filepath.Join(r.repo.State(), "baseline.json") }

// readBaseline returns the baseline, or nil when there is none yet. One whose seal fails
// is not evidence (reportEdited names it): the run goes on with the last baseline it read
// or wrote itself, so that code that edits the file during a run weakens no gate; at the
// start of a run, a new one is measured as if there were none. One of another history that
// could not be measured again (r.stale) is not evidence either.
func (r *runner) readBaseline() *testrun.Baseline {
	b, err := testrun.ReadSealedBaseline(r.baselinePath(), sealKey())
	if err != nil {
		b = r.baseline
	}
	if b != nil && r.stale != "" && b.Commit == r.stale {
		return nil
	}
	r.baseline = b
	return b
}

// writeBaseline writes the baseline, sealed, and its readable copy, which is never read
// back as the baseline.
func (r *runner) writeBaseline(b *testrun.Baseline) error {
	if err := b.WriteSealed(r.baselinePath(), sealKey()); err != nil {
		return err
	}
	r.baseline = b
	return b.Write(r.o.Layout.Baseline())
}

// firstBaseline makes the baseline when there is none, or when the one there is holds for
// another history (SPEC §7.5): one run of the project's suite on the integration head at
// the start of the run, so that the first BUILD task cannot break the project's existing
// tests unseen, and no test of abandoned commits is taken for a regression. `orchestrator
// run` measures none when there is none, but does replace one of another history. A gate
// checkout that is not the head's bytes stops the run (stopsRun); any other problem is a
// warning.
func (r *runner) firstBaseline(ctx context.Context) error {
	head, err := r.repo.Head(ctx)
	if err != nil {
		return nil
	}
	why := r.staleBaseline(ctx, head)
	if why == "" && r.o.Only == "" && r.readBaseline() == nil {
		why = "no baseline yet"
	}
	r.historyHead = head
	if why == "" {
		return nil
	}
	return r.measureBaseline(ctx, head, why)
}

// followHistory is firstBaseline during the run: before tasks start, a baseline that the
// integration head no longer descends from (a person reset or rewrote the branch while
// the run went on) is measured again. Only a head the run has not seen costs a look.
func (r *runner) followHistory(ctx context.Context) error {
	head, err := r.repo.Head(ctx)
	if err != nil || head == r.historyHead {
		return nil
	}
	r.historyHead = head
	if why := r.staleBaseline(ctx, head); why != "" {
		return r.measureBaseline(ctx, head, why)
	}
	return nil
}

// staleBaseline says why the baseline holds for another history than head's, or "" when
// it does not (or there is none, or it does not say which commit it holds for): its commit
// is not in head's history, because a person reset the integration branch to an older
// commit, rebased it or amended it. Its tests of the abandoned commits are then no test of
// the tree, and a test that no longer exists is never a regression (SPEC §7.5).
func (r *runner) staleBaseline(ctx context.Context, head string) string {
	b := r.readBaseline()
	if b == nil || b.Commit == "" {
		return ""
	}
	in, err := r.repo.IsAncestor(ctx, b.Commit, head)
	if err != nil {
		r.report.event("", "warning", "baseline: "+err.Error())
		return ""
	}
	if in {
		return ""
	}
	if same, err := r.repo.SameTree(ctx, b.Commit, head); err == nil && same {
		// Rewritten to the same tree (a message amended, a rebase that changed nothing):
		// the baseline is the tree's, and holds for head with no run of the suite.
		moved := *b
		moved.Commit = head
		if err := r.writeBaseline(&moved); err == nil {
			return ""
		}
	}
	return fmt.Sprintf("the history of %s was rewritten (a reset, a rebase or an amend): the baseline holds for commit %.12s, which %s at %.12s no longer contains, so its tests of the abandoned commits are no regressions",
		r.repo.Branch, b.Commit, r.repo.Branch, head)
}

// measureBaseline runs the project's suite on head and makes it the baseline, saying why
// first. A baseline of another history that cannot be measured again is set aside for the
// run (r.stale), with a warning that says how to measure one.
func (r *runner) measureBaseline(ctx context.Context, head, why string) error {
	old := r.readBaseline()
	tasks, err := queue.Load(r.o.Layout.Tasks())
	cmd := r.o.Config.Commands.Test
	if err == nil {
		cmd = projectTestCommand(r.o.Config, tasks)
	}
	fail := func(msg string) {
		if old != nil {
			r.stale = old.Commit
			msg += "; the baseline of the old history is set aside for this run (run orchestrator baseline to measure one)"
		}
		r.report.event("", "warning", "baseline: "+msg)
	}
	if cmd == "" {
		if old != nil {
			fail(why + ", and there is no test command to measure a new one")
		}
		return nil
	}
	s, err := r.loopGate(ctx)
	root := ""
	if err == nil {
		root, err = r.checkout(ctx, s, head)
	}
	if stopsRun(err) {
		return err
	}
	if err != nil {
		fail(err.Error())
		return nil
	}
	in := r.gateInput(gate.Input{Root: root, Timeout: r.o.Config.TaskTimeout.Duration}, s.Dir)
	if k := sealKey(); k != nil {
		// The packages' results, sealed for the gates that follow and reused where their
		// inputs are the same (SPEC §7.3).
		in.Impact = &gate.Impact{Dir: gate.ImpactDir(), Key: k, Commit: head, Repo: r.repo.Root}
	}
	at := head[:min(12, len(head))]
	b, unsealed, err := gate.MakeBaseline(ctx, in, cmd, r.o.Config.TestGlobs, func(run, reuse string) {
		msg := why + ": running " + run + " on " + at
		if run == "" {
			msg = why + ": " + cmd + " on " + at
		}
		if reuse != "" {
			msg += " (" + reuse + ")"
		}
		r.report.event("", "baseline", msg)
	})
	if unsealed != nil {
		r.report.event("", "warning", "baseline: the packages' results were not all sealed, so the first gates run them again: "+unsealed.Error())
	}
	if err == nil {
		b.Commit = head
		if old != nil {
			b.Dropped = old.Dropped // a person's decisions hold whatever the history
		}
		err = r.writeBaseline(b)
	}
	if err != nil {
		fail(err.Error())
		return nil
	}
	r.stale = ""
	return nil
}

// growBaseline adds to the baseline the tests that passed in the landed candidate's GREEN
// run of the whole suite, read from the gate's checkout as that run ended (a.fresh).
func (r *runner) growBaseline(a *attempt, commit string) {
	if a.fresh == nil {
		return
	}
	b := *a.fresh
	b.PassingTests = slices.Clone(a.fresh.PassingTests)
	root := r.projectDir(r.repo.Root)
	b.Commit = commit
	if old := r.readBaseline(); old != nil {
		for _, id := range old.PassingTests {
			if !slices.Contains(b.PassingTests, id) {
				b.PassingTests = append(b.PassingTests, id)
			}
		}
		slices.Sort(b.PassingTests)
		b.Dropped = old.Dropped
		b.RegressionCommand = testrun.RegressionCommandFor(root, b.Command, b.PassingTests)
	}
	if err := r.writeBaseline(&b); err != nil {
		r.report.event("", "warning", "baseline: "+err.Error())
	}
}

// owedTests returns which baseline tests are owed to TEST tasks other than the attempt's
// own dependencies whose BUILD tasks have not all completed (SPEC §7.5): landing their RED
// broke those on purpose. For Go, that is every test of a package that holds one of their
// test files (it does not compile); for other runners, the tests in those files.
func (r *runner) owedTests(ctx context.Context, tasks *queue.Doc, a *attempt, root string) func(string) bool {
	mine := map[string]bool{}
	var walk func(id string)
	walk = func(id string) {
		if mine[id] {
			return
		}
		mine[id] = true
		if rec, ok := tasks.Record(id); ok {
			for _, dep := range tasks.Task(rec).Deps {
				walk(dep)
			}
		}
	}
	walk(a.id)
	all := tasks.Tasks()
	open := map[string]bool{} // TEST tasks with a BUILD dependent not yet completed
	for _, t := range all {
		if t.Kind != queue.KindBuild || t.Status == queue.StatusCompleted || t.Status == queue.StatusSkipped {
			continue
		}
		for _, dep := range t.Deps {
			if rec, ok := tasks.Record(dep); ok && tasks.Task(rec).Kind == queue.KindTest && !mine[dep] {
				open[dep] = true
			}
		}
	}
	module := testrun.ModulePath(root)
	var pkgs, files []string
	prefix := ""
	if r.sub != "." && r.sub != "" {
		prefix = filepath.ToSlash(r.sub) + "/"
	}
	owe := func(red string) {
		parent, err := r.repo.Parent(ctx, red)
		if err != nil {
			return
		}
		changes, err := r.repo.Diff(ctx, parent, red)
		if err != nil {
			return
		}
		for _, p := range worktree.Paths(changes) {
			p = strings.TrimPrefix(p, prefix)
			files = append(files, p)
			if module != "" && strings.HasSuffix(p, ".go") {
				dir := path.Dir(p)
				pkg := module
				if dir != "." {
					pkg += "/" + dir
				}
				pkgs = append(pkgs, pkg)
			}
		}
	}
	for id := range open {
		if red := r.repo.LastLanding(ctx, id); red != "" {
			owe(red)
		}
	}
	// The REDs of TEST tasks ahead of it in the merge queue, on which it is judged: they
	// have not landed, and no BUILD task can have made them pass.
	for _, red := range a.redsAhead {
		owe(red)
	}
	if len(files) == 0 {
		return nil
	}
	return func(id string) bool {
		if pkg, _, ok := testrun.SplitGoID(id, module); ok && slices.Contains(pkgs, pkg) {
			return true
		}
		for _, f := range files {
			if strings.HasPrefix(id, f+"::") || strings.HasPrefix(id, f+" > ") {
				return true
			}
		}
		return false
	}
}
