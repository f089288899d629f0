package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

func TestHarnessGlobs(t *testing.T) {
	c, err := Load(write(t, "harness_globs: [scripts/test.sh, 'ci/**']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.HarnessGlobs, " ") != "scripts/test.sh ci/**" {
		t.Errorf("harness_globs = %q", c.HarnessGlobs)
	}
	if d := Default(); len(d.HarnessGlobs) != 0 {
		t.Errorf("default harness_globs = %q, want none", d.HarnessGlobs)
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

// TestValueErrorsNameTheirLine checks that each value error is reported at the line that
// sets the value, every one of them, in line order.
func TestValueErrorsNameTheirLine(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // line: message
	}{
		{"jobs zero", "agent: claude\njobs: 0\n", []string{"2: jobs: 0: must be at least 1"}},
		{"jobs negative", "\n\njobs: -3\n", []string{"3: jobs: -3: must be at least 1"}},
		{"negative timeout", "jobs: 2\ntask_timeout: -5m\n", []string{"2: task_timeout: -5m0s: must be positive"}},
		{"zero timeout", "task_timeout: 0s\n", []string{"1: task_timeout: 0s: must be positive"}},
		{"negative grace", "jobs: 1\ngrace: -1s\n", []string{"2: grace: -1s: must not be negative"}},
		{"negative max_turns", "max_turns: -1\n", []string{"1: max_turns: -1: must not be negative"}},
		{"negative retries", "retries:\n  max_retries: 3\n  global_cap: -1\n", []string{"3: retries.global_cap: -1: must be at least 1"}},
		{"zero retries", "retries: {same_signature_halt: 0}\n", []string{"1: retries.same_signature_halt: 0: must be at least 1"}},
		{"retry_feedback", "jobs: 1\nretry_feedback: loud\n", []string{`2: retry_feedback: "loud": must be raw or review`}},
		{"test_ids", "jobs: 1\ntest_ids: words\n", []string{`2: test_ids: "words": must be plan or names`}},
		{"empty command", "agent: mine\nagents:\n  mine:\n    command: []\n", []string{"4: agents.mine.command is empty"}},
		{"no command", "agents:\n  ok: {command: [x]}\n  mine: {}\n", []string{"3: agents.mine.command is empty"}},
		{"empty harness glob", "jobs: 1\nharness_globs:\n  - scripts/test.sh\n  - ''\n", []string{`4: harness_globs: "": an empty glob matches nothing`}},
		{"malformed harness glob", "harness_globs: ['ci/**', 'x[.sh', 'a{b']\n", []string{`1: harness_globs: "a{b": unbalanced braces`, `1: harness_globs: "x[.sh": malformed pattern`}},
		{"several", "grace: -1s\njobs: 0\n", []string{"1: grace: -1s: must not be negative", "2: jobs: 0: must be at least 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.text)
			_, err := Load(p)
			var want []string
			for _, w := range tt.want {
				want = append(want, p+":"+w)
			}
			if err == nil || err.Error() != strings.Join(want, "\n") {
				t.Fatalf("err = %v\nwant %s", err, strings.Join(want, "\n"))
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("%T is not a *config.Error", err)
			}
		})
	}
}

func TestTypeErrorNamesLine(t *testing.T) {
	p := write(t, "jobs: 2\nretries:\n  max_retries: many\n")
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+":3: ") {
		t.Fatalf("err = %v, want line 3", err)
	}
}

func TestNotText(t *testing.T) {
	p := write(t, "jobs: 1\x00\xff\n")
	if _, err := Load(p); err == nil || err.Error() != p+":1: not a text file (invalid UTF-8)" {
		t.Fatalf("err = %v", err)
	}
}

func TestLine(t *testing.T) {
	c, err := Load(write(t, "jobs: 2\nagent: mine\nladder:\n  - codex\n  - mine\nagents:\n  mine: {command: [./a.sh]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		keys []string
		want int
	}{
		{[]string{"agent"}, 2},
		{[]string{"ladder", "1"}, 5},
		{[]string{"agents", "mine", "command"}, 7},
		{[]string{"task_timeout"}, 0},
		{[]string{"ladder", "7"}, 0},
	} {
		if got := c.Line(tt.keys...); got != tt.want {
			t.Errorf("Line(%q) = %d, want %d", tt.keys, got, tt.want)
		}
	}
	c.Override("agent", "ladder")
	if c.Line("agent") != 0 || c.Line("ladder", "0") != 0 {
		t.Error("an overridden setting still has a line")
	}
	if Default().Line("agent") != 0 {
		t.Error("the defaults have a line")
	}
}

// TestTestIDs: test_ids is plan unless the project says names (SPEC §12).
func TestTestIDs(t *testing.T) {
	if d := Default(); d.TestIDs != "plan" {
		t.Errorf("default test_ids = %q, want plan", d.TestIDs)
	}
	c, err := Load(write(t, "test_ids: names\n"))
	if err != nil || c.TestIDs != "names" {
		t.Fatalf("test_ids: names read as %v, %v", c, err)
	}
}
