package agents

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The roles an agent can be invoked as (SPEC §10.3).
const (
	RoleTestWriter  = "test-writer"
	RoleImplementer = "implementer"
	RoleRefactorer  = "refactorer"
	RoleVerifier    = "verifier"
	RoleQA          = "qa"
	RoleReviewer    = "reviewer"
	RoleJudge       = "judge"
	// RolePlanner is the decomposition agent of `orchestrator plan` (SPEC §17): it turns
	// a requirements document and the test plan into tasks.
	RolePlanner = "planner"
)

// The values of a result's status.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
)

// The values of a result's state (seed 004): success is checked by the gate, failure is a
// failed attempt, issue is a question about an unclear requirement, dependency is a request
// for a package, service or tool.
const (
	StateSuccess    = "success"
	StateFailure    = "failure"
	StateIssue      = "issue"
	StateDependency = "dependency"
)

// A Result is a parsed tdd-result block: an agent's claim about its attempt. Like a marker,
// it is only a claim; the gates check it.
type Result struct {
	Role          string   // the role the agent says it played
	Status        string   // StatusOK or StatusFailed
	State         string   // one of the State constants; defaults from Status
	Command       string   // the command the agent ran to check its work
	OutputExcerpt string   // the first lines of that command's output
	Notes         string   // optional
	Message       string   // optional: the question (issue) or the need (dependency)
	Usage         string   // optional: an exec agent's usage line (see ParseUsageLine)
	Files         []string // the files it wrote or changed; empty, never nil, after ParseResult
}

// ErrFormat matches, with errors.Is, every *FormatError: a format violation (mode D, SPEC
// §9), which gets one narrow retry rather than a semantic one.
var ErrFormat = errors.New("tdd-result: format violation")

// A FormatError says how a final message breaks the tdd-result contract. Rule names the
// rule (one of the Rule constants), so that callers and halt reports can count and name
// violations; Msg says what was found.
type FormatError struct {
	Rule string
	Msg  string
}

// The rules of the tdd-result contract that a FormatError can name.
const (
	RuleNoBlock       = "no-block"        // no ```tdd-result block
	RuleOneBlock      = "one-block"       // more than one block
	RuleUnterminated  = "unterminated"    // a block with no closing ``` line
	RuleSyntax        = "syntax"          // a line that is not key: value, a list item or literal text
	RuleDuplicate     = "duplicate-field" // a key given twice
	RuleMissing       = "missing-field"   // a required key absent
	RuleUnknownRole   = "unknown-role"    // role not one of the Role constants
	RuleUnknownStatus = "unknown-status"  // status not ok or failed
	RuleUnknownState  = "unknown-state"   // state not one of the State constants
	RuleStateMismatch = "state-mismatch"  // status ok with state failure, or failed with success
	RuleSchema        = "schema"          // any other violation of tdd-result.schema.json
	RuleWrongRole     = "wrong-role"      // a role other than the one invoked
)

// Error returns "tdd-result: " and the message, which names the rule broken.
func (e *FormatError) Error() string { return "tdd-result: " + e.Msg }

// Is makes errors.Is(err, ErrFormat) true for every *FormatError.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

