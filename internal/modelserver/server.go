package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// The APIs a request can come by.
const (
	APIAnthropic = "anthropic" // Anthropic Messages API, POST /v1/messages
	APIResponses = "responses" // OpenAI Responses API, POST /v1/responses
)

// A Request is a model request the server received, as recorded.
type Request struct {
	API    string // APIAnthropic or APIResponses
	Path   string // the URL path, without the query
	Model  string
	Stream bool
	// Tools are the names of the tools the agent offered the model.
	Tools []string
	// UserText is the text of the request's user messages, in order, one a line: the
	// agent's prompt and what the agent adds to it, not tool results.
	UserText string
	// ToolResults are the results, in the request, of the tool calls of the turn before.
	ToolResults []ToolResult
	// Turn is the number (from 1) of the scenario turn that answered, or 0 if the request
	// was refused.
	Turn int
	// Refused says why the request was refused (answered with HTTP 400), or is "".
	Refused string
	// Body is the request body as it came.
	Body []byte
}

// A ToolResult is the result of one tool call, as the agent sent it back.
type ToolResult struct {
	ID      string // the tool call's ID
	Output  string
	IsError bool // the agent marked it as an error (Anthropic's is_error)
}

// A Server is a running scripted model. See the package documentation.
type Server struct {
	sc     Scenario
	http   *httptest.Server
	report func(msg string)

	mu        sync.Mutex
	next      int // index of the next turn
	requests  []Request
	calls     int             // tool calls issued, for their IDs
	lastCalls map[string]bool // IDs of the tool calls of the last turn served
	failures  []string
}

// Start starts a server that plays sc on a free port of 127.0.0.1. Every request it refuses
// is passed to report (if not nil) with the reason, besides being recorded.
func Start(sc Scenario, report func(msg string)) *Server {
	s := &Server{sc: sc, report: report}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	mux.HandleFunc("POST /v1/responses", s.responses)
	// Claude Code probes the base URL with HEAD / before its first request.
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, Request{Path: r.URL.Path}, fmt.Sprintf("unexpected %s %s", r.Method, r.URL))
	})
	s.http = httptest.NewServer(mux)
	return s
}

// New starts a server for sc for the length of test t: a refused request fails t, and so does
// a turn that no request used by the end of the test. The server closes when t ends.
func New(t testing.TB, sc Scenario) *Server {
	t.Helper()
	s := Start(sc, func(msg string) { t.Errorf("%s", msg) })
	t.Cleanup(func() {
		s.Close()
		if left := s.Unused(); len(left) > 0 {
			t.Errorf("scenario %s: %d turn(s) never requested, the first: %s", sc.Name, len(left), left[0].describe())
		}
	})
	return s
}

// URL returns the server's base URL, http://127.0.0.1:PORT, for ANTHROPIC_BASE_URL. For
// Codex, the provider's base_url is URL() + "/v1".
func (s *Server) URL() string { return s.http.URL }

// Close stops the server, waiting for requests in progress.
func (s *Server) Close() { s.http.Close() }

// Requests returns the model requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Failures returns the reasons of the requests refused so far.
func (s *Server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failures)
}

// Unused returns the turns that no request has used yet.
func (s *Server) Unused() []Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sc.Turns[s.next:])
}

// take records req and returns the turn that answers it, with its number in req.Turn. When
// there is none to send, because the request is refused or the turn is a scripted error, it
// has answered w itself and returns false.
func (s *Server) take(w http.ResponseWriter, req *Request, results []ToolResult) (Turn, bool) {
	turn, why := s.pick(req, results)
	if why != "" {
		s.refuse(w, *req, why)
		return Turn{}, false
	}
	if turn.Error != nil {
		writeError(w, req.API, *turn.Error)
		return Turn{}, false
	}
	return turn, true
}

