package cost

import (
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
)

func usd(v float64) *float64 { return &v }
func tok(v int64) *int64     { return &v }

// run is one agent run that cost c dollars (nil: unknown) and used in+out tokens.
func run(agent, role string, c *float64, in, out int64) Run {
	return Run{Agent: agent, Role: role, Usage: agents.Usage{CostUSD: c, InputTokens: tok(in), OutputTokens: tok(out), CacheReadTokens: tok(0), CacheWriteTokens: tok(0)}}
}

// TestSpent: what is known counts toward budgets although the sum is unknown once one run's
// cost is; the most one attempt cost is the largest attempt, not the largest run.
func TestSpent(t *testing.T) {
	var s Spent
	s.Add([]Run{run("claude", "implementer", usd(0.25), 1000, 100), run("codex", "reviewer", usd(0.05), 200, 30)})
	s.Add([]Run{run("claude", "implementer", nil, 500, 50)})
	if s.Attempts != 2 || s.KnownUSD != 0.30 || s.MostUSD != 0.30 || s.KnownTokens != 1880 || s.MostTokens != 1330 {
		t.Errorf("spent %+v", s)
	}
	if s.Total.CostUSD != nil || FormatUSD(s.Total.CostUSD) != "?" || FormatTokens(s.Total.Tokens()) != "1880" {
		t.Errorf("total: %s, %s tokens", FormatUSD(s.Total.CostUSD), FormatTokens(s.Total.Tokens()))
	}
	var all Spent
	all.Merge(s)
	all.Merge(Spent{Attempts: 1, KnownUSD: 0.5, MostUSD: 0.5})
	if all.Attempts != 3 || all.KnownUSD != 0.8 || all.MostUSD != 0.5 {
		t.Errorf("merged %+v", all)
	}
}

// TestOver: each budget refuses the attempt that would pass it (what was spent plus the
// most one attempt cost), names it, and reads the sums only when a budget needs them.
func TestOver(t *testing.T) {
	task := Spent{Attempts: 2, KnownUSD: 0.6, MostUSD: 0.4, KnownTokens: 9000, MostTokens: 5000}
	run := Spent{Attempts: 5, KnownUSD: 1.5, MostUSD: 0.4}
	tests := []struct {
		name string
		b    config.Budget
		want string
	}{
		{"none", config.Budget{}, ""},
		{"task_usd passed", config.Budget{TaskUSD: usd(0.9)}, "budget task_usd $0.90: TASK-001 has spent $0.6000 in 2 attempt(s)"},
		{"task_usd held", config.Budget{TaskUSD: usd(1.0)}, ""},
		{"task_tokens passed", config.Budget{TaskTokens: tok(12000)}, "budget task_tokens 12000: TASK-001 has used 9000 tokens"},
		{"task_tokens held", config.Budget{TaskTokens: tok(14000)}, ""},
		{"run_usd passed", config.Budget{RunUSD: usd(1.8)}, "budget run_usd $1.80: the tasks have spent $1.5000 in 5 attempt(s)"},
		{"run_usd held", config.Budget{RunUSD: usd(1.9)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := map[string]int{}
			got := Over(tt.b, "TASK-001", func() Spent { reads["task"]++; return task }, func() Spent { reads["run"]++; return run })
			if tt.want == "" && got != "" || tt.want != "" && !strings.HasPrefix(got, tt.want) {
				t.Errorf("Over = %q, want %q", got, tt.want)
			}
			if tt.b.RunUSD == nil && reads["run"] > 0 || tt.b == (config.Budget{}) && reads["task"] > 0 {
				t.Errorf("read %v for budget %+v", reads, tt.b)
			}
		})
	}
}

// TestBuildReport: each task, agent and role sums its runs, split into verified work and
// the rest; one run of unknown cost makes every sum it is in unknown (nil), never 0.
func TestBuildReport(t *testing.T) {
	doc, err := queue.Parse("task_queue.md", []byte("# Tasks\n\n### TASK-001\n\n| Field | Value |\n|---|---|\n| Status | completed |\n\n### TASK-002\n\n| Field | Value |\n|---|---|\n| Status | pending |\n"), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	rep := BuildReport(doc, []Row{
		{Task: "TASK-001", Attempt: 1, Runs: []Run{run("claude", "implementer", usd(0.25), 1000, 100)}},
		{Task: "TASK-001", Attempt: 2, Verified: true, Runs: []Run{run("claude", "implementer", usd(0.5), 2000, 200), run("codex", "reviewer", nil, 300, 30)}},
	})
	if len(rep.Tasks) != 2 || rep.Tasks[0].Attempts != 2 || rep.Tasks[1].Attempts != 0 || rep.Tasks[1].Runs != 0 {
		t.Fatalf("tasks %+v", rep.Tasks)
	}
	t1 := rep.Tasks[0]
	if *t1.RejectedUSD != 0.25 || t1.VerifiedUSD != nil || t1.TotalUSD != nil || *t1.Tokens != 3630 || t1.Runs != 3 {
		t.Errorf("TASK-001: rejected %s verified %s total %s tokens %s runs %d",
			FormatUSD(t1.RejectedUSD), FormatUSD(t1.VerifiedUSD), FormatUSD(t1.TotalUSD), FormatTokens(t1.Tokens), t1.Runs)
	}
	if len(rep.Agents) != 2 || rep.Agents[0].Agent != "claude" || *rep.Agents[0].TotalUSD != 0.75 || rep.Agents[1].TotalUSD != nil {
		t.Errorf("agents %+v", rep.Agents)
	}
	if len(rep.Roles) != 2 || rep.Roles[0].Role != "implementer" || *rep.Roles[0].VerifiedUSD != 0.5 {
		t.Errorf("roles %+v", rep.Roles)
	}
	if rep.Run.Runs != 3 || rep.Run.TotalUSD != nil || *rep.Run.RejectedUSD != 0.25 {
		t.Errorf("run %+v", rep.Run)
	}
}
