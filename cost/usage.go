package cost

import (
	"fmt"
	"strconv"

	"github.com/orchestrator/orchestrator/agents"
)

// A Run is what one agent run within an attempt spent: the attempt's own agent (role
// implementer, test-writer...), and any other run the attempt makes, such as a reviewer's
// or a judge's, each with its role.
type Run struct {
	Role  string       `json:"role"`
	Agent string       `json:"agent"`
	Model string       `json:"model,omitempty"`
	Usage agents.Usage `json:"usage"`
}

// Sum is the sum of an attempt's runs (unknown when it has none).
func Sum(runs []Run) agents.Usage {
	var u agents.Usage
	for i, r := range runs {
		if i == 0 {
			u = r.Usage
		} else {
			u = u.Add(r.Usage)
		}
	}
	return u
}

// Spent sums the usage of the attempts of a task (or, for the run's budget, of every
// task).
type Spent struct {
	Total    agents.Usage
	Attempts int
	// KnownUSD and KnownTokens are the sums of what is known, for budgets; MostUSD and
	// MostTokens the most one attempt cost (the guess at what the next one costs).
	KnownUSD, MostUSD       float64
	KnownTokens, MostTokens int64
}

// Add counts one attempt's runs. What is known of them counts toward budgets even when
// another run's figure is unknown.
func (s *Spent) Add(runs []Run) {
	u := Sum(runs)
	if s.Attempts == 0 {
		s.Total = u
	} else {
		s.Total = s.Total.Add(u)
	}
	s.Attempts++
	var usd float64
	var tokens int64
	for _, r := range runs {
		if r.Usage.CostUSD != nil {
			usd += *r.Usage.CostUSD
		}
		if t := r.Usage.Tokens(); t != nil {
			tokens += *t
		}
	}
	s.KnownUSD += usd
	s.MostUSD = max(s.MostUSD, usd)
	s.KnownTokens += tokens
	s.MostTokens = max(s.MostTokens, tokens)
}

// Merge counts another task's sums toward a run's: what is known adds up, the most one
// attempt cost is the most of either.
func (s *Spent) Merge(o Spent) {
	s.KnownUSD += o.KnownUSD
	s.MostUSD = max(s.MostUSD, o.MostUSD)
	s.KnownTokens += o.KnownTokens
	s.MostTokens = max(s.MostTokens, o.MostTokens)
	s.Attempts += o.Attempts
}

// FormatUSD writes a cost in dollars, or "?" when it is unknown.
func FormatUSD(v *float64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprintf("$%.4f", *v)
}

// FormatTokens writes a token count, or "?" when it is unknown.
func FormatTokens(v *int64) string {
	if v == nil {
		return "?"
	}
	return strconv.FormatInt(*v, 10)
}
