package spotcheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/spotcheck"
	"github.com/orchestrator/orchestrator/testrun"
)

// BenchmarkSelect10k: the selection of SPEC §11.1 over a plan of 10,000 tests in five
// categories, each with a project test named after it (the target: 5 ms).
func BenchmarkSelect10k(b *testing.B) {
	cats := []string{"unit", "integration", "e2e", "security", "performance"}
	var js strings.Builder
	js.WriteString(`{"tests": {`)
	var tests []spotcheck.ProjectTest
	for ci, c := range cats {
		if ci > 0 {
			js.WriteString(", ")
		}
		fmt.Fprintf(&js, "%q: [", c)
		for i := range 2000 {
			id := fmt.Sprintf("%s-%04d", strings.ToUpper(c[:3]), i)
			if i > 0 {
				js.WriteString(", ")
			}
			fmt.Fprintf(&js, `{"id": %q}`, id)
			name := "Test" + strings.ReplaceAll(id, "-", "_")
			tests = append(tests, spotcheck.ProjectTest{File: "x/x_test.go", Name: name, ID: "example.com/x." + name})
		}
		js.WriteString("]")
	}
	js.WriteString("}}")
	plan, err := queue.ParsePlan("plan.json", []byte(js.String()))
	if err != nil {
		b.Fatal(err)
	}
	feature := []string{"UNI-0001", "INT-0002"}
	b.ResetTimer()
	for b.Loop() {
		s := spotcheck.Select("TASK-Q01", plan, feature, tests)
		if len(s.Categories) != 6 {
			b.Fatal(len(s.Categories))
		}
	}
}

// BenchmarkMutant: the orchestrator's own time per mutant besides the test run (the
// target: 20 ms): making the mutants of a Go file and applying, writing and restoring one.
// The test run is a no-op here; BenchmarkMutationRun measures a real one.
func BenchmarkMutant(b *testing.B) {
	dir := b.TempDir()
	src := []byte("package calc\n\n// Add returns a + b, at most 1000.\nfunc Add(a, b int) int {\n\tif a+b > 1000 {\n\t\treturn 1000\n\t}\n\treturn a + b\n}\n")
	if err := os.WriteFile(filepath.Join(dir, "add.go"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	lines := map[string]map[int]bool{"add.go": {5: true, 6: true, 8: true}}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		res, err := spotcheck.Mutate(context.Background(), spotcheck.MutateOptions{Task: "TASK-001", Dir: dir, Lines: lines, Limit: 20,
			Killed: func(context.Context) (bool, error) { return true, nil }})
		if err != nil {
			b.Fatal(err)
		}
		n += res.Mutants
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1e6, "ms/mutant")
}

// BenchmarkMutationRun: 20 mutants of a small Go package, each against its tests, beside
// 20 plain runs of the same tests: the mutation's cost over the runs it needs.
func BenchmarkMutationRun(b *testing.B) {
	dir := b.TempDir()
	var impl, test strings.Builder
	impl.WriteString("package calc\n")
	test.WriteString("package calc\n\nimport \"testing\"\n")
	for i := range 10 {
		fmt.Fprintf(&impl, "\nfunc F%d(a, b int) int {\n\tif a > b {\n\t\treturn a - b + %d\n\t}\n\treturn a + b\n}\n", i, i)
		fmt.Fprintf(&test, "\nfunc TestF%d(t *testing.T) {\n\tif F%d(5, 3) != %d || F%d(1, 2) != 3 {\n\t\tt.Fatal()\n\t}\n}\n", i, i, 2+i, i)
	}
	for name, text := range map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": impl.String(), "calc_test.go": test.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if out, err := exec.Command("go", "test", "-C", dir, ".").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	lines := map[string]map[int]bool{"calc.go": {}}
	for i := 1; i <= strings.Count(impl.String(), "\n"); i++ {
		lines["calc.go"][i] = true
	}
	killed := func(ctx context.Context) (bool, error) {
		res, err := testrun.Run(ctx, dir, "go test .", 0)
		if err != nil {
			return false, err
		}
		return res.ExitCode != 0, nil
	}
	b.Run("20 mutants", func(b *testing.B) {
		for b.Loop() {
			res, err := spotcheck.Mutate(context.Background(), spotcheck.MutateOptions{Task: "T", Dir: dir, Lines: lines, Limit: 20, Killed: killed})
			if err != nil || res.Mutants != 20 {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("20 plain runs", func(b *testing.B) {
		for b.Loop() {
			for range 20 {
				if _, err := killed(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
