package review

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/agents"
)

// Reemit is the whole prompt of the one retry a reviewer or a judge gets after a format
// violation (mode D, SPEC §9): nothing else, so that it cannot change its answer.
const Reemit = "re-emit your last message with one valid tdd-result block"

// The four questions of the reviewer, by key, in order.
var Questions = []string{"new_tests", "real_code", "truthful", "does_the_task"}

// An Answer is the reviewer's answer to one question.
type Answer struct {
	Answer   string `json:"answer"`
	Evidence string `json:"evidence"`
}

// Notes are the reviewer's answers.
type Notes map[string]Answer

// No returns the questions answered no, in order.
func (n Notes) No() []string {
	var out []string
	for _, q := range Questions {
		if n[q].Answer == "no" {
			out = append(out, q)
		}
	}
	return out
}

// A Verdict is the judge's ruling.
type Verdict struct {
	Verdict      string   `json:"verdict"` // pass or fail
	Reasons      []string `json:"reasons"`
	RewriteTests bool     `json:"rewrite_tests"`
	// TestChangeJustified rules on a change to tests the gate flagged test_tampered
	// (SPEC §7.3): only true lets such a change land.
	TestChangeJustified bool `json:"test_change_justified"`
}

// Pass reports whether the verdict is pass.
func (v *Verdict) Pass() bool { return v.Verdict == "pass" }

// payload returns the JSON of a result block: its notes when they hold a JSON object,
// else its output excerpt.
func payload(res *agents.Result) string {
	if n := strings.TrimSpace(res.Notes); strings.HasPrefix(n, "{") {
		return n
	}
	return strings.TrimSpace(res.OutputExcerpt)
}

// strictJSON decodes s into v, refusing unknown keys and trailing data.
func strictJSON(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

// ParseNotes reads a reviewer's final message: one tdd-result block of role reviewer
// whose notes (or output excerpt) are a JSON object answering each of the four questions
// yes or no with evidence. Anything else is a format violation (errors.Is agents.ErrFormat).
func ParseNotes(final string) (Notes, *agents.Result, error) {
	res, err := agents.ParseResult(final, agents.RoleReviewer)
	if err != nil {
		return nil, nil, err
	}
	var n Notes
	if err := strictJSON(payload(res), &n); err != nil {
		return nil, res, formatError("the reviewer's notes are not a JSON object of answers: %v", err)
	}
	for _, q := range Questions {
		a, ok := n[q]
		if !ok {
			return nil, res, formatError("the reviewer's notes do not answer %s", q)
		}
		if a.Answer != "yes" && a.Answer != "no" {
			return nil, res, formatError("the reviewer's answer to %s is %q, not yes or no", q, a.Answer)
		}
		if strings.TrimSpace(a.Evidence) == "" {
			return nil, res, formatError("the reviewer's answer to %s has no evidence", q)
		}
	}
	for k := range n {
		if !slices.Contains(Questions, k) {
			return nil, res, formatError("the reviewer's notes answer an unknown question %q", k)
		}
	}
	return n, res, nil
}

// ParseVerdict reads a judge's final message: one tdd-result block of role judge whose
// notes (or output excerpt) are a JSON verdict, pass or fail, with at least one reason; a
// block status that contradicts the verdict is a format violation too.
func ParseVerdict(final string) (*Verdict, *agents.Result, error) {
	res, err := agents.ParseResult(final, agents.RoleJudge)
	if err != nil {
		return nil, nil, err
	}
	var v Verdict
	if err := strictJSON(payload(res), &v); err != nil {
		return nil, res, formatError("the judge's verdict is not a JSON object: %v", err)
	}
	switch {
	case v.Verdict != "pass" && v.Verdict != "fail":
		return nil, res, formatError("the judge's verdict is %q, not pass or fail", v.Verdict)
	case len(v.Reasons) == 0 || strings.TrimSpace(strings.Join(v.Reasons, "")) == "":
		return nil, res, formatError("the judge's verdict gives no reason")
	case v.Pass() != (res.Status == agents.StatusOK):
		return nil, res, formatError("the judge's verdict %q contradicts its status %q", v.Verdict, res.Status)
	case v.Pass() && v.RewriteTests:
		return nil, res, formatError("the judge passes the change and asks for the tests to be rewritten")
	}
	return &v, res, nil
}

func formatError(f string, args ...any) error {
	return &agents.FormatError{Rule: agents.RuleSyntax, Msg: fmt.Sprintf(f, args...)}
}
