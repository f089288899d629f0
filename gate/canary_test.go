package gate

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

func havePytest() bool {
	return exec.Command("/usr/bin/python3", "-c", "import pytest").Run() == nil
}

// TestVerifyCanaries runs the VERIFY gate, with its canaries, on the fixtures: an honest
// run is judged on its own tests (the failing canary decides nothing, and leaves nothing
// in the output); a run whose report a TestMain or a conftest.py hook forged fails as
// forged_results; a command without a runner's report gets no canary, and gate.log says so.
func TestVerifyCanaries(t *testing.T) {
	tests := []struct {
		name, lang, variant, command string
		pass                         bool
		typ                          string
		failing                      string   // the verdict's FailingTest
		log                          []string // in gate.log
		reason                       []string // in the verdict's reason
	}{
		{name: "go passes", lang: "go", variant: "", command: "go test ./calc ./geo ./strs", pass: true,
			log: []string{"planted calc/", "geo/", "reported as planted", "the command exited 1 for the failing canary; the run's own tests decide: exit 0", "exit code 0, runner go, pass"}},
		{name: "go -run", lang: "go", variant: "", command: "go test -count=1 ./calc -run '^TestAdd$'", pass: true,
			log: []string{"run as go test -count=1 ./calc -run '^TestAdd$|^(?:Test", "exit code 0, runner go, pass: 1 passed"}},
		{name: "go fails", lang: "go", variant: "fails", command: "go test ./...", typ: TypeVerifyFails,
			failing: "example.com/multi/calc.TestSub", reason: []string{"1 tests fail: example.com/multi/calc.TestSub"}},
		{name: "go TestMain forges", lang: "go", variant: "forged-testmain", command: "go test ./...", typ: TypeForged,
			reason: []string{"forged_results: ", "the orchestrator's canary test that must fail was reported passed (package example.com/multi/calc)", "conftest.py hook"},
			log:    []string{"example.com/multi/calc.Test", ": passed"}},
		{name: "go then vet", lang: "go", variant: "", command: "go test ./calc && go vet ./calc", pass: true,
			log: []string{"canary: none: \"go test ./calc\" is followed by &&"}},
		{name: "exit code only", lang: "go", variant: "", command: "sh -c 'go test ./calc'", pass: true,
			log: []string{"canary: none: the command is judged by its exit code alone"}},
		{name: "pytest passes", lang: "python", variant: "", command: "/usr/bin/python3 -m pytest -q tests/test_existing.py", pass: true,
			log: []string{"planted tests/test_", "reported as planted", "exit code 0, runner pytest, pass: 1 passed"}},
		{name: "pytest fails", lang: "python", variant: "fails", command: "/usr/bin/python3 -m pytest -q", typ: TypeVerifyFails,
			failing: "tests/test_sub.py::test_sub"},
		{name: "pytest conftest hook forges", lang: "python", variant: "forged-conftest", command: "/usr/bin/python3 -m pytest -q", typ: TypeForged,
			reason: []string{"must fail was reported passed (folder tests)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.lang == "python" && !havePytest() {
				t.Skip("pytest is not installed")
			}
			t.Parallel()
			root := copyFixture(t, filepath.Join("testdata", tt.lang, "base"))
			if tt.variant != "" {
				root, _ = fixture(t, tt.lang, tt.variant)
			}
			in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-V01", Attempt: 1,
				TestCommand: tt.command, Timeout: 5 * time.Minute}
			v, err := Verify(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			log := v.Log.String()
			if v.Pass != tt.pass || v.Type != tt.typ || v.FailingTest != tt.failing {
				t.Fatalf("pass %v, type %q, failing %q (%s); want %v, %q, %q\n%s", v.Pass, v.Type, v.FailingTest, v.Reason, tt.pass, tt.typ, tt.failing, log)
			}
			for _, want := range tt.log {
				if !strings.Contains(log, want) {
					t.Errorf("gate.log does not say %q:\n%s", want, log)
				}
			}
			for _, want := range tt.reason {
				if !strings.Contains(v.Reason, want) {
					t.Errorf("reason %q does not say %q", v.Reason, want)
				}
			}
			token := "no canary planted"
			if m := regexp.MustCompile(`canary (\w+): planted`).FindStringSubmatch(log); m != nil {
				token = m[1]
			}
			if c := (testrun.Canary{Token: token}); c.Holds(v.Output) {
				t.Errorf("the output shows a canary (%s):\n%s", token, v.Output)
			}
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.Contains(d.Name(), token) {
					t.Errorf("a canary is left in the checkout: %s", p)
				}
				return nil
			})
		})
	}
}

