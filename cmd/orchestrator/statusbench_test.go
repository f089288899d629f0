package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// BenchmarkStatusNext runs `orchestrator status` and `orchestrator next` as whole
// processes on a generated 10,000-task queue in a git repository, writing to a file as a
// shell redirect would, and reports the milliseconds of each. With
// ORCHESTRATOR_BENCH_BASE=REV it also builds the binary of that revision of this
// repository and runs the same commands with it in the same loop, reporting the ratios
// (target: status and next at most 1.0× the earlier binary's).
func BenchmarkStatusNext(b *testing.B) {
	dir := b.TempDir()
	bins := map[string]string{"": buildOrchestrator(b, dir)}
	if rev := os.Getenv("ORCHESTRATOR_BENCH_BASE"); rev != "" {
		bins["base"] = buildRevision(b, filepath.Join(dir, "base"), rev)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".orchestrator"), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(repo, ".orchestrator", "task_queue.md"))
	if err != nil {
		b.Fatal(err)
	}
	if err := queuegen.WriteQueue(f, 10000); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "queue"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	sink, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	took := map[string]time.Duration{}
	run := func(bin, cmd string) time.Duration {
		c := exec.Command(bin, "--dir", repo, cmd)
		c.Stdout = sink
		t0 := time.Now()
		if err := c.Run(); err != nil {
			b.Fatalf("%s %s: %v", bin, cmd, err)
		}
		return time.Since(t0)
	}
	b.ResetTimer()
	for b.Loop() {
		for which, bin := range bins {
			for _, cmd := range []string{"status", "next"} {
				took[which+cmd] += run(bin, cmd)
			}
		}
	}
	n := float64(b.N)
	for _, cmd := range []string{"status", "next"} {
		b.ReportMetric(float64(took[cmd].Microseconds())/1000/n, cmd+"-ms/op")
		if base := took["base"+cmd]; base > 0 {
			b.ReportMetric(float64(base.Microseconds())/1000/n, "base-"+cmd+"-ms/op")
			b.ReportMetric(float64(took[cmd])/float64(base), cmd+"-ratio")
		}
	}
}

// buildRevision builds the orchestrator of revision rev of this repository into dir, from
// the revision's files (git archive), not the working tree.
func buildRevision(b *testing.B, dir, rev string) string {
	b.Helper()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive "$1" | tar -x -C "$2"`, "sh", rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		b.Fatalf("git archive %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(dir, "orchestrator")
	build := exec.Command("go", "build", "-o", bin, "./cmd/orchestrator")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds it
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", rev, err, out)
	}
	return bin
}
