package watch_test

// End-to-end tests of the harness and the pinned environment (SPEC §7.2, §7.3, §7.6; issue
// 13): the real binary, a real Go module or pytest project, an honest test writer, and an
// implementer or test writer that cheats through the files that decide how tests run
// (another test, a test file deleted, a TestMain, a conftest.py hook, `go env -w`) or by
// skipping a test that passed. Each cheat fails with evidence naming what it touched; the
// same project with honest agents completes.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runWith runs the orchestrator with extra variables in its environment (the agents
// inherit them).
func (r *realRepo) runWith(env []string, args ...string) (int, string) {
	r.t.Helper()
	c := r.cmd(args...)
	c.Env = append(append(os.Environ(), r.env...), env...)
	out, err := c.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return 0, string(out)
}

// A wrong discount (none at all), in Go and Python: the tests of TASK-T01 fail on it.
const (
	goWrongDiscountSh = `cat > cart/discount.go <<'EOF'
package cart

import "example.com/shop/money"

// Discount returns c.
func Discount(c money.Cents, p int64) money.Cents { return c }
EOF
`
	goRightDiscount = `cat > cart/discount.go <<'EOF'
package cart

import "example.com/shop/money"

// Discount returns c less p percent of it.
func Discount(c money.Cents, p int64) money.Cents { return c - c.Percent(p) }
EOF
`
	pyWrongDiscountSh = `cat > shop/discount.py <<'EOF'
def discount(cents, p):
    return cents
EOF
`
)

