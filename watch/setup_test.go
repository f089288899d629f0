package watch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A problem of the set-up is not the agent's failure (SPEC §7.6): a test command whose
// program is not found, a runner that is not installed, a judge whose answer cannot be
// read even after its re-emit. The run stops with exit 2 and the reason; no attempt is
// counted against the agent, and no agent starts again.

// TestSetupBeforeStart: a queue whose test command cannot run here is refused before any
// agent starts: validate reports it at the line that sets it, watch exits 2 with the same
// finding, writes no attempt, leaves the task pending and starts no agent.
func TestSetupBeforeStart(t *testing.T) {
	t.Parallel()
	needPytest(t)
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("make a venv: %v\n%s", err, out)
	}
	noPytest := filepath.Join(venv, "bin", "python") // a real Python that cannot import pytest
	cases := []struct {
		name, fixture, project, own string
		want                        string // the finding after "task_queue.md:"
	}{
		{name: "program not found", fixture: "gomod", project: "nosuchrunner ./...",
			want: `8: warning: test command "nosuchrunner ./..." cannot run: program "nosuchrunner" is not installed (not on PATH)`},
		{name: "pytest not installed for the Python named", fixture: "pyproj", project: pyTest, own: noPytest + " -m pytest -q",
			want: `19: TASK-001: warning: test command "` + noPytest + ` -m pytest -q" cannot run: pytest is not installed for "` + noPytest + `": it cannot import pytest (No module named pytest)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, c.fixture, c.project, []realTask{
				{id: "TASK-001", category: "backend", agent: "builder", testCommand: c.own, exempt: true},
			}, map[string][]string{"builder": slowAgent("implementer", 200*time.Millisecond, 0, "")}, "")
			code, out := r.run("validate")
			if code != 0 || !strings.Contains(out, "task_queue.md:"+c.want+"\n") {
				t.Errorf("validate: exit %d, want 0 and the warning\n  task_queue.md:%s\ngot:\n%s", code, c.want, out)
			}
			code, out = r.run("watch", "--once")
			if code != 2 {
				t.Errorf("watch: exit %d, want 2\n%s", code, out)
			}
			if finding := strings.Replace(c.want, "warning: ", "", 1); !strings.Contains(out, "task_queue.md:"+finding) {
				t.Errorf("watch does not say\n  task_queue.md:%s\n%s", finding, out)
			}
			if got := r.statuses()["TASK-001"]; got != "pending" {
				t.Errorf("TASK-001 is %q, want pending", got)
			}
			if dirs := r.attemptDirs("TASK-001"); len(dirs) != 0 {
				t.Errorf("attempts %v, want none%s", dirs, r.describeAttempts("TASK-001"))
			}
			if b, _ := os.ReadFile(r.starts); len(b) != 0 {
				t.Errorf("agents started:\n%s", b)
			}
			r.noRetryUsed("TASK-001")
		})
	}
}

// TestSetupMetByTheGate: the test runner is there when the run starts and gone when the
// gate runs the tests (uninstalled meanwhile; here the agent removes it, as a person or a
// package manager could). The gate does not judge: the run stops with exit 2 and the
// reason, the attempt is recorded as setup_error, its task is back to pending with no
// retry used and no issue, and no agent starts again. Once the runner is back, the next
// run takes the task up as a fresh attempt, still with no retry used.
func TestSetupMetByTheGate(t *testing.T) {
	t.Parallel()
	tool := filepath.Join(t.TempDir(), "bin", "gotest")
	if err := os.MkdirAll(filepath.Dir(tool), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec go test \"$@\"\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRealRepo(t, "gomod", tool+" ./...", []realTask{
		{id: "TASK-001", category: "backend", agent: "builder", exempt: true},
	}, map[string][]string{"builder": {"TESTAGENT_MODE=plan", "TESTAGENT_PLAN=1=script; 2=honest", "TESTAGENT_SH=rm -f " + tool}}, "")
	code, out := r.run("watch", "--once")
	if code != 2 {
		t.Fatalf("exit %d, want 2%s\n%s", code, r.describeAttempts("TASK-001"), out)
	}
	want := `program "` + tool + `" does not exist`
	if !strings.Contains(out, want) || !strings.Contains(out, "not of the agent's work") {
		t.Errorf("the output does not give the reason (%s):\n%s", want, out)
	}
	if got := r.statuses()["TASK-001"]; got != "pending" {
		t.Errorf("TASK-001 is %q, want pending", got)
	}
	res := r.result("TASK-001", 1)
	if res["outcome"] != "setup_error" || !strings.Contains(res["reason"].(string), want) || res["failure_type"] != nil {
		t.Errorf("attempt 1: %v (%v): %v; want setup_error with no failure type", res["outcome"], res["failure_type"], res["reason"])
	}
	if starts := r.startsOf("TASK-001"); len(starts) != 1 || starts[1] != 1 {
		t.Errorf("agents started by attempt: %v, want one, for attempt 1", starts)
	}
	r.noRetryUsed("TASK-001")
	r.noneLeft()

	// The runner is back: the task runs again, as a fresh attempt with no retry used.
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out = r.run("watch", "--once")
	if code != 0 || r.statuses()["TASK-001"] != "completed" {
		t.Fatalf("second run: exit %d, TASK-001 %s%s\n%s", code, r.statuses()["TASK-001"], r.describeAttempts("TASK-001"), out)
	}
	if dirs := r.attemptDirs("TASK-001"); !slices.Equal(dirs, []int{1, 2}) {
		t.Errorf("attempts %v, want [1 2]", dirs)
	}
	r.noRetryUsed("TASK-001")
	r.oneAgentPerAttempt("TASK-001")
}

// TestSetupTwinsAreTheAgents: the honest twins. Where the runner is there and the
// candidate is what fails (a test that fails, a build that is broken), the attempt is the
// agent's failure as before: its failure type, a retry used, and the honest retry lands.
func TestSetupTwinsAreTheAgents(t *testing.T) {
	t.Parallel()
	wrong := map[string]string{"cart/discount.go": "package cart\n\nimport \"example.com/shop/money\"\n\n// Discount returns c.\nfunc Discount(c money.Cents, p int64) money.Cents { return c }\n"}
	broken := map[string]string{"cart/discount.go": "package cart\n\nimport \"example.com/shop/money\"\n\nfunc Discount(c money.Cents, p int64) money.Cents { return c - }\n"}
	for _, c := range []struct {
		name  string
		first map[string]string
		typ   string
	}{
		{"a test of the candidate fails", wrong, "test_fails"},
		{"the candidate's build is broken", broken, "build_fails"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The tasks' own command, with no project command: one run of the whole suite
			// would call a broken build a regression of the package's other tests.
			tasks := redGreenVerify()[:2]
			tasks[0].testCommand, tasks[1].testCommand = "go test ./cart", "go test ./cart"
			r := newRealRepo(t, "gomod", "-", tasks, map[string][]string{
				"writer": slowAgent("test-writer", 200*time.Millisecond, 0, files(t, goRedFiles)),
				"builder": {"TESTAGENT_MODE=plan", "TESTAGENT_ROLE=implementer",
					"TESTAGENT_PLAN=1=slow TESTAGENT_WORK=200ms TESTAGENT_FROM=" + files(t, c.first) + "; 2=slow TESTAGENT_WORK=200ms TESTAGENT_FROM=" + files(t, goGreenFiles)},
			}, "")
			code, out := r.run("watch", "--once")
			if code != 0 || r.statuses()["TASK-001"] != "completed" {
				t.Fatalf("exit %d, TASK-001 %s%s\n%s", code, r.statuses()["TASK-001"], r.describeAttempts("TASK-001"), out)
			}
			if res := r.result("TASK-001", 1); res["outcome"] != "failed" || res["failure_type"] != c.typ {
				t.Errorf("attempt 1: %v (%v): %v; want failed, %s", res["outcome"], res["failure_type"], res["reason"], c.typ)
			}
			if rc := r.field("TASK-001", "Retry-Count"); rc != "1" {
				t.Errorf("Retry-Count %q, want 1", rc)
			}
			r.oneAgentPerAttempt("TASK-001")
			r.noneLeft()
		})
	}
}

// TestSetupJudgeUnreadable: the implementer's change passes GREEN, and the judge's answer
// cannot be read, even after its one re-emit. That is no failure of the implementer: the
// run stops with exit 2 and the reason, the attempt is setup_error, nothing lands, the
// task is back to pending with no retry used, and the implementer is not started again.
// (The twin, a judge that re-emits a valid block, lands: TestReviewOutcomes.)
func TestSetupJudgeUnreadable(t *testing.T) {
	t.Parallel()
	r, prompts, _ := reviewRepo(t, "gomod", goGreenFiles, goGreenFiles, goRedFiles,
		[]string{"TESTAGENT_REVIEWER_NOTES=" + allYes},
		[]string{"TESTAGENT_JUDGE_NOTES=" + judgePasses, "TESTAGENT_REVIEW_BAD=always"},
		"review: {reviewer: rev, judge: jud}\n")
	code, out := r.run("watch", "--once")
	if code != 2 {
		t.Fatalf("exit %d, want 2%s\n%s", code, r.describeAttempts("TASK-001"), out)
	}
	if !strings.Contains(out, "the judge (jud) gave no answer that can be read, even after its re-emit") {
		t.Errorf("the output does not give the reason:\n%s", out)
	}
	if got := r.statuses()["TASK-001"]; got != "pending" {
		t.Errorf("TASK-001 is %q, want pending", got)
	}
	if res := r.result("TASK-001", 1); res["outcome"] != "setup_error" || res["failure_type"] != nil {
		t.Errorf("attempt 1: %v (%v): %v; want setup_error", res["outcome"], res["failure_type"], res["reason"])
	}
	if starts := r.startsOf("TASK-001"); starts[1] != 1 || len(r.attemptDirs("TASK-001")) != 1 {
		t.Errorf("the implementer's starts by attempt: %v, attempts %v; want one start, one attempt", starts, r.attemptDirs("TASK-001"))
	}
	b, _ := os.ReadFile(prompts)
	if n := strings.Count(string(b), "=== judge 1\n"); n != 2 {
		t.Errorf("the judge had %d prompts, want 2 (one re-emit)", n)
	}
	if strings.Contains(r.git("log", "--format=%s", "main"), "TASK-001") {
		t.Error("TASK-001 landed without a verdict")
	}
	r.noRetryUsed("TASK-001")
	r.noneLeft()
}