// TestGreenRegressionWithCanary: the regression command's exit code decides GREEN's
// regression check; with a canary that fails by design in it, the exit code the gate
// reads is the one the baseline's tests give.
func TestGreenRegressionWithCanary(t *testing.T) {
	root := copyFixture(t, filepath.Join("testdata", "go", "base"))
	in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1,
		TestCommand: "go test ./geo", Timeout: 5 * time.Minute,
		RegressionCommand: "f=0; go test ./calc -run '^TestAdd$' || f=1; go test ./strs || f=1; [ $f = 0 ]"}
	v, err := Green(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Pass {
		t.Fatalf("GREEN failed: %s: %s\n%s", v.Type, v.Reason, v.Log.String())
	}
	if n := strings.Count(v.Log.String(), "reported as planted"); n != 2 {
		t.Errorf("%d runs with canaries reported as planted, want 2\n%s", n, v.Log.String())
	}
}

// copyFixture copies a folder of testdata (a node_modules folder is linked) to a new
// temporary folder.
func copyFixture(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && d.Name() == "node_modules":
			abs, err := filepath.Abs(p)
			if err == nil {
				err = os.Symlink(abs, target)
			}
			if err != nil {
				return err
			}
			return filepath.SkipDir
		case d.IsDir() && d.Name() == "target": // cargo's builds
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

// BenchmarkCanary measures the wall time the canaries add to one gate run: each runner's
// fixture project run as the gate runs it, without canaries (testrun.Run) and with them
// (plant, run, check, remove). Compare with
//
//	go test -run '^$' -bench Canary -benchtime 10x ./gate
//
// "go" lets go test use its test cache, which a canary defeats for every package it is
// planted in (the file is new in every run); "go-count1" is go test -count=1, which never
// uses it.
func BenchmarkCanary(b *testing.B) {
	projects := "../testrun/testdata/projects"
	cases := []struct {
		name, dir, command string
		have               func() bool
	}{
		{"go", "testdata/go/base", "go test ./...", nil},
		{"go-count1", "testdata/go/base", "go test -count=1 ./...", nil},
		{"pytest", "testdata/python/base", "/usr/bin/python3 -m pytest -q", havePytest},
		{"vitest", projects + "/ts", "npx vitest run", func() bool {
			_, err := os.Stat(projects + "/ts/node_modules/.bin/vitest")
			return err == nil
		}},
		{"cargo", projects + "/rust", "cargo test", func() bool {
			_, err := exec.LookPath("cargo")
			return err == nil
		}},
	}
	ctx := context.Background()
	for _, c := range cases {
		if c.have != nil && !c.have() {
			continue
		}
		root := copyFixture(b, c.dir)
		in := Input{Root: root, Timeout: 5 * time.Minute}
		// A first run fills the build caches, as the project's earlier gates have.
		if _, err := testrun.Run(ctx, root, c.command, in.Timeout); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/without", func(b *testing.B) {
			for b.Loop() {
				if _, err := testrun.Run(ctx, root, c.command, in.Timeout); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/with", func(b *testing.B) {
			for b.Loop() {
				v := &Verdict{}
				if _, err := v.runTests(ctx, in, c.command); err != nil {
					b.Fatalf("%v\n%s", err, v.Log.String())
				}
			}
		})
	}
}
