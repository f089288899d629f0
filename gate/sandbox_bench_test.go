package gate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/sandbox"
	"github.com/orchestrator/orchestrator/testrun"
)

// goModule writes a Go module of n packages, each with a function and two quick tests, and
// a chain of imports (p1 imports p0, …), as a real module's tests are: mostly build time.
func goModule(b *testing.B, n int) string {
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
	write("go.mod", "module example.com/many\n\ngo 1.22\n")
	for p := range n {
		pkg := fmt.Sprintf("p%d", p)
		code := fmt.Sprintf("package %s\n\nimport \"strings\"\n\n// Shout upper-cases s.\nfunc Shout(s string) string { return strings.ToUpper(s) + \"!\" }\n", pkg)
		if p > 0 {
			code = fmt.Sprintf("package %s\n\nimport (\n\t\"strings\"\n\n\t\"example.com/many/p%d\"\n)\n\n// Shout upper-cases s.\nfunc Shout(s string) string { return strings.ToUpper(p%d.Shout(s))[:len(s)] + \"!\" }\n", pkg, p-1, p-1)
		}
		write(pkg+"/code.go", code)
		write(pkg+"/code_test.go", fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc TestShout(t *testing.T) {\n\tif got := Shout(\"hey\"); got != \"HEY!\" {\n\t\tt.Fatalf(\"Shout = %%q\", got)\n\t}\n}\n\nfunc TestShoutEmpty(t *testing.T) {\n\tif got := Shout(\"\"); got != \"!\" {\n\t\tt.Fatalf(\"Shout = %%q\", got)\n\t}\n}\n", pkg))
	}
	return dir
}

// benchJail is the gate's sandbox for a benchmark, or a skip where bubblewrap does not run.
func benchJail(b *testing.B) *Jail {
	b.Helper()
	if err := sandbox.Available(); err != nil {
		b.Skipf("bubblewrap: %v", err)
	}
	j, err := NewJail(JailSpec{Env: PinnedEnv(os.Environ()), Cache: CacheDir()})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// BenchmarkSandboxCost is the sandbox's own cost per gate run (issue 23): the same GREEN
// gate on the same project, in the sandbox and without it, on a Go module whose suite takes
// about 5 s and on a pytest project. Reported: the two gates' times, their ratio, and the
// sandbox's cost in milliseconds (target: under 50 ms or 5% of the suite, whichever is
// larger). A third figure is bwrap alone: `true` in the sandbox against `true`.
//
//	go test ./gate -run '^$' -bench BenchmarkSandboxCost -benchtime 3x
func BenchmarkSandboxCost(b *testing.B) {
	b.Run("bwrap-true", func(b *testing.B) {
		j := benchJail(b)
		dir := b.TempDir()
		p := j.Profile(dir, dir, j.Env)
		argv := p.Wrap([]string{"true"})
		var plain, jailed time.Duration
		for b.Loop() {
			start := time.Now()
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
			plain += time.Since(start)
			start = time.Now()
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			jailed += time.Since(start)
		}
		b.ReportMetric(float64((jailed-plain).Microseconds())/1000/float64(b.N), "sandbox-ms")
	})
	b.Run("go", func(b *testing.B) {
		j := benchJail(b)
		sandboxCost(b, j, oneRunProject(b), "go test -count=1 ./...", "p0/code.go")
	})
	b.Run("pytest", func(b *testing.B) {
		if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
			b.Skip("no pytest")
		}
		j := benchJail(b)
		sandboxCost(b, j, pytestProject(b), "/usr/bin/python3 -m pytest -q", "shop/code0.py")
	})
}

// passing returns the tests of the project that pass in a plain run: the baseline the
// gates of the benchmarks hold the run to, so that a run that breaks fails the gate.
func passing(b *testing.B, root, command string) []string {
	b.Helper()
	res, err := testrun.Run(context.Background(), root, command, 5*time.Minute, testrun.WithEnv(EnvFor(PinnedEnv(os.Environ()), root)))
	if err != nil || res.Class != testrun.ClassPass {
		b.Fatalf("the suite does not pass: %v\n%s", err, res.Output)
	}
	return res.Passed()
}

func sandboxCost(b *testing.B, j *Jail, root, command, changed string) {
	ctx := context.Background()
	env := PinnedEnv(os.Environ())
	in := Input{Root: root, Task: "TASK-001", Attempt: 1, TestCommand: command, FullCommand: command,
		Changed: []string{changed}, Timeout: 5 * time.Minute, Env: env, Baseline: passing(b, root, command)}
	green := func(in Input) time.Duration {
		in.AttemptDir = b.TempDir()
		start := time.Now()
		v, err := Green(ctx, in)
		if err != nil || !v.Pass {
			b.Fatalf("GREEN: %v %s", err, v.Log.String())
		}
		return time.Since(start)
	}
	// One canary in both: in the sandbox the jail's is planted at every run, and Go's
	// build cache keeps its compiled packages; without it every run would draw another.
	c := j.Canary()
	in.canary = &c
	jailed := in
	jailed.Jail = j
	green(jailed) // the gate's own build cache, warm as after its first run
	var plainTime, jailTime time.Duration
	for b.Loop() {
		plainTime += green(in)
		jailTime += green(jailed)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainTime.Milliseconds())/n, "plain-ms")
	b.ReportMetric(float64(jailTime.Milliseconds())/n, "sandboxed-ms")
	b.ReportMetric(float64(jailTime)/float64(plainTime), "ratio")
	b.ReportMetric(float64((jailTime-plainTime).Milliseconds())/n, "sandbox-ms")
}

