package agents

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLookupBuiltins(t *testing.T) {
	tests := []struct {
		name string
		opts ModelOptions
		want []string
	}{
		{"claude", ModelOptions{Model: "sonnet", MaxTurns: 8},
			[]string{"claude", "-p", "--output-format", "json", "--model", "sonnet", "--max-turns", "8", "--permission-mode", "acceptEdits", "--allowedTools", "Bash"}},
		{"claude", ModelOptions{},
			[]string{"claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits", "--allowedTools", "Bash"}},
		{"codex", ModelOptions{Model: "gpt-5.5", MaxTurns: 8},
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral", "-m", "gpt-5.5", "-"}},
		{"codex", ModelOptions{},
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral", "-"}},
		// The config's default models are Claude's: Codex then uses its own.
		{"codex", ModelOptions{Model: "sonnet"},
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral", "-"}},
		{"codex", ModelOptions{Model: "claude-opus-4-1"},
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--ephemeral", "-"}},
	}
	for _, tt := range tests {
		a, err := Lookup(tt.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Name() != tt.name {
			t.Errorf("Name() = %q", a.Name())
		}
		if got := a.Command(tt.opts); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s.Command(%+v) =\n%q\nwant\n%q", tt.name, tt.opts, got, tt.want)
		}
	}
}

func TestLookupReplay(t *testing.T) {
	a, err := Lookup(Replay, nil)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	want := []string{self, "__replay", "--from", ".orchestrator/replay"}
	if got := a.Command(ModelOptions{Model: "x"}); !reflect.DeepEqual(got, want) {
		t.Errorf("replay command = %q, want %q", got, want)
	}
	got, err := a.FinalText([]byte("result\n"))
	if err != nil || got != "result\n" {
		t.Errorf("FinalText = %q, %v", got, err)
	}
}

func TestLookupExecWithoutCommand(t *testing.T) {
	a, err := Lookup(Exec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Command(ModelOptions{Model: "m"}); got != nil {
		t.Errorf("exec without a configured command = %q, want nil", got)
	}
	if got, err := a.FinalText([]byte("out")); err != nil || got != "out" {
		t.Errorf("FinalText = %q, %v", got, err)
	}
	r := NewReplay("/bin/orchestrator", "/demo/rec")
	want := []string{"/bin/orchestrator", "__replay", "--from", "/demo/rec"}
	if r.Name() != Replay || !reflect.DeepEqual(r.Command(ModelOptions{}), want) {
		t.Errorf("NewReplay = %s %q, want replay %q", r.Name(), r.Command(ModelOptions{}), want)
	}
}

func TestLookupConfigured(t *testing.T) {
	configured := map[string][]string{
		"claude":   {"claude", "-p", "--output-format", "json", "--model", "{{.Model}}", "--max-turns", "{{.MaxTurns}}"},
		"my-agent": {"./scripts/agent.sh", "--model={{.Model}}", "{{if .MaxTurns}}--turns={{.MaxTurns}}{{end}}", "{literal}"},
		"exec":     {"sh", "-c", "cat"},
	}
	opts := ModelOptions{Model: "opus", MaxTurns: 12}

	a, err := Lookup("claude", configured)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "-p", "--output-format", "json", "--model", "opus", "--max-turns", "12"}
	if got := a.Command(opts); !reflect.DeepEqual(got, want) {
		t.Errorf("configured claude = %q, want %q", got, want)
	}
	// An overridden claude still reads Claude's JSON.
	if got, err := a.FinalText([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"hi"}`)); err != nil || got != "hi" {
		t.Errorf("configured claude FinalText = %q, %v", got, err)
	}

	a, err = Lookup("my-agent", configured)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"./scripts/agent.sh", "--model=opus", "--turns=12", "{literal}"}
	cmd := a.Command(opts)
	if !reflect.DeepEqual(cmd, want) {
		t.Errorf("my-agent = %q, want %q", cmd, want)
	}
	cmd[0] = "changed"
	if a.Command(opts)[0] != "./scripts/agent.sh" {
		t.Error("Command returns a shared slice")
	}
	if got := a.Command(ModelOptions{}); got[2] != "" {
		t.Errorf("empty turns gave %q", got[2])
	}
	if got, err := a.FinalText([]byte("plain output")); err != nil || got != "plain output" {
		t.Errorf("exec-like FinalText = %q, %v", got, err)
	}

	a, err = Lookup(Exec, configured)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Command(opts); !reflect.DeepEqual(got, []string{"sh", "-c", "cat"}) {
		t.Errorf("exec = %q", got)
	}
}

func TestLookupErrors(t *testing.T) {
	tests := []struct {
		name       string
		configured map[string][]string
		want       string
	}{
		{"nope", map[string][]string{"mine": {"x"}}, `unknown agent "nope" (known: claude, codex, exec, mine, replay)`},
		{"mine", map[string][]string{"mine": {}}, "agent mine: empty command"},
		{"mine", map[string][]string{"mine": {""}}, "agent mine: empty command"},
		{"mine", map[string][]string{"mine": {"x", "{{.Model"}}, "agent mine: command argument 2"},
		{"mine", map[string][]string{"mine": {"x", "{{.Modle}}"}}, "agent mine: command argument 2"},
	}
	for _, tt := range tests {
		a, err := Lookup(tt.name, tt.configured)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Lookup(%q) = %v, %v; want error containing %q", tt.name, a, err, tt.want)
		}
	}
}

func TestClaudeFinalText(t *testing.T) {
	tests := []struct {
		name     string
		stdout   string
		want     string
		wantMode string
		wantErr  string
	}{
		{
			name:   "success",
			stdout: `{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":3,"result":"All done.\n` + "```tdd-result" + `\n...","session_id":"s","total_cost_usd":0.02,"usage":{},"permission_denials":[]}` + "\n",
			want:   "All done.\n```tdd-result\n...",
		},
		{
			name:   "permission denied still succeeds",
			stdout: `{"type":"result","subtype":"success","is_error":false,"result":"could not write","permission_denials":[{"tool_name":"Write"}]}`,
			want:   "could not write",
		},
		{
			name:    "API error has subtype success",
			stdout:  `{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"Overloaded"}`,
			wantErr: "agent claude: reported an error (API status 529): Overloaded",
		},
		{
			name:     "out of turns",
			stdout:   `{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":8,"terminal_reason":"max_turns"}`,
			wantMode: ModeOutOfTurns,
			wantErr:  "agent claude: ran out of turns after 8",
		},
		{
			name:     "out of turns by terminal reason",
			stdout:   `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":4,"terminal_reason":"max_turns"}`,
			wantMode: ModeOutOfTurns,
			wantErr:  "ran out of turns after 4",
		},
		{
			name:    "execution error",
			stdout:  `{"type":"result","subtype":"error_during_execution","is_error":false}`,
			wantErr: "ended with error_during_execution",
		},
		{
			name:    "no result field",
			stdout:  `{"type":"result","subtype":"success","is_error":false}`,
			wantErr: "no result in its JSON output",
		},
		{
			name:    "not JSON",
			stdout:  "Error: invalid API key\n",
			wantErr: "no result object in its JSON output",
		},
		{
			name:    "empty",
			wantErr: "no result object",
		},
		{
			name:   "verbose array",
			stdout: `[{"type":"system","subtype":"init"},{"type":"assistant","message":{}},{"type":"result","subtype":"success","is_error":false,"result":"from array"}]`,
			want:   "from array",
		},
		{
			name:   "stream-json lines with noise",
			stdout: "warning: something\n" + `{"type":"system","subtype":"init"}` + "\n" + `{"type":"result","subtype":"success","is_error":false,"result":"from lines"}` + "\n",
			want:   "from lines",
		},
	}
	a, _ := Lookup(Claude, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFinalText(t, a, tt.stdout, tt.want, tt.wantErr, tt.wantMode)
		})
	}
}

// checkFinalText checks what a reads from stdout: want, or with wantErr != "" an
// *AgentError of mode wantMode whose message contains wantErr.
func checkFinalText(t *testing.T, a Adapter, stdout, want, wantErr, wantMode string) {
	t.Helper()
	got, err := a.FinalText([]byte(stdout))
	if wantErr == "" {
		if err != nil || got != want {
			t.Fatalf("FinalText = %q, %v; want %q", got, err, want)
		}
		return
	}
	var ae *AgentError
	if !errors.As(err, &ae) {
		t.Fatalf("FinalText error = %v (%T), want *AgentError", err, err)
	}
	if ae.Mode != wantMode || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("error = %q mode %q, want %q mode %q", err, ae.Mode, wantErr, wantMode)
	}
}

