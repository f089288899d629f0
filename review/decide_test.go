package review

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/retry"
)

func yes() Notes {
	n := Notes{}
	for _, q := range Questions {
		n[q] = Answer{Answer: "yes", Evidence: "seen"}
	}
	return n
}

// TestOnNotes: a reviewer alone passes a change only with four yeses, and never one whose
// test change the gate flagged: only a judge rules such a change justified.
func TestOnNotes(t *testing.T) {
	no := yes()
	no["real_code"] = Answer{Answer: "no", Evidence: "returns the expected constant"}
	tests := []struct {
		name     string
		notes    Notes
		tampered string
		decision string
		typ      string
		primary  string
	}{
		{"four yeses", yes(), "", DecisionPass, "", ""},
		{"a no", no, "", DecisionFail, string(retry.ReviewRejected), "review_rejected: the reviewer answered no to real_code"},
		{"four yeses on a flagged test change", yes(), "test_tampered: TestAdd changed", DecisionFail, gate.TypeTampered, "test_tampered: no judge to rule on the test change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := OnNotes("claude", tt.notes, tt.tampered)
			if d.Decision != tt.decision || d.Type != tt.typ || d.Primary != tt.primary {
				t.Errorf("decision %q type %q primary %q, want %q %q %q", d.Decision, d.Type, d.Primary, tt.decision, tt.typ, tt.primary)
			}
			if pass := d.Decision == DecisionPass; pass != (d.Outcome == "completed") || pass != (d.Ruling != "") {
				t.Errorf("outcome %q ruling %q for decision %q", d.Outcome, d.Ruling, d.Decision)
			}
		})
	}
	if d := OnNotes("claude", no, ""); !strings.Contains(d.Reason, "real_code: returns the expected constant") {
		t.Errorf("the reason does not carry the reviewer's evidence: %q", d.Reason)
	}
}

// TestOnVerdict: the judge's fail fails the attempt, or blocks it for a person when the
// tests are to be rewritten; its pass lands the change, a flagged test change only when
// ruled justified.
func TestOnVerdict(t *testing.T) {
	tests := []struct {
		name     string
		v        Verdict
		tampered string
		decision string
		outcome  string
		primary  string
		ruling   string
	}{
		{"pass", Verdict{Verdict: "pass", Reasons: []string{"real code"}}, "", DecisionPass, "completed", "", "judge codex: pass: real code"},
		{"fail", Verdict{Verdict: "fail", Reasons: []string{"Hard-coded at line 12"}}, "", DecisionFail, "failed", "review_rejected: " + retry.Normalize("Hard-coded at line 12"), ""},
		{"rewrite the tests", Verdict{Verdict: "fail", Reasons: []string{"the test asserts the bug"}, RewriteTests: true}, "", TypeRewriteTests, "blocked", "", ""},
		{"pass, a flagged test change not ruled on", Verdict{Verdict: "pass", Reasons: []string{"fine"}}, "test_tampered: x", DecisionFail, "failed", "test_tampered: the judge did not rule the test change justified", ""},
		{"pass, the test change justified", Verdict{Verdict: "pass", Reasons: []string{"the spec changed"}, TestChangeJustified: true}, "test_tampered: x", DecisionPass, "completed", "", "judge codex: test change justified: the spec changed"},
		{"fail without reasons", Verdict{Verdict: "fail"}, "", DecisionFail, "failed", "review_rejected", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := OnVerdict("codex", &tt.v, tt.tampered)
			if d.Decision != tt.decision || d.Outcome != tt.outcome || d.Primary != tt.primary || d.Ruling != tt.ruling {
				t.Errorf("got %+v\nwant decision %q outcome %q primary %q ruling %q", d, tt.decision, tt.outcome, tt.primary, tt.ruling)
			}
		})
	}
}

func TestReviewers(t *testing.T) {
	for _, tt := range [][3]string{{"claude", "", "reviewer claude"}, {"", "codex", "judge codex"}, {"claude", "codex", "reviewer claude and judge codex"}} {
		if got := Reviewers(tt[0], tt[1]); got != tt[2] {
			t.Errorf("Reviewers(%q, %q) = %q", tt[0], tt[1], got)
		}
	}
}

// TestFailReasons: the next implementer is told the judge's reasons for a fail, the
// reviewer's when there was no judge, and nothing for a pass, an error or no record.
func TestFailReasons(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	judged := write("judged.json", `{"decision":"fail","reason":"the judge (codex) failed the change","judge":{"agent":"codex","verdict":{"verdict":"fail","reasons":["hard-coded","no test of zero"]}}}`)
	reviewed := write("reviewed.json", `{"decision":"fail","reason":"the reviewer answered no: real_code: constant"}`)
	passed := write("passed.json", `{"decision":"pass","reason":"the judge passed the change: ok"}`)
	broken := write("broken.json", `{"decision":`)
	for path, want := range map[string]string{
		judged: "hard-coded\nno test of zero", reviewed: "the reviewer answered no: real_code: constant",
		passed: "", broken: "", filepath.Join(dir, "none.json"): "",
	} {
		if got := FailReasons(path); got != want {
			t.Errorf("%s: %q, want %q", filepath.Base(path), got, want)
		}
	}
}

func TestCap(t *testing.T) {
	if s := strings.Repeat("x", 10); Cap(s) != s {
		t.Error("a short text is cut")
	}
	long := strings.Repeat("x", MaxEvidence+5)
	if got := Cap(long); len(got) > MaxEvidence+40 || !strings.HasSuffix(got, "[... 5 bytes cut]\n") {
		t.Errorf("Cap of %d bytes: %d bytes ending %q", len(long), len(got), got[len(got)-20:])
	}
}