func formatErr(rule, format string, args ...any) *FormatError {
	return &FormatError{Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// schemaJSON is the JSON Schema every parsed block must satisfy. It is the contract's
// single source for the allowed roles, statuses and states.
//
//go:embed tdd-result.schema.json
var schemaJSON []byte

type compiledSchema struct {
	schema                  *jsonschema.Resolved
	roles, statuses, states []string
}

// loadSchema compiles the schema once, when a block is first parsed. (The validator is
// github.com/google/jsonschema-go: its package init is cheap, which matters to commands
// such as `set` that never parse a block but start in a few milliseconds.)
var loadSchema = sync.OnceValue(func() *compiledSchema {
	var doc jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		panic("agents: embedded tdd-result schema: " + err.Error())
	}
	resolved, err := doc.Resolve(nil)
	if err != nil {
		panic("agents: embedded tdd-result schema: " + err.Error())
	}
	var enums struct {
		Properties map[string]struct{ Enum []string }
	}
	if err := json.Unmarshal(schemaJSON, &enums); err != nil {
		panic("agents: embedded tdd-result schema: " + err.Error())
	}
	return &compiledSchema{
		schema:   resolved,
		roles:    enums.Properties["role"].Enum,
		statuses: enums.Properties["status"].Enum,
		states:   enums.Properties["state"].Enum,
	}
})

const (
	openFence  = "```tdd-result"
	closeFence = "```"
)

// requiredFields are the keys every block must have, in the order errors name them.
var requiredFields = []string{"role", "status", "files", "command", "output_excerpt"}

// ParseResult finds the one tdd-result block in text (an agent's final message) and parses
// it (SPEC §10.3). With wantRole != "", the block's role must be wantRole.
//
// The grammar: the block opens with a line that is exactly ```tdd-result and closes with a
// line that is exactly ``` (trailing white space and CR are ignored on both). Inside, each
// field is a line "key: value" at the start of the line; the value may be quoted with " or '
// (the quotes are removed, nothing is unescaped), "[]" (an empty list), empty and followed by
// list items ("  - item", one per line), or "|" (also "|-" and "|+") followed by indented
// lines of literal text, from which the indentation of the first of them is removed and
// trailing blank lines are dropped. Blank lines between fields are ignored. Anything else is
// a syntax error.
//
// Every error is a *FormatError naming the rule broken.
func ParseResult(text, wantRole string) (*Result, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	var blocks [][2]int // [opening line index, closing line index]
	for i := 0; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t") != openFence {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimRight(lines[j], " \t") != closeFence {
			j++
		}
		if j == len(lines) {
			return nil, formatErr(RuleUnterminated, "block opened on line %d has no closing ``` line", i+1)
		}
		blocks = append(blocks, [2]int{i, j})
		i = j
	}
	switch len(blocks) {
	case 0:
		return nil, formatErr(RuleNoBlock, "exactly one block required, found none (a line ```tdd-result opens it)")
	case 1:
	default:
		return nil, formatErr(RuleOneBlock, "exactly one block required, found %d", len(blocks))
	}
	open, end := blocks[0][0], blocks[0][1]
	fields, err := parseFields(lines[open+1:end], open+2)
	if err != nil {
		return nil, err
	}
	return resultFromFields(fields, wantRole)
}

