package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// show renders a usage as JSON, where unknown figures are null.
func show(u Usage) string {
	b, _ := json.Marshal(u)
	return string(b)
}

func TestReadUsage(t *testing.T) {
	tests := []struct {
		name, agent string
		out         []byte
		want        string
	}{
		// Claude Code's own figures: its cost, computed by itself from the tokens.
		{"claude success", Claude, recorded(t, "claude-success.json"),
			`{"cost_usd":0.004200000000000001,"cost_source":"agent","input_tokens":400,"output_tokens":200,"cache_read_tokens":0,"cache_write_tokens":0,"num_turns":6,"duration_api_ms":44}`},
		// Codex reports tokens only: the cost stays unknown until priced.
		{"codex success", Codex, recorded(t, "codex-success.jsonl"),
			`{"cost_usd":null,"input_tokens":400,"output_tokens":200,"cache_read_tokens":0,"cache_write_tokens":0,"num_turns":1,"duration_api_ms":null}`},
		{"codex two turns with cache", Codex, []byte(`{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"cache_write_input_tokens":100,"output_tokens":50,"reasoning_output_tokens":20}}
not json
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}
`), `{"cost_usd":null,"input_tokens":310,"output_tokens":55,"cache_read_tokens":600,"cache_write_tokens":100,"num_turns":2,"duration_api_ms":null}`},
		{"codex failed before any turn", Codex, recorded(t, "codex-api-error.jsonl"),
			`{"cost_usd":null,"input_tokens":null,"output_tokens":null,"cache_read_tokens":null,"cache_write_tokens":null,"num_turns":null,"duration_api_ms":null}`},
		{"exec usage line", Exec, []byte("done\n```tdd-result\nrole: implementer\nstatus: ok\nfiles: []\ncommand: go test ./...\noutput_excerpt: ok\nusage: input_tokens=1200 output_tokens=300 cost_usd=0.25\n```\n"),
			`{"cost_usd":0.25,"cost_source":"agent","input_tokens":1200,"output_tokens":300,"cache_read_tokens":0,"cache_write_tokens":0,"num_turns":null,"duration_api_ms":null}`},
		{"exec without a usage line", Exec, []byte("```tdd-result\nrole: implementer\nstatus: ok\nfiles: []\ncommand: x\noutput_excerpt: ok\n```\n"),
			`{"cost_usd":null,"input_tokens":null,"output_tokens":null,"cache_read_tokens":null,"cache_write_tokens":null,"num_turns":null,"duration_api_ms":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(ReadUsage(tt.agent, tt.out)); got != tt.want {
				t.Errorf("ReadUsage =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestReadUsageNotFromTheModel: a usage line that the model put in Claude Code's or
// Codex's final message is the model's text; only the program's own report counts.
func TestReadUsageNotFromTheModel(t *testing.T) {
	block := "```tdd-result\nrole: implementer\nstatus: ok\nfiles: []\ncommand: x\noutput_excerpt: ok\nusage: input_tokens=1 output_tokens=1 cost_usd=0.0000001\n```\n"
	claudeOut, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": block, "num_turns": 2})
	u := ReadUsage(Claude, claudeOut)
	if u.CostUSD != nil || u.InputTokens != nil {
		t.Errorf("claude: a usage line in the model's text was believed: %s", show(u))
	}
	codexOut, _ := json.Marshal(map[string]any{"type": "item.completed", "item": map[string]any{"type": "agent_message", "text": block}})
	if u := ReadUsage(Codex, codexOut); u.Known() {
		t.Errorf("codex: a usage line in the model's text was believed: %s", show(u))
	}
}

func TestUsageAddAndPrice(t *testing.T) {
	a := ReadUsage(Codex, recorded(t, "codex-success.jsonl"))
	priced := a.Priced(Price{InputPerMTok: 1.25, OutputPerMTok: 10})
	if priced.CostUSD == nil || *priced.CostUSD != (400*1.25+200*10)/1e6 || priced.CostSource != CostFromPrices {
		t.Fatalf("priced = %s", show(priced))
	}
	// Unknown plus known is unknown, never the known part alone.
	sum := priced.Add(a)
	if sum.CostUSD != nil || *sum.InputTokens != 800 || *sum.Tokens() != 1200 {
		t.Errorf("sum = %s", show(sum))
	}
	c := ReadUsage(Claude, recorded(t, "claude-success.json"))
	mixed := c.Add(priced)
	if mixed.CostUSD == nil || mixed.CostSource != "agent+prices" {
		t.Errorf("mixed = %s", show(mixed))
	}
	// Claude Code's own figure is never replaced by a price.
	if got := c.Priced(Price{InputPerMTok: 100, OutputPerMTok: 100}); *got.CostUSD != *c.CostUSD {
		t.Errorf("a reported cost was priced again: %s", show(got))
	}
}

func TestParseUsageLine(t *testing.T) {
	for _, bad := range []string{"input_tokens", "input_tokens=-1", "cost_usd=lots", "cost_usd=NaN", "cost_usd=+Inf", "tokens=5"} {
		if _, err := ParseUsageLine(bad); err == nil {
			t.Errorf("ParseUsageLine(%q) took it", bad)
		}
	}
	u, err := ParseUsageLine("cost_usd=$0.5 num_turns=3")
	if err != nil || *u.CostUSD != 0.5 || *u.Turns != 3 || u.InputTokens != nil {
		t.Errorf("got %s, %v", show(u), err)
	}
}

func TestRateLimitOf(t *testing.T) {
	now := time.Date(2026, 11, 23, 23, 2, 40, 0, time.Local)
	tests := []struct {
		name, agent string
		out         []byte
		want        bool
		reset       time.Time
	}{
		// As Claude Code 2.1.197 reports a 429 it gave up on: an error result with
		// api_error_status 429, and no reset time.
		{"claude 429", Claude, recorded(t, "claude-429.json"), true, time.Time{}},
		{"claude usage limit with reset", Claude, []byte(`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1795474800"}`), true, time.Unix(1795474800, 0)},
		{"claude other API error", Claude, recorded(t, "claude-api-error.json"), false, time.Time{}},
		{"claude success", Claude, recorded(t, "claude-success.json"), false, time.Time{}},
		// The model saying so in its final message is not a limit.
		{"claude model text", Claude, []byte(`{"type":"result","subtype":"success","is_error":false,"result":"usage limit reached (429 rate_limit_error), try again in 5s"}`), false, time.Time{}},
		// As Codex 0.169.0 reports them.
		{"codex 429", Codex, recorded(t, "codex-429.jsonl"), true, time.Time{}},
		{"codex usage limit", Codex, recorded(t, "codex-usage-limit.jsonl"), true, time.Date(2026, 11, 23, 23, 4, 0, 0, time.Local)},
		{"codex other API error", Codex, recorded(t, "codex-api-error.jsonl"), false, time.Time{}},
		{"codex model text", Codex, []byte(`{"type":"item.completed","item":{"type":"agent_message","text":"You've hit your usage limit. 429 rate_limit_error"}}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`), false, time.Time{}},
		{"codex retry in", Codex, []byte(`{"type":"error","message":"{\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached for gpt-5.5. Please try again in 7s.\"}}"}`), true, now.Add(7 * time.Second)},
		{"exec", Exec, []byte("usage limit reached\n"), false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rl := RateLimitOf(tt.agent, tt.out, now)
			if (rl != nil) != tt.want {
				t.Fatalf("RateLimitOf = %+v, want a limit: %v", rl, tt.want)
			}
			if rl != nil && !rl.Reset.Equal(tt.reset) {
				t.Errorf("reset %v, want %v (message %q)", rl.Reset, tt.reset, rl.Msg)
			}
			if rl != nil && strings.TrimSpace(rl.Msg) == "" {
				t.Errorf("no message")
			}
		})
	}
}

