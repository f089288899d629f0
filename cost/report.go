package cost

import (
	"slices"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/queue"
)

// A Row is one attempt's usage as the report counts it.
type Row struct {
	Task     string
	Attempt  int
	Outcome  string // the attempt's outcome: completed (verified) or another
	Verified bool
	Runs     []Run
}

// A Bucket sums what agent runs cost, split into what verified work cost (the runs of
// attempts whose claim the gate verified and that landed) and what the other attempts
// cost (rejected claims, failures, stopped or rate-limited attempts). A figure is nil
// (JSON null) when a run in it did not report it: unknown, never 0.
type Bucket struct {
	VerifiedUSD    *float64 `json:"verified_usd"`
	RejectedUSD    *float64 `json:"rejected_usd"`
	TotalUSD       *float64 `json:"total_usd"`
	VerifiedTokens *int64   `json:"verified_tokens"`
	RejectedTokens *int64   `json:"rejected_tokens"`
	Tokens         *int64   `json:"tokens"`
	Runs           int      `json:"runs"`
}

func newBucket() Bucket {
	zf := func() *float64 { v := 0.0; return &v }
	zi := func() *int64 { v := int64(0); return &v }
	return Bucket{VerifiedUSD: zf(), RejectedUSD: zf(), TotalUSD: zf(), VerifiedTokens: zi(), RejectedTokens: zi(), Tokens: zi()}
}

func (b *Bucket) add(u agents.Usage, verified bool) {
	tokens := u.Tokens()
	if verified {
		b.VerifiedUSD, b.VerifiedTokens = agents.AddKnown(b.VerifiedUSD, u.CostUSD), agents.AddKnown(b.VerifiedTokens, tokens)
	} else {
		b.RejectedUSD, b.RejectedTokens = agents.AddKnown(b.RejectedUSD, u.CostUSD), agents.AddKnown(b.RejectedTokens, tokens)
	}
	b.TotalUSD, b.Tokens = agents.AddKnown(b.TotalUSD, u.CostUSD), agents.AddKnown(b.Tokens, tokens)
	b.Runs++
}

// TaskCost is one task's line of a Report.
type TaskCost struct {
	Task     string `json:"task"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Bucket
}

// AgentCost is one agent's line of a Report.
type AgentCost struct {
	Agent string `json:"agent"`
	Bucket
}

// RoleCost is one role's line of a Report.
type RoleCost struct {
	Role string `json:"role"`
	Bucket
}

// A Report is what `orchestrator cost` prints: every task's, agent's and role's
// cost, and the run's, each split into verified work and the rest.
type Report struct {
	Tasks  []TaskCost  `json:"tasks"`
	Agents []AgentCost `json:"agents"`
	Roles  []RoleCost  `json:"roles"`
	Run    Bucket      `json:"run"`
}

// BuildReport sums rows, the attempts of the tasks of tasks (watch.ReadCosts reads them
// from the attempt records), into each task's, agent's and role's cost and the run's.
// Tasks are in queue order, agents and roles by name.
func BuildReport(tasks *queue.Doc, rows []Row) Report {
	rep := Report{Tasks: []TaskCost{}, Agents: []AgentCost{}, Roles: []RoleCost{}, Run: newBucket()}
	byTask := map[string]*TaskCost{}
	for _, t := range tasks.Tasks() {
		rep.Tasks = append(rep.Tasks, TaskCost{Task: t.ID, Status: t.Status, Bucket: newBucket()})
	}
	for i := range rep.Tasks {
		byTask[rep.Tasks[i].Task] = &rep.Tasks[i]
	}
	agentsSeen := map[string]*Bucket{}
	rolesSeen := map[string]*Bucket{}
	bucket := func(m map[string]*Bucket, k string) *Bucket {
		if m[k] == nil {
			b := newBucket()
			m[k] = &b
		}
		return m[k]
	}
	for _, row := range rows {
		tc := byTask[row.Task]
		if tc == nil {
			continue
		}
		tc.Attempts++
		for _, run := range row.Runs {
			tc.add(run.Usage, row.Verified)
			bucket(agentsSeen, run.Agent).add(run.Usage, row.Verified)
			bucket(rolesSeen, run.Role).add(run.Usage, row.Verified)
			rep.Run.add(run.Usage, row.Verified)
		}
	}
	for _, name := range sortedKeys(agentsSeen) {
		rep.Agents = append(rep.Agents, AgentCost{Agent: name, Bucket: *agentsSeen[name]})
	}
	for _, name := range sortedKeys(rolesSeen) {
		rep.Roles = append(rep.Roles, RoleCost{Role: name, Bucket: *rolesSeen[name]})
	}
	return rep
}

func sortedKeys(m map[string]*Bucket) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
