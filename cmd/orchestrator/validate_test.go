package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// TestValidateLargeQueue runs validate on a queue large enough to be mapped and parsed in
// two halves at once (2,000 tasks, about 0.9 MB) with a plan of 2,000 IDs of which 1,000 no
// task maps: it reports exactly those, in the plan's order, and exits 1.
func TestValidateLargeQueue(t *testing.T) {
	root := t.TempDir()
	write := func(rel string, gen func(*os.File) error) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := gen(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// The generated tasks name the claude agent: a stand-in on PATH keeps validate's warning
	// about a missing program out of the findings counted here.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	write(".orchestrator/task_queue.md", func(f *os.File) error { return queuegen.WriteQueue(f, 2000) })
	write("projectspec/test-plan-output.json", func(f *os.File) error { return queuegen.WritePlan(f, 2000, 1000) })
	run := func(want int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"--dir", root}, args...), nil, &stdout, &stderr); code != want {
			t.Fatalf("%v: exit %d, want %d: %s", args, code, want, stderr.String())
		}
		return stdout.String()
	}
	run(0, "coverage", "--write")
	lines := strings.Split(strings.TrimSuffix(run(1, "validate"), "\n"), "\n")
	if len(lines) != 1000 {
		t.Fatalf("%d findings, want 1000:\n%s", len(lines), strings.Join(lines[:min(len(lines), 5)], "\n"))
	}
	plan := filepath.Join(root, "projectspec", "test-plan-output.json")
	prev := 0
	for _, l := range lines {
		var line int
		rest, ok := strings.CutPrefix(l, plan+":")
		if !ok || !strings.Contains(rest, ": not mapped: no TEST task lists it in Test IDs (") {
			t.Fatalf("finding %q, want an unmapped plan ID", l)
		}
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			line = line*10 + int(c-'0')
		}
		if line < prev {
			t.Fatalf("finding %q out of line order (after line %d)", l, prev)
		}
		prev = line
	}
}