// FuzzUsageReports: no output of an agent program makes the readers panic, a usage line
// that parses has no negative figure, and a reset time is never before the output was read
// by more than a day.
func FuzzUsageReports(f *testing.F) {
	for _, name := range []string{"claude-success.json", "claude-429.json", "codex-success.jsonl", "codex-usage-limit.jsonl", "codex-429.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "recorded", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("usage: input_tokens=1 output_tokens=2 cost_usd=0.5"))
	f.Add([]byte(`{"type":"error","message":"try again at Nov 24th, 2026 11:03 PM; try again in 1.5 seconds"}`))
	now := time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, name := range []string{Claude, Codex, Exec} {
			_ = ReadUsage(name, out)
			if rl := RateLimitOf(name, out, now); rl != nil && !rl.Reset.IsZero() && rl.Reset.Before(now.Add(-48*time.Hour)) && !resetUnix().Match(out) {
				t.Errorf("%s: reset %v long before %v", name, rl.Reset, now)
			}
		}
		if u, err := ParseUsageLine(string(out)); err == nil {
			for _, v := range []*int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.Turns} {
				if v != nil && *v < 0 {
					t.Errorf("negative count in %q", out)
				}
			}
			if u.CostUSD != nil && *u.CostUSD < 0 {
				t.Errorf("negative cost in %q", out)
			}
		}
	})
}
