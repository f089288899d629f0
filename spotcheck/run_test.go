package spotcheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/spotcheck"
)

// A project is a git repository with a test plan (10 smoke tests, 100 unit tests and the
// QA task's feature test FEAT-001), tests named after them, and a task queue whose BUILD
// task TASK-001 landed calc/add.go.
type project struct {
	t    *testing.T
	root string
	lang string // go or py
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func (p *project) write(rel, text string) {
	p.t.Helper()
	path := filepath.Join(p.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) commit(msg string) {
	run(p.t, p.root, "git", "add", "-A")
	run(p.t, p.root, "git", "commit", "-q", "-m", msg)
}

// land commits what changed as the orchestrator lands a task: msg's trailers and the tree
// sealed with the person's key (the test's own, TestMain), as worktree.Repo.Land does.
func (p *project) land(msg string) {
	run(p.t, p.root, "git", "add", "-A")
	tree := strings.TrimSpace(run(p.t, p.root, "git", "write-tree"))
	k, err := seal.User()
	if err != nil {
		p.t.Fatal(err)
	}
	run(p.t, p.root, "git", "commit", "-q", "-m", k.SealMessage(msg, tree))
}

func needPytest(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-m", "pytest", "--version").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pytest is missing (CI=true): %v", err)
		}
		t.Skipf("pytest is missing: %v", err)
	}
}

// newProject makes the project. failing names the plan tests whose project test fails;
// missing, the plan tests no project test is named after. impl and test are the BUILD
// task's landed implementation of Add and the TEST task's test of it.
func newProject(t *testing.T, lang string, failing, missing map[string]bool, impl, test string) *project {
	t.Helper()
	p := &project{t: t, root: t.TempDir(), lang: lang}
	var plan strings.Builder
	plan.WriteString(`{"tests": {"smoke": [`)
	ids := map[string][]string{}
	for i := 1; i <= 10; i++ {
		ids["smoke"] = append(ids["smoke"], fmt.Sprintf("SMOKE-%03d", i))
	}
	ids["unit"] = []string{"FEAT-001"}
	for i := 1; i <= 100; i++ {
		ids["unit"] = append(ids["unit"], fmt.Sprintf("UNIT-%03d", i))
	}
	quote := func(l []string) string {
		q := make([]string, len(l))
		for i, id := range l {
			q[i] = `{"id": "` + id + `"}`
		}
		return strings.Join(q, ", ")
	}
	plan.WriteString(quote(ids["smoke"]) + `], "unit": [` + quote(ids["unit"]) + `]}}`)
	p.write("projectspec/test-plan-output.json", plan.String())
	var gen strings.Builder
	command := "go test ./..."
	if lang == "go" {
		p.write("go.mod", "module example.com/calc\n\ngo 1.22\n")
		p.write("calc/mul.go", "package calc\n\n// Mul returns a * b.\nfunc Mul(a, b int) int { return a * b }\n")
		gen.WriteString("package calc\n\nimport \"testing\"\n")
	} else {
		command = "/usr/bin/python3 -m pytest -q"
		p.write("calc/__init__.py", "")
		p.write("calc/mul.py", "def mul(a, b):\n    return a * b\n")
		p.write("tests/__init__.py", "")
		gen.WriteString("from calc.mul import mul\n")
	}
	for _, id := range append(ids["smoke"], ids["unit"][1:]...) {
		if missing[id] {
			continue
		}
		name := strings.ReplaceAll(id, "-", "_")
		check := "mul(2, 3) == 6"
		if failing[id] {
			check = "mul(2, 3) == 7"
		}
		if lang == "go" {
			fmt.Fprintf(&gen, "\nfunc TestMul_%s(t *testing.T) {\n\tif !(%s) {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n", name, strings.Replace(check, "mul", "Mul", 1))
		} else {
			fmt.Fprintf(&gen, "\n\ndef test_mul_%s():\n    assert %s\n", strings.ToLower(name), check)
		}
	}
	if lang == "go" {
		p.write("calc/gen_test.go", gen.String())
	} else {
		p.write("tests/test_gen.py", gen.String())
	}
	p.write(".gitignore", ".orchestrator/\n__pycache__/\n.pytest_cache/\n")
	p.write(".orchestrator/task_queue.md", `# Task Queue

## Project Commands

| Command | Value |
|---------|-------|
| Test | `+command+` |

### TASK-T01: Tests for Add

| Field | Value |
|-------|-------|
| Status | completed |
| Category | testing |
| Test IDs | FEAT-001 |
| Depends On | - |

### TASK-001: Add

| Field | Value |
|-------|-------|
| Status | completed |
| Category | backend |
| Depends On | TASK-T01 |

### TASK-Q01: Spot check of Add

| Field | Value |
|-------|-------|
| Status | pending |
| Category | qa |
| Test IDs | FEAT-001 |
| Depends On | TASK-001 |
`)
	p.write(".orchestrator/config.yaml", "sandbox: off\n")
	run(t, p.root, "git", "init", "-q", "-b", "main")
	p.commit("fixture")
	if lang == "go" {
		p.write("calc/add_test.go", test)
	} else {
		p.write("tests/test_add.py", test)
	}
	p.land("TASK-T01: Tests for Add\n\nOrchestrator-Task: TASK-T01\nOrchestrator-Attempt: 1\n")
	if lang == "go" {
		p.write("calc/add.go", impl)
	} else {
		p.write("calc/add.py", impl)
	}
	p.land("TASK-001: Add\n\nOrchestrator-Task: TASK-001\nOrchestrator-Attempt: 1\n")
	return p
}

