package spotcheck

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// The decisions of the matrix, from best to worst.
const (
	Pass     = "PASS"
	Warn     = "WARN"
	Fail     = "FAIL"
	Critical = "CRITICAL"
)

func worse(a, b string) string {
	rank := map[string]int{Pass: 0, Warn: 1, Fail: 2, Critical: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// FeatureCategory names the group of the task's own tests in a report.
const FeatureCategory = "feature"

// A ProjectTest is a test the project declares: its file, its name, and the ID its runner
// reports it by.
type ProjectTest struct {
	File, Name, ID string
}

// A Pick is one selected plan test and what became of it.
type Pick struct {
	ID     string   `json:"id"`
	Tests  []string `json:"tests"` // the project's tests named after it, as run
	Passed bool     `json:"passed"`
	Why    string   `json:"why,omitempty"` // why it failed: no test, failed, not run
}

// A Category is one row of the results table.
type Category struct {
	Name      string `json:"name"`
	Planned   int    `json:"planned"`
	Available int    `json:"available"`
	Selected  int    `json:"selected"`
	Passed    int    `json:"passed"`
	Decision  string `json:"decision"`
	Picks     []Pick `json:"picks"`
}

// Rate is the category's pass rate in percent (100 for an empty one).
func (c Category) Rate() int {
	if c.Selected == 0 {
		return 100
	}
	return c.Passed * 100 / c.Selected
}

// Selection is what the spot check of a task selects: by category, the plan tests and
// the project tests named after them.
type Selection struct {
	Task       string
	Categories []Category
}

// Select picks the tests of a spot check of task from the plan (SPEC §11.1). feature are
// the task's Test IDs (all selected, and left out of their categories' available tests);
// tests are the project's declared tests. A plan test with no project test named after it
// is selected and failed, never skipped.
func Select(task string, plan *queue.Plan, feature []string, tests []ProjectTest) *Selection {
	named := namedIndex(plan, tests)
	sel := &Selection{Task: task}
	isFeature := map[string]bool{}
	for _, id := range feature {
		isFeature[id] = true
	}
	pick := func(id string) Pick {
		p := Pick{ID: id}
		for _, t := range named[id] {
			p.Tests = append(p.Tests, t.ID)
		}
		if len(p.Tests) == 0 {
			p.Why = "no test of the project is named after it"
		}
		return p
	}
	feat := Category{Name: FeatureCategory}
	for _, id := range feature {
		feat.Planned++
		if len(named[id]) > 0 {
			feat.Available++
		}
		feat.Picks = append(feat.Picks, pick(id))
	}
	feat.Selected = len(feat.Picks)
	for _, c := range plan.Categories {
		cat := Category{Name: c.Name}
		var available, missing []string
		for _, t := range c.Tests {
			if isFeature[t.ID] {
				continue
			}
			cat.Planned++
			if len(named[t.ID]) > 0 {
				available = append(available, t.ID)
			} else {
				missing = append(missing, t.ID)
			}
		}
		cat.Available = len(available)
		n := Count(len(available), RuleFor(c.Name))
		for _, i := range Indices(task, c.Name, len(available), n) {
			cat.Picks = append(cat.Picks, pick(available[i]))
		}
		for _, id := range missing {
			cat.Picks = append(cat.Picks, pick(id))
		}
		cat.Selected = len(cat.Picks)
		sel.Categories = append(sel.Categories, cat)
	}
	if feat.Planned > 0 {
		sel.Categories = append([]Category{feat}, sel.Categories...)
	}
	return sel
}

// namedIndex maps each plan test ID to the project tests named after it.
func namedIndex(plan *queue.Plan, tests []ProjectTest) map[string][]ProjectTest {
	byToken := make(map[string][]string, plan.Len())
	longest := 0
	for _, p := range plan.Tests() {
		tok := gate.IDToken(p.ID)
		byToken[tok] = append(byToken[tok], p.ID)
		longest = max(longest, len(tok))
	}
	out := make(map[string][]ProjectTest, plan.Len())
	for _, t := range tests {
		var seen []string
		ok := gate.EachNameSpan(t.Name, func(s string) {
			// Every ID has a "-" (its token a "_") and is no longer than the longest.
			if len(s) > longest || !strings.Contains(s, "_") {
				return
			}
			// A span is a name's part on word boundaries: its token matching an ID's is
			// what NamedBy checks (gate's TestNameSpansAgreeWithNamedBy). An ID is counted
			// once per test.
			for _, id := range byToken[s] {
				if !slices.Contains(seen, id) {
					seen = append(seen, id)
					out[id] = append(out[id], t)
				}
			}
		})
		if !ok { // a name whose case mapping changes its length: compare the slow way
			for _, p := range plan.Tests() {
				if gate.NamedBy(t.Name, p.ID) {
					out[p.ID] = append(out[p.ID], t)
				}
			}
		}
	}
	return out
}

// Discover lists the tests the project under root declares, in its test files, with the
// ID the runner of command reports each by.
func Discover(root, command string, globs []string) ([]ProjectTest, error) {
	files, err := testrun.TestFiles(root, globs)
	if err != nil {
		return nil, err
	}
	module := testrun.ModulePath(root)
	var out []ProjectTest
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		for _, name := range gate.Declared(f, string(src)) {
			out = append(out, ProjectTest{File: f, Name: name, ID: runnerID(module, f, name)})
		}
	}
	return out, nil
}

// runnerID is the ID a runner reports a declared test by: importpath.Name for Go, the node
// ID for pytest; for the others the name (matched by suffix after the run).
func runnerID(module, file, name string) string {
	switch path.Ext(file) {
	case ".go":
		dir := path.Dir(file)
		if dir == "." {
			return module + "." + name
		}
		return module + "/" + dir + "." + name
	case ".py":
		return file + "::" + name
	}
	return name
}

// Run runs the selected project tests by name, in one run of the project's runner
// (testrun.RegressionCommandFor), and marks each pick passed when every project test
// named after it passed. It returns the run.
func (s *Selection) Run(ctx context.Context, root, command string, timeout time.Duration, opts ...testrun.Option) (*testrun.Result, error) {
	var ids []string
	for _, c := range s.Categories {
		for _, p := range c.Picks {
			for _, id := range p.Tests {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
	}
	var res *testrun.Result
	status := map[string]testrun.Status{}
	if len(ids) > 0 {
		cmd := testrun.RegressionCommandFor(root, command, ids)
		var err error
		if res, err = testrun.Run(ctx, root, cmd, timeout, opts...); err != nil {
			return nil, err
		}
		for _, t := range res.Tests {
			status[t.ID] = t.Status
		}
	}
	lookup := func(id string) (testrun.Status, bool) {
		if st, ok := status[id]; ok {
			return st, true
		}
		for rid, st := range status { // runners that report "file > name"
			if strings.HasSuffix(rid, " > "+id) || strings.HasSuffix(rid, "::"+id) {
				return st, true
			}
		}
		return "", false
	}
	for ci := range s.Categories {
		c := &s.Categories[ci]
		c.Passed = 0
		for pi := range c.Picks {
			p := &c.Picks[pi]
			if len(p.Tests) == 0 {
				continue
			}
			p.Passed, p.Why = true, ""
			for _, id := range p.Tests {
				st, ok := lookup(id)
				switch {
				case !ok:
					p.Passed, p.Why = false, id+" did not run"
				case st == testrun.Failed:
					p.Passed, p.Why = false, id+" failed"
				case st == testrun.Skipped:
					p.Passed, p.Why = false, id+" was skipped"
				}
				if !p.Passed {
					break
				}
			}
			if p.Passed {
				c.Passed++
			}
		}
	}
	return res, nil
}

// Decide applies the decision matrix of SPEC §11.1 to the categories and returns the
// overall decision: smoke (or critical) under 100% is CRITICAL; the feature tests under
// 100% FAIL; another category passes at 95% or more, warns at 90–94%, fails under 90%;
// and under 95% overall FAILs.
func (s *Selection) Decide() string {
	decision := Pass
	total, passed := 0, 0
	for i := range s.Categories {
		c := &s.Categories[i]
		total += c.Selected
		passed += c.Passed
		rate := c.Rate()
		switch name := strings.ToLower(c.Name); {
		case c.Selected == 0:
			c.Decision = Pass
		case name == "smoke" || name == "critical":
			c.Decision = Pass
			if rate < 100 {
				c.Decision = Critical
			}
		case c.Name == FeatureCategory:
			c.Decision = Pass
			if rate < 100 {
				c.Decision = Fail
			}
		case rate >= 95:
			c.Decision = Pass
		case rate >= 90:
			c.Decision = Warn
		default:
			c.Decision = Fail
		}
		decision = worse(decision, c.Decision)
	}
	if total > 0 && passed*100/total < 95 {
		decision = worse(decision, Fail)
	}
	return decision
}

// Failures lists the failed picks as "category: ID: why".
func (s *Selection) Failures() []string {
	var out []string
	for _, c := range s.Categories {
		for _, p := range c.Picks {
			if !p.Passed {
				out = append(out, fmt.Sprintf("%s: %s: %s", c.Name, p.ID, p.Why))
			}
		}
	}
	return out
}

// Scratch makes a detached checkout of commit in a temporary folder beside nothing of the
// person's: a git worktree, removed by the returned function. Its git commands run with the
// orchestrator's settings (worktree.GitCommand): no hook, no filter driver, so that the
// checkout holds the commit's bytes and nothing in the repository's configuration runs.
func Scratch(ctx context.Context, repoRoot, commit string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "orchestrator-spotcheck-")
	if err != nil {
		return "", nil, err
	}
	cmd, err := worktree.GitCommand(ctx, repoRoot, "worktree", "add", "--detach", "-q", dir, commit)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("git worktree add: %v: %s", err, out)
	}
	return dir, func() {
		if rm, err := worktree.GitCommand(context.Background(), repoRoot, "worktree", "remove", "--force", dir); err == nil {
			_ = rm.Run()
		}
		os.RemoveAll(dir)
		if prune, err := worktree.GitCommand(context.Background(), repoRoot, "worktree", "prune"); err == nil {
			_ = prune.Run()
		}
	}, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// named reports whether a test's name names a Test ID.
func named(name, id string) bool { return gate.NamedBy(name, id) }