// parseFields parses the lines inside a block; first is the line number of body[0].
func parseFields(body []string, first int) (map[string]any, error) {
	fields := make(map[string]any)
	for i := 0; i < len(body); {
		line, ln := body[i], first+i
		if isBlank(line) {
			i++
			continue
		}
		if isItem(line) {
			return nil, formatErr(RuleSyntax, "line %d: list item outside a list (a list follows a line \"key:\")", ln)
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, formatErr(RuleSyntax, "line %d: unexpected indented line (a field is \"key: value\" at the start of a line)", ln)
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || !validKey(line[:colon]) {
			return nil, formatErr(RuleSyntax, "line %d: want \"key: value\", got %q", ln, clip(line, 60))
		}
		key, rest := line[:colon], line[colon+1:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return nil, formatErr(RuleSyntax, "line %d: want a space after %q", ln, key+":")
		}
		if _, dup := fields[key]; dup {
			return nil, formatErr(RuleDuplicate, "line %d: field %q given twice", ln, key)
		}
		i++
		value := strings.TrimSpace(rest)
		switch {
		case value == "|" || value == "|-" || value == "|+":
			var text []string
			for i < len(body) && (isBlank(body[i]) || body[i][0] == ' ' || body[i][0] == '\t') {
				text = append(text, body[i])
				i++
			}
			fields[key] = literal(text)
		case value == "[]":
			fields[key] = []any{}
		case value == "":
			j := i
			for j < len(body) && isBlank(body[j]) {
				j++
			}
			if j == len(body) || !isItem(body[j]) {
				fields[key] = ""
				break
			}
			items := []any{}
			for i < len(body) && (isBlank(body[i]) || isItem(body[i])) {
				if !isBlank(body[i]) {
					item := strings.TrimLeft(body[i], " \t")[1:]
					items = append(items, unquote(strings.TrimSpace(item)))
				}
				i++
			}
			fields[key] = items
		default:
			fields[key] = unquote(value)
		}
	}
	return fields, nil
}

// literal returns the text of a "key: |" block: the indentation of its first non-blank line
// is removed from every line (a line indented less loses all of its indentation), blank
// lines become empty, and trailing blank lines are dropped.
func literal(lines []string) string {
	var indent string
	for _, l := range lines {
		if !isBlank(l) {
			indent = l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			break
		}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		switch {
		case isBlank(l):
			out = append(out, "")
		case strings.HasPrefix(l, indent):
			out = append(out, l[len(indent):])
		default:
			out = append(out, strings.TrimLeft(l, " \t"))
		}
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

func isItem(l string) bool {
	t := strings.TrimLeft(l, " \t")
	return t == "-" || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "-\t")
}

func validKey(k string) bool {
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return k != ""
}

// unquote removes one pair of surrounding double or single quotes.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// clip shortens s to about n bytes for an error message, without splitting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func resultFromFields(fields map[string]any, wantRole string) (*Result, error) {
	var missing []string
	for _, k := range requiredFields {
		if _, ok := fields[k]; !ok {
			missing = append(missing, fmt.Sprintf("%q", k))
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return nil, formatErr(RuleMissing, "missing required field %s", missing[0])
	default:
		return nil, formatErr(RuleMissing, "missing required fields %s", strings.Join(missing, ", "))
	}
	s := loadSchema()
	for _, e := range []struct {
		key, rule string
		allowed   []string
	}{
		{"role", RuleUnknownRole, s.roles},
		{"status", RuleUnknownStatus, s.statuses},
		{"state", RuleUnknownState, s.states},
	} {
		if v, ok := fields[e.key].(string); ok && !slices.Contains(e.allowed, v) {
			return nil, formatErr(e.rule, "unknown %s %q (want one of %s)", e.key, v, strings.Join(e.allowed, ", "))
		}
	}
	status, _ := fields["status"].(string)
	if state, ok := fields["state"].(string); ok {
		if status == StatusOK && state == StateFailure || status == StatusFailed && state == StateSuccess {
			return nil, formatErr(RuleStateMismatch, "status %s contradicts state %s", status, state)
		}
	}
	if err := s.schema.Validate(fields); err != nil {
		return nil, schemaError(err)
	}
	// The schema has checked every type, so the assertions below cannot fail.
	str := func(k string) string { v, _ := fields[k].(string); return v }
	r := &Result{
		Role:          str("role"),
		Status:        status,
		State:         str("state"),
		Command:       str("command"),
		OutputExcerpt: str("output_excerpt"),
		Notes:         str("notes"),
		Message:       str("message"),
		Usage:         str("usage"),
		Files:         []string{},
	}
	for _, f := range fields["files"].([]any) {
		r.Files = append(r.Files, f.(string))
	}
	if r.State == "" {
		r.State = DefaultState(r.Status)
	}
	if wantRole != "" && r.Role != wantRole {
		return nil, formatErr(RuleWrongRole, "role is %q, want %q", r.Role, wantRole)
	}
	return r, nil
}

// DefaultState returns the state a result has when it gives none: success for status ok,
// failure for status failed, "" otherwise.
func DefaultState(status string) string {
	switch status {
	case StatusOK:
		return StateSuccess
	case StatusFailed:
		return StateFailure
	}
	return ""
}

// schemaError turns a schema validation error into a FormatError that names the rule and
// what the schema found, such as "validating /properties/files: type: ... has type string,
// want array".
func schemaError(err error) *FormatError {
	msg := err.Error()
	// Drop the schema's own URL and the schema-side path words: "validating <url>:
	// validating /properties/files: ..." reads as "at /files: ...".
	if i := strings.Index(msg, ".schema.json: "); i >= 0 {
		msg = msg[i+len(".schema.json: "):]
	}
	msg = strings.ReplaceAll(msg, "/properties/", "/")
	msg = strings.ReplaceAll(msg, "/items", "/*")
	msg = strings.ReplaceAll(msg, "validating /", "at /")
	return formatErr(RuleSchema, "does not match tdd-result.schema.json: %s", msg)
}

// Render writes r as a tdd-result block, ending with a newline, in the form ParseResult
// reads: a successful parse, rendered, parses back to the same Result. Empty optional fields
// (state, notes, message) are left out; a value with a newline is written as a literal
// block. The grammar cannot carry a newline in a list item, nor white space that starts the
// first line of a multi-line value; Render does not try to.
func (r *Result) Render() string {
	var b strings.Builder
	b.WriteString(openFence + "\n")
	writeField(&b, "role", r.Role)
	writeField(&b, "status", r.Status)
	if r.State != "" {
		writeField(&b, "state", r.State)
	}
	if len(r.Files) == 0 {
		b.WriteString("files: []\n")
	} else {
		b.WriteString("files:\n")
		for _, f := range r.Files {
			b.WriteString("  - " + scalar(f) + "\n")
		}
	}
	writeField(&b, "command", r.Command)
	writeField(&b, "output_excerpt", r.OutputExcerpt)
	if r.Notes != "" {
		writeField(&b, "notes", r.Notes)
	}
	if r.Message != "" {
		writeField(&b, "message", r.Message)
	}
	if r.Usage != "" {
		writeField(&b, "usage", r.Usage)
	}
	b.WriteString(closeFence + "\n")
	return b.String()
}

func writeField(b *strings.Builder, key, v string) {
	if !strings.Contains(v, "\n") {
		b.WriteString(key + ": " + scalar(v) + "\n")
		return
	}
	b.WriteString(key + ": |\n")
	for _, l := range strings.Split(v, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
		b.WriteString("\n")
	}
}

// scalar quotes v when reading it back would otherwise change it.
func scalar(v string) string {
	switch {
	case v == "", v != strings.TrimSpace(v), v == "[]", v == "|", v == "|-", v == "|+", unquote(v) != v:
		return `"` + v + `"`
	}
	return v
}
