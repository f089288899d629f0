package spotcheck_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/spotcheck"
)

// TestMutation: can the tests of TASK-001 fail? Good tests kill every mutant of its landed
// change; a test that asserts nothing kills none (FAIL); a branch no test reaches leaves a
// surviving mutant (WARN, named with file:line). The same commit gives the same mutants,
// in the same order, and no mutant is ever left in the branch or the person's tree.
func TestMutation(t *testing.T) {
	t.Parallel()
	clamp := "package calc\n\n// Add returns a + b, at most 1000.\nfunc Add(a, b int) int {\n\tif a+b > 1000 {\n\t\treturn 1000\n\t}\n\treturn a + b\n}\n"
	vacuous := "package calc\n\nimport \"testing\"\n\nfunc TestAdd_FEAT_001(t *testing.T) {\n\t_ = Add(2, 3)\n}\n"
	pyClamp := "def add(a, b):\n    if a + b > 1000:\n        return 1000\n    return a + b\n"
	pyVacuous := "from calc.add import add\n\n\ndef test_add_feat_001():\n    add(2, 3)\n"
	cases := []struct {
		name, lang, impl, test string
		want                   string
		survivors              []string
	}{
		{"go good tests", "go", goAdd, goAddTest, spotcheck.Pass, nil},
		{"go asserts nothing", "go", goAdd, vacuous, spotcheck.Fail, nil},
		{"go untested branch", "go", clamp, goAddTest, spotcheck.Warn, []string{"calc/add.go:5: + -> -", "calc/add.go:6: return zero values instead of 1000"}},
		{"py good tests", "py", pyAdd, pyAddTest, spotcheck.Pass, nil},
		{"py asserts nothing", "py", pyAdd, pyVacuous, spotcheck.Fail, nil},
		{"py untested branch", "py", pyClamp, pyAddTest, spotcheck.Warn, []string{"calc/add.py:2: + -> -", "calc/add.py:3: return None instead of 1000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.lang == "py" {
				needPytest(t)
			}
			p := newProject(t, c.lang, nil, nil, c.impl, c.test)
			head := run(t, p.root, "git", "rev-parse", "HEAD")
			rep := p.spotcheck(true)
			if len(rep.Mutations) != 1 {
				t.Fatalf("mutations %v", rep.Mutations)
			}
			m := rep.Mutations[0]
			if m.Decision != c.want || m.Mutants == 0 {
				t.Errorf("%s: %s, want %s", c.name, m.Summary(), c.want)
			}
			if c.want == spotcheck.Pass && m.Killed != m.Mutants {
				t.Errorf("good tests left survivors: %s", m.Summary())
			}
			if c.want == spotcheck.Fail && (m.Killed != 0 || rep.Decision != spotcheck.Fail) {
				t.Errorf("tests that assert nothing: %s; spot check %s", m.Summary(), rep.Decision)
			}
			for _, s := range c.survivors {
				if !slices.Contains(m.Survivors, s) {
					t.Errorf("survivor %q not reported: %s", s, m.Summary())
				}
			}
			if c.want == spotcheck.Warn && len(m.Survivors) != len(c.survivors) {
				t.Errorf("survivors %v, want %v", m.Survivors, c.survivors)
			}
			// The same again: the same mutants, the same result.
			again := p.spotcheck(true).Mutations[0]
			if again.Summary() != m.Summary() {
				t.Errorf("second run differs:\n%s\n%s", m.Summary(), again.Summary())
			}
			if last, err := spotcheck.ReadMutation(userKey(t), filepath.Join(p.root, ".git", "orchestrator"), "TASK-001"); last == nil || last.Summary() != m.Summary() {
				t.Errorf("the last mutation result is not recorded for the reviewer: %v (%v)", last, err)
			}
			if st := run(t, p.root, "git", "status", "--porcelain"); st != "" {
				t.Errorf("a mutant was left in the person's tree:\n%s", st)
			}
			if now := run(t, p.root, "git", "rev-parse", "HEAD"); now != head {
				t.Error("the branch moved")
			}
			if wt := run(t, p.root, "git", "worktree", "list"); strings.Count(wt, "\n") != 1 {
				t.Errorf("scratch checkouts left:\n%s", wt)
			}
			src, _ := os.ReadFile(filepath.Join(p.root, "calc", "add.go"))
			if c.lang == "go" && string(src) != c.impl {
				t.Error("the person's calc/add.go changed")
			}
		})
	}
}

// TestMismatch: the implementer of TASK-001 claimed done and its attempt completed (in the
// orchestrator's records); the spot check finds the feature test failing: a qa_failure
// issue and a qa_mismatch one.
func TestMismatch(t *testing.T) {
	t.Parallel()
	p := newProject(t, "go", nil, nil, strings.Replace(goAdd, "return a + b", "return a - b", 1), goAddTest)
	dir := filepath.Join(p.root, ".git", "orchestrator", "runs", "TASK-001", "1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The attempt record, sealed as the orchestrator writes it: an unsealed one is not
	// evidence of a claim (TestSpotCheckRecordsSealed).
	sealed, err := userKey(t).SealJSON(seal.KindResult, []byte(`{"task": "TASK-001", "attempt": 1, "outcome": "completed", "claim": "done"}`))
	if err != nil {
		t.Fatal(err)
	}
	p.write(".git/orchestrator/runs/TASK-001/1/result.json", string(sealed))
	rep := p.spotcheck(false)
	if rep.Decision != spotcheck.Fail || !slices.Equal(rep.Mismatch, []string{"TASK-001"}) {
		t.Fatalf("decision %s, mismatch %v", rep.Decision, rep.Mismatch)
	}
	issues, _ := os.ReadFile(filepath.Join(p.root, ".orchestrator", "issue_queue.md"))
	for _, want := range []string{"| Type | qa_failure |", "| Type | qa_mismatch |", "| Source | qa_mismatch |", "| Source Task | TASK-001 |"} {
		if !strings.Contains(string(issues), want) {
			t.Errorf("issue queue lacks %q:\n%s", want, issues)
		}
	}
}

// TestJSMutants: JavaScript and TypeScript mutants at the token level: binary operators
// flipped (not those in strings or comments), returned values replaced by undefined.
func TestJSMutants(t *testing.T) {
	src := "export function price(a, b) {\n  const label = \"a < b\"; // a + b\n  if (a >= b && b > 0) {\n    return a - b;\n  }\n  return a * 2;\n}\n"
	ms, err := spotcheck.Mutants(t.Context(), "src/price.ts", []byte(src), map[int]bool{2: true, 3: true, 4: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.String())
		if mutated := string(m.Apply([]byte(src))); mutated == src {
			t.Errorf("%s changes nothing", m)
		}
	}
	want := []string{"src/price.ts:3: >= -> <", "src/price.ts:3: && -> ||", "src/price.ts:3: > -> <=", "src/price.ts:4: return undefined instead of a - b", "src/price.ts:4: - -> +"}
	if !slices.Equal(got, want) {
		t.Errorf("mutants\n%q\nwant\n%q", got, want)
	}
}

// TestGoMutants: the Go mutants of a function, in source order, each a program that still
// parses.
func TestGoMutants(t *testing.T) {
	src := "package p\n\nfunc F(xs []int) (int, error) {\n\tn := 0\n\tfor _, x := range xs {\n\t\tif x > 0 {\n\t\t\tn += x\n\t\t}\n\t}\n\tprintln(n)\n\treturn n * 2, nil\n}\n"
	ms, err := spotcheck.Mutants(t.Context(), "p/f.go", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.String())
	}
	want := []string{"p/f.go:6: negate condition x > 0", "p/f.go:6: > -> <=", "p/f.go:7: drop n += x", "p/f.go:10: drop println(n)", "p/f.go:11: return zero values instead of n * 2", "p/f.go:11: * -> /"}
	if !slices.Equal(got, want) {
		t.Errorf("mutants\n%q\nwant\n%q", got, want)
	}
	for _, m := range ms {
		if _, err := spotcheck.Mutants(t.Context(), "p/f.go", m.Apply([]byte(src)), nil); err != nil {
			t.Errorf("%s does not parse: %v", m, err)
		}
	}
}