func (p *project) spotcheck(mutate bool) *spotcheck.Report {
	p.t.Helper()
	cfg, err := config.Load(filepath.Join(p.root, ".orchestrator", "config.yaml"))
	if err != nil {
		p.t.Fatal(err)
	}
	cfg.TaskTimeout.Duration = 2 * time.Minute
	rep, err := spotcheck.Run(context.Background(), spotcheck.Options{Layout: queue.Layout{Root: p.root}, Config: cfg, Task: "TASK-Q01", Mutate: mutate})
	if err != nil {
		p.t.Fatal(err)
	}
	return rep
}

const (
	goAdd     = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
	goAddTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd_FEAT_001(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d\", got)\n\t}\n}\n"
	pyAdd     = "def add(a, b):\n    return a + b\n"
	pyAddTest = "from calc.add import add\n\n\ndef test_add_feat_001():\n    assert add(2, 3) == 5\n"
)

// selectedUnit returns the unit tests the spot check of TASK-Q01 selects (10 of 100).
func selectedUnit() []string {
	var out []string
	for _, i := range spotcheck.Indices("TASK-Q01", "unit", 100, 10) {
		out = append(out, fmt.Sprintf("UNIT-%03d", i+1))
	}
	return out
}

// TestDecisionMatrix: each row of the matrix, end to end on a Go module and on a pytest
// project: the selected tests run by name, in a scratch checkout.
func TestDecisionMatrix(t *testing.T) {
	t.Parallel()
	sel := selectedUnit()
	notSelected := ""
	for i := 1; i <= 100; i++ {
		id := fmt.Sprintf("UNIT-%03d", i)
		if !strings.Contains(strings.Join(sel, " "), id) {
			notSelected = id
			break
		}
	}
	rows := []struct {
		name             string
		failing, missing []string
		brokenAdd        bool
		want             string
		wantUnit         string
	}{
		{name: "all pass", want: spotcheck.Pass, wantUnit: spotcheck.Pass},
		{name: "a failure outside the sample", failing: []string{notSelected}, want: spotcheck.Pass, wantUnit: spotcheck.Pass},
		{name: "one unit failure in 10 (90%)", failing: sel[:1], want: spotcheck.Warn, wantUnit: spotcheck.Warn},
		{name: "two unit failures in 10 (80%)", failing: sel[:2], want: spotcheck.Fail, wantUnit: spotcheck.Fail},
		{name: "a planned test without a test", missing: []string{notSelected}, want: spotcheck.Warn, wantUnit: spotcheck.Warn},
		{name: "the feature test fails", brokenAdd: true, want: spotcheck.Fail, wantUnit: spotcheck.Pass},
		{name: "a smoke test fails", failing: []string{"SMOKE-004"}, want: spotcheck.Critical, wantUnit: spotcheck.Pass},
	}
	for _, lang := range []string{"go", "py"} {
		for _, row := range rows {
			t.Run(lang+"/"+row.name, func(t *testing.T) {
				t.Parallel()
				if lang == "py" {
					needPytest(t)
				}
				set := func(l []string) map[string]bool {
					m := map[string]bool{}
					for _, id := range l {
						m[id] = true
					}
					return m
				}
				impl, test := goAdd, goAddTest
				if lang == "py" {
					impl, test = pyAdd, pyAddTest
				}
				if row.brokenAdd {
					impl = strings.Replace(impl, "return a + b", "return a - b", 1)
				}
				p := newProject(t, lang, set(row.failing), set(row.missing), impl, test)
				head := run(t, p.root, "git", "rev-parse", "HEAD")
				rep := p.spotcheck(false)
				if rep.Decision != row.want {
					t.Errorf("decision %s, want %s\n%s", rep.Decision, row.want, rep.Markdown())
				}
				for _, c := range rep.Selection {
					if c.Name == "unit" && c.Decision != row.wantUnit {
						t.Errorf("unit: %s, want %s\n%s", c.Decision, row.wantUnit, rep.Markdown())
					}
				}
				report, err := os.ReadFile(filepath.Join(p.root, ".orchestrator", "reports", "spotcheck-TASK-Q01.md"))
				if err != nil || !strings.Contains(string(report), "## Spot Check Results") {
					t.Errorf("no report: %v", err)
				}
				issues, _ := os.ReadFile(filepath.Join(p.root, ".orchestrator", "issue_queue.md"))
				failed := row.want == spotcheck.Fail || row.want == spotcheck.Critical
				if got := strings.Contains(string(issues), "| Type | qa_failure |"); got != failed {
					t.Errorf("qa_failure issue: %v, want %v\n%s", got, failed, issues)
				}
				// Nothing of the person's tree or of the branch changed.
				if st := run(t, p.root, "git", "status", "--porcelain"); st != "" {
					t.Errorf("the person's tree changed:\n%s", st)
				}
				if now := run(t, p.root, "git", "rev-parse", "HEAD"); now != head {
					t.Error("the branch moved")
				}
			})
		}
	}
}
