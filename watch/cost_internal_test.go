package watch

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/cost"
	"github.com/orchestrator/orchestrator/queue"
)

// TestAddUsageOtherRoles: a run that an attempt makes besides its agent's (a reviewer's, a
// judge's) adds its usage with its role through addUsage; result.json keeps each run, and
// the task's spending sums them all. A price applies to a program that reports tokens
// only, for the model it ran.
func TestAddUsageOtherRoles(t *testing.T) {
	cfg := config.Default()
	cfg.Prices = map[string]agents.Price{"gpt-5.5": {InputPerMTok: 1, OutputPerMTok: 10}}
	r := newRunner(Options{Config: cfg, Out: io.Discard})
	r.runs = t.TempDir()
	a := &attempt{id: "TASK-001", n: 1, dir: filepath.Join(r.runs, "TASK-001", "1"), agent: "claude", task: queue.Task{ID: "TASK-001", Kind: queue.KindBuild}}
	if err := mkdirAll(a.dir); err != nil {
		t.Fatal(err)
	}
	claude := []byte(`{"type":"result","subtype":"success","is_error":false,"result":"ok","num_turns":3,"total_cost_usd":0.25,"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`)
	codex := []byte(`{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":0,"output_tokens":300}}`)
	r.addUsage(a, roleOf(a), "claude", "sonnet", claude)
	r.addUsage(a, agents.RoleReviewer, "codex", "gpt-5.5", codex)
	r.addUsage(a, agents.RoleJudge, "codex", "", codex) // no model known: no price
	a.record(result{Outcome: "completed"})
	res, ok := readResult(a.dir)
	if !ok || len(res.Usage) != 3 || res.Usage[1].Role != agents.RoleReviewer || res.Usage[2].Role != agents.RoleJudge {
		t.Fatalf("result.json usage: %+v", res.Usage)
	}
	if c := res.Usage[1].Usage.CostUSD; c == nil || *c != (2000*1+300*10)/1e6 {
		t.Errorf("the reviewer's run was not priced: %+v", res.Usage[1].Usage)
	}
	s := taskSpent(r.runs, "TASK-001")
	// The judge's cost is unknown, so the task's is; its tokens are known.
	if s.Total.CostUSD != nil || s.Total.Tokens() == nil || *s.Total.Tokens() != 1100+2300+2300 || s.KnownUSD != 0.25+0.005 {
		t.Errorf("task spent %+v (known $%v)", s.Total, s.KnownUSD)
	}
	if cost.FormatUSD(s.Total.CostUSD) != "?" || cost.FormatTokens(s.Total.Tokens()) != "5700" {
		t.Errorf("fields %s %s", cost.FormatUSD(s.Total.CostUSD), cost.FormatTokens(s.Total.Tokens()))
	}
}

func mkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }
