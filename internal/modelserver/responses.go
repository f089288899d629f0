package modelserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// responsesRequest is the part of a Responses API request that the server reads.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []json.RawMessage `json:"input"`
	Tools  []responsesTool   `json:"tools"`
}

type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"` // of a "namespace"
}

// responsesItem is the part of an input item that the server reads.
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// responses answers POST /v1/responses with the next turn.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	req := Request{API: APIResponses, Path: r.URL.Path}
	var in responsesRequest
	if err := readBody(r, &req); err != nil || json.Unmarshal(req.Body, &in) != nil {
		s.refuse(w, req, "a Responses API request that is not JSON")
		return
	}
	req.Model, req.Stream = in.Model, in.Stream
	var names func([]responsesTool)
	names = func(ts []responsesTool) {
		for _, t := range ts {
			if t.Type == "namespace" {
				names(t.Tools)
				continue
			}
			if t.Name == "" {
				req.Tools = append(req.Tools, t.Type) // web_search and other hosted tools
				continue
			}
			req.Tools = append(req.Tools, t.Name)
		}
	}
	names(in.Tools)
	var user []string
	var results []ToolResult
	for _, raw := range in.Input {
		var it responsesItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case it.Type == "message" && it.Role == "user", it.Type == "" && it.Role == "user":
			user = append(user, textOf(it.Content))
		case it.Type == "function_call_output", it.Type == "custom_tool_call_output":
			results = append(results, ToolResult{ID: it.CallID, Output: textOf(it.Output)})
		}
	}
	req.UserText = strings.Join(user, "\n")
	turn, ok := s.take(w, &req, results)
	if !ok {
		return
	}
	id := fmt.Sprintf("resp_%03d", req.Turn)
	output := s.responsesOutput(req.Turn, turn, req.Tools)
	u := turn.usage()
	usage := map[string]any{
		"input_tokens": u.Input + u.CacheRead, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": u.Input + u.CacheRead + u.Output,
	}
	done := map[string]any{"id": id, "object": "response", "status": "completed", "model": in.Model, "output": output, "usage": usage}
	if !in.Stream {
		writeJSON(w, http.StatusOK, done)
		return
	}
	e := newSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": in.Model, "output": []any{}}})
	for i, item := range output {
		added := maps.Clone(item)
		added["status"] = "in_progress"
		if item["type"] == "message" {
			added["content"] = []any{}
		}
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		if item["type"] == "message" {
			text := item["content"].([]map[string]any)[0]["text"].(string)
			for _, c := range chunks(text, 64) {
				e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": item["id"], "output_index": i, "content_index": 0, "delta": c})
			}
		}
		e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	e.event("response.completed", map[string]any{"type": "response.completed", "response": done})
}

// responsesOutput builds the output items of a turn: a message with its text, then one
// function call per tool call.
func (s *Server) responsesOutput(n int, turn Turn, offered []string) []map[string]any {
	var out []map[string]any
	if turn.Text != "" {
		out = append(out, map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%03d", n), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": turn.Text, "annotations": []any{}}},
		})
	}
	ids := s.callIDs("call_", len(turn.Tools))
	for i, tool := range turn.Tools {
		name, args := codexTool(tool, offered)
		b, _ := json.Marshal(args)
		out = append(out, map[string]any{
			"type": "function_call", "id": "fc_" + strings.TrimPrefix(ids[i], "call_"), "call_id": ids[i],
			"name": name, "arguments": string(b), "status": "completed",
		})
	}
	return out
}

// codexTool translates a tool call into Codex's tools: every kind is a shell command, run
// by exec_command (Codex 0.1xx's unified exec) or, where that is not offered, the older
// shell tool; files are written and edited with apply_patch commands, which Codex applies
// itself.
func codexTool(t Tool, offered []string) (string, map[string]any) {
	var cmd string
	switch {
	case t.Call != nil:
		input := t.Call.Input
		if input == nil {
			input = map[string]any{}
		}
		return t.Call.Name, input
	case t.Write != nil:
		cmd = applyPatch("*** Add File: "+t.Write.Path, prefixLines("+", t.Write.Content))
	case t.Edit != nil:
		cmd = applyPatch("*** Update File: "+t.Edit.Path, "@@\n"+prefixLines("-", t.Edit.Old)+prefixLines("+", t.Edit.New))
	case t.Read != nil:
		cmd = "cat " + shellQuote(t.Read.Path)
	case t.Run != nil:
		cmd = t.Run.Command
	}
	if !slices.Contains(offered, "exec_command") && slices.Contains(offered, "shell") {
		return "shell", map[string]any{"command": []string{"bash", "-lc", cmd}}
	}
	// login false: a login shell would read /etc/profile, whose PATH may lack what the
	// agent's own environment has (Debian's leaves out /usr/local/go/bin).
	return "exec_command", map[string]any{"cmd": cmd, "login": false}
}

// applyPatch is the shell command that applies a patch of one file: its header line and
// its body of prefixed lines.
func applyPatch(header, body string) string {
	return "apply_patch <<'PATCH'\n*** Begin Patch\n" + header + "\n" + body + "*** End Patch\nPATCH\n"
}

// prefixLines puts prefix before every line of s; a final newline does not start a line.
func prefixLines(prefix, s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(prefix + strings.TrimSuffix(line, "\n") + "\n")
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