func TestCodexFinalText(t *testing.T) {
	const run = `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading the tests**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'go test ./...'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'go test ./...'","aggregated_output":"FAIL","exit_code":1,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Let me fix it."}}
{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"calc/add.go","kind":"update"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Fixed.\n` + "```tdd-result" + `\nrole: implementer\n` + "```" + `"}}
{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":345}}
`
	tests := []struct {
		name    string
		stdout  string
		want    string
		wantErr string
	}{
		{"last agent message", run, "Fixed.\n```tdd-result\nrole: implementer\n```", ""},
		{"cut first line", run[40:], "Fixed.\n```tdd-result\nrole: implementer\n```", ""},
		{"legacy item_type", `{"type":"item.completed","item":{"id":"itm_0","item_type":"assistant_message","text":"old"}}`, "old", ""},
		{"turn failed", `{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Working"}}
{"type":"turn.failed","error":{"message":"stream disconnected"}}`, "", "agent codex: turn failed: stream disconnected"},
		{"fatal error", `{"type":"error","message":"unexpected status 401 Unauthorized"}`, "", "error: unexpected status 401"},
		{"API error body", `{"type":"turn.failed","error":{"message":"{\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\"}}\n"}}`, "", "agent codex: turn failed: Overloaded (server_error)"},
		{"no message", `{"type":"thread.started","thread_id":"x"}
{"type":"turn.completed","usage":{}}`, "", "no agent message"},
		{"not JSON", "codex: command not found\n", "", "no agent message"},
	}
	a, _ := Lookup(Codex, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFinalText(t, a, tt.stdout, tt.want, tt.wantErr, "")
		})
	}
}

