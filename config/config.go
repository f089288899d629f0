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
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// Review is config review: the reviewer's and the judge's agents.
type Review struct {
	Reviewer string `yaml:"reviewer"`
	Judge    string `yaml:"judge"`
}

// Reviewing reports whether a reviewer or a judge is configured.
func (r Review) Reviewing() bool { return r.Reviewer != "" || r.Judge != "" }

// Config holds every setting, defaults filled in.
type Config struct {
	Jobs int `yaml:"jobs"`
	// GateJobs is how many gates judge candidates at once (SPEC §7.7): 0, the default,
	// is as many as jobs, up to half the machine's cores.
	GateJobs    int               `yaml:"gate_jobs"`
	TaskTimeout Duration          `yaml:"task_timeout"`
	Agent       string            `yaml:"agent"`
	Ladder      []string          `yaml:"ladder"`
	Models      map[string]string `yaml:"models"`
	MaxTurns    int               `yaml:"max_turns"`
	Agents      map[string]Agent  `yaml:"agents"`
	Commands    Commands          `yaml:"commands"`
	TestGlobs   []string          `yaml:"test_globs"`
	// HarnessGlobs name more files of the test harness (SPEC §7.6), beside those the gate
	// knows: only a TEST task may change them.
	HarnessGlobs  []string `yaml:"harness_globs"`
	Retries       Retries  `yaml:"retries"`
	RetryFeedback string   `yaml:"retry_feedback"`
	// Review names the agents that review and judge a change after its GREEN gate passed
	// and before it lands (SPEC §11.2); either may be empty.
	Review Review `yaml:"review"`
	// TestIDs says what a task's Test IDs are (SPEC §7.2, §12): plan, the test plan's IDs
	// (UNIT-001), which a test names as a word of its name; or names, the project's own
	// test names (TestParse/empty, test_parse[empty]), for projects without plan IDs.
	TestIDs string `yaml:"test_ids"`
	// MutantsPerTask bounds the mutants of one task's landed change in a spot check
	// (SPEC §11.1).
	MutantsPerTask int `yaml:"mutants_per_task"`
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
	// Sandbox is how agents are confined (SPEC §15.2): auto (bubblewrap where it runs,
	// else none, said once at start), bwrap (refuse to start without it) or off.
	Sandbox string `yaml:"sandbox"`
	// SandboxWritable are more folders an agent may write in its sandbox (a cache it
	// should keep; the agent program's own state has a private folder per attempt).
	SandboxWritable []string `yaml:"sandbox_writable"`
	// SandboxReadable are more paths the sandboxes may read that they would not see
	// otherwise (a toolchain or data folder under the home folder or the person's tree).
	SandboxReadable []string `yaml:"sandbox_readable"`
	// AgentEnv names more variables of the orchestrator's environment that pass into an
	// agent's sandbox, whose environment is otherwise cleared (SPEC §15.2): a key for a
	// model provider the adapter does not know, a toolchain setting.
	AgentEnv []string `yaml:"agent_env"`
	// GateNetwork is the network of the sandboxed commands that run candidate code
	// (SPEC §7.6): none (the default) or host, for projects whose tests need Required
	// Services.
	GateNetwork string `yaml:"gate_network"`
	// ReplayDir is where the replay agent finds its recordings (relative to the root).
	ReplayDir string `yaml:"replay_dir"`

	// Cost, budgets, rate limits and notifications (SPEC §16): see cost.go.
	Budget        Budget                  `yaml:"budget"`
	Prices        map[string]agents.Price `yaml:"prices"`
	RateLimitWait Duration                `yaml:"rate_limit_wait"`
	Notify        Notify                  `yaml:"notify"`

	// Workers say where attempts' agents run when not here (SPEC §18): see workers.go.
	Workers Workers `yaml:"workers"`

	// path and doc are the file read and its YAML tree, for the line of a setting; a key in
	// overridden was set by a flag since, so the file no longer says where it came from.
	path       string
	doc        *yaml.Node
	overridden map[string]bool
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
		Jobs:           1,
		TaskTimeout:    Duration{30 * time.Minute},
		Agent:          "claude",
		Models:         map[string]string{"easy": "haiku", "normal": "sonnet", "complex": "opus"},
		MaxTurns:       50,
		Agents:         map[string]Agent{},
		TestGlobs:      []string{"**/*_test.go", "tests/**", "test/**", "**/test_*.py", "**/*_test.py", "**/*.test.ts", "**/*.test.js", "**/*.spec.ts", "**/*.spec.js", "**/tests/*.rs"},
		Retries:        Retries(retry.DefaultLimits()),
		RetryFeedback:  "raw",
		MutantsPerTask: 20,
		TestIDs:        "plan",
		Grace:          Duration{2 * time.Minute},
		StopGrace:      Duration{5 * time.Second},
		Sandbox:        "auto",
		GateNetwork:    "none",
		ReplayDir:      agents.DefaultReplayDir,
		RateLimitWait:  Duration{DefaultRateLimitWait},
	}
}

