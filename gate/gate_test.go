package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
)

// project writes a small repository: n source files and n test files in a few packages.
func project(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("pkg%d", i%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte(strings.Repeat("// code\n", 40)), 0o644)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d_test.go", i)), []byte(strings.Repeat("// test\n", 40)), 0o644)
	}
	return root
}

var globs = []string{"**/*_test.go"}

func TestSnapshotChanged(t *testing.T) {
	root := project(t, 4)
	s, err := Take(root)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "pkg0", "f0.go"), []byte("// changed, same size?\n"), 0o644)
	os.WriteFile(filepath.Join(root, "pkg1", "new_test.go"), []byte("x"), 0o644)
	os.Remove(filepath.Join(root, "pkg2", "f2_test.go"))
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "index"), []byte("x"), 0o644)
	got, err := s.Changed(root)
	if err != nil {
		t.Fatal(err)
	}
	want := "pkg0/f0.go pkg1/new_test.go pkg2/f2_test.go"
	if strings.Join(got, " ") != want {
		t.Errorf("changed = %v, want %s", got, want)
	}
}

// TestSnapshotSameSizeRewrite: a file rewritten with the same size right after the snapshot
// is still seen as changed (its content is hashed when its time is too close to tell).
func TestSnapshotSameSizeRewrite(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "a.go")
	os.WriteFile(p, []byte("aaaa"), 0o644)
	s, err := Take(root)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("bbbb"), 0o644)
	if got, _ := s.Changed(root); len(got) != 1 {
		t.Errorf("changed = %v, want [a.go]", got)
	}
}

func TestRedScopeAndIDs(t *testing.T) {
	root := project(t, 2)
	dir := t.TempDir()
	in := Input{Root: root, AttemptDir: dir, Task: "TASK-T01", Attempt: 1,
		TestCommand: "false", Globs: globs, Timeout: time.Minute}

	in.Changed = []string{"pkg0/f0_test.go", "pkg0/f0.go"}
	v, err := Red(context.Background(), in)
	if err != nil || v.Pass || v.Type != TypeScope || !strings.Contains(v.Reason, "pkg0/f0.go") {
		t.Fatalf("scope: %+v %v", v, err)
	}

	in.Changed = []string{"pkg0/f0_test.go"}
	in.TestIDs = []string{"UNIT-001"}
	if v, _ := Red(context.Background(), in); v.Pass || !strings.Contains(v.Reason, "UNIT-001") {
		t.Fatalf("unnamed Test ID passed: %+v", v)
	}
	os.WriteFile(filepath.Join(root, "pkg0", "f0_test.go"), []byte("func TestAdd_UNIT_001(t *testing.T) {}\n"), 0o644)
	v, err = Red(context.Background(), in)
	if err != nil || !v.Pass {
		t.Fatalf("honest RED failed: %+v %v\n%s", v, err, v.Log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "handoff-red.json")); err != nil {
		t.Fatal(err)
	}

	in.TestCommand = "true"
	if v, _ := Red(context.Background(), in); v.Pass || v.Type != TypeFalseRed {
		t.Fatalf("passing tests gave %+v", v)
	}
}

func TestGreenIntegrity(t *testing.T) {
	root := project(t, 2)
	dir := t.TempDir()
	red := Input{Root: root, AttemptDir: dir, Task: "TASK-T01", Attempt: 1,
		TestCommand: "false", Globs: globs, Changed: []string{"pkg0/f0_test.go"}, Timeout: time.Minute}
	if v, err := Red(context.Background(), red); err != nil || !v.Pass {
		t.Fatalf("RED: %+v %v", v, err)
	}
	var m Manifest
	b, _ := os.ReadFile(filepath.Join(dir, "handoff-red.json"))
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m.Command = "true"
	green := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1,
		Globs: globs, Deps: []*Manifest{&m}, Changed: []string{"pkg0/f0.go"}, Timeout: time.Minute}
	if v, err := Green(context.Background(), green); err != nil || !v.Pass {
		t.Fatalf("GREEN: %+v %v\n%s", v, err, v.Log.String())
	}
	// GREEN's manifest records the test hashes it checked, which are RED's.
	var gm Manifest
	b, _ = os.ReadFile(filepath.Join(green.AttemptDir, "handoff-green.json"))
	if err := json.Unmarshal(b, &gm); err != nil {
		t.Fatal(err)
	}
	if len(m.TestHashes) != 1 || !maps.Equal(gm.TestHashes, m.TestHashes) {
		t.Errorf("GREEN test hashes %v, want RED's %v", gm.TestHashes, m.TestHashes)
	}
	os.WriteFile(filepath.Join(root, "pkg0", "f0_test.go"), []byte("weaker"), 0o644)
	v, err := Green(context.Background(), green)
	if err != nil || v.Pass || v.Type != TypeTampered || v.File != "pkg0/f0_test.go" {
		t.Fatalf("tampered test passed: %+v %v", v, err)
	}
}

