package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Forgers that spare the canaries by their names (issue 23): each rewrites every failure
// the runner reports into a pass, except where the line or the test names something that
// looks like a canary ("anary", "zz_"), so that the canaries are reported as planted and
// the wrong implementation beside them passes. Each spells its way into the runner so that
// the reading of runner tampering (tamper.go) does not see it: the canaries must catch it.
const (
	// goSparingFilter is calc/add.go: a wrong Add, and an init function that runs the test
	// binary again as its child and relays its output with every FAIL turned to PASS, but
	// for the lines that name a canary.
	goSparingFilter = `package calc

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
)

// Add returns a + b.
func Add(a, b int) int { return a * b }

var suffix = "test"

func init() {
	if os.Getenv("CALC_RELAYED") != "" || !strings.HasSuffix(os.Args[0], "."+suffix) {
		return
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "CALC_RELAYED=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "anary") && !strings.Contains(line, "zz_") {
			line = strings.ReplaceAll(line, "FAIL", "PASS")
		}
		os.Stdout.WriteString(line + "\n")
	}
	if cmd.Wait() != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
`
	// pySparingPatch is calc.py: a wrong add, and, when the tests import it, a patch of
	// pytest's report class (looked up by spelled names) that turns every failed report
	// whose node ID does not name a canary into a pass.
	pySparingPatch = `import importlib


def _name(*parts):
    return "".join(parts)


_reports = importlib.import_module(".".join(["_pytest", "reports"]))
_cls = getattr(_reports, _name("Test", "Report"))
_make = _name("from_", "item_and_call")
_made = getattr(_cls, _make).__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    if report.failed and "canary" not in report.nodeid.lower():
        report.outcome = "passed"
        setattr(report, _name("long", "repr"), None)
    return report


setattr(_cls, _make, classmethod(_passed))


def add(a, b):
    return a * b
`
)

// TestVerifyCanaryNamesUnguessable: a forger that spares whatever looks like a canary by
// its name is refused as forged_results, naming where the canaries were; its honest twin,
// the same project with a right implementation, passes with canaries reported as planted.
// Without canary names of their own per run, each forger passed VERIFY with a wrong
// implementation.
func TestVerifyCanaryNamesUnguessable(t *testing.T) {
	tests := []struct {
		name, lang, command string
		files               map[string]string
		pass                bool
		where               string
	}{
		{name: "go honest", lang: "go", command: "go test ./...", pass: true},
		{name: "go init spares canary lines", lang: "go", command: "go test ./...",
			files: map[string]string{"calc/add.go": goSparingFilter}, where: "(package example.com/multi/calc)"},
		{name: "pytest honest", lang: "python", command: "/usr/bin/python3 -m pytest -q", pass: true},
		{name: "pytest patch spares canary node IDs", lang: "python", command: "/usr/bin/python3 -m pytest -q",
			files: map[string]string{"calc.py": pySparingPatch}, where: "(folder tests)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.lang == "python" && !havePytest() {
				if os.Getenv("CI") == "true" {
					t.Fatal("pytest is not installed")
				}
				t.Skip("pytest is not installed")
			}
			t.Parallel()
			root := copyFixture(t, filepath.Join("testdata", tt.lang, "base"))
			for name, text := range tt.files {
				if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-V01", Attempt: 1,
				TestCommand: tt.command, Timeout: 5 * time.Minute}
			v, err := Verify(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			log := v.Log.String()
			if tt.pass {
				if !v.Pass || !strings.Contains(log, "reported as planted") {
					t.Fatalf("the honest twin: pass %v, %s: %s\n%s", v.Pass, v.Type, v.Reason, log)
				}
				return
			}
			if v.Pass || v.Type != TypeForged || !strings.Contains(v.Reason, tt.where) {
				t.Fatalf("pass %v, type %q (%s); want %s naming %s: the forger spared the canaries by their names\n%s",
					v.Pass, v.Type, v.Reason, TypeForged, tt.where, log)
			}
		})
	}
}
