package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// ModelOptions are the per-task settings that go into an agent's command line (SPEC §12):
// the model chosen by the task's complexity, and the turn budget.
type ModelOptions struct {
	Model    string
	MaxTurns int
}

// An Adapter knows how to run one kind of agent (SPEC §10.1): its command line, and how to
// find its final message in what it printed. The prompt always goes to standard input.
type Adapter interface {
	// Name is the agent's name in the config and in the Agent field of a task.
	Name() string
	// Command returns the command line for one attempt.
	Command(m ModelOptions) []string
	// FinalText returns the agent's final message (where its tdd-result block is) from
	// its standard output. An *AgentError says the agent itself reported a failure.
	FinalText(stdout []byte) (string, error)
}

// ModeOutOfTurns is the AgentError mode of an agent that ran out of turns: failure mode E
// of SPEC §9, a semantic failure of the role that was running.
const ModeOutOfTurns = "E"

// An AgentError is a failure the agent reported about itself, read from its output: out of
// turns (Mode ModeOutOfTurns), an API error, or output with no final message (Mode "").
type AgentError struct {
	Agent string // the adapter's name
	Mode  string // ModeOutOfTurns, or ""
	Msg   string
}

// Error returns "agent <name>: <message>".
func (e *AgentError) Error() string { return "agent " + e.Agent + ": " + e.Msg }

// The names of the built-in adapters.
const (
	Claude = "claude"
	Codex  = "codex"
	Exec   = "exec"
	Replay = "replay"
)

// DefaultReplayDir is where the replay agent finds its recordings when the config does not
// say, relative to the repository root.
const DefaultReplayDir = ".orchestrator/replay"

// ReplaySubcommand is the hidden subcommand of the orchestrator binary that runs
// ReplayMain; the replay adapter's command line re-executes the binary with it.
const ReplaySubcommand = "__replay"

type adapter struct {
	name    string
	command func(ModelOptions) []string
	final   func(name string, stdout []byte) (string, error)
}

func (a *adapter) Name() string                            { return a.name }
func (a *adapter) Command(m ModelOptions) []string         { return a.command(m) }
func (a *adapter) FinalText(stdout []byte) (string, error) { return a.final(a.name, stdout) }

// Lookup returns the adapter called name. configured holds the command lines of the
// config's agents section (agents: {name: {command: [...]}}): a configured name overrides
// the built-in command line of that name (claude and codex keep reading their output their
// way) or adds an agent whose final text is its standard output, as exec's is. In a
// configured command, each argument is a text/template: {{.Model}} and {{.MaxTurns}} are
// filled from ModelOptions.
//
// The built-ins (flags checked against Claude Code 2.1.197 and Codex CLI 0.169.0, see
// real_test.go):
//
//	claude  claude -p --output-format json --model M --max-turns N
//	        --permission-mode acceptEdits --allowedTools Bash
//	codex   codex exec --json --sandbox workspace-write --skip-git-repo-check
//	        --ephemeral -m M -
//	exec    the configured command; with none, Command returns nil
//	replay  <this program> __replay --from .orchestrator/replay (see NewReplay)
//
// --model, -m and --max-turns are left out when the model is empty or the turns 0. Codex
// has no turn limit, and it gets no -m for a Claude model name (haiku, sonnet, opus,
// claude-*), which the config's models map holds by default: it then uses the model of its
// own configuration.
func Lookup(name string, configured map[string][]string) (Adapter, error) {
	final := finalText(name)
	if argv, ok := configured[name]; ok {
		if len(argv) == 0 || argv[0] == "" {
			return nil, fmt.Errorf("agent %s: empty command", name)
		}
		command, err := templateCommand(name, argv)
		if err != nil {
			return nil, err
		}
		return &adapter{name: name, command: command, final: final}, nil
	}
	switch name {
	case Claude:
		return &adapter{name: name, command: claudeCommand, final: final}, nil
	case Codex:
		return &adapter{name: name, command: codexCommand, final: final}, nil
	case Replay:
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("agent replay: %w", err)
		}
		return NewReplay(self, DefaultReplayDir), nil
	case Exec:
		// No default command: Command returns nil until the config gives one. The adapter
		// is still useful for its FinalText, for a command line built elsewhere.
		return &adapter{name: name, command: func(ModelOptions) []string { return nil }, final: final}, nil
	}
	known := []string{Claude, Codex, Exec, Replay}
	for n := range configured {
		known = append(known, n)
	}
	slices.Sort(known)
	return nil, fmt.Errorf("unknown agent %q (known: %s)", name, strings.Join(slices.Compact(known), ", "))
}

// NewReplay returns the replay adapter for the orchestrator binary at self, with the
// recordings in from (relative to the repository root, or absolute): its command line is
// `self __replay --from from`, and its final text is its standard output.
func NewReplay(self, from string) Adapter {
	argv := []string{self, ReplaySubcommand, "--from", from}
	return &adapter{name: Replay, command: func(ModelOptions) []string { return slices.Clone(argv) }, final: finalText(Replay)}
}