// pick records req and returns the turn that answers it, or a reason to refuse it. It
// collects the results of the last turn's tool calls from results first.
func (s *Server) pick(req *Request, results []ToolResult) (Turn, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range results {
		if s.lastCalls[r.ID] {
			req.ToolResults = append(req.ToolResults, r)
		}
	}
	if s.next >= len(s.sc.Turns) {
		return Turn{}, fmt.Sprintf("scenario %s: request %d (%s) after the last of %d turns", s.sc.Name, len(s.requests)+1, req.API, len(s.sc.Turns))
	}
	turn := s.sc.Turns[s.next]
	if why := turn.Expect.check(req); why != "" {
		return Turn{}, fmt.Sprintf("scenario %s: turn %d (%s): %s", s.sc.Name, s.next+1, turn.describe(), why)
	}
	s.next++
	req.Turn = s.next
	s.requests = append(s.requests, *req)
	return turn, ""
}

// callIDs returns IDs for the n tool calls of a turn being served, and remembers them as
// the last turn's.
func (s *Server) callIDs(prefix string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, n)
	s.lastCalls = map[string]bool{}
	for i := range ids {
		s.calls++
		ids[i] = fmt.Sprintf("%s%03d", prefix, s.calls)
		s.lastCalls[ids[i]] = true
	}
	return ids
}

// refuse records req as refused, reports why, and answers HTTP 400 in the request's API's
// error shape; the agents do not retry a 400.
func (s *Server) refuse(w http.ResponseWriter, req Request, why string) {
	s.mu.Lock()
	req.Refused = why
	s.requests = append(s.requests, req)
	s.failures = append(s.failures, why)
	s.mu.Unlock()
	if s.report != nil {
		s.report(why)
	}
	writeError(w, req.API, Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "modelserver: " + why})
}

func writeError(w http.ResponseWriter, api string, e Error) {
	if e.Status == 0 {
		e.Status = http.StatusInternalServerError
	}
	if e.Type == "" {
		e.Type = "api_error"
	}
	var body any
	obj := map[string]any{"type": e.Type, "message": e.Message}
	if api == APIResponses {
		obj["code"] = e.Type
		body = map[string]any{"error": obj}
	} else {
		body = map[string]any{"type": "error", "error": obj}
	}
	for k, v := range e.Fields {
		obj[k] = v
	}
	for k, v := range e.Headers {
		w.Header().Set(k, v)
	}
	writeJSON(w, e.Status, body)
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// check returns why req does not meet e, or "".
func (e Expect) check(req *Request) string {
	if e.API != "" && e.API != req.API {
		return fmt.Sprintf("want a request by the %s API, got one by %s", e.API, req.API)
	}
	for _, want := range e.UserContains {
		if !strings.Contains(req.UserText, want) {
			return fmt.Sprintf("the user messages do not contain %q; they are:\n%s", want, clip(req.UserText, 2000))
		}
	}
	if len(e.ToolResultContains) > 0 {
		var all []string
		for _, r := range req.ToolResults {
			all = append(all, r.Output)
		}
		joined := strings.Join(all, "\n")
		for _, want := range e.ToolResultContains {
			if !strings.Contains(joined, want) {
				return fmt.Sprintf("the tool results do not contain %q; they are:\n%s", want, clip(joined, 2000))
			}
		}
	}
	return ""
}

// readBody reads a request body into req.Body.
func readBody(r *http.Request, req *Request) error {
	b, err := io.ReadAll(r.Body)
	req.Body = b
	return err
}

// sse writes server-sent events and flushes each one.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event whose data is v as JSON; v's "type" is the event name.
func (e *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	if e.f != nil {
		e.f.Flush()
	}
}

// chunks splits s into pieces of about n bytes, on rune boundaries, so that text arrives
// as several deltas, as it does from a real model.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// textOf returns the text in a JSON value that is a string, or an array of content blocks
// with "text" fields (nested "content" arrays included), or else the JSON itself.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var parts []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if t, ok := x["text"].(string); ok {
				parts = append(parts, t)
			}
			if t, ok := x["output"].(string); ok {
				parts = append(parts, t)
			}
			if c, ok := x["content"]; ok {
				walk(c)
			}
		case string:
			parts = append(parts, x)
		}
	}
	walk(v)
	if len(parts) == 0 {
		return string(raw)
	}
	return strings.Join(parts, "\n")
}
