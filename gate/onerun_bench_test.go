package gate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// oneRunProject writes a Go module of 8 packages with 3 tests each, every test taking
// 400 ms, so that its whole suite takes about 5 s on 2 cores.
func oneRunProject(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("go.mod", "module example.com/big\n\ngo 1.22\n")
	for p := range 8 {
		pkg := fmt.Sprintf("p%d", p)
		write(pkg+"/code.go", fmt.Sprintf("package %s\n\n// Twice doubles n.\nfunc Twice(n int) int { return 2 * n }\n", pkg))
		test := fmt.Sprintf("package %s\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n", pkg)
		for i := range 3 {
			test += fmt.Sprintf("\nfunc TestTwice%d(t *testing.T) {\n\ttime.Sleep(400 * time.Millisecond)\n\tif Twice(%d) != %d {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n", i, i, 2*i)
		}
		write(pkg+"/code_test.go", test)
	}
	return dir
}

// pytestProject writes a pytest project of 8 test files with 3 tests each, every test
// taking 200 ms, so that its whole suite takes about 5 s.
func pytestProject(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for f := range 8 {
		src := fmt.Sprintf("import time\n\nfrom shop.code%d import twice\n", f)
		for i := range 3 {
			src += fmt.Sprintf("\n\ndef test_twice_%d():\n    time.sleep(0.2)\n    assert twice(%d) == %d\n", i, i, 2*i)
		}
		for rel, text := range map[string]string{
			fmt.Sprintf("tests/test_code%d.py", f): src,
			fmt.Sprintf("shop/code%d.py", f):       "def twice(n):\n    return 2 * n\n",
			"shop/__init__.py":                     "",
		} {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// BenchmarkGreenOneRun times the GREEN gate of a BUILD task on a project whose whole suite
// takes about 5 s, against one run of that suite alone (issue 13's figure: at most 1.2×,
// the gate's own time beside the test run at most 20 ms), on a Go module and a pytest
// project. The gate runs the suite once, with its canaries, and checks the RED tests and
// the 24 baseline tests by name in it.
//
//	go test ./gate -run '^$' -bench BenchmarkGreenOneRun -benchtime 3x
func BenchmarkGreenOneRun(b *testing.B) {
	b.Run("go", func(b *testing.B) {
		if _, err := exec.LookPath("go"); err != nil {
			b.Skip("no go")
		}
		greenOneRun(b, oneRunProject(b), "go test -count=1 ./...", "p0/code.go")
	})
	b.Run("pytest", func(b *testing.B) {
		if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
			b.Skip("no pytest")
		}
		greenOneRun(b, pytestProject(b), "/usr/bin/python3 -m pytest -q", "shop/code0.py")
	})
}

func greenOneRun(b *testing.B, root, command, changed string) {
	ctx := context.Background()
	env := EnvFor(PinnedEnv(os.Environ()), root)
	first, err := testrun.Run(ctx, root, command, 5*time.Minute, testrun.WithEnv(env))
	if err != nil || first.Class != testrun.ClassPass {
		b.Fatalf("the suite does not pass: %v %v\n%s", err, first.Class, first.Output)
	}
	baseline := first.Passed()
	red := &Manifest{Phase: "red", Task: "TASK-T01", FailingTests: baseline[:3], Command: command}
	var gateTime, suiteTime, ownTime time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := testrun.Run(ctx, root, command, 5*time.Minute, testrun.WithEnv(env))
		if err != nil || res.Class != testrun.ClassPass {
			b.Fatalf("suite: %v", err)
		}
		suiteTime += time.Since(start)

		in := Input{
			Root: root, AttemptDir: b.TempDir(), Task: "TASK-001", Attempt: 1,
			TestCommand: command, FullCommand: command, Baseline: baseline,
			Deps: []*Manifest{red}, Changed: []string{changed}, Timeout: 5 * time.Minute, Env: env,
		}
		start = time.Now()
		v, err := Green(ctx, in)
		took := time.Since(start)
		if err != nil || !v.Pass {
			b.Fatalf("GREEN: %v %s", err, v.Log.String())
		}
		gateTime += took
		var ran time.Duration
		for _, r := range v.Runs {
			ran += r.Duration
		}
		ownTime += took - ran
	}
	n := float64(b.N)
	b.ReportMetric(float64(gateTime.Milliseconds())/n, "gate-ms")
	b.ReportMetric(float64(suiteTime.Milliseconds())/n, "suite-ms")
	b.ReportMetric(float64(gateTime)/float64(suiteTime), "ratio")
	b.ReportMetric(float64(ownTime.Microseconds())/1000/n, "own-ms")
}