// TestFinalTextRecorded reads what real runs of Claude Code 2.1.197 and Codex CLI 0.169.0
// left in agent.log (standard output and standard error), recorded by TestRealAdapters
// -record against the scripted model server.
func TestFinalTextRecorded(t *testing.T) {
	tests := []struct {
		file, agent, want, wantErr, wantMode string
	}{
		{"claude-success.json", Claude, "Wrote notes.txt.\n\n```tdd-result\nrole: implementer\n", "", ""},
		{"claude-max-turns.json", Claude, "", "agent claude: ran out of turns after 3 (Reached maximum number of turns (2))", ModeOutOfTurns},
		{"claude-api-error.json", Claude, "", "agent claude: reported an error (API status 400): API Error: 400 scripted bad request", ""},
		{"codex-success.jsonl", Codex, "Wrote notes.txt.\n\n```tdd-result\nrole: implementer\n", "", ""},
		{"codex-api-error.jsonl", Codex, "", "agent codex: turn failed: scripted bad request (invalid_request_error)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "recorded", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			a, _ := Lookup(tt.agent, nil)
			got, err := a.FinalText(out)
			if tt.wantErr == "" {
				if err != nil || !strings.HasPrefix(got, tt.want) {
					t.Fatalf("FinalText = %q, %v; want it to start with %q", got, err, tt.want)
				}
				if _, err := ParseResult(got, RoleImplementer); err != nil {
					t.Errorf("the recorded final text has no valid result block: %v", err)
				}
				return
			}
			var ae *AgentError
			if !errors.As(err, &ae) || ae.Mode != tt.wantMode || err.Error() != tt.wantErr {
				t.Errorf("FinalText error = %v (%T), want %q of mode %q", err, err, tt.wantErr, tt.wantMode)
			}
		})
	}
}
