package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// BenchmarkSetVsSed runs `orchestrator set TASK-05000 Status=…` on a generated 10,000-task
// queue as a whole process, side by side with `sed -i` doing the same one-cell edit, and
// reports both times and their ratio (target: ratio ≤ 1.0). Each iteration flips the value,
// so every run really rewrites the file.
func BenchmarkSetVsSed(b *testing.B) {
	dir := b.TempDir()
	bin := buildOrchestrator(b, dir)
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
		flushSed(b, sedFile)
		orchTime += t1.Sub(t0)
		sedTime += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(orchTime.Microseconds())/1000/n, "set-ms/op")
	b.ReportMetric(float64(sedTime.Microseconds())/1000/n, "sed-ms/op")
	b.ReportMetric(float64(orchTime)/float64(sedTime), "ratio")
}

// BenchmarkValidateVsSed runs `orchestrator validate` as a whole process on a generated
// 10,000-task queue with a 10,000-ID test plan (5,000 IDs mapped by the queue's TEST tasks,
// 5,000 not: 5,000 findings, exit 1) and a current coverage matrix, side by side with
// `sed -i` editing one cell of the same file, and reports both times and their ratio
// (target: ratio ≤ 1.0; in process, BenchmarkValidate in package queue, target 50 ms).
func BenchmarkValidateVsSed(b *testing.B) {
	dir := b.TempDir()
	bin := buildOrchestrator(b, dir)
	repo := filepath.Join(dir, "repo")
	for _, d := range []string{".orchestrator", "projectspec"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	queueFile := filepath.Join(repo, ".orchestrator", "task_queue.md")
	f, err := os.Create(queueFile)
	if err != nil {
		b.Fatal(err)
	}
	if err := queuegen.WriteQueue(f, 10000); err != nil {
		b.Fatal(err)
	}
	f.Close()
	f, err = os.Create(filepath.Join(repo, "projectspec", "test-plan-output.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := queuegen.WritePlan(f, 10000, 5000); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(bin, "--dir", repo, "coverage", "--write").CombinedOutput(); err != nil {
		b.Fatalf("coverage --write: %v\n%s", err, out)
	}
	src, err := os.ReadFile(queueFile)
	if err != nil {
		b.Fatal(err)
	}
	sedFile := filepath.Join(dir, "sed_queue.md")
	if err := os.WriteFile(sedFile, src, 0o644); err != nil {
		b.Fatal(err)
	}
	// The generated tasks name the claude agent: a stand-in on PATH, so that validate does
	// not warn that it is not installed.
	stub := filepath.Join(dir, "bin")
	if err := os.MkdirAll(stub, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stub, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"))
	values := [2]string{"completed", "pending"}
	var validateTime, sedTime time.Duration
	var validateRuns, sedRuns []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		to, from := values[i%2], values[(i+1)%2]
		t0 := time.Now()
		validate := exec.Command(bin, "--dir", repo, "validate")
		validate.Env = env
		out, err := validate.Output()
		t1 := time.Now()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || bytes.Count(out, []byte{'\n'}) != 5000 {
			b.Fatalf("validate: %v, %d lines", err, bytes.Count(out, []byte{'\n'}))
		}
		script := "/^### TASK-05000$/,/^### /s/^| Status | " + from + " |$/| Status | " + to + " |/"
		t2 := time.Now()
		if out, err := exec.Command("sed", "-i", script, sedFile).CombinedOutput(); err != nil {
			b.Fatalf("sed: %v\n%s", err, out)
		}
		t3 := time.Now()
		flushSed(b, sedFile)
		validateTime += t1.Sub(t0)
		sedTime += t3.Sub(t2)
		validateRuns, sedRuns = append(validateRuns, t1.Sub(t0)), append(sedRuns, t3.Sub(t2))
	}
	n := float64(b.N)
	b.ReportMetric(float64(validateTime.Microseconds())/1000/n, "validate-ms/op")
	b.ReportMetric(float64(sedTime.Microseconds())/1000/n, "sed-ms/op")
	b.ReportMetric(float64(validateTime)/float64(sedTime), "ratio")
	// The fastest run of each is less disturbed by other work on the machine.
	b.ReportMetric(float64(slices.Min(validateRuns))/float64(slices.Min(sedRuns)), "min-ratio")
	// So are the median runs; other work slows the two-core validate more than sed.
	slices.Sort(validateRuns)
	slices.Sort(sedRuns)
	b.ReportMetric(float64(validateRuns[len(validateRuns)/2])/float64(sedRuns[len(sedRuns)/2]), "median-ratio")
}

// flushSed writes sed's output to disk, outside the timed part: sed leaves 4.7 MB of dirty
// pages, whose writeback would otherwise run during the next orchestrator command.
func flushSed(b *testing.B, path string) {
	if err := exec.Command("sync", path).Run(); err != nil {
		b.Fatal(err)
	}
}

// buildOrchestrator builds the command into dir, for whole-process benchmarks.
func buildOrchestrator(b *testing.B, dir string) string {
	b.Helper()
	if _, err := exec.LookPath("sed"); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("no sed to compare with, and CI=true")
		}
		b.Skip("no sed to compare with")
	}
	bin := filepath.Join(dir, "orchestrator")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds it
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}