// An Error is a problem in config.yaml at a line.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// Errors are every value error of one config file, in line order.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the errors, for errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

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
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		return nil, &Error{Path: path, Line: 1, Msg: "not a text file (invalid UTF-8)"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(path, err)
	}
	// The same text as a tree, for the lines of the values: it decoded above, so it parses.
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err == nil {
		c.doc = &doc
	}
	c.path = path
	if errs := c.check(); len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// Path returns the file the settings were read from ("" for the defaults alone).
func (c *Config) Path() string { return c.path }

// Line returns the line of config.yaml that sets the value at keys (map keys, or a
// sequence index in decimal: Line("ladder", "1")), or 0 when the file does not set it or a
// flag has overridden it since (see Override).
func (c *Config) Line(keys ...string) int {
	if c.doc == nil || len(keys) == 0 || c.overridden[keys[0]] {
		return 0
	}
	n := c.doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, k := range keys {
		n = child(n, k)
		if n == nil {
			return 0
		}
	}
	return n.Line
}

// child returns the value under key k of a mapping node, or item k of a sequence node.
func child(n *yaml.Node, k string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// Override records that a flag has set the top-level settings keys, so that a problem with
// their values is no longer said to be on a line of config.yaml.
func (c *Config) Override(keys ...string) {
	if c.overridden == nil {
		c.overridden = map[string]bool{}
	}
	for _, k := range keys {
		c.overridden[k] = true
	}
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

// check returns every value error, each at the line that sets the value. Zero retry limits
// are refused rather than read as the defaults (which is what retry.Limits does with them):
// a person who writes 0 does not mean 10.
func (c *Config) check() Errors {
	var errs Errors
	bad := func(msg string, keys ...string) {
		errs = append(errs, &Error{Path: c.path, Line: max(c.Line(keys...), 1), Msg: msg})
	}
	if c.Jobs < 1 {
		bad(fmt.Sprintf("jobs: %d: must be at least 1", c.Jobs), "jobs")
	}
	if c.GateJobs < 0 {
		bad(fmt.Sprintf("gate_jobs: %d: must be 0 (as many as jobs, up to half the cores) or more", c.GateJobs), "gate_jobs")
	}
	if c.TaskTimeout.Duration <= 0 {
		bad(fmt.Sprintf("task_timeout: %s: must be positive", c.TaskTimeout.Duration), "task_timeout")
	}
	if c.Grace.Duration < 0 {
		bad(fmt.Sprintf("grace: %s: must not be negative", c.Grace.Duration), "grace")
	}
	switch c.Sandbox {
	case "auto", "bwrap", "off":
	default:
		bad(fmt.Sprintf("sandbox: %q: must be auto, bwrap or off", c.Sandbox), "sandbox")
	}
	switch c.GateNetwork {
	case "none", "host":
	default:
		bad(fmt.Sprintf("gate_network: %q: must be none or host", c.GateNetwork), "gate_network")
	}
	if c.StopGrace.Duration < 0 {
		bad(fmt.Sprintf("stop_grace: %s: must not be negative", c.StopGrace.Duration), "stop_grace")
	}
	for name, addr := range c.Services {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(fmt.Sprintf("services.%s: %q is not host:port", name, addr), "services", name)
		}
	}
	if c.TestIDs != "plan" && c.TestIDs != "names" {
		bad(fmt.Sprintf("test_ids: %q: must be plan or names", c.TestIDs), "test_ids")
	}
	if c.MutantsPerTask < 1 {
		bad(fmt.Sprintf("mutants_per_task: %d: must be at least 1", c.MutantsPerTask), "mutants_per_task")
	}
	if c.MaxTurns < 0 {
		bad(fmt.Sprintf("max_turns: %d: must not be negative", c.MaxTurns), "max_turns")
	}
	for _, r := range []struct {
		key string
		n   int
	}{{"max_retries", c.Retries.MaxRetries}, {"same_signature_halt", c.Retries.SameSignatureHalt}, {"global_cap", c.Retries.GlobalCap}} {
		if r.n < 1 {
			bad(fmt.Sprintf("retries.%s: %d: must be at least 1", r.key, r.n), "retries", r.key)
		}
	}
	if c.RetryFeedback != "raw" && c.RetryFeedback != "review" {
		bad(fmt.Sprintf("retry_feedback: %q: must be raw or review", c.RetryFeedback), "retry_feedback")
	}
	for i, g := range c.HarnessGlobs {
		if err := checkGlob(g); err != nil {
			bad(fmt.Sprintf("harness_globs: %q: %v", g, err), "harness_globs", strconv.Itoa(i))
		}
	}
	for name, a := range c.Agents {
		if len(a.Command) == 0 || a.Command[0] == "" {
			keys := []string{"agents", name, "command"}
			if c.Line(keys...) == 0 {
				keys = keys[:2]
			}
			bad(fmt.Sprintf("agents.%s.command is empty", name), keys...)
		}
	}
	errs = append(errs, c.checkCost()...)
	errs = append(errs, c.checkWorkers()...)
	slices.SortFunc(errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return errs
}

// checkGlob says what is wrong with a glob of test_globs or harness_globs, or nil.
func checkGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return errors.New("an empty glob matches nothing")
	}
	if strings.Count(g, "{") != strings.Count(g, "}") {
		return errors.New("unbalanced braces")
	}
	for _, elem := range strings.Split(g, "/") {
		if _, err := path.Match(elem, ""); err != nil {
			return errors.New("malformed pattern")
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