// BenchmarkGateOverhead measures what the RED and GREEN gates cost an attempt beyond the
// test runs themselves (target: ≤ 20 ms): the snapshot before the agent and the changed
// files after it, the scope and integrity checks, hashing the test files and writing the
// manifests, on a project of 200 source and 200 test files. The test command is `true`, and
// its own run time is subtracted.
func BenchmarkGateOverhead(b *testing.B) {
	root := project(b, 200)
	var overhead time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		snap, err := Take(root)
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "pkg0", "f0_test.go"), []byte(fmt.Sprintf("func TestX_%d(t *testing.T) {}\n", i)), 0o644)
		changed, err := snap.Changed(root)
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		red := Input{Root: root, AttemptDir: dir, Task: "TASK-T01", Attempt: 1,
			TestCommand: "false", Globs: globs, Changed: changed, Timeout: time.Minute}
		v, err := Red(context.Background(), red)
		if err != nil || !v.Pass {
			b.Fatalf("RED: %+v %v", v, err)
		}
		var m Manifest
		bb, err := os.ReadFile(filepath.Join(dir, "handoff-red.json"))
		if err != nil || json.Unmarshal(bb, &m) != nil {
			b.Fatalf("manifest: %v", err)
		}
		m.Command = "true"
		deps := []*Manifest{&m}
		green := Input{Root: root, AttemptDir: b.TempDir(), Task: "TASK-001", Attempt: 1,
			Globs: globs, Deps: deps, Changed: []string{"pkg0/f0.go"}, Timeout: time.Minute}
		g, err := Green(context.Background(), green)
		if err != nil || !g.Pass {
			b.Fatalf("GREEN: %+v %v", g, err)
		}
		total := time.Since(start)
		for _, r := range append(v.Runs, g.Runs...) {
			total -= r.Duration
		}
		overhead += total
	}
	b.ReportMetric(float64(overhead.Microseconds())/1000/float64(b.N), "overhead-ms/attempt")
}

// TestGreenExitRunnerDeclaredTests: a test command judged by exit code names no tests, so the
// tests declared in the RED files cannot be looked for in its output; its exit code decides.
func TestGreenExitRunnerDeclaredTests(t *testing.T) {
	root := project(t, 1)
	os.WriteFile(filepath.Join(root, "pkg0", "f0_test.go"), []byte("func TestAdd(t *testing.T) {}\n"), 0o644)
	m := &Manifest{Task: "TASK-T01", Command: "true", DeclaredTests: []string{"TestAdd"}, TestHashes: map[string]string{}}
	in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1,
		Globs: globs, Deps: []*Manifest{m}, Timeout: time.Minute}
	if v, err := Green(context.Background(), in); err != nil || !v.Pass {
		t.Fatalf("GREEN: %+v %v\n%s", v, err, v.Log.String())
	}
	m.Command = "false"
	if v, _ := Green(context.Background(), in); v.Pass {
		t.Fatal("a failing exit code passed")
	}
}

