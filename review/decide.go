package review

// What the review decides of a change whose tests pass (SPEC §11.2), from the reviewer's
// answers and the judge's ruling: the policy, apart from running the two.

import (
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/retry"
)

// TypeRewriteTests is the outcome type of a change whose judge says the tests themselves
// are wrong: the task is blocked with an issue for a person.
const TypeRewriteTests = "rewrite_tests"

// Decisions of a review, as review.json records them.
const (
	DecisionPass  = "pass"
	DecisionFail  = "fail"
	DecisionError = "error"
)

// A Decision is what a review decides of a change.
type Decision struct {
	Decision string // DecisionPass, DecisionFail or TypeRewriteTests
	// Outcome is the attempt's: completed (it lands), failed (retried by the retry rules)
	// or blocked (for a person); Type its failure type, Primary the line its retry
	// signature is made of.
	Outcome, Type, Primary string
	Reason                 string // why, for review.json
	Ruling                 string // who passed it, for the record of a pass
}

// OnNotes decides on the answers of reviewer, with no judge: every answer must be yes,
// and a test change the gate flagged (tampered, when not "") cannot pass, since only a
// judge can rule one justified.
func OnNotes(reviewer string, notes Notes, tampered string) Decision {
	if no := notes.No(); len(no) > 0 {
		var why []string
		for _, q := range no {
			why = append(why, q+": "+notes[q].Evidence)
		}
		return Decision{Decision: DecisionFail, Outcome: "failed", Type: string(retry.ReviewRejected),
			Primary: "review_rejected: the reviewer answered no to " + strings.Join(no, ", "),
			Reason:  "the reviewer answered no: " + strings.Join(why, "; ")}
	}
	if tampered != "" {
		return Decision{Decision: DecisionFail, Outcome: "failed", Type: gate.TypeTampered,
			Primary: "test_tampered: no judge to rule on the test change",
			Reason:  tampered + " (only a judge can rule a test change justified)"}
	}
	return Decision{Decision: DecisionPass, Outcome: "completed", Reason: "the reviewer answered yes to all four questions",
		Ruling: "reviewer " + reviewer + ": yes to all four questions"}
}

// OnVerdict decides on the ruling v of judge: a fail that asks for the tests to be
// rewritten blocks the task for a person; another fail is a failed attempt; a pass lands
// the change, but one with a test change the gate flagged (tampered) only when the judge
// ruled that change justified.
func OnVerdict(judge string, v *Verdict, tampered string) Decision {
	reasons := strings.Join(v.Reasons, "; ")
	switch {
	case !v.Pass() && v.RewriteTests:
		return Decision{Decision: TypeRewriteTests, Outcome: "blocked", Type: TypeRewriteTests,
			Reason: fmt.Sprintf("the judge (%s) recommends rewriting the tests: %s", judge, reasons)}
	case !v.Pass():
		primary := "review_rejected"
		if len(v.Reasons) > 0 {
			primary += ": " + retry.Normalize(v.Reasons[0])
		}
		return Decision{Decision: DecisionFail, Outcome: "failed", Type: string(retry.ReviewRejected), Primary: primary,
			Reason: fmt.Sprintf("the judge (%s) failed the change", judge)}
	case tampered != "" && !v.TestChangeJustified:
		return Decision{Decision: DecisionFail, Outcome: "failed", Type: gate.TypeTampered,
			Primary: "test_tampered: the judge did not rule the test change justified",
			Reason:  tampered + "; the judge did not rule the change justified"}
	}
	d := Decision{Decision: DecisionPass, Outcome: "completed", Reason: "the judge passed the change: " + reasons,
		Ruling: fmt.Sprintf("judge %s: pass: %s", judge, reasons)}
	if tampered != "" {
		d.Ruling = fmt.Sprintf("judge %s: test change justified: %s", judge, reasons)
	}
	return d
}

// Reviewers names who reviews: "reviewer claude and judge codex".
func Reviewers(reviewer, judge string) string {
	switch {
	case reviewer == "":
		return "judge " + judge
	case judge == "":
		return "reviewer " + reviewer
	}
	return "reviewer " + reviewer + " and judge " + judge
}

// Text shows the reviewer's answers, one question per line, for the judge.
func (n Notes) Text() string {
	var b strings.Builder
	for _, q := range Questions {
		fmt.Fprintf(&b, "%s: %s: %s\n", q, n[q].Answer, n[q].Evidence)
	}
	return b.String()
}
