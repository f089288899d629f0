package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// Usage is what one agent run spent, as its program reported it (SPEC §16). A nil field is
// a figure the program did not report: unknown, which is never shown or summed as 0.
//
// InputTokens are the input tokens not read from the prompt cache; CacheReadTokens and
// CacheWriteTokens those read from and written to it. Claude Code reports them so;
// Codex counts cached tokens inside its input_tokens, which ReadUsage takes apart.
type Usage struct {
	CostUSD          *float64 `json:"cost_usd"`
	CostSource       string   `json:"cost_source,omitempty"` // "agent" (the program's own figure), "prices" (config prices), or "" (unknown)
	InputTokens      *int64   `json:"input_tokens"`
	OutputTokens     *int64   `json:"output_tokens"`
	CacheReadTokens  *int64   `json:"cache_read_tokens"`
	CacheWriteTokens *int64   `json:"cache_write_tokens"`
	Turns            *int64   `json:"num_turns"`
	APIDurationMS    *int64   `json:"duration_api_ms"`
}

// The values of Usage.CostSource.
const (
	CostFromAgent  = "agent"
	CostFromPrices = "prices"
)

// Tokens returns the run's tokens of every kind, or nil when any kind is unknown.
func (u Usage) Tokens() *int64 {
	return sumInts(u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
}

// Known reports whether the program reported anything at all.
func (u Usage) Known() bool {
	return u.CostUSD != nil || u.InputTokens != nil || u.OutputTokens != nil || u.CacheReadTokens != nil ||
		u.CacheWriteTokens != nil || u.Turns != nil || u.APIDurationMS != nil
}

// Add returns the sum of u and o. A figure is known in the sum only when it is known in
// both: unknown plus anything is unknown.
func (u Usage) Add(o Usage) Usage {
	s := Usage{
		CostUSD:          AddKnown(u.CostUSD, o.CostUSD),
		InputTokens:      sumInts(u.InputTokens, o.InputTokens),
		OutputTokens:     sumInts(u.OutputTokens, o.OutputTokens),
		CacheReadTokens:  sumInts(u.CacheReadTokens, o.CacheReadTokens),
		CacheWriteTokens: sumInts(u.CacheWriteTokens, o.CacheWriteTokens),
		Turns:            sumInts(u.Turns, o.Turns),
		APIDurationMS:    sumInts(u.APIDurationMS, o.APIDurationMS),
	}
	if u.CostSource == o.CostSource {
		s.CostSource = u.CostSource
	} else if s.CostUSD != nil {
		s.CostSource = CostFromAgent + "+" + CostFromPrices
	}
	return s
}

// AddKnown returns the sum of two figures, nil (unknown) when either is: unknown plus
// anything is unknown.
func AddKnown[T int64 | float64](a, b *T) *T {
	if a == nil || b == nil {
		return nil
	}
	v := *a + *b
	return &v
}

func sumInts(vs ...*int64) *int64 {
	var s int64
	for _, v := range vs {
		if v == nil {
			return nil
		}
		s += *v
	}
	return &s
}

func intp(v int64) *int64 { return &v }

// A Price is what a model's tokens cost, in US dollars per million tokens. Cached is the
// price of input tokens read from the cache; nil means the input price.
type Price struct {
	InputPerMTok  float64  `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64  `yaml:"output_per_mtok" json:"output_per_mtok"`
	CachedPerMTok *float64 `yaml:"cached_per_mtok" json:"cached_per_mtok,omitempty"`
}

// Priced returns u with its cost computed from p when the program reported none and every
// token count is known. Tokens written to the cache are priced as input.
func (u Usage) Priced(p Price) Usage {
	if u.CostUSD != nil || u.InputTokens == nil || u.OutputTokens == nil || u.CacheReadTokens == nil || u.CacheWriteTokens == nil {
		return u
	}
	cached := p.InputPerMTok
	if p.CachedPerMTok != nil {
		cached = *p.CachedPerMTok
	}
	c := (float64(*u.InputTokens+*u.CacheWriteTokens)*p.InputPerMTok + float64(*u.CacheReadTokens)*cached + float64(*u.OutputTokens)*p.OutputPerMTok) / 1e6
	u.CostUSD, u.CostSource = &c, CostFromPrices
	return u
}

// ReadUsage reads what a run of the agent program called name spent from its standard
// output, its own final report: Claude Code's result object (total_cost_usd, usage,
// num_turns, duration_api_ms); Codex's turn.completed events, whose usage is summed over
// turns (Codex reports no money: see Usage.Priced). Any other agent's usage is the usage
// line of its tdd-result block (ParseUsageLine), which only an exec agent's final text
// may carry: for claude and codex, a usage line in the block is the model's text and is
// not believed.
func ReadUsage(name string, stdout []byte) Usage {
	switch name {
	case Claude:
		return claudeUsage(stdout)
	case Codex:
		return codexUsage(stdout)
	}
	text := string(stdout)
	if !strings.Contains(text, "```tdd-result") {
		return Usage{}
	}
	res, err := ParseResult(text, "")
	if err != nil || res.Usage == "" {
		return Usage{}
	}
	u, err := ParseUsageLine(res.Usage)
	if err != nil {
		return Usage{}
	}
	return u
}

