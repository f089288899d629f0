package watch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What a dishonest implementer writes: the tests' one case, hard-coded; and a stub that
// answers the tests only when the test runner is looking.
var (
	goHardCoded = map[string]string{"cart/discount.go": `package cart

import "example.com/shop/money"

// Discount returns c less p percent of it.
func Discount(c money.Cents, p int64) money.Cents {
	if c == 1000 && p == 10 {
		return 900
	}
	return c
}
`}
	pyHardCoded = map[string]string{"shop/discount.py": `import os


def discount(cents, p):
    if os.environ.get("PYTEST_CURRENT_TEST"):
        return 900
    return cents
`}
)

// The scripted reviewer's notes and the judge's verdicts.
const (
	allYes = `{"new_tests": {"answer": "yes", "evidence": "the RED tests of TASK-T01"}, "real_code": {"answer": "yes", "evidence": "they call Discount"}, "truthful": {"answer": "yes", "evidence": "no literal"}, "does_the_task": {"answer": "yes", "evidence": "discounts"}}`
	// The judge fails the change with the pre-check lines of its prompt as its reason.
	judgeFailsOnPrechecks = `{"verdict": "fail", "reasons": ["pre-checks: @PRECHECKS@"], "rewrite_tests": false}`
	judgePasses           = `{"verdict": "pass", "reasons": ["the implementation computes the discount"], "rewrite_tests": false}`
)

// reviewRepo is the Go or pytest project with a test writer, an implementer that
// hard-codes on its first attempt and is honest on its second, and a scripted reviewer and
// judge whose prompts go to a log.
func reviewRepo(t *testing.T, fixture string, cheat, honest, red map[string]string, reviewer, judge []string, config string) (*realRepo, string, []string) {
	t.Helper()
	test := goTest
	if fixture == "pyproj" {
		test = pyTest
	}
	prompts := filepath.Join(t.TempDir(), "prompts.log")
	tasks := redGreenVerify()[:2]
	dirs := []string{filepath.Dir(prompts), files(t, red), files(t, cheat), files(t, honest)}
	r := newRealRepo(t, fixture, test, tasks, map[string][]string{
		"writer": slowAgent("test-writer", 300*time.Millisecond, 0, dirs[1]),
		"builder": {"TESTAGENT_MODE=plan", "TESTAGENT_ROLE=implementer",
			"TESTAGENT_PLAN=1=slow TESTAGENT_WORK=1s TESTAGENT_FROM=" + dirs[2] + "; 2=slow TESTAGENT_WORK=1s TESTAGENT_FROM=" + dirs[3]},
		"rev": append([]string{"TESTAGENT_PROMPTLOG=" + prompts, "TESTAGENT_REVIEW_WORK=300ms"}, reviewer...),
		"jud": append([]string{"TESTAGENT_PROMPTLOG=" + prompts, "TESTAGENT_REVIEW_WORK=300ms"}, judge...),
	}, config)
	return r, prompts, append(dirs, filepath.Dir(r.starts))
}

