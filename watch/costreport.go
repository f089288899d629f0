package watch

import (
	"slices"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/queue"
)

// A CostBucket sums what agent runs cost, split into what verified work cost (the runs of
// attempts whose claim the gate verified and that landed) and what the other attempts
// cost (rejected claims, failures, stopped or rate-limited attempts). A figure is nil
// (JSON null) when a run in it did not report it: unknown, never 0.
type CostBucket struct {
	VerifiedUSD    *float64 `json:"verified_usd"`
	RejectedUSD    *float64 `json:"rejected_usd"`
	TotalUSD       *float64 `json:"total_usd"`
	VerifiedTokens *int64   `json:"verified_tokens"`
	RejectedTokens *int64   `json:"rejected_tokens"`
	Tokens         *int64   `json:"tokens"`
	Runs           int      `json:"runs"`
}

func newBucket() CostBucket {
	zf := func() *float64 { v := 0.0; return &v }
	zi := func() *int64 { v := int64(0); return &v }
	return CostBucket{VerifiedUSD: zf(), RejectedUSD: zf(), TotalUSD: zf(), VerifiedTokens: zi(), RejectedTokens: zi(), Tokens: zi()}
}

func (b *CostBucket) add(u agents.Usage, verified bool) {
	addF := func(p **float64, v *float64) {
		if *p == nil || v == nil {
			*p = nil
			return
		}
		s := **p + *v
		*p = &s
	}
	addI := func(p **int64, v *int64) {
		if *p == nil || v == nil {
			*p = nil
			return
		}
		s := **p + *v
		*p = &s
	}
	tokens := u.Tokens()
	if verified {
		addF(&b.VerifiedUSD, u.CostUSD)
		addI(&b.VerifiedTokens, tokens)
	} else {
		addF(&b.RejectedUSD, u.CostUSD)
		addI(&b.RejectedTokens, tokens)
	}
	addF(&b.TotalUSD, u.CostUSD)
	addI(&b.Tokens, tokens)
	b.Runs++
}

// TaskCost is one task's line of a CostReport.
type TaskCost struct {
	Task     string `json:"task"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	CostBucket
}

// AgentCost is one agent's line of a CostReport.
type AgentCost struct {
	Agent string `json:"agent"`
	CostBucket
}

// RoleCost is one role's line of a CostReport.
type RoleCost struct {
	Role string `json:"role"`
	CostBucket
}

// A CostReport is what `orchestrator cost` prints: every task's, agent's and role's
// cost, and the run's, each split into verified work and the rest.
type CostReport struct {
	Tasks  []TaskCost  `json:"tasks"`
	Agents []AgentCost `json:"agents"`
	Roles  []RoleCost  `json:"roles"`
	Run    CostBucket  `json:"run"`
}

// BuildCostReport reads the attempt records of every task of tasks (see ReadCosts) and
// sums them. Tasks are in queue order, agents and roles by name.
func BuildCostReport(l queue.Layout, tasks *queue.Doc) CostReport {
	rep := CostReport{Tasks: []TaskCost{}, Agents: []AgentCost{}, Roles: []RoleCost{}, Run: newBucket()}
	rows := ReadCosts(l, tasks)
	byTask := map[string]*TaskCost{}
	for _, t := range tasks.Tasks() {
		rep.Tasks = append(rep.Tasks, TaskCost{Task: t.ID, Status: t.Status, CostBucket: newBucket()})
	}
	for i := range rep.Tasks {
		byTask[rep.Tasks[i].Task] = &rep.Tasks[i]
	}
	agentsSeen := map[string]*CostBucket{}
	rolesSeen := map[string]*CostBucket{}
	bucket := func(m map[string]*CostBucket, k string) *CostBucket {
		if m[k] == nil {
			b := newBucket()
			m[k] = &b
		}
		return m[k]
	}
	for _, row := range rows {
		tc := byTask[row.Task]
		tc.Attempts++
		for _, run := range row.Runs {
			tc.add(run.Usage, row.Verified)
			bucket(agentsSeen, run.Agent).add(run.Usage, row.Verified)
			bucket(rolesSeen, run.Role).add(run.Usage, row.Verified)
			rep.Run.add(run.Usage, row.Verified)
		}
	}
	for _, name := range sortedKeys(agentsSeen) {
		rep.Agents = append(rep.Agents, AgentCost{Agent: name, CostBucket: *agentsSeen[name]})
	}
	for _, name := range sortedKeys(rolesSeen) {
		rep.Roles = append(rep.Roles, RoleCost{Role: name, CostBucket: *rolesSeen[name]})
	}
	return rep
}

func sortedKeys(m map[string]*CostBucket) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