// claudeUsage reads Claude Code's result object. Its total_cost_usd is computed by Claude
// Code itself from the tokens and its own price table; it is taken as it is.
func claudeUsage(stdout []byte) Usage {
	r := findClaudeResult(stdout)
	if r == nil {
		return Usage{}
	}
	var u Usage
	if r.TotalCostUSD != nil {
		u.CostUSD, u.CostSource = r.TotalCostUSD, CostFromAgent
	}
	if r.Usage != nil {
		u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
		u.CacheReadTokens, u.CacheWriteTokens = r.Usage.CacheReadInputTokens, r.Usage.CacheCreationInputTokens
	}
	if r.NumTurns > 0 {
		u.Turns = intp(int64(r.NumTurns))
	}
	u.APIDurationMS = r.DurationAPIMS
	return u
}

// codexUsageEvent is a {"type":"turn.completed","usage":{"input_tokens":400,
// "cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":200,
// "reasoning_output_tokens":0}} event (reasoning tokens are part of output_tokens).
type codexUsageEvent struct {
	Type  string `json:"type"`
	Usage *struct {
		InputTokens       *int64 `json:"input_tokens"`
		CachedInputTokens *int64 `json:"cached_input_tokens"`
		CacheWriteTokens  *int64 `json:"cache_write_input_tokens"`
		OutputTokens      *int64 `json:"output_tokens"`
	} `json:"usage"`
}

func codexUsage(stdout []byte) Usage {
	var total Usage
	turns := int64(0)
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev codexUsageEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type != "turn.completed" || ev.Usage == nil || ev.Usage.InputTokens == nil || ev.Usage.OutputTokens == nil {
			continue
		}
		cached, written := int64(0), int64(0)
		if ev.Usage.CachedInputTokens != nil {
			cached = *ev.Usage.CachedInputTokens
		}
		if ev.Usage.CacheWriteTokens != nil {
			written = *ev.Usage.CacheWriteTokens
		}
		one := Usage{InputTokens: intp(*ev.Usage.InputTokens - cached - written), OutputTokens: intp(*ev.Usage.OutputTokens),
			CacheReadTokens: intp(cached), CacheWriteTokens: intp(written)}
		if turns == 0 {
			total = one
		} else {
			total = total.Add(one)
		}
		turns++
	}
	if turns > 0 {
		total.Turns = intp(turns)
	}
	return total
}

// ParseUsageLine reads an exec agent's usage line: space-separated key=value pairs, of
// input_tokens, output_tokens, cache_read_tokens, cache_write_tokens (whole numbers),
// cost_usd (dollars) and num_turns. A key it does not give stays unknown, except the cache
// counts of a line that gives input or output tokens: an agent that counts its tokens and
// says nothing of a cache had none.
func ParseUsageLine(line string) (Usage, error) {
	var u Usage
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Usage{}, fmt.Errorf("usage: %q is not key=value", kv)
		}
		if k == "cost_usd" {
			f, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
			if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				return Usage{}, fmt.Errorf("usage: cost_usd %q is not an amount", v)
			}
			u.CostUSD, u.CostSource = &f, CostFromAgent
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Usage{}, fmt.Errorf("usage: %s %q is not a count", k, v)
		}
		switch k {
		case "input_tokens":
			u.InputTokens = &n
		case "output_tokens":
			u.OutputTokens = &n
		case "cache_read_tokens":
			u.CacheReadTokens = &n
		case "cache_write_tokens":
			u.CacheWriteTokens = &n
		case "num_turns":
			u.Turns = &n
		default:
			return Usage{}, fmt.Errorf("usage: unknown key %q", k)
		}
	}
	if u.InputTokens != nil || u.OutputTokens != nil {
		if u.CacheReadTokens == nil {
			u.CacheReadTokens = intp(0)
		}
		if u.CacheWriteTokens == nil {
			u.CacheWriteTokens = intp(0)
		}
	}
	return u, nil
}

// A RateLimit is a rate or usage limit that an agent program reported in its structured
// output (HTTP 429, rate_limit_error, a usage limit): not the agent's failure. Reset is
// when the program says the limit lifts, zero when it does not say.
type RateLimit struct {
	Reset time.Time
	Msg   string
}

