package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCostSettings(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	good := `budget: {task_usd: 1.5, run_usd: 20, task_tokens: 500000}
prices:
  gpt-5.5: {input_per_mtok: 1.25, output_per_mtok: 10, cached_per_mtok: 0.125}
rate_limit_wait: 3s
notify:
  halt: [notify-send, halted]
  done: [./scripts/done.sh]
`
	os.WriteFile(p, []byte(good), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if *c.Budget.TaskUSD != 1.5 || *c.Budget.RunUSD != 20 || *c.Budget.TaskTokens != 500000 {
		t.Errorf("budget %+v", c.Budget)
	}
	if pr, ok := c.PriceOf("gpt-5.5"); !ok || pr.InputPerMTok != 1.25 || *pr.CachedPerMTok != 0.125 {
		t.Errorf("price %+v %v", pr, ok)
	}
	if c.RateLimitWait.Duration != 3*time.Second || c.Notify.Halt[1] != "halted" || c.Notify.Done[0] != "./scripts/done.sh" {
		t.Errorf("config %+v", c)
	}
	if d := Default(); d.RateLimitWait.Duration != 15*time.Minute || d.Budget.TaskUSD != nil {
		t.Errorf("defaults: %+v", d)
	}

	bad := `jobs: 1
budget: {task_usd: 0, run_usd: 5}
prices:
  gpt-5.5: {input_per_mtok: -1, output_per_mtok: 10}
rate_limit_wait: 0s
notify:
  halt: []
`
	os.WriteFile(p, []byte(bad), 0o644)
	_, err = Load(p)
	want := []string{
		p + ":2: budget.task_usd: 0: must be positive",
		p + ":4: prices.gpt-5.5: a price must not be negative",
		p + ":5: rate_limit_wait: 0s: must be positive",
		p + ":7: notify.halt: needs a command",
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v\nlacks %q", err, w)
		}
	}
	os.WriteFile(p, []byte("budget: {task_dollars: 3}\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), ":1: unknown key task_dollars") {
		t.Errorf("unknown budget key: %v", err)
	}
}
