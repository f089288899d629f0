package agents_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/agents"
)

// TestRealReviewerAndJudge: the real claude writes the test and the code, then reviews the
// change as the reviewer; the real codex judges it (SPEC §11.2), both driven by the
// scripted model server (review.yaml checks that each gets its evidence: the diff, the
// pre-checks, the reviewer's notes). The change lands with the judge's ruling in its
// trailers, and both runs' usage counts toward the task.
func TestRealReviewerAndJudge(t *testing.T) {
	realAgent(t, agents.Codex) // the judge's program, on PATH beside claude
	l := newRealLoop(t, agents.Claude, "review.yaml", "review: {reviewer: claude, judge: codex}\n")
	l.sb.setPath(filepath.Dir(realAgent(t, agents.Codex)))
	code, out := l.run(t, "watch", "--once")
	t.Logf("watch --once (exit %d):\n%s", code, out)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if st := l.field(t, "TASK-001", "Status"); st != "completed" {
		t.Fatalf("TASK-001 is %s", st)
	}
	b, err := os.ReadFile(filepath.Join(l.sb.root, ".orchestrator", "runs", "TASK-001", "1", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Decision string `json:"decision"`
		Reviewer struct {
			Agent string                       `json:"agent"`
			Notes map[string]map[string]string `json:"notes"`
		} `json:"reviewer"`
		Judge struct {
			Agent   string `json:"agent"`
			Verdict struct {
				Verdict string   `json:"verdict"`
				Reasons []string `json:"reasons"`
			} `json:"verdict"`
		} `json:"judge"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Decision != "pass" || rec.Reviewer.Agent != "claude" || rec.Judge.Agent != "codex" ||
		rec.Reviewer.Notes["truthful"]["answer"] != "yes" || rec.Judge.Verdict.Verdict != "pass" {
		t.Errorf("review.json:\n%s", b)
	}
	cmd := exec.Command("git", "log", "-1", "--format=%B", "main")
	cmd.Dir = l.sb.root
	gitOut, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	msg := string(gitOut)
	if !strings.Contains(msg, "Orchestrator-Review: judge codex: pass: Add computes a + b") {
		t.Errorf("landing commit:\n%s", msg)
	}
	res := l.record(t, "TASK-001", 1)
	roles := map[string]string{}
	for _, u := range res.Usage {
		roles[u.Role] = u.Agent
	}
	if roles["implementer"] != "claude" || roles["reviewer"] != "claude" || roles["judge"] != "codex" {
		t.Errorf("usage recorded for %v, want the implementer, the reviewer and the judge", roles)
	}
}

// TestRealReviewerReemits: the real claude as reviewer first answers without a result
// block (mode D). The one re-emit prompt resumes its Claude Code session: the scripted
// model sees the reviewer's prompt beside the re-emit sentence (review-reemit.yaml), and
// the block it then sends lets the change land.
func TestRealReviewerReemits(t *testing.T) {
	realAgent(t, agents.Codex)
	l := newRealLoop(t, agents.Claude, "review-reemit.yaml", "review: {reviewer: claude, judge: codex}\n")
	l.sb.setPath(filepath.Dir(realAgent(t, agents.Codex)))
	code, out := l.run(t, "watch", "--once")
	t.Logf("watch --once (exit %d):\n%s", code, out)
	if code != 0 || l.field(t, "TASK-001", "Status") != "completed" {
		t.Fatalf("exit %d, TASK-001 %s", code, l.field(t, "TASK-001", "Status"))
	}
	b, err := os.ReadFile(filepath.Join(l.sb.root, ".orchestrator", "runs", "TASK-001", "1", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"reemit": true`) || !strings.Contains(string(b), `"decision": "pass"`) {
		t.Errorf("review.json:\n%s", b)
	}
}