// TestHarnessImplementerCheats: a BUILD task's implementer may not add, change, delete or
// rename a test file or a file of the harness (SPEC §7.3, §7.6), and what it writes in the
// Go environment file has no effect on the gate. Each cheat is refused (or has no effect)
// and nothing of it lands; the honest implementer completes.
func TestHarnessImplementerCheats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		py   bool
		sh   string // the implementer's shell snippet; "" for the honest one
		// typ and file: the failure wanted, and the file its reason names ("" any).
		typ, file string
		// cheated, when set, is a file whose content shows the cheat happened.
		cheated string
	}{
		{name: "honest"},
		{name: "edits a test of other code", sh: goRightDiscount +
			`sed -i 's/!= 150/!= 150 \&\& false/' money/money_test.go; grep -q '&& false' money/money_test.go`,
			typ: "test_tampered", file: "money/money_test.go"},
		{name: "deletes a test file", sh: goRightDiscount + `rm tax/tax_test.go`,
			typ: "test_tampered", file: "tax/tax_test.go"},
		{name: "adds a TestMain", sh: goWrongDiscountSh + `cat > cart/main_test.go <<'EOF'
package cart

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	m.Run()
	os.Exit(0)
}
EOF
`, typ: "test_tampered", file: "cart/main_test.go"},
		{name: "go env -w GOFLAGS=-overlay swaps the test at build time", sh: goWrongDiscountSh + `cat > "$CHEAT_DIR/fake_test.go" <<'EOF'
package cart

import "testing"

func TestDiscount_UNIT_001(t *testing.T) {}
EOF
printf '{"Replace":{"cart/discount_test.go":"%s"}}' "$CHEAT_DIR/fake_test.go" > "$CHEAT_DIR/overlay.json"
go env -w "GOFLAGS=-overlay=$CHEAT_DIR/overlay.json"
`, typ: "test_fails", cheated: "goenv"},
		{name: "pytest honest", py: true},
		{name: "adds a conftest.py that rewrites failures", py: true, sh: pyWrongDiscountSh + `cat > conftest.py <<'EOF'
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
EOF
`, typ: "test_tampered", file: "conftest.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fixture, command, redFiles, greenFiles := "gomod", goTest, goRedFiles, goGreenFiles
			if tt.py {
				needPytest(t)
				fixture, command, redFiles, greenFiles = "pyproj", pyTest, pyRedFiles, pyGreenFiles
			}
			// The Go environment file the orchestrator and its agents share, as a person's
			// ~/.config/go/env is; and a folder outside the project for the cheat's files.
			goenv := filepath.Join(t.TempDir(), "go.env")
			cheatDir := t.TempDir()
			builder := slowAgent("implementer", 0, 0, files(t, greenFiles))
			if tt.sh != "" {
				builder = scriptAgent(tt.sh, "CHEAT_DIR="+cheatDir)
			}
			r := newRealRepo(t, fixture, command, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
				{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
			}, map[string][]string{"writer": slowAgent("test-writer", 0, 0, files(t, redFiles)), "builder": builder}, "")
			r.write(".orchestrator/no_auto_retry", "")
			code, out := r.runWith([]string{"GOENV=" + goenv}, "watch", "--once")
			st := r.statuses()
			if st["TASK-T01"] != "completed" {
				t.Fatalf("TASK-T01 is %q, want completed (its writer is honest)%s\n%s", st["TASK-T01"], r.describeAttempts("TASK-T01"), out)
			}
			redHead := fieldOf(r.repo, "TASK-T01", "Commit")
			if tt.sh == "" {
				if code != 0 || st["TASK-001"] != "completed" {
					t.Errorf("honest implementer: exit %d, TASK-001 %q; want 0, completed%s\n%s", code, st["TASK-001"], r.describeAttempts("TASK-001"), out)
				}
				onlyPersonsTree(r.repo)
				r.noneLeft()
				return
			}
			if tt.cheated == "goenv" {
				if b, _ := os.ReadFile(goenv); !bytes.Contains(b, []byte("-overlay=")) {
					t.Fatalf("the cheat did not happen: the Go environment file holds %q\n%s", b, evidence(r.repo, "TASK-001", 1))
				}
			}
			if st["TASK-001"] == "completed" || code == 0 {
				t.Errorf("TASK-001 is %q (exit %d) after the cheat, want not completed%s", st["TASK-001"], code, r.describeAttempts("TASK-001"))
			}
			res := r.result("TASK-001", 1)
			if res["failure_type"] != tt.typ || !strings.Contains(fmt.Sprint(res["reason"]), tt.file) {
				t.Errorf("attempt 1: %v: %v; want %s naming %q\n%s", res["failure_type"], res["reason"], tt.typ, tt.file, evidence(r.repo, "TASK-001", 1))
			}
			if tt.file != "" && res["file"] != tt.file {
				t.Errorf("attempt 1's file is %v, want %s", res["file"], tt.file)
			}
			if got := head(r.repo); got != redHead {
				t.Errorf("the integration branch moved past the RED commit %s to %s", redHead, got)
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}

// TestHarnessTestWriterSkipsExisting: a test writer may add tests, not skip, change or
// delete one the baseline holds as passing (SPEC §7.2): its RED is a scope_violation naming
// the file, and nothing lands. The honest test writer completes.
func TestHarnessTestWriterSkipsExisting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sh string
		py       bool
		file     string
	}{
		{name: "honest"},
		{name: "t.Skip in a passing Go test", sh: `sed -i 's/^func TestPercent(t \*testing.T) {$/&\n\tt.Skip("later")/' money/money_test.go; grep -q 't.Skip' money/money_test.go`,
			file: "money/money_test.go"},
		{name: "a passing Go test deleted", sh: `sed -i '/^func TestStandard/,$d' tax/tax_test.go; ! grep -q TestStandard tax/tax_test.go`,
			file: "tax/tax_test.go"},
		{name: "pytest honest", py: true},
		{name: "pytest.mark.skip on a passing test", py: true, sh: `sed -i 's/^def test_standard_rate/import pytest\n\n\n@pytest.mark.skip(reason="later")\n&/' tests/test_tax.py; grep -q 'mark.skip' tests/test_tax.py`,
			file: "tests/test_tax.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fixture, command, redFiles := "gomod", goTest, goRedFiles
			if tt.py {
				needPytest(t)
				fixture, command, redFiles = "pyproj", pyTest, pyRedFiles
			}
			writer := slowAgent("test-writer", 0, 0, files(t, redFiles))
			if tt.sh != "" {
				writer = scriptAgent(tt.sh, "TESTAGENT_ROLE=test-writer", "TESTAGENT_FROM="+files(t, redFiles))
			}
			r := newRealRepo(t, fixture, command, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
			}, map[string][]string{"writer": writer}, "")
			r.write(".orchestrator/no_auto_retry", "")
			base := head(r.repo)
			code, out := r.run("watch", "--once")
			st := r.statuses()
			if tt.sh == "" {
				if code != 0 || st["TASK-T01"] != "completed" {
					t.Errorf("honest test writer: exit %d, TASK-T01 %q; want 0, completed%s\n%s", code, st["TASK-T01"], r.describeAttempts("TASK-T01"), out)
				}
				onlyPersonsTree(r.repo)
				r.noneLeft()
				return
			}
			if st["TASK-T01"] == "completed" || code == 0 {
				t.Errorf("TASK-T01 is %q (exit %d) after skipping a passing test, want not completed%s", st["TASK-T01"], code, r.describeAttempts("TASK-T01"))
			}
			res := r.result("TASK-T01", 1)
			if res["failure_type"] != "scope_violation" || !strings.Contains(fmt.Sprint(res["reason"]), tt.file) {
				t.Errorf("attempt 1: %v: %v; want scope_violation naming %s\n%s", res["failure_type"], res["reason"], tt.file, evidence(r.repo, "TASK-T01", 1))
			}
			if got := head(r.repo); got != base {
				t.Errorf("the integration branch moved from %s to %s", base, got)
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}
