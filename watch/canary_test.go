package watch_test

// End-to-end tests of the canaries (SPEC §7.6, issue 13), through the real binary: an
// implementer that cannot make its tests pass makes the runner's report say they pass
// instead, with a Go TestMain that rewrites FAIL to PASS, an init function in its code
// that prints a forged PASS and exits, a pytest conftest.py hook that flips failures, or
// code that patches pytest when the tests import it. Each fools a gate without canaries;
// with them, each attempt fails as forged_results and the third identical one halts the
// task, with a report a person can read. The honest implementer on the same project
// completes.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The forgers. The implementation is wrong in each: Discount returns the price unchanged.
var (
	goWrongDiscount = `package cart

import "example.com/shop/money"

// Discount returns c.
func Discount(c money.Cents, p int64) money.Cents { return c }
`
	// goForgedTestMain runs the tests and rewrites what the test binary prints.
	goForgedTestMain = `package cart

import (
	"bufio"
	"bytes"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := bytes.ReplaceAll(sc.Bytes(), []byte("--- FAIL"), []byte("--- PASS"))
			if bytes.Equal(bytes.TrimLeft(line, "\x16"), []byte("FAIL")) {
				line = bytes.Replace(line, []byte("FAIL"), []byte("PASS"), 1)
			}
			stdout.Write(append(line, '\n'))
		}
		close(done)
	}()
	m.Run()
	w.Close()
	<-done
	os.Exit(0)
}
`
	// goForgedInit is the implementation itself: inside a test binary, its init prints the
	// lines of a passing test, framed as go test -json's binary frames them, and exits. It
	// spells the test binary's name so that the gate's reading of runner tampering
	// (gate/tamper.go) does not see it: the canaries catch what a reading misses.
	goForgedInit = `package cart

import (
	"fmt"
	"os"
	"strings"

	"example.com/shop/money"
)

// Discount returns c.
func Discount(c money.Cents, p int64) money.Cents { return c }

var suffix = "test"

func init() {
	if !strings.HasSuffix(os.Args[0], "."+suffix) {
		return
	}
	fmt.Print("\x16=== RUN   TestDiscount_UNIT_001\n\x16--- PASS: TestDiscount_UNIT_001 (0.00s)\n\x16PASS\n")
	os.Exit(0)
}
`
	pyWrongDiscount = `def discount(cents, p):
    return cents
`
	// pyForgedConftest flips every failed report to passed.
	pyForgedConftest = `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
`
	// pyForgedImport is the implementation itself: imported by the tests, it patches
	// pytest so that every failed report reads passed. It spells pytest's names so that the
	// gate's reading of runner tampering (gate/tamper.go) does not see them: the canaries
	// catch what a reading misses.
	pyForgedImport = `import importlib


def _name(*parts):
    return "".join(parts)


_reports = importlib.import_module(".".join(["_pytest", "reports"]))
_cls = getattr(_reports, _name("Test", "Report"))
_make = _name("from_", "item_and_call")
_made = getattr(_cls, _make).__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    if report.failed:
        report.outcome = "passed"
        setattr(report, _name("long", "repr"), None)
    return report


setattr(_cls, _make, classmethod(_passed))


def discount(cents, p):
    return cents
`
)

func TestRealCanaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fixture string
		command string
		red     map[string]string
		green   map[string]string
		forged  bool
		where   string // the reason names it
		// harness: the forger is in a harness file (a TestMain, a conftest.py), so the
		// harness rule refuses it before any test runs (test_tampered naming where).
		harness bool
	}{
		{name: "go honest", fixture: "gomod", command: goTest, red: goRedFiles, green: goGreenFiles},
		{name: "go TestMain rewrites FAIL to PASS", fixture: "gomod", command: goTest, red: goRedFiles,
			green:  map[string]string{"cart/discount.go": goWrongDiscount, "cart/zz_test.go": goForgedTestMain},
			forged: true, harness: true, where: "cart/zz_test.go"},
		{name: "go init prints PASS", fixture: "gomod", command: goTest, red: goRedFiles,
			green:  map[string]string{"cart/discount.go": goForgedInit},
			forged: true, where: "package example.com/shop/cart"},
		{name: "pytest honest", fixture: "pyproj", command: pyTest, red: pyRedFiles, green: pyGreenFiles},
		{name: "pytest conftest hook flips failures", fixture: "pyproj", command: pyTest, red: pyRedFiles,
			green:  map[string]string{"shop/discount.py": pyWrongDiscount, "tests/conftest.py": pyForgedConftest},
			forged: true, harness: true, where: "tests/conftest.py"},
		{name: "pytest implementation patches pytest", fixture: "pyproj", command: pyTest, red: pyRedFiles,
			green:  map[string]string{"shop/discount.py": pyForgedImport},
			forged: true, where: "folder tests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.fixture == "pyproj" {
				needPytest(t)
			}
			r := newRealRepo(t, tt.fixture, tt.command, redGreenVerify()[:2], map[string][]string{
				"writer":  slowAgent("test-writer", 100*time.Millisecond, 0, files(t, tt.red)),
				"builder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, tt.green)),
			}, "")
			code, out := r.run("watch", "--once")
			defer func() {
				if t.Failed() {
					t.Logf("TASK-001 attempts:\n%s", r.attemptLogs("TASK-001"))
				}
			}()
			if got := r.statuses()["TASK-T01"]; got != "completed" {
				t.Fatalf("the test writer's task is %q, want completed%s\n%s", got, r.describeAttempts("TASK-T01"), out)
			}
			gate := r.read(".orchestrator/runs/TASK-001/1/gate.log")
			if !tt.harness && (!strings.Contains(gate, "canary ") || !strings.Contains(gate, "planted ")) {
				t.Errorf("gate.log does not say where the canaries were planted:\n%s", gate)
			}
			// Canaries live in the gate's checkout only: never on the integration branch,
			// in the person's tree, or in the agent's candidate. Their names are drawn for
			// each run: gate.log says which.
			token := ""
			if m := regexp.MustCompile(`canary (\w+): planted`).FindStringSubmatch(gate); m != nil {
				token = m[1]
			}
			for _, ref := range []string{"HEAD", "refs/orchestrator/attempts/TASK-001/1"} {
				if ls := r.git("ls-tree", "-r", "--name-only", ref); token != "" && strings.Contains(ls, token) {
					t.Errorf("%s holds a canary:\n%s", ref, ls)
				}
			}
			filepath.WalkDir(r.root, func(p string, d os.DirEntry, err error) error {
				if err == nil && token != "" && strings.Contains(d.Name(), token) && !strings.Contains(p, ".orchestrator") {
					t.Errorf("a canary in the person's tree: %s", p)
				}
				return nil
			})

			if !tt.forged {
				if code != 0 || r.statuses()["TASK-001"] != "completed" {
					t.Fatalf("exit %d, TASK-001 %q; want 0, completed%s\n%s", code, r.statuses()["TASK-001"], r.describeAttempts("TASK-001"), out)
				}
				if !strings.Contains(gate, "reported as planted") {
					t.Errorf("gate.log does not say the canaries were reported as planted:\n%s", gate)
				}
				return
			}
			if code != 3 || r.statuses()["TASK-001"] != "halted" {
				t.Fatalf("exit %d, TASK-001 %q; want 3, halted: the forged report must be refused, the same way three times%s\n%s",
					code, r.statuses()["TASK-001"], r.describeAttempts("TASK-001"), out)
			}
			want := "forged_results"
			if tt.harness {
				want = "test_tampered"
			}
			for _, n := range r.attemptDirs("TASK-001") {
				res := r.result("TASK-001", n)
				if res["failure_type"] != want || !strings.Contains(res["reason"].(string), tt.where) {
					t.Errorf("attempt %d: %v: %v; want %s naming %s", n, res["failure_type"], res["reason"], want, tt.where)
				}
			}
			if tt.harness {
				return
			}
			if hr := r.field("TASK-001", "Halt-Reason"); hr != "Repeated identical failure (3x)" {
				t.Errorf("Halt-Reason %q, want Repeated identical failure (3x): the random canaries must not change the signature; Previous-Signatures %s",
					hr, r.field("TASK-001", "Previous-Signatures"))
			}
			// The halt report says what happened in words a person understands.
			reports, _ := filepath.Glob(filepath.Join(r.root, ".orchestrator", "reports", "halt-TASK-001-*.md"))
			if len(reports) != 1 {
				t.Fatalf("halt reports %v, want one", reports)
			}
			report := r.read(".orchestrator/reports/" + filepath.Base(reports[0]))
			t.Logf("halt report:\n%s", report)
			for _, want := range []string{"forged_results", "cannot be trusted", "one that must pass and one that must fail", "conftest.py hook", tt.where} {
				if !strings.Contains(report, want) {
					t.Errorf("the halt report does not say %q:\n%s", want, report)
				}
			}
		})
	}
}
