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
func reviewRepo(t *testing.T, fixture string, cheat, honest, red map[string]string, reviewer, judge []string, config string) (*realRepo, string) {
	t.Helper()
	test := goTest
	if fixture == "pyproj" {
		test = pyTest
	}
	prompts := filepath.Join(t.TempDir(), "prompts.log")
	tasks := redGreenVerify()[:2]
	r := newRealRepo(t, fixture, test, tasks, map[string][]string{
		"writer": slowAgent("test-writer", 300*time.Millisecond, 0, files(t, red)),
		"builder": {"TESTAGENT_MODE=plan", "TESTAGENT_ROLE=implementer",
			"TESTAGENT_PLAN=1=slow TESTAGENT_WORK=1s TESTAGENT_FROM=" + files(t, cheat) + "; 2=slow TESTAGENT_WORK=1s TESTAGENT_FROM=" + files(t, honest)},
		"rev": append([]string{"TESTAGENT_PROMPTLOG=" + prompts, "TESTAGENT_REVIEW_WORK=300ms"}, reviewer...),
		"jud": append([]string{"TESTAGENT_PROMPTLOG=" + prompts, "TESTAGENT_REVIEW_WORK=300ms"}, judge...),
	}, config)
	return r, prompts
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
			r, prompts := reviewRepo(t, c.fixture, c.cheat, c.honest, c.red,
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