// TestReviewJudgeFailsHardCoded: on a Go module and a pytest project, the implementer's
// first attempt passes its tests dishonestly (the tests' case hard-coded; a stub that
// answers only under pytest). The pre-checks name the evidence, the judge fails the change
// quoting them, nothing of it lands, and the honest retry lands with the judge's ruling in
// its trailers. The judge's reasons reach the retry's prompt only with retry_feedback:
// review.
func TestReviewJudgeFailsHardCoded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, fixture, feedback string
		cheat, honest, red      map[string]string
		evidence                []string
	}{
		{"go raw", "gomod", "raw", goHardCoded, goGreenFiles, goRedFiles,
			[]string{"cart/discount.go:7: hard_coded: 1000", "cart/discount.go:8: hard_coded: 900"}},
		{"go review", "gomod", "review", goHardCoded, goGreenFiles, goRedFiles,
			[]string{"cart/discount.go:7: hard_coded: 10,"}},
		{"pytest raw", "pyproj", "raw", pyHardCoded, pyGreenFiles, pyRedFiles,
			[]string{"shop/discount.py:5: env_switch", "shop/discount.py:6: hard_coded: 900"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.fixture == "pyproj" {
				needPytest(t)
			}
			r, prompts, _ := reviewRepo(t, c.fixture, c.cheat, c.honest, c.red,
				[]string{"TESTAGENT_REVIEWER_NOTES=" + allYes},
				[]string{"TESTAGENT_JUDGE_NOTES_1=" + judgeFailsOnPrechecks, "TESTAGENT_JUDGE_NOTES=" + judgePasses},
				"review: {reviewer: rev, judge: jud}\nretry_feedback: "+c.feedback+"\n")
			code, out := r.run("watch", "--once")
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, r.describeAttempts("TASK-001"))
			}
			if got := r.statuses()["TASK-001"]; got != "completed" {
				t.Fatalf("TASK-001 is %q%s", got, r.describeAttempts("TASK-001"))
			}
			first := r.result("TASK-001", 1)
			if first["outcome"] != "failed" || first["failure_type"] != "review_rejected" {
				t.Errorf("attempt 1 ended %v (%v): %v; want failed, review_rejected", first["outcome"], first["failure_type"], first["reason"])
			}
			review1 := r.read(".orchestrator/runs/TASK-001/1/review.json")
			b, err := os.ReadFile(prompts)
			if err != nil {
				t.Fatal(err)
			}
			log := string(b)
			judge1 := section(log, "=== judge 1")
			for _, ev := range c.evidence {
				if !strings.Contains(review1, ev[:strings.Index(ev, ":")]) || !strings.Contains(judge1, ev) {
					t.Errorf("the evidence %q is not in the judge's prompt or review.json\njudge's prompt:\n%s", ev, judge1)
				}
				// The judge quoted it in its verdict.
				if !strings.Contains(review1, strings.ReplaceAll(ev, `"`, `\"`)) {
					t.Errorf("the judge's verdict in review.json does not quote %q:\n%s", ev, review1)
				}
			}
			// Nothing of the dishonest attempt is on the integration branch.
			for path, cheat := range c.cheat {
				landed := r.git("show", "main:"+path)
				if landed == cheat {
					t.Errorf("the hard-coded %s landed", path)
				}
			}
			msg := r.git("log", "-1", "--format=%B", "main")
			if !strings.Contains(msg, "Orchestrator-Review: judge jud: pass: the implementation computes the discount") {
				t.Errorf("the landing has no ruling trailer:\n%s", msg)
			}
			retry := r.read(".orchestrator/runs/TASK-001/2/prompt.md")
			hasReasons := strings.Contains(retry, "The judge's reasons") && strings.Contains(retry, "hard_coded")
			if c.feedback == "review" && !hasReasons {
				t.Errorf("retry_feedback: review, and the retry's prompt lacks the judge's reasons:\n%s", retry)
			}
			if c.feedback == "raw" && (strings.Contains(retry, "judge") || strings.Contains(retry, "hard_coded")) {
				t.Errorf("retry_feedback: raw, and the retry's prompt holds the judge's reasons:\n%s", retry)
			}
			r.noneLeft()
		})
	}
}

