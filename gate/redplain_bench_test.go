package gate

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRedVsPlain: the RED gate's whole cost on a test writer's honest change (issue
// 24's figure) against one plain run of the command the gate narrows to, in the same run:
// Go rows added to a table test, a pytest test rewritten to fail at the base, a Go golden
// file. The plain run is a real one (Go's test cache off, its build cache warm, as the
// gate's is). Metric x-plain is the gate's time over the plain run's.
func BenchmarkRedVsPlain(b *testing.B) {
	for _, name := range []string{"go_rows_added", "py_changed_fails", "go_golden"} {
		b.Run(name, func(b *testing.B) {
			in, meta := loadRedCase(b, "testdata/red/"+name+".txtar")
			if meta["want"] != "pass" {
				b.Fatalf("%s is not an honest case", name)
			}
			first, err := Red(context.Background(), in)
			if err != nil || !first.Pass || len(first.Runs) == 0 {
				b.Fatalf("RED: %+v %v", first, err)
			}
			narrowed := first.Runs[0].Command
			plain := func() time.Duration {
				start := time.Now()
				cmd := exec.Command("sh", "-c", narrowed)
				cmd.Dir = in.Root
				cmd.Env = append(os.Environ(), "GOFLAGS=-count=1")
				cmd.Run() // it fails: the tests are RED
				return time.Since(start)
			}
			plain()
			var red, runs time.Duration
			for b.Loop() {
				runs += plain()
				in.AttemptDir = b.TempDir()
				start := time.Now()
				v, err := Red(context.Background(), in)
				if err != nil || !v.Pass {
					b.Fatalf("RED: %+v %v", v, err)
				}
				red += time.Since(start)
			}
			b.ReportMetric(float64(red.Milliseconds())/float64(b.N), "red-ms")
			b.ReportMetric(float64(runs.Milliseconds())/float64(b.N), "plain-ms")
			b.ReportMetric(float64(red)/float64(runs), "x-plain")
		})
	}
}
