// Package config reads .orchestrator/config.yaml (SPEC §12). Every key is optional and has a
// default; an unknown key is an error that names its line. The package only reads settings;
// the commands decide what flags override them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/retry"
	"gopkg.in/yaml.v3"
)

// Agent is one configured agent command.
type Agent struct {
	Command []string `yaml:"command"`
}

// Retries are the retry limits of SPEC §8: [retry.Limits] as config.yaml spells them.
type Retries struct {
	MaxRetries        int `yaml:"max_retries"`
	SameSignatureHalt int `yaml:"same_signature_halt"`
	GlobalCap         int `yaml:"global_cap"`
}

// Commands are the project's build and test commands.
type Commands struct {
	Test  string `yaml:"test"`
	Build string `yaml:"build"`
}

// Config holds every setting, defaults filled in.
type Config struct {
	Jobs          int               `yaml:"jobs"`
	TaskTimeout   Duration          `yaml:"task_timeout"`
	Agent         string            `yaml:"agent"`
	Ladder        []string          `yaml:"ladder"`
	Models        map[string]string `yaml:"models"`
	MaxTurns      int               `yaml:"max_turns"`
	Agents        map[string]Agent  `yaml:"agents"`
	Commands      Commands          `yaml:"commands"`
	TestGlobs     []string          `yaml:"test_globs"`
	Retries       Retries           `yaml:"retries"`
	RetryFeedback string            `yaml:"retry_feedback"`
	// Grace is how long an agent may go on after writing its marker: the prompt asks it to
	// write the marker and then end its final message with the result block, and a model's
	// last turn takes time. An agent that exits on its own does not wait for it.
	Grace Duration `yaml:"grace"`
	// StopGrace is how long a stopped agent gets between SIGTERM and SIGKILL.
	StopGrace Duration `yaml:"stop_grace"`
	// Services maps a Required Services name to the host:port that must accept a
	// connection before a task that needs it starts (SPEC §3.3); built-in defaults cover
	// the common ones.
	Services map[string]string `yaml:"services"`
	// ReplayDir is where the replay agent finds its recordings (relative to the root).
	ReplayDir string `yaml:"replay_dir"`
}

// Duration is a time.Duration written as "30m" or "1h30m" in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML reads a Duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 30m", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// Default returns the settings used when config.yaml says nothing.
func Default() *Config {
	return &Config{
		Jobs:          1,
		TaskTimeout:   Duration{30 * time.Minute},
		Agent:         "claude",
		Models:        map[string]string{"easy": "haiku", "normal": "sonnet", "complex": "opus"},
		MaxTurns:      50,
		Agents:        map[string]Agent{},
		TestGlobs:     []string{"**/*_test.go", "tests/**", "test/**", "**/test_*.py", "**/*_test.py", "**/*.test.ts", "**/*.test.js", "**/*.spec.ts", "**/*.spec.js", "**/tests/*.rs"},
		Retries:       Retries(retry.DefaultLimits()),
		RetryFeedback: "raw",
		Grace:         Duration{2 * time.Minute},
		StopGrace:     Duration{5 * time.Second},
		ReplayDir:     agents.DefaultReplayDir,
	}
}

// An Error is a problem in config.yaml at a line.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// Load reads path over the defaults. A missing file gives the defaults.
func Load(path string) (*Config, error) {
	c := Default()
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(src)) == 0 {
		return c, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(path, err)
	}
	if err := c.check(path); err != nil {
		return nil, err
	}
	return c, nil
}

var (
	lineRE  = lazyre.New(`line (\d+): (.*)`)
	fieldRE = lazyre.New(`field (\S+) not found in type`)
)

// yamlError turns a yaml.v3 error ("yaml: unmarshal errors:\n  line 3: field foo not found
// in type config.Config") into path:line: message.
func yamlError(path string, err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := lineRE().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		text := m[2]
		if f := fieldRE().FindStringSubmatch(text); f != nil {
			text = "unknown key " + f[1]
		}
		return &Error{Path: path, Line: n, Msg: text}
	}
	return &Error{Path: path, Line: 1, Msg: msg}
}

func (c *Config) check(path string) error {
	switch {
	case c.Jobs < 1:
		return &Error{Path: path, Line: 1, Msg: "jobs must be at least 1"}
	case c.TaskTimeout.Duration <= 0:
		return &Error{Path: path, Line: 1, Msg: "task_timeout must be positive"}
	case c.RetryFeedback != "raw" && c.RetryFeedback != "review":
		return &Error{Path: path, Line: 1, Msg: "retry_feedback must be raw or review"}
	}
	for name, a := range c.Agents {
		if len(a.Command) == 0 {
			return &Error{Path: path, Line: 1, Msg: fmt.Sprintf("agents.%s.command is empty", name)}
		}
	}
	return nil
}

// AgentFor returns the agent name for an attempt number (1-based): the ladder's entry when
// there is one, else the default agent.
func (c *Config) AgentFor(attempt int) string {
	if len(c.Ladder) == 0 {
		return c.Agent
	}
	if attempt-1 < len(c.Ladder) {
		return c.Ladder[attempt-1]
	}
	return c.Ladder[len(c.Ladder)-1]
}

// Model returns the model for a task's Complexity (normal when unknown or empty).
func (c *Config) Model(complexity string) string {
	if m, ok := c.Models[complexity]; ok {
		return m
	}
	return c.Models["normal"]
}
