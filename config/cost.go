package config

import (
	"fmt"
	"github.com/orchestrator/orchestrator/agents"
	"time"
)

// DefaultRateLimitWait is how long watch waits before starting an agent program again
// after it reported a rate or usage limit without saying when it lifts.
const DefaultRateLimitWait = 15 * time.Minute

// Budget caps what agents may spend (SPEC §16). A nil field is no cap. An attempt that
// would start past a cap does not start: its task halts, naming the cap.
type Budget struct {
	// TaskUSD caps the cost of one task's attempts, in US dollars.
	TaskUSD *float64 `yaml:"task_usd"`
	// RunUSD caps the cost of every task's attempts in the queue.
	RunUSD *float64 `yaml:"run_usd"`
	// TaskTokens caps the tokens of one task's attempts.
	TaskTokens *int64 `yaml:"task_tokens"`
}

// Notify are the commands run when a task halts or completes: each an argument vector,
// run without a shell, with the event as JSON on its standard input.
type Notify struct {
	Halt []string `yaml:"halt"`
	Done []string `yaml:"done"`
}

// checkCost returns the value errors of the budget, prices, rate_limit_wait and notify
// settings.
func (c *Config) checkCost() Errors {
	var errs Errors
	bad := func(msg string, keys ...string) {
		errs = append(errs, &Error{Path: c.path, Line: max(c.Line(keys...), 1), Msg: msg})
	}
	if b := c.Budget.TaskUSD; b != nil && *b <= 0 {
		bad(fmt.Sprintf("budget.task_usd: %v: must be positive", *b), "budget", "task_usd")
	}
	if b := c.Budget.RunUSD; b != nil && *b <= 0 {
		bad(fmt.Sprintf("budget.run_usd: %v: must be positive", *b), "budget", "run_usd")
	}
	if b := c.Budget.TaskTokens; b != nil && *b <= 0 {
		bad(fmt.Sprintf("budget.task_tokens: %d: must be positive", *b), "budget", "task_tokens")
	}
	for model, p := range c.Prices {
		if p.InputPerMTok < 0 || p.OutputPerMTok < 0 || p.CachedPerMTok != nil && *p.CachedPerMTok < 0 {
			bad(fmt.Sprintf("prices.%s: a price must not be negative", model), "prices", model)
		}
		if p.InputPerMTok == 0 && p.OutputPerMTok == 0 {
			bad(fmt.Sprintf("prices.%s: needs input_per_mtok and output_per_mtok", model), "prices", model)
		}
	}
	if c.RateLimitWait.Duration <= 0 {
		bad(fmt.Sprintf("rate_limit_wait: %s: must be positive", c.RateLimitWait.Duration), "rate_limit_wait")
	}
	for _, n := range []struct {
		key  string
		argv []string
	}{{"halt", c.Notify.Halt}, {"done", c.Notify.Done}} {
		if c.Line("notify", n.key) != 0 && (len(n.argv) == 0 || n.argv[0] == "") {
			bad(fmt.Sprintf("notify.%s: needs a command, as a list: [program, args...]", n.key), "notify", n.key)
		}
	}
	return errs
}

// PriceOf returns the price of model, and whether the config has one.
func (c *Config) PriceOf(model string) (p agents.Price, ok bool) {
	p, ok = c.Prices[model]
	return p, ok
}
