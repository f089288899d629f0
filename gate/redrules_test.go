package gate

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestRedRules runs the RED gate on the cases of testdata/red, with the real runners (go
// test, pytest), and checks its verdict (SPEC §7.2). Each case is a txtar archive: the
// project at the candidate's base (base/…), what the test writer wrote (agent/…), and in its
// comment the project's test command, the verdict wanted (pass or a failure type) and a part
// of the reason, and (changed:) the existing tests it lists as rewritten to fail at the
// base ("-" for none). The task has Test ID UNIT-001, or those ids: names ("-" for none),
// read as the project's test names with test_ids: names; with baseline: run, the gate gets
// the baseline's passing tests, from a run of the command at the base. The gate reads the
// base and the candidate as the loop gives them (Contents).
func TestRedRules(t *testing.T) {
	t.Parallel()
	cases, err := filepath.Glob("testdata/red/*.txtar")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, meta := loadRedCase(t, file)
			v, err := Red(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := "pass"
			if !v.Pass {
				got = v.Type
			}
			if got != meta["want"] || !strings.Contains(v.Reason, meta["reason"]) {
				t.Errorf("RED: %s: %s\nwant %s: …%s…\n%s", got, v.Reason, meta["want"], meta["reason"], v.Log.String())
			}
			if want, ok := meta["changed"]; ok {
				// The existing tests rewritten to fail at the base, for the landing's
				// Orchestrator-Changed-Tests trailer ("-": none).
				if got := cmp.Or(strings.Join(v.ChangedTests, ", "), "-"); got != want {
					t.Errorf("changed tests = %s, want %s\n%s", got, want, v.Log.String())
				}
			}
			_, err = os.Stat(filepath.Join(in.AttemptDir, "handoff-red.json"))
			if (err == nil) != v.Pass {
				t.Errorf("handoff-red.json written: %v, verdict pass: %v", err == nil, v.Pass)
			}
		})
	}
}

// loadRedCase writes the project of a case of testdata/red as the test writer left it and
// returns the gate's input for it, with the case's metadata (command, want, reason, …).
func loadRedCase(tb testing.TB, file string) (Input, map[string]string) {
	tb.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	meta := map[string]string{}
	for _, l := range strings.Split(string(ar.Comment), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok && !strings.Contains(k, " ") {
			meta[k] = v
		}
	}
	if strings.Contains(meta["command"], "pytest") {
		needPytest(tb)
	}
	root := tb.TempDir()
	base, agent := map[string][]byte{}, map[string][]byte{}
	for _, f := range ar.Files {
		if rel, ok := strings.CutPrefix(f.Name, "base/"); ok {
			base[rel] = f.Data
		}
	}
	for _, f := range ar.Files {
		if rel, ok := strings.CutPrefix(f.Name, "agent/"); ok {
			agent[rel] = f.Data
		}
	}
	now := map[string][]byte{}
	for rel, b := range base {
		now[rel] = b
	}
	var changed []string
	for rel, b := range agent {
		now[rel] = b
		changed = append(changed, rel)
	}
	slices.Sort(changed)
	for rel, b := range now {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	ids := []string{"UNIT-001"}
	if v, ok := meta["ids"]; ok {
		ids = nil
		if v != "-" {
			ids = strings.Fields(v)
		}
	}
	in := Input{Root: root, AttemptDir: tb.TempDir(), Task: "TASK-T01", Attempt: 1, TestIDs: ids,
		TestIDNames: meta["test_ids"] == "names",
		TestCommand: meta["command"], ProjectCommand: true, Globs: testrun.DefaultGlobs, Changed: changed,
		Timeout: 2 * time.Minute, Env: PinnedEnv(os.Environ()),
		Contents: func(p string) ([]byte, []byte, error) { return base[p], now[p], nil },
	}
	if meta["baseline"] == "run" {
		// The baseline as the loop has it: the project's command run at the base.
		in.Baseline = baselineOf(tb, base, meta["command"])
	}
	return in, meta
}

// needPytest skips a test when pytest is missing, and fails it under CI=true.
func needPytest(t testing.TB) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pytest is not installed for /usr/bin/python3")
		}
		t.Skip("pytest is not installed for /usr/bin/python3")
	}
}

// baselineOf returns the passing tests of command run on the files base, as the loop's
// baseline has them.
func baselineOf(t testing.TB, base map[string][]byte, command string) []string {
	t.Helper()
	root := t.TempDir()
	for rel, b := range base {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := testrun.MakeBaseline(context.Background(), root, command, nil, 2*time.Minute, testrun.WithEnv(EnvFor(PinnedEnv(os.Environ()), root)))
	if err != nil {
		t.Fatal(err)
	}
	return b.PassingTests
}
