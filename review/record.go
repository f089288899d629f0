package review

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// MaxEvidence bounds each part of the evidence a reviewer or a judge is given.
const MaxEvidence = 48 << 10

// Cap cuts s to MaxEvidence bytes, saying how much was cut.
func Cap(s string) string {
	if len(s) > MaxEvidence {
		return s[:MaxEvidence] + fmt.Sprintf("\n[... %d bytes cut]\n", len(s)-MaxEvidence)
	}
	return s
}

// A Record is review.json of an attempt: the pre-checks, recorded whatever the reviewer
// says, and what the reviewer and the judge answered.
type Record struct {
	Prechecks *Prechecks `json:"prechecks"`
	Tampered  string     `json:"test_tampered,omitempty"`
	Reviewer  *RoleRun   `json:"reviewer,omitempty"`
	Judge     *RoleRun   `json:"judge,omitempty"`
	Decision  string     `json:"decision"` // pass, fail, rewrite_tests, error
	Reason    string     `json:"reason"`
}

// A RoleRun is one reviewer's or judge's run: its agent, how it ended, and what it said.
type RoleRun struct {
	Agent   string   `json:"agent"`
	Reemit  bool     `json:"reemit,omitempty"` // it was asked once to re-emit its block
	Error   string   `json:"error,omitempty"`
	Notes   Notes    `json:"notes,omitempty"`
	Verdict *Verdict `json:"verdict,omitempty"`
}

// FailReasons returns why the review recorded at path failed its change, "" when it did
// not (or there is no record): the judge's reasons, else the reviewer's. It is what the
// next implementer is told under retry_feedback: review.
func FailReasons(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var rec Record
	if json.Unmarshal(b, &rec) != nil || rec.Decision != DecisionFail {
		return ""
	}
	if rec.Judge != nil && rec.Judge.Verdict != nil {
		return strings.Join(rec.Judge.Verdict.Reasons, "\n")
	}
	return rec.Reason
}
