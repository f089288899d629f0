package gate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/seal"
)

// BenchmarkImpactGreenOnePackage measures the GREEN gate of a change to one package of a
// 20-package Go module (one that no other package imports), with the sealed records of an
// earlier GREEN, against what a person pays for the same change: a warm-cache go test
// ./... (the other packages' results come from Go's test cache) and go test -count=1 ./...
// (everything runs). Each of them gets a change of its own, so that none profits from
// another's build. It reports the ratios (target: gate/warm ≤ 1.5), and the gate without
// the records (every package run, canaries everywhere) against the warm run:
//
//	go test ./gate -run '^$' -bench ImpactGreenOnePackage -benchtime 3x
func BenchmarkImpactGreenOnePackage(b *testing.B) {
	root := manyModule(b, 20)
	env := EnvFor(PinnedEnv(os.Environ()), root)
	goTest := func(args ...string) time.Duration {
		b.Helper()
		cmd := exec.Command("go", append([]string{"test"}, args...)...)
		cmd.Dir, cmd.Env = root, env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go test %v: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	change := 0
	touch := func() {
		change++
		src := fmt.Sprintf("package p13\n\n// Change is change %d.\nfunc Change() int { return %d }\n", change, change)
		if err := os.WriteFile(filepath.Join(root, "p13", "change.go"), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	key, err := seal.New()
	if err != nil {
		b.Fatal(err)
	}
	im := &Impact{Dir: filepath.Join(b.TempDir(), "impact"), Key: key, Commit: "bench"}
	goTest("./...") // Go's caches warm
	if v := impactGreen(b, root, im, nil); !v.Pass {
		b.Fatalf("the first GREEN failed: %s\n%s", v.Reason, v.Log.String())
	}
	var gate, full, warm, cold time.Duration
	n := 0
	for b.Loop() {
		n++
		touch()
		start := time.Now()
		v := impactGreen(b, root, im, nil)
		gate += time.Since(start)
		if !v.Pass || !slices.Equal(RanCommands(v.Log.String()), []string{"go test ./p13"}) {
			b.Fatalf("GREEN: pass %v, ran %q; want go test ./p13\n%s", v.Pass, RanCommands(v.Log.String()), v.Log.String())
		}
		touch()
		start = time.Now()
		if v := impactGreen(b, root, nil, nil); !v.Pass {
			b.Fatalf("GREEN without records: %s", v.Reason)
		}
		full += time.Since(start)
		touch()
		warm += goTest("./...")
		touch()
		cold += goTest("-count=1", "./...")
	}
	b.ReportMetric(float64(gate.Milliseconds())/float64(n), "gate-ms/op")
	b.ReportMetric(float64(warm.Milliseconds())/float64(n), "warm-ms/op")
	b.ReportMetric(float64(gate)/float64(warm), "gate/warm")
	b.ReportMetric(float64(gate)/float64(cold), "gate/count1")
	b.ReportMetric(float64(full)/float64(warm), "full-gate/warm")
}
