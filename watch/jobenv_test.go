package watch

import (
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/config"
)

// TestJobEnvKeepsKeys: the environment a job carries to a worker holds what the agent gets
// here but its keys and tokens: ANTHROPIC_API_KEY, a token config agent_env passes, stay on
// this machine; a setting the adapter reads goes.
func TestJobEnvKeepsKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("ANTHROPIC_BASE_URL", "http://model.local")
	t.Setenv("MY_SERVICE_TOKEN", "tok-secret")
	t.Setenv("MY_SETTING", "on")
	cfg := config.Default()
	cfg.AgentEnv = []string{"MY_SERVICE_TOKEN", "MY_SETTING"}
	r := &runner{o: Options{Config: cfg}}
	env := strings.Join(r.jobEnv(&attempt{agent: "claude", argv: []string{"claude"}}), "\n")
	for _, gone := range []string{"sk-secret", "tok-secret"} {
		if strings.Contains(env, gone) {
			t.Errorf("a secret goes to the worker:\n%s", env)
		}
	}
	for _, kept := range []string{"ANTHROPIC_BASE_URL=http://model.local", "MY_SETTING=on"} {
		if !strings.Contains(env, kept) {
			t.Errorf("%s does not go to the worker:\n%s", kept, env)
		}
	}
}