// finalText returns how the agent called name reports its final message.
func finalText(name string) func(string, []byte) (string, error) {
	switch name {
	case Claude:
		return claudeFinalText
	case Codex:
		return codexFinalText
	}
	return func(_ string, stdout []byte) (string, error) { return string(stdout), nil }
}

// templateCommand parses each argument of argv as a template, and checks them once against
// empty options, so that a mistake in the config shows when it is read.
func templateCommand(name string, argv []string) (func(ModelOptions) []string, error) {
	tmpls := make([]*template.Template, len(argv))
	for i, arg := range argv {
		if !strings.Contains(arg, "{{") {
			continue
		}
		t, err := template.New(name).Option("missingkey=error").Parse(arg)
		if err != nil {
			return nil, fmt.Errorf("agent %s: command argument %d: %w", name, i+1, err)
		}
		if err := t.Execute(new(strings.Builder), ModelOptions{}); err != nil {
			return nil, fmt.Errorf("agent %s: command argument %d: %w", name, i+1, err)
		}
		tmpls[i] = t
	}
	return func(m ModelOptions) []string {
		out := make([]string, len(argv))
		for i, arg := range argv {
			if tmpls[i] == nil {
				out[i] = arg
				continue
			}
			var b strings.Builder
			// Checked in templateCommand against the same type: it cannot fail now.
			tmpls[i].Execute(&b, m)
			out[i] = b.String()
		}
		return out
	}, nil
}

// claudeCommand is Claude Code's command line. -p with no prompt argument reads the prompt
// from standard input. acceptEdits lets the Write and Edit tools change files in the working
// folder (the repository root) and denies them anywhere else; Bash is allowed, and is not
// confined to the folder. acceptEdits works as root, where bypassPermissions refuses to
// start without IS_SANDBOX=1 (SPEC §10.1).
func claudeCommand(m ModelOptions) []string {
	args := []string{"claude", "-p", "--output-format", "json"}
	if m.Model != "" {
		args = append(args, "--model", m.Model)
	}
	if m.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(m.MaxTurns))
	}
	return append(args, "--permission-mode", "acceptEdits", "--allowedTools", "Bash")
}

// codexCommand is Codex's command line. Codex 0.169 has no --full-auto any more: the
// workspace-write sandbox lets its commands and patches write in the working folder (and
// the temporary folder, which compilers need) and makes the rest of the file system
// read-only; exec mode never stops to ask for approval. --ephemeral keeps no session files;
// --skip-git-repo-check runs it outside a git repository; "-" reads the prompt from
// standard input.
func codexCommand(m ModelOptions) []string {
	args := []string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral"}
	if m.Model != "" && !isClaudeModel(m.Model) {
		args = append(args, "-m", m.Model)
	}
	return append(args, "-")
}

// isClaudeModel reports whether model names one of Claude's models, which Codex cannot use.
func isClaudeModel(model string) bool {
	switch m := strings.ToLower(model); m {
	case "haiku", "sonnet", "opus", "opusplan", "default":
		return true
	default:
		return strings.HasPrefix(m, "claude")
	}
}