// TestFindRed: a task without attempts, or whose attempts did not pass RED, has no RED
// manifest; one that cannot be read is an error, so that GREEN does not skip its integrity.
// A manifest whose seal fails (written by hand, edited, copied from another attempt, or of
// before seals) is not evidence: it is skipped as if that attempt had none.
func TestFindRed(t *testing.T) {
	key, err := seal.New()
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	if m, err := FindRed(key, runs, "TASK-T01"); m != nil || err != nil {
		t.Fatalf("no attempt: %v %v", m, err)
	}
	write := func(n int, m *Manifest, k *seal.Key) string {
		dir := filepath.Join(runs, "TASK-T01", strconv.Itoa(n))
		os.MkdirAll(dir, 0o755)
		path := filepath.Join(dir, "handoff-red.json")
		if err := m.Write(path, k); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(1, &Manifest{Phase: "red", Task: "TASK-T01", Attempt: 1}, key)
	os.MkdirAll(filepath.Join(runs, "TASK-T01", "2"), 0o755)
	if m, err := FindRed(key, runs, "TASK-T01"); err != nil || m == nil || m.Attempt != 1 {
		t.Fatalf("latest attempt with a manifest: %+v %v", m, err)
	}
	// Cheats: attempt 3's manifest, each way an agent could write one.
	other, _ := seal.New()
	cheats := []struct {
		name  string
		write func() string
	}{
		{name: "unsealed", write: func() string { return write(3, &Manifest{Phase: "red", Task: "TASK-T01", Attempt: 3}, nil) }},
		{name: "sealed with another key", write: func() string { return write(3, &Manifest{Phase: "red", Task: "TASK-T01", Attempt: 3}, other) }},
		{name: "another attempt's, copied", write: func() string { return write(3, &Manifest{Phase: "red", Task: "TASK-T01", Attempt: 1}, key) }},
		{name: "edited after sealing", write: func() string {
			p := write(3, &Manifest{Phase: "red", Task: "TASK-T01", Attempt: 3, TestHashes: map[string]string{"a_test.go": "aaaa"}}, key)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("aaaa"), []byte("bbbb"), 1), 0o644)
			return p
		}},
	}
	for _, c := range cheats {
		t.Run(c.name, func(t *testing.T) {
			path := c.write()
			defer os.Remove(path)
			if m, err := FindRed(key, runs, "TASK-T01"); err != nil || m == nil || m.Attempt != 1 {
				t.Errorf("FindRed = %+v, %v; want attempt 1's, the forged attempt 3 ignored", m, err)
			}
			var ee *seal.EditedError
			if _, err := OpenManifest(key, path, "TASK-T01", 3); !errors.As(err, &ee) || ee.Record != path {
				t.Errorf("OpenManifest = %v, want an EditedError naming %s", err, path)
			}
		})
	}
	// The honest twin: attempt 3's own sealed manifest is the one found.
	write(3, &Manifest{Phase: "red", Task: "TASK-T01", Attempt: 3}, key)
	if m, err := FindRed(key, runs, "TASK-T01"); err != nil || m == nil || m.Attempt != 3 {
		t.Fatalf("honest attempt 3: %+v %v", m, err)
	}
	os.MkdirAll(filepath.Join(runs, "TASK-T01", "4", "handoff-red.json"), 0o755) // unreadable as a file
	if _, err := FindRed(key, runs, "TASK-T01"); err == nil {
		t.Fatal("an unreadable manifest: no error")
	}
}

// TestRegressionDocTestsMoved: a Rust doc test that code added above its item moved to
// another line is the same test, and passes; one that is gone is a regression.
func TestRegressionDocTestsMoved(t *testing.T) {
	run := &testrun.Result{Tests: []testrun.Test{
		{ID: "src/lib.rs - probe (line 371)", Status: testrun.Passed},
		{ID: "src/lib.rs - probe (line 387)", Status: testrun.Passed},
		{ID: "tests::adds", Status: testrun.Passed},
	}}
	passed := map[string]bool{}
	for _, id := range run.Passed() {
		passed[id] = true
	}
	in := Input{Baseline: []string{"src/lib.rs - probe (line 335)", "src/lib.rs - probe (line 351)", "tests::adds"}}
	if v := checkFull(&Verdict{}, in, run, passed); v != nil {
		t.Errorf("moved doc tests: %s", v.Reason)
	}
	in.Baseline = append(in.Baseline, "src/lib.rs - gone (line 20)")
	if v := checkFull(&Verdict{}, in, run, passed); v == nil || v.Type != TypeRegression || !strings.Contains(v.Reason, "src/lib.rs - gone (line 20)") {
		t.Errorf("a doc test gone: %+v, want a regression naming it", v)
	}
}
