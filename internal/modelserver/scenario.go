package modelserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
)

// A Scenario is the script of a model: the turns it answers with, in order.
type Scenario struct {
	// Name names the scenario in failure messages.
	Name string `yaml:"name" json:"name"`
	// Turns answer the model requests, one each, in order.
	Turns []Turn `yaml:"turns" json:"turns"`
}

// A Turn is one answer of the model: optional text followed by optional tool calls, or an
// HTTP error. A turn with no tool calls ends the agent's work (stop reason end_turn); one with
// tool calls asks the agent to run them and come back with their results.
type Turn struct {
	// Expect is what the request that this turn answers must hold.
	Expect Expect `yaml:"expect" json:"expect"`
	// Text is the assistant's text, sent before the tool calls.
	Text string `yaml:"text" json:"text"`
	// Tools are the tool calls, in order.
	Tools []Tool `yaml:"tools" json:"tools"`
	// Error, when set, makes the answer an HTTP error instead.
	Error *Error `yaml:"error" json:"error"`
	// Usage, when set, is the token usage the answer reports; without it, every answer
	// reports 100 input and 50 output tokens.
	Usage *Usage `yaml:"usage" json:"usage"`
}

// Usage is the token usage of one answer, as both APIs report it: Anthropic's
// input_tokens, output_tokens, cache_read_input_tokens and cache_creation_input_tokens;
// the Responses API's input_tokens (cached ones included, as OpenAI counts them),
// input_tokens_details.cached_tokens and output_tokens.
type Usage struct {
	Input      int64 `yaml:"input" json:"input"`
	Output     int64 `yaml:"output" json:"output"`
	CacheRead  int64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite int64 `yaml:"cache_write" json:"cache_write"`
}

// usage returns the turn's usage, or the default one.
func (t Turn) usage() Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	return Usage{Input: 100, Output: 50}
}

// Expect is what a request must hold for the turn to answer it. Empty fields check nothing.
type Expect struct {
	// API is "anthropic" or "responses".
	API string `yaml:"api" json:"api"`
	// UserContains are texts that the request's user messages (the prompt, not tool
	// results) must contain.
	UserContains []string `yaml:"user_contains" json:"user_contains"`
	// ToolResultContains are texts that the results of the previous turn's tool calls,
	// joined, must contain.
	ToolResultContains []string `yaml:"tool_result_contains" json:"tool_result_contains"`
}

// Error is an HTTP error answer.
type Error struct {
	Status  int    `yaml:"status" json:"status"`
	Type    string `yaml:"type" json:"type"` // e.g. invalid_request_error, overloaded_error
	Message string `yaml:"message" json:"message"`
	// Headers are sent with the error, for example retry-after or
	// anthropic-ratelimit-requests-reset for a 429.
	Headers map[string]string `yaml:"headers" json:"headers"`
	// Fields are added to the error object of the body, for example resets_in_seconds
	// of a usage limit.
	Fields map[string]any `yaml:"fields" json:"fields"`
}

// A Tool is one tool call. Exactly one field is set. Write, Edit, Read and Run are
// translated into each agent's own tools; Call is sent as it is.
type Tool struct {
	Write *Write `yaml:"write" json:"write"`
	Edit  *Edit  `yaml:"edit" json:"edit"`
	Read  *Read  `yaml:"read" json:"read"`
	Run   *Run   `yaml:"run" json:"run"`
	Call  *Call  `yaml:"call" json:"call"`
}

// Write creates or replaces a file with Content.
type Write struct {
	Path    string `yaml:"path" json:"path"`
	Content string `yaml:"content" json:"content"`
}

// Edit replaces the text Old of a file with New. For Codex, whose patches work on lines, Old
// and New are whole lines.
type Edit struct {
	Path string `yaml:"path" json:"path"`
	Old  string `yaml:"old" json:"old"`
	New  string `yaml:"new" json:"new"`
}

// Read reads a file. Claude Code's Write and Edit refuse to change an existing file that the
// session has not read: read it first.
type Read struct {
	Path string `yaml:"path" json:"path"`
}

// Run runs a shell command.
type Run struct {
	Command string `yaml:"command" json:"command"`
}

// Call is a call of a named tool with its input, for tools the other kinds do not cover.
type Call struct {
	Name  string         `yaml:"name" json:"name"`
	Input map[string]any `yaml:"input" json:"input"`
}

// Load reads a scenario file (YAML, of which JSON is a subset). The file is first expanded
// as a text/template with vars (for example {{.Root}} for the project folder, so that paths
// can be absolute as Claude Code's tools want them); a nil vars leaves it as it is.
func Load(path string, vars any) (Scenario, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, err
	}
	sc, err := Parse(src, vars)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	if sc.Name == "" {
		sc.Name = path
	}
	return sc, nil
}

// Parse reads a scenario from YAML or JSON source, expanded with vars as Load does.
func Parse(src []byte, vars any) (Scenario, error) {
	if vars != nil {
		t, err := template.New("scenario").Option("missingkey=error").Parse(string(src))
		if err != nil {
			return Scenario{}, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, vars); err != nil {
			return Scenario{}, err
		}
		src = b.Bytes()
	}
	var sc Scenario
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return Scenario{}, err
	}
	return sc, sc.check()
}

func (sc Scenario) check() error {
	var errs []error
	for i, t := range sc.Turns {
		if api := t.Expect.API; api != "" && api != APIAnthropic && api != APIResponses {
			errs = append(errs, fmt.Errorf("turn %d: expect.api %q is not %s or %s", i+1, api, APIAnthropic, APIResponses))
		}
		if t.Error != nil && (t.Text != "" || len(t.Tools) > 0) {
			errs = append(errs, fmt.Errorf("turn %d: an error turn has no text or tools", i+1))
		}
		if t.Error == nil && t.Text == "" && len(t.Tools) == 0 {
			errs = append(errs, fmt.Errorf("turn %d: neither text, tools nor error", i+1))
		}
		for j, tool := range t.Tools {
			n := 0
			for _, set := range []bool{tool.Write != nil, tool.Edit != nil, tool.Read != nil, tool.Run != nil, tool.Call != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				errs = append(errs, fmt.Errorf("turn %d, tool %d: want exactly one of write, edit, read, run, call", i+1, j+1))
			}
			if tool.Edit != nil && tool.Edit.Old == "" {
				errs = append(errs, fmt.Errorf("turn %d, tool %d: edit needs old text", i+1, j+1))
			}
		}
	}
	return errors.Join(errs...)
}

// describe is a one-line summary of a turn, for failure messages.
func (t Turn) describe() string {
	var parts []string
	if t.Error != nil {
		return fmt.Sprintf("error %d", t.Error.Status)
	}
	if t.Text != "" {
		parts = append(parts, fmt.Sprintf("text %q", clip(t.Text, 40)))
	}
	for _, tool := range t.Tools {
		switch {
		case tool.Write != nil:
			parts = append(parts, "write "+tool.Write.Path)
		case tool.Edit != nil:
			parts = append(parts, "edit "+tool.Edit.Path)
		case tool.Read != nil:
			parts = append(parts, "read "+tool.Read.Path)
		case tool.Run != nil:
			parts = append(parts, "run "+clip(tool.Run.Command, 40))
		case tool.Call != nil:
			parts = append(parts, "call "+tool.Call.Name)
		}
	}
	return strings.Join(parts, ", ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
