package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsWhenMissing(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs != 1 || c.TaskTimeout.Duration != 30*time.Minute || c.Retries.MaxRetries != 10 || c.Agent != "claude" {
		t.Errorf("defaults = %+v", c)
	}
}

func TestLoadOverridesDefaults(t *testing.T) {
	c, err := Load(write(t, "jobs: 4\ntask_timeout: 90s\nagent: my\nagents:\n  my: {command: [./a.sh, '{{.Model}}']}\nladder: [codex, claude]\nretries: {max_retries: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs != 4 || c.TaskTimeout.Duration != 90*time.Second || c.Agents["my"].Command[1] != "{{.Model}}" {
		t.Errorf("got %+v", c)
	}
	if c.Retries.MaxRetries != 3 || c.Retries.GlobalCap != 15 {
		t.Errorf("retries = %+v, want max 3 and the default cap", c.Retries)
	}
	if c.AgentFor(1) != "codex" || c.AgentFor(2) != "claude" || c.AgentFor(5) != "claude" {
		t.Errorf("ladder picks wrong agents")
	}
}

func TestUnknownKeyNamesLine(t *testing.T) {
	p := write(t, "jobs: 2\n\nfoo: bar\n")
	_, err := Load(p)
	if err == nil || err.Error() != p+":3: unknown key foo" {
		t.Fatalf("err = %v", err)
	}
}

func TestBadDuration(t *testing.T) {
	p := write(t, "task_timeout: soon\n")
	if _, err := Load(p); err == nil || err.Error() != p+`:1: "soon" is not a duration like 30m` {
		t.Fatalf("err = %v", err)
	}
}
