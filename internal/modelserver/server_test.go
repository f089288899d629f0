package modelserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
}

// post sends body to the server's path and returns the status and the response body.
func post(t *testing.T, s *Server, path, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// events parses a stream of server-sent events.
func events(t *testing.T, b []byte) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data of %s: %v", cur.name, err)
			}
		case line == "":
			if cur.name != "" {
				if cur.data["type"] != cur.name {
					t.Errorf("event %s has data of type %v", cur.name, cur.data["type"])
				}
				out = append(out, cur)
			}
			cur = event{}
		}
	}
	return out
}

// collector gathers what a server reports.
type collector struct {
	mu   sync.Mutex
	msgs []string
}

func (c *collector) report(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msg)
}

func parse(t *testing.T, src string) Scenario {
	t.Helper()
	sc, err := Parse([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestAnthropicStream(t *testing.T) {
	s := New(t, parse(t, `
name: stream
turns:
  - expect: {api: anthropic, user_contains: [Write the file]}
    text: "I'll write it. This text is long enough to arrive as more than one delta, as a model's does."
    tools:
      - write: {path: /p/a.txt, content: "hello\n"}
      - run: {command: go test ./...}
`))
	code, body := post(t, s, "/v1/messages?beta=true", `{"model":"claude-sonnet-5","stream":true,
		"tools":[{"name":"Write"},{"name":"Bash"}],
		"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"Write the file"}]}]}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	evs := events(t, body)
	var names []string
	text := ""
	inputs := map[float64]string{}
	tools := map[float64]map[string]any{}
	for _, e := range evs {
		names = append(names, e.name)
		switch e.name {
		case "content_block_start":
			if cb := e.data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				tools[e.data["index"].(float64)] = cb
			}
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text += d["text"].(string)
			case "input_json_delta":
				inputs[e.data["index"].(float64)] += d["partial_json"].(string)
			}
		}
	}
	if names[0] != "message_start" || names[len(names)-2] != "message_delta" || names[len(names)-1] != "message_stop" {
		t.Errorf("events %v", names)
	}
	if !strings.HasPrefix(text, "I'll write it.") || strings.Count(strings.Join(names, " "), "content_block_delta") < 4 {
		t.Errorf("text %q arrived in too few deltas: %v", text, names)
	}
	if tools[1]["name"] != "Write" || tools[2]["name"] != "Bash" || tools[1]["id"] == tools[2]["id"] {
		t.Errorf("tool_use blocks %v", tools)
	}
	var write, bash map[string]any
	if err := json.Unmarshal([]byte(inputs[1]), &write); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(inputs[2]), &bash)
	if !reflect.DeepEqual(write, map[string]any{"file_path": "/p/a.txt", "content": "hello\n"}) || bash["command"] != "go test ./..." {
		t.Errorf("inputs %v %v", write, bash)
	}
	delta := evs[len(evs)-2].data["delta"].(map[string]any)
	if delta["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason %v", delta["stop_reason"])
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].API != APIAnthropic || reqs[0].Model != "claude-sonnet-5" || reqs[0].Turn != 1 ||
		!reflect.DeepEqual(reqs[0].Tools, []string{"Write", "Bash"}) || !strings.HasSuffix(reqs[0].UserText, "\nWrite the file") {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestAnthropicToolResultsAndJSON(t *testing.T) {
	s := New(t, parse(t, `
turns:
  - tools: [{read: {path: a.txt}}]
  - expect: {tool_result_contains: [hello]}
    text: done
`))
	post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"go"}]}`)
	// The result of the first turn's call, and a stale one that is not recorded.
	code, body := post(t, s, "/v1/messages", `{"model":"m","messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_001","name":"Read","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_001","content":[{"type":"text","text":"1\thello"}]},
		                          {"type":"tool_result","tool_use_id":"toolu_999","content":"old","is_error":true}]}]}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var msg struct {
		Content []struct {
			Type, Text string
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "done" || msg.StopReason != "end_turn" {
		t.Errorf("message %+v", msg)
	}
	got := s.Requests()[1].ToolResults
	if want := []ToolResult{{ID: "toolu_001", Output: "1\thello"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("tool results %+v, want %+v", got, want)
	}
}

func TestResponsesStream(t *testing.T) {
	s := New(t, parse(t, `
turns:
  - expect: {api: responses, user_contains: [Do it]}
    text: Working on it.
    tools:
      - write: {path: calc/a.go, content: "package calc\n\nfunc A() {}\n"}
      - edit: {path: calc/a.go, old: "func A() {}\n", new: "func A() int { return 1 }\n"}
      - read: {path: it's.txt}
      - run: {command: go test ./...}
      - call: {name: update_plan, input: {plan: []}}
  - expect: {tool_result_contains: ["Success. Updated the following files"]}
    text: Done.
`))
	req := `{"model":"gpt-5.5","stream":true,
		"tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"spawn_agent"}]},{"type":"web_search"}],
		"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
		         {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},
		         {"type":"message","role":"user","content":[{"type":"input_text","text":"Do it"}]}]}`
	code, body := post(t, s, "/v1/responses", req)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	evs := events(t, body)
	if evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
		t.Fatalf("events from %s to %s", evs[0].name, evs[len(evs)-1].name)
	}
	var items []map[string]any
	delta := ""
	for _, e := range evs {
		switch e.name {
		case "response.output_item.done":
			items = append(items, e.data["item"].(map[string]any))
		case "response.output_text.delta":
			delta += e.data["delta"].(string)
		}
	}
	if len(items) != 6 || items[0]["type"] != "message" || delta != "Working on it." {
		t.Fatalf("items %v, text %q", items, delta)
	}
	var cmds []string
	for _, it := range items[1:5] {
		if it["type"] != "function_call" || it["name"] != "exec_command" {
			t.Fatalf("item %v", it)
		}
		var args struct {
			Cmd   string
			Login *bool
		}
		json.Unmarshal([]byte(it["arguments"].(string)), &args)
		if args.Login == nil || *args.Login {
			t.Errorf("exec_command without login false: %s", it["arguments"])
		}
		cmds = append(cmds, args.Cmd)
	}
	want := []string{
		"apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: calc/a.go\n+package calc\n+\n+func A() {}\n*** End Patch\nPATCH\n",
		"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: calc/a.go\n@@\n-func A() {}\n+func A() int { return 1 }\n*** End Patch\nPATCH\n",
		`cat 'it'\''s.txt'`,
		"go test ./...",
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("commands\n%q\nwant\n%q", cmds, want)
	}
	if items[5]["name"] != "update_plan" || items[5]["arguments"] != `{"plan":[]}` {
		t.Errorf("call %v", items[5])
	}
	completed := evs[len(evs)-1].data["response"].(map[string]any)
	if completed["status"] != "completed" || len(completed["output"].([]any)) != 6 || completed["usage"] == nil {
		t.Errorf("response.completed %v", completed)
	}
	r := s.Requests()[0]
	if r.UserText != "<environment_context/>\nDo it" || !reflect.DeepEqual(r.Tools, []string{"exec_command", "spawn_agent", "web_search"}) {
		t.Errorf("recorded user text %q, tools %v", r.UserText, r.Tools)
	}
	// The results come back as function_call_output items.
	code, body = post(t, s, "/v1/responses", `{"model":"gpt-5.5","stream":false,"input":[
		{"type":"function_call_output","call_id":"call_001","output":"Exit code: 0\nOutput:\nSuccess. Updated the following files:\nA calc/a.go\n"},
		{"type":"function_call_output","call_id":"call_004","output":[{"type":"input_text","text":"ok"}]}]}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"text":"Done."`) {
		t.Fatalf("status %d: %s", code, body)
	}
	if got := s.Requests()[1].ToolResults; len(got) != 2 || got[1].Output != "ok" {
		t.Errorf("tool results %+v", got)
	}
}

func TestShellToolFallback(t *testing.T) {
	name, args := codexTool(Tool{Run: &Run{Command: "ls"}}, []string{"shell", "apply_patch"})
	if name != "shell" || !reflect.DeepEqual(args["command"], []string{"bash", "-lc", "ls"}) {
		t.Errorf("got %s %v", name, args)
	}
}

func TestRefused(t *testing.T) {
	var c collector
	s := Start(parse(t, `
name: strict
turns:
  - expect: {api: responses}
    text: hi
  - expect: {user_contains: [TASK-001]}
    text: hi
`), c.report)
	defer s.Close()
	code, body := post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), `"type":"invalid_request_error"`) ||
		!strings.Contains(string(body), "want a request by the responses API, got one by anthropic") {
		t.Errorf("status %d: %s", code, body)
	}
	post(t, s, "/v1/responses", `{"model":"m","input":[]}`)
	code, body = post(t, s, "/v1/responses", `{"model":"m","input":[{"role":"user","content":"TASK-002"}]}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), `{"error":{`) || !strings.Contains(string(body), `do not contain \"TASK-001\"`) {
		t.Errorf("status %d: %s", code, body)
	}
	post(t, s, "/v1/responses", `{"model":"m","input":[{"role":"user","content":"TASK-001"}]}`)
	code, _ = post(t, s, "/v1/responses", `{"model":"m","input":[]}`)
	if code != http.StatusBadRequest {
		t.Errorf("a request after the last turn got status %d", code)
	}
	code, _ = post(t, s, "/v1/chat/completions", `{}`)
	if code != http.StatusBadRequest {
		t.Errorf("an unknown path got status %d", code)
	}
	if len(c.msgs) != 4 || len(s.Failures()) != 4 || !strings.Contains(c.msgs[2], "after the last of 2 turns") || !strings.Contains(c.msgs[3], "unexpected POST /v1/chat/completions") {
		t.Errorf("reported %q", c.msgs)
	}
	reqs := s.Requests()
	if len(reqs) != 6 || reqs[0].Refused == "" || reqs[1].Turn != 1 || reqs[3].Turn != 2 {
		t.Errorf("recorded %+v", reqs)
	}
	if len(s.Unused()) != 0 {
		t.Errorf("unused %v", s.Unused())
	}
}

func TestScriptedErrorAndProbes(t *testing.T) {
	s := New(t, parse(t, `
turns:
  - error: {status: 529, type: overloaded_error, message: Overloaded}
`))
	resp, err := http.Head(s.URL() + "/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD / = %v, %v", resp, err)
	}
	code, body := post(t, s, "/v1/messages/count_tokens", `{"messages":[]}`)
	if code != http.StatusOK || !strings.Contains(string(body), "input_tokens") {
		t.Errorf("count_tokens %d %s", code, body)
	}
	code, body = post(t, s, "/v1/messages", `{"model":"m","stream":true,"messages":[]}`)
	if code != 529 || string(body) != `{"error":{"message":"Overloaded","type":"overloaded_error"},"type":"error"}`+"\n" {
		t.Errorf("error turn: %d %s", code, body)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"turns:\n  - text: a\n    tools: [{write: {path: a}, run: {command: b}}]\n", "turn 1, tool 1: want exactly one of"},
		{"turns:\n  - expect: {api: chat}\n    text: a\n", `expect.api "chat"`},
		{"turns:\n  - {}\n", "turn 1: neither text, tools nor error"},
		{"turns:\n  - error: {status: 500}\n    text: a\n", "an error turn has no text or tools"},
		{"turns:\n  - tools: [{edit: {path: a}}]\n", "edit needs old text"},
		{"turns:\n  - txt: a\n", "field txt not found"},
	}
	for _, tt := range tests {
		if _, err := Parse([]byte(tt.src), nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}

func TestLoadExpandsVars(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte("turns:\n  - tools: [{write: {path: \"{{.Root}}/a.txt\", content: x}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := Load(p, map[string]string{"Root": "/work/p"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != p || sc.Turns[0].Tools[0].Write.Path != "/work/p/a.txt" {
		t.Errorf("loaded %+v", sc)
	}
	if _, err := Load(p, map[string]string{}); err == nil {
		t.Error("a missing variable is not an error")
	}
	// JSON is YAML.
	sc, err = Parse([]byte(`{"name":"j","turns":[{"text":"hi"}]}`), nil)
	if err != nil || sc.Turns[0].Text != "hi" {
		t.Errorf("JSON scenario: %+v, %v", sc, err)
	}
}

func TestChunks(t *testing.T) {
	s := strings.Repeat("é", 50) // 2 bytes each
	parts := chunks(s, 7)
	if strings.Join(parts, "") != s {
		t.Fatal("chunks lose text")
	}
	for _, p := range parts {
		if !strings.HasPrefix(p, "é") || len(p)%2 != 0 {
			t.Errorf("chunk %q splits a rune", p)
		}
	}
}

// TestUsageAndErrorExtras: a turn's usage is what each API reports (the Responses API
// counts cached tokens inside the input), in the stream and in a JSON answer; an error
// carries its headers and its extra fields.
func TestUsageAndErrorExtras(t *testing.T) {
	s := New(t, parse(t, `
turns:
  - usage: {input: 7, output: 3, cache_read: 5, cache_write: 2}
    text: one
  - usage: {input: 7, output: 3, cache_read: 5, cache_write: 2}
    text: two
  - usage: {input: 7, output: 3, cache_read: 5}
    text: three
  - error: {status: 429, type: usage_limit_reached, message: limit, headers: {retry-after: "3"}, fields: {resets_in_seconds: 3}}
`))
	_, b := post(t, s, "/v1/messages", `{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	var msg struct{ Usage map[string]float64 }
	json.Unmarshal(b, &msg)
	if want := map[string]float64{"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 2}; !reflect.DeepEqual(msg.Usage, want) {
		t.Errorf("anthropic JSON usage %v, want %v", msg.Usage, want)
	}
	_, b = post(t, s, "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	evs := events(t, b)
	start := evs[0].data["message"].(map[string]any)["usage"].(map[string]any)
	end := evs[len(evs)-2].data["usage"].(map[string]any)
	if start["input_tokens"] != 7.0 || start["cache_read_input_tokens"] != 5.0 || start["cache_creation_input_tokens"] != 2.0 || end["output_tokens"] != 3.0 {
		t.Errorf("anthropic stream usage: start %v, end %v", start, end)
	}
	_, b = post(t, s, "/v1/responses", `{"model":"m","stream":false,"input":[{"type":"message","role":"user","content":"hi"}]}`)
	var resp struct {
		Usage struct {
			Input   float64 `json:"input_tokens"`
			Output  float64 `json:"output_tokens"`
			Details struct {
				Cached float64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
	}
	json.Unmarshal(b, &resp)
	if resp.Usage.Input != 12 || resp.Usage.Details.Cached != 5 || resp.Usage.Output != 3 {
		t.Errorf("responses usage %+v", resp.Usage)
	}
	r, err := http.Post(s.URL()+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "3" || !strings.Contains(string(body), `"resets_in_seconds":3`) || !strings.Contains(string(body), `"type":"usage_limit_reached"`) {
		t.Errorf("error answer %d %v %s", r.StatusCode, r.Header, body)
	}
}
