package watch

import (
	"fmt"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
)

// PromptInfo is the prompt a task's agent would receive if it started now, with what it was
// built from: `orchestrator prompt ID --json`.
type PromptInfo struct {
	Task      string   `json:"task"`
	Role      string   `json:"role"`
	Attempt   int      `json:"attempt"`
	Allowlist []string `json:"allowlist"` // the files the prompt may include, repo-relative
	Prompt    string   `json:"prompt"`
}

// PromptInfoFor returns the PromptInfo of task id: the same prompt as PromptFor.
func PromptInfoFor(l queue.Layout, cfg *config.Config, id string) (*PromptInfo, error) {
	tasks, err := queue.Load(l.Tasks())
	if err != nil {
		return nil, err
	}
	rec, ok := tasks.Record(id)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %s", tasks.Path, queue.ErrNotFound, id)
	}
	t := tasks.Task(rec)
	at := placeOf(l)
	at.feedback = cfg.RetryFeedback == "review"
	n := nextAttempt(at.runs, id)
	text, err := renderPrompt(l, at, tasks, t, testCommand(cfg, tasks, rec), n)
	if err != nil {
		return nil, err
	}
	list := allowlist(at, tasks, t)
	if list == nil {
		list = []string{}
	}
	return &PromptInfo{Task: id, Role: prompts.RoleFor(t.Kind.String()), Attempt: n, Allowlist: list, Prompt: text}, nil
}
