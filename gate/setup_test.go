package gate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// TestSetupIsNoVerdict: a test command that cannot run for a problem of the set-up (its
// program not found, its runner not installed) gives no verdict from any gate, but the
// *testrun.SetupError, so that the loop counts nothing against the agent (SPEC §7.6). The
// honest twins: a candidate whose test fails, whose build is broken, or whose own script
// runs something missing (exit 127 from a program that was found) fails the gate as the
// agent's failure, as before.
func TestSetupIsNoVerdict(t *testing.T) {
	noGo := PinnedEnv([]string{"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")})
	venv := filepath.Join(t.TempDir(), "venv")
	if havePytest() {
		if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
			t.Fatalf("make a venv: %v\n%s", err, out)
		}
	}
	broken := map[string]string{"calc/add.go": "package calc\n\nfunc Add(a, b int) int { return a + }\n"}
	missingHelper := map[string]string{"check.sh": "nosuchhelper --all\n"}
	tests := []struct {
		name    string
		gate    func(context.Context, Input) (*Verdict, error)
		command string
		full    bool // the command is the project's whole suite (GREEN)
		env     []string
		variant string
		write   map[string]string
		python  bool
		program string // the SetupError's program; "" for a verdict
		typ     string // the verdict's failure type
	}{
		{name: "RED, not found", gate: Red, command: "nosuchrunner ./...", program: "nosuchrunner"},
		{name: "GREEN, not found", gate: Green, command: "nosuchrunner ./...", full: true, program: "nosuchrunner"},
		{name: "GREEN, go not installed", gate: Green, command: "go test ./...", full: true, env: noGo, program: "go"},
		{name: "VERIFY, not found", gate: Verify, command: "nosuchrunner ./...", program: "nosuchrunner"},
		{name: "VERIFY, pytest not installed", gate: Verify, command: filepath.Join(venv, "bin", "python") + " -m pytest -q", python: true,
			program: filepath.Join(venv, "bin", "python")},
		{name: "GREEN, the candidate's test fails", gate: Green, command: "go test ./...", variant: "fails", typ: TypeTestFails},
		{name: "GREEN, the candidate's build is broken", gate: Green, command: "go test ./...", write: broken, typ: TypeBuildFails},
		{name: "VERIFY, the candidate's script runs something missing", gate: Verify, command: "sh check.sh", write: missingHelper, typ: TypeVerifyFails},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.python && !havePytest() {
				if os.Getenv("CI") == "true" {
					t.Fatal("pytest is not installed, and CI=true")
				}
				t.Skip("pytest is not installed")
			}
			t.Parallel()
			root := copyFixture(t, filepath.Join("testdata", "go", "base"))
			if tt.variant != "" {
				root, _ = fixture(t, "go", tt.variant)
			}
			for p, text := range tt.write {
				if err := os.WriteFile(filepath.Join(root, p), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1, TestIDs: []string{"UNIT-001"},
				TestCommand: tt.command, Changed: []string{"calc/add_test.go"}, Globs: testrun.DefaultGlobs,
				Timeout: 5 * time.Minute, Env: tt.env}
			if tt.full {
				in.FullCommand, in.Changed = tt.command, []string{"calc/add.go"}
			}
			v, err := tt.gate(context.Background(), in)
			if tt.program != "" {
				var se *testrun.SetupError
				if !errors.As(err, &se) || v != nil {
					t.Fatalf("verdict %+v, err %v; want no verdict and a *testrun.SetupError", v, err)
				}
				if se.Program != tt.program {
					t.Errorf("the SetupError names %q, want %q: %v", se.Program, tt.program, se)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v, want a verdict", err)
			}
			if v.Pass || v.Type != tt.typ {
				t.Errorf("pass %v, type %q (%s); want a %s failure\n%s", v.Pass, v.Type, v.Reason, tt.typ, v.Log.String())
			}
			if tt.typ == TypeVerifyFails && !strings.Contains(v.Reason, "exited 127") {
				t.Errorf("reason %q, want the exit 127 of the candidate's script", v.Reason)
			}
		})
	}
}
