package watch_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestTestWriterChangesExistingTests: what a test writer may do to the tests already there
// is judged per test (SPEC §7.2). Adding rows to a table test lands; rewriting a test so
// that it states new behaviour (it fails at the base) lands, and the landed commit names
// it in its Orchestrator-Changed-Tests trailer; removing an assertion, adding an early
// return, loosening a comparison or renaming a test away (so that the runner no longer
// runs it) is a scope_violation naming the test and what it lost, and nothing lands. Go and
// pytest tests are read by their parsers, vitest's judged by their run at the base alone.
func TestTestWriterChangesExistingTests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sh string
		py, ts   bool
		// want is "" for a landing, else a part of the scope_violation's reason.
		want string
		// trailer is the Orchestrator-Changed-Tests trailer the landing has ("" for none).
		trailer string
	}{
		{name: "rows added to a Go table test", sh: `perl -0pi -e 's/1234: "12.34", /1234: "12.34", 100000: "1000.00", /' money/money_test.go && grep -q 1000.00 money/money_test.go`},
		{name: "a Go test rewritten to state new behaviour", sh: `perl -0pi -e 's/Percent\(50\); got != 3 \{/Percent(50); got != 2 {/' money/money_test.go && grep -q 'got != 2' money/money_test.go`,
			trailer: "money/money_test.go:TestPercent"},
		{name: "an assertion removed from a passing Go test", sh: `perl -0pi -e 's/\tif got := Cents\(5\)\.Percent\(50\); got != 3 \{\n.*?\n\t\}\n//s' money/money_test.go && ! grep -q 'Cents(5)' money/money_test.go`,
			want: "money/money_test.go: TestPercent changed: `if got := Cents(5).Percent(50); got != 3"},
		{name: "an early return in a passing Go test", sh: `perl -0pi -e 's/(func TestStandard\(t \*testing.T\) \{\n)/$1\tif testing.Short() || true {\n\t\treturn\n\t}\n/' tax/tax_test.go && grep -q return tax/tax_test.go`,
			want: "tax/tax_test.go: TestStandard skipped: an early return added"},
		{name: "a Go comparison loosened", sh: `perl -0pi -e 's/got != 200 \{/got < 0 {/' tax/tax_test.go && grep -q 'got < 0' tax/tax_test.go`,
			want: "tax/tax_test.go: TestStandard changed"},
		{name: "a Go test renamed away", sh: `perl -0pi -e 's/func TestStandard\(/func testStandard(/' tax/tax_test.go && grep -q testStandard tax/tax_test.go`,
			want: "tax/tax_test.go: TestStandard deleted: renamed to testStandard"},
		{name: "a pytest test rewritten to state new behaviour", py: true, sh: `perl -0pi -e 's/percent\(5, 50\) == 3/percent(5, 50) == 2/' tests/test_pricing.py && grep -q '== 2' tests/test_pricing.py`,
			trailer: "tests/test_pricing.py:test_percent_rounds_half_up"},
		{name: "an assertion of a pytest test loosened", py: true, sh: `perl -0pi -e 's/tax_on\(1000\) == 200/tax_on(1000) > 0/' tests/test_tax.py && grep -q '> 0' tests/test_tax.py`,
			want: "tests/test_tax.py: test_standard_rate changed"},
		{name: "a vitest test rewritten to state new behaviour", ts: true, sh: `perl -0pi -e 's/toBe\(150\)/toBe(151)/' src/money.test.ts && grep -q 151 src/money.test.ts`,
			trailer: "src/money.test.ts:takes a share"},
		{name: "a vitest assertion loosened", ts: true, sh: `perl -0pi -e 's/toBe\(150\)/toBeGreaterThan(0)/' src/money.test.ts && grep -q Greater src/money.test.ts`,
			want: "src/money.test.ts: takes a share changed"},
		// The cheat: the weakened test hides behind a new failing test of the same title,
		// which the run would show failing under that title.
		{name: "a vitest assertion loosened beside a new failing test of its title", ts: true, sh: `perl -0pi -e 's/toBe\(150\)/toBeGreaterThan(0)/' src/money.test.ts && printf "describe('again', () => {\n  it('takes a share', () => {\n    expect(percent(1, 1)).toBe(99)\n  })\n})\n" >> src/money.test.ts && grep -q again src/money.test.ts`,
			want: "src/money.test.ts: takes a share changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fixture, command, redFiles := "gomod", goTest, goRedFiles
			switch {
			case tt.py:
				needPytest(t)
				fixture, command, redFiles = "pyproj", pyTest, pyRedFiles
			case tt.ts:
				needVitest(t)
				fixture, command, redFiles = "tsproj", "npx vitest run", tsRedFiles
			}
			writer := scriptAgent(tt.sh, "TESTAGENT_ROLE=test-writer", "TESTAGENT_FROM="+files(t, redFiles))
			r := newRealRepo(t, fixture, command, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
			}, map[string][]string{"writer": writer}, "")
			r.write(".orchestrator/no_auto_retry", "")
			if tt.ts {
				linkTSModules(t, r.root)
			}
			base := head(r.repo)
			code, out := r.run("watch", "--once")
			st := r.statuses()
			if tt.want == "" {
				if code != 0 || st["TASK-T01"] != "completed" {
					t.Fatalf("exit %d, TASK-T01 %q; want 0, completed%s\n%s", code, st["TASK-T01"], r.describeAttempts("TASK-T01"), out)
				}
				msg := r.git("log", "-1", "--format=%B", "refs/heads/main")
				got := ""
				for _, l := range strings.Split(msg, "\n") {
					if v, ok := strings.CutPrefix(l, "Orchestrator-Changed-Tests: "); ok {
						got = v
					}
				}
				if got != tt.trailer {
					t.Errorf("Orchestrator-Changed-Tests = %q, want %q\n%s", got, tt.trailer, msg)
				}
				checkStatusChanged(t, r, "TASK-T01", tt.trailer)
				onlyPersonsTree(r.repo)
				r.noneLeft()
				return
			}
			if st["TASK-T01"] == "completed" || code == 0 {
				t.Errorf("TASK-T01 is %q (exit %d), want not completed%s", st["TASK-T01"], code, r.describeAttempts("TASK-T01"))
			}
			res := r.result("TASK-T01", 1)
			reason := fmt.Sprint(res["reason"])
			if res["failure_type"] != "scope_violation" || !strings.Contains(reason, tt.want) || !strings.Contains(reason, "baseline --drop") {
				t.Errorf("attempt 1: %v: %v; want scope_violation: …%s… that says what to do\n%s", res["failure_type"], reason, tt.want, evidence(r.repo, "TASK-T01", 1))
			}
			if got := head(r.repo); got != base {
				t.Errorf("the integration branch moved from %s to %s", base, got)
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}
