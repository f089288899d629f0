package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// BenchmarkSetVsSed runs `orchestrator set TASK-05000 Status=…` on a generated 10,000-task
// queue as a whole process, side by side with `sed -i` doing the same one-cell edit, and
// reports both times and their ratio (target: ratio ≤ 1.0). Each iteration flips the value,
// so every run really rewrites the file.
func BenchmarkSetVsSed(b *testing.B) {
	if _, err := exec.LookPath("sed"); err != nil {
		b.Skip("no sed")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "orchestrator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".orchestrator"), 0o755); err != nil {
		b.Fatal(err)
	}
	queueFile := filepath.Join(repo, ".orchestrator", "task_queue.md")
	sedFile := filepath.Join(dir, "sed_queue.md")
	for _, p := range []string{queueFile, sedFile} {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := queuegen.WriteQueue(f, 10000); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	values := [2]string{"completed", "pending"}
	var orchTime, sedTime time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		to, from := values[i%2], values[(i+1)%2]
		t0 := time.Now()
		cmd := exec.Command(bin, "--dir", repo, "set", "TASK-05000", "Status="+to)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("set: %v\n%s", err, out)
		}
		t1 := time.Now()
		script := "/^### TASK-05000$/,/^### /s/^| Status | " + from + " |$/| Status | " + to + " |/"
		if out, err := exec.Command("sed", "-i", script, sedFile).CombinedOutput(); err != nil {
			b.Fatalf("sed: %v\n%s", err, out)
		}
		t2 := time.Now()
		orchTime += t1.Sub(t0)
		sedTime += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(orchTime.Microseconds())/1000/n, "set-ms/op")
	b.ReportMetric(float64(sedTime.Microseconds())/1000/n, "sed-ms/op")
	b.ReportMetric(float64(orchTime)/float64(sedTime), "ratio")
}
