package watch

import (
	"context"
	"path"
	"path/filepath"
	"slices"
	"strings"

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
// start of a run, a new one is measured as if there were none.
func (r *runner) readBaseline() *testrun.Baseline {
	b, err := testrun.ReadSealedBaseline(r.baselinePath(), sealKey())
	if err != nil {
		return r.baseline
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

// firstBaseline makes the baseline when there is none: one run of the project's suite on
// the integration head at the start of the run, so that the first BUILD task cannot break
// the project's existing tests unseen. A gate checkout that is not the head's bytes stops
// the run (stopsRun); any other problem is a warning.
func (r *runner) firstBaseline(ctx context.Context) error {
	if r.readBaseline() != nil || r.o.Only != "" {
		return nil
	}
	tasks, err := queue.Load(r.o.Layout.Tasks())
	if err != nil {
		return nil
	}
	cmd := projectTestCommand(r.o.Config, tasks)
	if cmd == "" {
		return nil
	}
	head, err := r.repo.Head(ctx)
	if err != nil {
		return nil
	}
	root, err := r.gateDir(ctx, head)
	if stopsRun(err) {
		return err
	}
	if err != nil {
		r.report.event("", "warning", "baseline: "+err.Error())
		return nil
	}
	r.report.event("", "baseline", "no baseline yet: running "+cmd+" on "+head[:min(12, len(head))])
	b, err := testrun.MakeBaseline(ctx, root, cmd, r.o.Config.TestGlobs, r.o.Config.TaskTimeout.Duration, r.runOptions(r.gate.Dir, root)...)
	if err == nil {
		err = r.writeBaseline(b)
	}
	if err != nil {
		r.report.event("", "warning", "baseline: "+err.Error())
	}
	return nil
}

// growBaseline adds to the baseline the tests that passed in the landed candidate's GREEN
// run of the whole suite (the gate's checkout still holds what landed).
func (r *runner) growBaseline(a *attempt) {
	if a.verdict == nil || a.verdict.Full == nil || r.gate == nil {
		return
	}
	root := r.projectDir(r.gate.Dir)
	b, err := testrun.NewBaseline(root, a.verdict.Full, r.o.Config.TestGlobs)
	if err != nil {
		r.report.event("", "warning", "baseline: "+err.Error())
		return
	}
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
	if err := r.writeBaseline(b); err != nil {
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
	for id := range open {
		red := r.repo.LastLanding(ctx, id)
		if red == "" {
			continue
		}
		parent, err := r.repo.Parent(ctx, red)
		if err != nil {
			continue
		}
		changes, err := r.repo.Diff(ctx, parent, red)
		if err != nil {
			continue
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
