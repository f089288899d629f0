package cost

import (
	"fmt"

	"github.com/orchestrator/orchestrator/config"
)

// Over says which budget of b an attempt of task id that started now would pass, or "":
// the task's cost so far plus the most one of its attempts cost, against task_usd; the
// same for task_tokens; every task's cost so far plus the most any one attempt cost,
// against run_usd. Unknown costs count as nothing: a budget holds what is known. task and
// run give the task's and the run's sums, read only when a budget needs them.
func Over(b config.Budget, id string, task, run func() Spent) string {
	if b.TaskUSD == nil && b.RunUSD == nil && b.TaskTokens == nil {
		return ""
	}
	t := task()
	if b.TaskUSD != nil && t.KnownUSD+t.MostUSD > *b.TaskUSD {
		return fmt.Sprintf("budget task_usd $%.2f: %s has spent $%.4f in %d attempt(s), and its next attempt would pass the budget (the most one cost: $%.4f)",
			*b.TaskUSD, id, t.KnownUSD, t.Attempts, t.MostUSD)
	}
	if b.TaskTokens != nil && t.KnownTokens+t.MostTokens > *b.TaskTokens {
		return fmt.Sprintf("budget task_tokens %d: %s has used %d tokens in %d attempt(s), and its next attempt would pass the budget (the most one used: %d)",
			*b.TaskTokens, id, t.KnownTokens, t.Attempts, t.MostTokens)
	}
	if b.RunUSD != nil {
		if r := run(); r.KnownUSD+r.MostUSD > *b.RunUSD {
			return fmt.Sprintf("budget run_usd $%.2f: the tasks have spent $%.4f in %d attempt(s), and another attempt would pass the budget (the most one cost: $%.4f)",
				*b.RunUSD, r.KnownUSD, r.Attempts, r.MostUSD)
		}
	}
	return ""
}