// section returns the part of the prompt log from the line start to the next "=== ".
func section(log, start string) string {
	i := strings.Index(log, start+"\n")
	if i < 0 {
		return ""
	}
	rest := log[i+len(start)+1:]
	if j := strings.Index(rest, "\n=== "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestReviewOutcomes: the other ways a review ends, on the Go module with retries on.
func TestReviewOutcomes(t *testing.T) {
	t.Parallel()
	rewrite := `{"verdict": "fail", "reasons": ["the test expects 900 for a 10% discount of 1000 but rounds wrong"], "rewrite_tests": true}`
	justified := `{"verdict": "pass", "reasons": ["the new assertion is right"], "rewrite_tests": false, "test_change_justified": true}`
	tampered := map[string]string{
		"cart/discount.go": goGreenFiles["cart/discount.go"],
		"cart/discount_test.go": goRedFiles["cart/discount_test.go"] + `
func TestDiscountZero(t *testing.T) {
	if got := Discount(money.Cents(1000), 0); got != 1000 {
		t.Errorf("got %v", got)
	}
}
`,
	}
	cases := []struct {
		name             string
		cheat            map[string]string
		reviewer, judge  []string
		config           string
		check            func(t *testing.T, r *realRepo, prompts string)
		wantStatus       string
		wantFirst        string // attempt 1's failure type ("" when it completed)
		sandbox, noJudge bool
	}{
		{name: "judge asks for the tests to be rewritten", cheat: goGreenFiles, judge: []string{"TESTAGENT_JUDGE_NOTES=" + rewrite},
			wantStatus: "blocked", wantFirst: "rewrite_tests",
			check: func(t *testing.T, r *realRepo, _ string) {
				issues := r.read(".orchestrator/issue_queue.md")
				if !strings.Contains(issues, "recommends rewriting the tests") || !strings.Contains(issues, "rounds wrong") {
					t.Errorf("no issue for a person:\n%s", issues)
				}
				if rem := r.field("TASK-001", "Remediation"); !strings.HasPrefix(rem, "ISSUE-") {
					t.Errorf("Remediation %q, want the issue", rem)
				}
				if len(r.attemptDirs("TASK-001")) != 1 {
					t.Errorf("the implementer was retried: %s", r.describeAttempts("TASK-001"))
				}
			}},
		{name: "malformed verdict once, then re-emitted", cheat: goGreenFiles,
			judge: []string{"TESTAGENT_JUDGE_NOTES=" + judgePasses, "TESTAGENT_REVIEW_BAD=once"}, wantStatus: "completed",
			check: func(t *testing.T, r *realRepo, prompts string) {
				b, _ := os.ReadFile(prompts)
				parts := strings.Split(string(b), "=== judge 1\n")
				if len(parts) != 3 || strings.TrimSpace(parts[2]) != "re-emit your last message with one valid tdd-result block" {
					t.Errorf("want one judge prompt and one re-emit prompt of exactly the re-emit text, got %d:\n%s", len(parts)-1, b)
				}
			}},
		// A verdict malformed twice is a problem of the set-up: TestSetupJudgeUnreadable.
		{name: "reviewer edits a file", cheat: goGreenFiles, reviewer: []string{"TESTAGENT_REVIEWER_NOTES=" + allYes, "TESTAGENT_REVIEW_SH=echo '// reviewed' >> cart/discount.go"},
			judge: []string{"TESTAGENT_JUDGE_NOTES=" + judgePasses}, config: "retries: {max_retries: 10, same_signature_halt: 2, global_cap: 15}\n",
			wantStatus: "halted", wantFirst: "scope_violation",
			check: func(t *testing.T, r *realRepo, _ string) {
				if res := r.result("TASK-001", 1); !strings.Contains(res["reason"].(string), "the reviewer (rev) changed files: cart/discount.go") {
					t.Errorf("reason %v", res["reason"])
				}
			}},
		{name: "reviewer edits a file in the sandbox", cheat: goGreenFiles, sandbox: true,
			reviewer: []string{"TESTAGENT_REVIEWER_NOTES=" + allYes, "TESTAGENT_REVIEW_SH=echo '// reviewed' >> cart/discount.go"},
			judge:    []string{"TESTAGENT_JUDGE_NOTES=" + judgePasses}, wantStatus: "completed",
			check: func(t *testing.T, r *realRepo, _ string) {
				if strings.Contains(r.git("show", "main:cart/discount.go"), "reviewed") {
					t.Error("the reviewer's edit landed")
				}
				if !strings.Contains(r.read(".orchestrator/runs/TASK-001/1/reviewer.log"), "Read-only file system") {
					t.Errorf("the reviewer's write was not refused by the sandbox:\n%s", r.read(".orchestrator/runs/TASK-001/1/reviewer.log"))
				}
			}},
		{name: "reviewer alone says no", cheat: goHardCoded, noJudge: true,
			reviewer:   []string{"TESTAGENT_REVIEWER_NOTES_1=" + strings.Replace(allYes, `"truthful": {"answer": "yes", "evidence": "no literal"}`, `"truthful": {"answer": "no", "evidence": "cart/discount.go:7 returns 900 for the test's input"}`, 1), "TESTAGENT_REVIEWER_NOTES=" + allYes},
			wantStatus: "completed", wantFirst: "review_rejected",
			check: func(t *testing.T, r *realRepo, _ string) {
				if res := r.result("TASK-001", 1); !strings.Contains(res["reason"].(string), "truthful: cart/discount.go:7 returns 900") {
					t.Errorf("reason %v", res["reason"])
				}
			}},
		{name: "test change ruled justified", cheat: tampered, judge: []string{"TESTAGENT_JUDGE_NOTES=" + justified}, wantStatus: "completed",
			check: func(t *testing.T, r *realRepo, _ string) {
				msg := r.git("log", "-1", "--format=%B", "main")
				if !strings.Contains(msg, "Orchestrator-Review: judge jud: test change justified: the new assertion is right") {
					t.Errorf("no ruling in the trailers:\n%s", msg)
				}
				if !strings.Contains(r.git("show", "main:cart/discount_test.go"), "TestDiscountZero") {
					t.Error("the justified test change did not land")
				}
			}},
		{name: "test change not ruled justified", cheat: tampered, judge: []string{"TESTAGENT_JUDGE_NOTES=" + judgePasses}, wantStatus: "completed", wantFirst: "test_tampered",
			check: func(t *testing.T, r *realRepo, _ string) {
				if strings.Contains(r.git("show", "main:cart/discount_test.go"), "TestDiscountZero") {
					t.Error("an unjustified test change landed")
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			reviewer := c.reviewer
			if reviewer == nil {
				reviewer = []string{"TESTAGENT_REVIEWER_NOTES=" + allYes}
			}
			config := "review: {reviewer: rev, judge: jud}\n"
			if c.noJudge {
				config = "review: {reviewer: rev}\n"
			}
			r, prompts, dirs := reviewRepo(t, "gomod", c.cheat, goGreenFiles, goRedFiles, reviewer, c.judge, config+c.config)
			if c.sandbox {
				r.sandboxed(dirs...)
			}
			code, out := r.run("watch", "--once")
			if got := r.statuses()["TASK-001"]; got != c.wantStatus {
				t.Fatalf("TASK-001 is %q, want %s (exit %d)%s\n%s\nreviewer's log:\n%s", got, c.wantStatus, code, r.describeAttempts("TASK-001"), out, r.read(".orchestrator/runs/TASK-001/1/reviewer.log"))
			}
			first := r.result("TASK-001", 1)
			if got, _ := first["failure_type"].(string); got != c.wantFirst {
				t.Errorf("attempt 1: %v (%v): %v; want type %q", first["outcome"], first["failure_type"], first["reason"], c.wantFirst)
			}
			c.check(t, r, prompts)
			r.noneLeft()
		})
	}
}

// TestLadderInTheLoop: a BUILD task with no Agent of its own takes each attempt's agent
// from the ladder (SPEC §10): the first two rungs claim done without the work and are
// rejected by the gate, the third does the work and lands.
func TestLadderInTheLoop(t *testing.T) {
	t.Parallel()
	tasks := redGreenVerify()[:2]
	tasks[1].agent = ""
	r := newRealRepo(t, "gomod", goTest, tasks, map[string][]string{
		"writer": slowAgent("test-writer", 300*time.Millisecond, 0, files(t, goRedFiles)),
		"codex":  {"TESTAGENT_MODE=lie"},
		"claude": {"TESTAGENT_MODE=lie"},
		"last":   slowAgent("implementer", time.Second, 0, files(t, goGreenFiles)),
	}, "ladder: [codex, claude, last]\n")
	code, out := r.run("watch", "--once")
	if code != 0 || r.statuses()["TASK-001"] != "completed" {
		t.Fatalf("exit %d, TASK-001 %s%s\n%s", code, r.statuses()["TASK-001"], r.describeAttempts("TASK-001"), out)
	}
	for n, want := range map[int]string{1: "codex", 2: "claude", 3: "last"} {
		if got := r.result("TASK-001", n)["agent"]; got != want {
			t.Errorf("attempt %d ran %v, want %s (the ladder's rung %d)", n, got, want, n)
		}
	}
	if got := r.field("TASK-001", "Retry-Count"); got != "2" {
		t.Errorf("Retry-Count %q, want 2", got)
	}
	r.oneAgentPerAttempt("TASK-001")
}
