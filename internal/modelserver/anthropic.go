package modelserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// anthropicRequest is the part of a Messages API request that the server reads.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// anthropicBlock is a content block of a request message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// anthropic answers POST /v1/messages with the next turn.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	req := Request{API: APIAnthropic, Path: r.URL.Path}
	var in anthropicRequest
	if err := readBody(r, &req); err != nil || json.Unmarshal(req.Body, &in) != nil {
		s.refuse(w, req, "a Messages API request that is not JSON")
		return
	}
	req.Model, req.Stream = in.Model, in.Stream
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	var user []string
	var results []ToolResult
	for _, m := range in.Messages {
		if m.Role != "user" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			user = append(user, text)
			continue
		}
		var blocks []anthropicBlock
		json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				user = append(user, b.Text)
			case "tool_result":
				results = append(results, ToolResult{ID: b.ToolUseID, Output: textOf(b.Content), IsError: b.IsError})
			}
		}
	}
	req.UserText = strings.Join(user, "\n")
	turn, ok := s.take(w, &req, results)
	if !ok {
		return
	}
	msg := s.anthropicMessage(in.Model, req.Turn, turn)
	if !in.Stream {
		writeJSON(w, http.StatusOK, msg)
		return
	}
	streamAnthropic(newSSE(w), msg)
}

// anthropicMessage builds the assistant message of a turn.
func (s *Server) anthropicMessage(model string, n int, turn Turn) map[string]any {
	var content []map[string]any
	if turn.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	ids := s.callIDs("toolu_", len(turn.Tools))
	for i, tool := range turn.Tools {
		name, input := claudeTool(tool)
		content = append(content, map[string]any{"type": "tool_use", "id": ids[i], "name": name, "input": input})
	}
	u := turn.usage()
	stop := "end_turn"
	if len(turn.Tools) > 0 {
		stop = "tool_use"
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_%03d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": u.Output, "cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CacheRead},
	}
}

// streamAnthropic sends msg as the Messages API's stream of events.
func streamAnthropic(e *sse, msg map[string]any) {
	start := maps.Clone(msg)
	start["content"] = []any{}
	start["stop_reason"] = nil
	// The stream reports the input side at its start and the output tokens at its end,
	// as the Messages API does.
	u := msg["usage"].(map[string]any)
	start["usage"] = map[string]any{"input_tokens": u["input_tokens"], "output_tokens": 1, "cache_creation_input_tokens": u["cache_creation_input_tokens"], "cache_read_input_tokens": u["cache_read_input_tokens"]}
	e.event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, block := range msg["content"].([]map[string]any) {
		switch block["type"] {
		case "text":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, c := range chunks(block["text"].(string), 64) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": c}})
			}
		case "tool_use":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			input, _ := json.Marshal(block["input"])
			for _, c := range chunks(string(input), 64) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": c}})
			}
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u["output_tokens"]}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// claudeTool translates a tool call into Claude Code's tools (their names and inputs as
// Claude Code 2.1 offers them in each request).
func claudeTool(t Tool) (string, map[string]any) {
	switch {
	case t.Write != nil:
		return "Write", map[string]any{"file_path": t.Write.Path, "content": t.Write.Content}
	case t.Edit != nil:
		return "Edit", map[string]any{"file_path": t.Edit.Path, "old_string": t.Edit.Old, "new_string": t.Edit.New}
	case t.Read != nil:
		return "Read", map[string]any{"file_path": t.Read.Path}
	case t.Run != nil:
		return "Bash", map[string]any{"command": t.Run.Command, "description": "Run " + clip(t.Run.Command, 40)}
	}
	input := t.Call.Input
	if input == nil {
		input = map[string]any{}
	}
	return t.Call.Name, input
}

// countTokens answers POST /v1/messages/count_tokens with a rough count; it uses no turn.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	var req Request
	readBody(r, &req)
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(req.Body)/4 + 1})
}