// usageLimit matches the words Codex and Claude Code use in their own error reports of a
// usage limit ("You've hit your usage limit", "Claude AI usage limit reached").
var usageLimit = lazyre.New(`(?i)usage limit|rate limit|rate_limit|too many requests|\b429\b`)

// claudeRateLimit reads a rate limit from Claude Code's result object: an error result
// (is_error true) with api_error_status 429, or whose result is Claude Code's own "usage
// limit reached" report (with the reset time as "|<unix seconds>" or "resets ..."). A
// result that is not an error is the model's text, whatever it says.
func claudeRateLimit(r *claudeResult, now time.Time) *RateLimit {
	if r == nil || !r.IsError {
		return nil
	}
	status := strings.TrimSpace(string(r.APIErrorStatus))
	text := ""
	if r.Result != nil {
		text = *r.Result
	}
	if status != "429" && !usageLimit().MatchString(text) {
		return nil
	}
	return &RateLimit{Reset: resetTime(text, now), Msg: clip(strings.TrimSpace("API status "+status+": "+text), 300)}
}

// codexRateLimit reads a rate limit from the message of a Codex error or turn.failed
// event: "exceeded retry limit, last status: 429 Too Many Requests", "You've hit your
// usage limit. ... try again at 11:03 PM.", or a 429 body passed on.
func codexRateLimit(msg string, now time.Time) *RateLimit {
	if !usageLimit().MatchString(msg) {
		return nil
	}
	return &RateLimit{Reset: resetTime(msg, now), Msg: clip(apiErrorText(msg), 300)}
}

var (
	// Claude Code's "Claude AI usage limit reached|1767225600".
	resetUnix = lazyre.New(`\|(\d{9,11})\b`)
	// "try again in 7s", "try again in 1.5 seconds", "Please try again in 250ms".
	resetIn = lazyre.New(`(?i)try again in\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?|m|min|minutes?|h|hours?)\b`)
	// Codex's "try again at 11:03 PM" or "try again at Nov 24th, 2026 11:03 PM".
	resetAt = lazyre.New(`(?i)(?:try again at|resets(?: at)?)\s+(?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}),? )?(\d{1,2}):(\d{2})\s*([AP]M)?`)
)

// resetTime finds when a limit lifts in a program's error text, or returns zero. A time of
// day (minute precision, local time) is taken as the end of that minute, so that the wait
// is never cut short.
func resetTime(text string, now time.Time) time.Time {
	if m := resetUnix().FindStringSubmatch(text); m != nil {
		if s, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(s, 0)
		}
	}
	if m := resetIn().FindStringSubmatch(text); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		unit := time.Second
		switch strings.ToLower(m[2])[0] {
		case 'm':
			unit = time.Minute
			if strings.ToLower(m[2]) == "ms" {
				unit = time.Millisecond
			}
		case 'h':
			unit = time.Hour
		}
		return now.Add(time.Duration(f * float64(unit)))
	}
	if m := resetAt().FindStringSubmatch(text); m != nil {
		hour, _ := strconv.Atoi(m[4])
		minute, _ := strconv.Atoi(m[5])
		switch strings.ToUpper(m[6]) {
		case "PM":
			if hour < 12 {
				hour += 12
			}
		case "AM":
			if hour == 12 {
				hour = 0
			}
		}
		local := now.Local()
		y, mo, d := local.Date()
		if m[1] != "" {
			if t, err := time.Parse("Jan 2 2006", m[1]+" "+m[2]+" "+m[3]); err == nil {
				y, mo, d = t.Date()
			}
		}
		t := time.Date(y, mo, d, hour, minute, 0, 0, local.Location()).Add(time.Minute)
		if m[1] == "" && t.Before(now.Add(-12*time.Hour)) {
			t = t.AddDate(0, 0, 1) // a time of day already past is tomorrow's
		}
		return t
	}
	return time.Time{}
}

// RateLimitOf returns the rate or usage limit that the run of the agent program called
// name reported in its structured output, or nil. Only Claude Code's result object and
// Codex's error events are read; what the agent wrote into files or its final message
// never makes a limit.
func RateLimitOf(name string, stdout []byte, now time.Time) *RateLimit {
	switch name {
	case Claude:
		return claudeRateLimit(findClaudeResult(stdout), now)
	case Codex:
		var last *RateLimit
		for _, line := range bytes.Split(stdout, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 || line[0] != '{' {
				continue
			}
			var ev codexEvent
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			switch ev.Type {
			case "error":
				if rl := codexRateLimit(ev.Message, now); rl != nil {
					last = rl
				}
			case "turn.failed":
				if ev.Error != nil {
					if rl := codexRateLimit(ev.Error.Message, now); rl != nil {
						last = rl
					}
				}
			case "turn.completed", "item.completed":
				last = nil // a limit the program got past
			}
		}
		return last
	}
	return nil
}
