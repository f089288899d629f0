package watch_test

import (
	"strings"
	"testing"
	"time"
)

// TestQASpotCheckInTheLoop: a QA task after a TDD cycle is judged by the orchestrator's
// spot check with mutation, not by its agent's word. With honest tests it completes; with
// a test that asserts nothing (RED passes: the code is missing; GREEN passes: nothing is
// checked), the mutants of the landed Discount all survive and the QA task fails with
// qa_failure, whatever its agent claims.
func TestQASpotCheckInTheLoop(t *testing.T) {
	t.Parallel()
	vacuous := map[string]string{"cart/discount_test.go": `package cart

import (
	"testing"

	"example.com/shop/money"
)

func TestDiscount_UNIT_001(t *testing.T) {
	_ = Discount(money.Cents(1000), 10)
}
`}
	for _, c := range []struct {
		name   string
		red    map[string]string
		status string
		qaSays []string // the QA agent's own files: a QA agent changes none
	}{
		{"honest tests", goRedFiles, "completed", nil},
		{"tests that assert nothing", vacuous, "failed", nil},
		{"a QA agent that edits a test", goRedFiles, "failed", []string{"TESTAGENT_WRITE=cart/discount_test.go=package cart"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tasks := append(redGreenVerify()[:2], realTask{id: "TASK-Q01", category: "qa", agent: "qa", deps: "TASK-001", testIDs: "UNIT-001"})
			r := newRealRepo(t, "gomod", goTest, tasks, map[string][]string{
				"writer":  slowAgent("test-writer", 300*time.Millisecond, 0, files(t, c.red)),
				"builder": slowAgent("implementer", 300*time.Millisecond, 0, files(t, goGreenFiles)),
				"qa":      append(slowAgent("qa", time.Second, 0, ""), c.qaSays...),
			}, "retries: {max_retries: 1, same_signature_halt: 3, global_cap: 15}\n")
			r.write("projectspec/test-plan-output.json", `{"tests": {"unit": [{"id": "UNIT-001"}]}}`)
			code, out := r.run("watch", "--once")
			for _, id := range []string{"TASK-T01", "TASK-001"} {
				if st := r.statuses()[id]; st != "completed" {
					t.Fatalf("%s is %s%s\n%s", id, st, r.describeAttempts(id), out)
				}
			}
			if st := r.statuses()["TASK-Q01"]; !strings.HasPrefix(st, c.status) && !(c.status == "failed" && st == "halted") {
				t.Fatalf("TASK-Q01 is %s, want %s (exit %d)%s\n%s", st, c.status, code, r.describeAttempts("TASK-Q01"), out)
			}
			res := r.result("TASK-Q01", 1)
			reason, _ := res["reason"].(string)
			if c.qaSays == nil && (!strings.Contains(reason, "spot check") || !strings.Contains(reason, "TASK-001")) {
				t.Errorf("TASK-Q01 was not judged by the spot check: %v", reason)
			}
			if c.qaSays != nil {
				if res["failure_type"] != "scope_violation" || !strings.Contains(reason, "a QA task changes no file") {
					t.Errorf("attempt 1: %v: %v", res["failure_type"], reason)
				}
				return
			}
			if c.status == "failed" {
				if res["failure_type"] != "qa_failure" || !strings.Contains(reason, "killed none of its") {
					t.Errorf("attempt 1: %v: %v", res["failure_type"], reason)
				}
			} else if !strings.Contains(reason, "TASK-001 ") || strings.Contains(reason, " 0/") {
				t.Errorf("attempt 1: %v", reason)
			}
			report := r.read(".orchestrator/reports/spotcheck-TASK-Q01.md")
			if !strings.Contains(report, "## Spot Check Results") || !strings.Contains(report, "## Can these tests fail?") {
				t.Errorf("report:\n%s", report)
			}
			_, status := r.run("status")
			if !strings.Contains(status, "spot checks: TASK-Q01 ") {
				t.Errorf("status does not show the QA task's last spot check:\n%s", status)
			}
			r.noneLeft()
		})
	}
}