// claudeResult is the part of Claude Code's `-p --output-format json` result object that
// we read: {"type":"result","subtype":"success","is_error":false,"result":"...",
// "num_turns":3,"terminal_reason":"completed","permission_denials":[],...}. Recordings of
// real runs are in testdata/recorded.
type claudeResult struct {
	SessionID      string          `json:"session_id"`
	Type           string          `json:"type"`
	Subtype        string          `json:"subtype"`
	IsError        bool            `json:"is_error"`
	Result         *string         `json:"result"`
	NumTurns       int             `json:"num_turns"`
	TerminalReason string          `json:"terminal_reason"`
	APIErrorStatus json.RawMessage `json:"api_error_status"`
	Errors         []string        `json:"errors"`
	// What the run spent (SPEC §16): see ReadUsage.
	TotalCostUSD  *float64 `json:"total_cost_usd"`
	DurationAPIMS *int64   `json:"duration_api_ms"`
	Usage         *struct {
		InputTokens              *int64 `json:"input_tokens"`
		OutputTokens             *int64 `json:"output_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// claudeFinalText reads the result object. As Claude Code 2.1.197 does it (SPEC §10.1,
// testdata/recorded): an API error exits 1 with subtype success but is_error true and
// api_error_status, so is_error decides, not subtype; running out of --max-turns exits 1
// with subtype error_max_turns, terminal_reason max_turns, no result and the reason in
// errors (mode E); a tool that permissions deny still ends in success. Besides the single
// object of --output-format json, it accepts the JSON array that --verbose gives and the
// JSON lines of stream-json, taking the last result object, and lines of other output
// (standard error shares agent.log) around it.
func claudeFinalText(name string, stdout []byte) (string, error) {
	r := findClaudeResult(stdout)
	if r == nil {
		return "", &AgentError{Agent: name, Msg: "no result object in its JSON output"}
	}
	detail := ""
	if len(r.Errors) > 0 {
		detail = " (" + clip(strings.Join(r.Errors, "; "), 300) + ")"
	}
	if r.Subtype == "error_max_turns" || r.TerminalReason == "max_turns" {
		return "", &AgentError{Agent: name, Mode: ModeOutOfTurns, Msg: fmt.Sprintf("ran out of turns after %d%s", r.NumTurns, detail)}
	}
	if r.IsError {
		msg := "reported an error"
		if s := strings.TrimSpace(string(r.APIErrorStatus)); s != "" && s != "null" {
			msg += " (API status " + s + ")"
		}
		if r.Result != nil && *r.Result != "" {
			msg += ": " + clip(*r.Result, 300)
		}
		return "", &AgentError{Agent: name, Msg: msg + detail}
	}
	if r.Subtype != "" && r.Subtype != "success" {
		return "", &AgentError{Agent: name, Msg: "ended with " + r.Subtype + detail}
	}
	if r.Result == nil {
		return "", &AgentError{Agent: name, Msg: "no result in its JSON output"}
	}
	return *r.Result, nil
}

// ResumeCommand returns argv made to continue the session of a run of the agent program
// whose output was stdout, so that a prompt such as the re-emit one of mode D reaches an
// agent that remembers its last message: Claude Code's --resume with the session ID of its
// result. It returns nil when the program cannot resume (Codex exec --ephemeral keeps no
// session; an exec agent has none).
func ResumeCommand(program string, argv []string, stdout []byte) []string {
	if program != Claude {
		return nil
	}
	r := findClaudeResult(stdout)
	if r == nil || r.SessionID == "" {
		return nil
	}
	return append(slices.Clone(argv), "--resume", r.SessionID)
}

func findClaudeResult(stdout []byte) *claudeResult {
	isResult := func(r *claudeResult) bool {
		return r.Type == "result" || r.Type == "" && (r.Result != nil || r.Subtype != "")
	}
	trimmed := bytes.TrimSpace(stdout)
	var one claudeResult
	if json.Unmarshal(trimmed, &one) == nil && isResult(&one) {
		return &one
	}
	var many []claudeResult
	if json.Unmarshal(trimmed, &many) == nil {
		for i := len(many) - 1; i >= 0; i-- {
			if many[i].Type == "result" {
				return &many[i]
			}
		}
	}
	lines := bytes.Split(trimmed, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var r claudeResult
		if json.Unmarshal(bytes.TrimSpace(lines[i]), &r) == nil && r.Type == "result" {
			return &r
		}
	}
	return nil
}

// codexEvent is the part of a `codex exec --json` event line that we read. The final
// message is the text of the last {"type":"item.completed","item":{"type":"agent_message",
// "text":"..."}}; a turn ends with {"type":"turn.completed","usage":{...}} or
// {"type":"turn.failed","error":{"message":"..."}}, and a fatal stream error is
// {"type":"error","message":"..."} (codex-rs/exec/src/exec_events.rs). Before the format
// settled (--experimental-json), the item said "item_type":"assistant_message".
type codexEvent struct {
	Type string `json:"type"`
	Item *struct {
		Type     string `json:"type"`
		ItemType string `json:"item_type"`
		Text     string `json:"text"`
	} `json:"item"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

func codexFinalText(name string, stdout []byte) (string, error) {
	var final, failed string
	found := false
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil {
			continue // a line cut by the capture limit, or not an event
		}
		switch ev.Type {
		case "item.completed":
			if ev.Item != nil && (ev.Item.Type == "agent_message" || ev.Item.ItemType == "assistant_message") {
				final, found, failed = ev.Item.Text, true, ""
			}
		case "turn.completed":
			failed = ""
		case "turn.failed":
			failed = "turn failed"
			if ev.Error != nil && ev.Error.Message != "" {
				failed += ": " + apiErrorText(ev.Error.Message)
			}
		case "error":
			failed = "error: " + apiErrorText(ev.Message)
		}
	}
	if failed != "" {
		return "", &AgentError{Agent: name, Msg: clip(failed, 300)}
	}
	if !found {
		return "", &AgentError{Agent: name, Msg: "no agent message in its JSON events"}
	}
	return final, nil
}

// apiErrorText shortens an error message that is a model API's error body, as Codex passes
// it on ({"error":{"code":"invalid_request_error","message":"..."}}), to "message (code)".
// Other messages are returned as they are.
func apiErrorText(msg string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	trimmed := strings.TrimSpace(msg)
	if !strings.HasPrefix(trimmed, "{") || json.Unmarshal([]byte(trimmed), &body) != nil || body.Error.Message == "" {
		return trimmed
	}
	kind := body.Error.Code
	if kind == "" {
		kind = body.Error.Type
	}
	if kind == "" {
		return body.Error.Message
	}
	return body.Error.Message + " (" + kind + ")"
}