// BenchmarkSandboxedGreen is the sandboxed GREEN gate against one plain run of the suite
// (issue 23, target ≤ 1.2×): on a Go module of 20 packages against `go test -count=1
// ./...`, and on a pytest project against `python3 -m pytest -q`, each run as a person
// would, outside the orchestrator.
//
//	go test ./gate -run '^$' -bench BenchmarkSandboxedGreen -benchtime 3x
func BenchmarkSandboxedGreen(b *testing.B) {
	b.Run("go-20-packages", func(b *testing.B) {
		j := benchJail(b)
		sandboxedGreen(b, func() *Jail { return j }, goModule(b, 20), "go test -count=1 ./...", "p0/code.go")
	})
	// The first gate of each run, a jail made for it as a watch's start makes one: with
	// the canary kept in the cache folder, and with one drawn per jail, as before.
	b.Run("go-20-packages-first-gate-of-a-run/kept-canary", func(b *testing.B) {
		benchJail(b)
		sandboxedGreen(b, func() *Jail { return benchJail(b) }, goModule(b, 20), "go test -count=1 ./...", "p0/code.go")
	})
	b.Run("go-20-packages-first-gate-of-a-run/drawn-canary", func(b *testing.B) {
		benchJail(b)
		sandboxedGreen(b, func() *Jail {
			j := benchJail(b)
			j.canary = testrun.NewCanary()
			return j
		}, goModule(b, 20), "go test -count=1 ./...", "p0/code.go")
	})
	b.Run("pytest", func(b *testing.B) {
		if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
			b.Skip("no pytest")
		}
		j := benchJail(b)
		sandboxedGreen(b, func() *Jail { return j }, pytestProject(b), "/usr/bin/python3 -m pytest -q", "shop/code0.py")
	})
}

// sandboxedGreen times the GREEN gate in the jail jail returns, which it asks for before
// each gate run, against the plain command.
func sandboxedGreen(b *testing.B, jail func() *Jail, root, command, changed string) {
	ctx := context.Background()
	in := Input{Root: root, Task: "TASK-001", Attempt: 1, TestCommand: command, FullCommand: command,
		Changed: []string{changed}, Timeout: 5 * time.Minute, Env: PinnedEnv(os.Environ()),
		Baseline: passing(b, root, command)}
	plain := func() time.Duration {
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = root
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", command, err, out)
		}
		return time.Since(start)
	}
	gateRun := func() time.Duration {
		in.AttemptDir = b.TempDir()
		in.Jail = jail()
		start := time.Now()
		v, err := Green(ctx, in)
		if err != nil || !v.Pass {
			b.Fatalf("GREEN: %v %s", err, v.Log.String())
		}
		return time.Since(start)
	}
	plain()
	gateRun() // both build caches warm, as on a project one works on
	var plainTime, gateTime time.Duration
	for b.Loop() {
		plainTime += plain()
		gateTime += gateRun()
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainTime.Milliseconds())/n, "plain-ms")
	b.ReportMetric(float64(gateTime.Milliseconds())/n, "gate-ms")
	b.ReportMetric(float64(gateTime)/float64(plainTime), "ratio")
}
