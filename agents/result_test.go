package agents

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// block wraps body lines in a tdd-result fence.
func block(lines ...string) string {
	return "```tdd-result\n" + strings.Join(lines, "\n") + "\n```\n"
}

var minimal = []string{
	"role: implementer",
	"status: ok",
	"files:",
	"  - calc/add.go",
	"command: go test ./calc",
	"output_excerpt: ok",
}

func TestParseResult(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantRole string
		want     Result
	}{
		{
			name: "spec example",
			text: "I wrote the tests.\n\n" + block(
				"role: test-writer",
				"status: ok",
				"files:",
				"  - calc/add_test.go",
				"  - calc/sub_test.go",
				"command: go test ./calc -run TestAC_STE_1",
				"output_excerpt: |",
				"  --- FAIL: TestAC_STE_1 (0.00s)",
				"      add_test.go:9: got 0, want 3",
				"  FAIL",
				"",
				"notes: one test per AC",
			) + "Bye.\n",
			wantRole: RoleTestWriter,
			want: Result{
				Role: "test-writer", Status: "ok", State: "success",
				Files:         []string{"calc/add_test.go", "calc/sub_test.go"},
				Command:       "go test ./calc -run TestAC_STE_1",
				OutputExcerpt: "--- FAIL: TestAC_STE_1 (0.00s)\n    add_test.go:9: got 0, want 3\nFAIL",
				Notes:         "one test per AC",
			},
		},
		{
			name: "minimal, any role accepted",
			text: block(minimal...),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{"calc/add.go"}, Command: "go test ./calc", OutputExcerpt: "ok"},
		},
		{
			name: "failed defaults to failure",
			text: block("role: implementer", "status: failed", "files: []", "command: make", "output_excerpt: boom"),
			want: Result{Role: "implementer", Status: "failed", State: "failure", Files: []string{}, Command: "make", OutputExcerpt: "boom"},
		},
		{
			name: "explicit state and message",
			text: block("role: implementer", "status: failed", "state: dependency", "files: []", "command: go build", "output_excerpt: missing package", "message: needs github.com/x/y"),
			want: Result{Role: "implementer", Status: "failed", State: "dependency", Files: []string{}, Command: "go build", OutputExcerpt: "missing package", Message: "needs github.com/x/y"},
		},
		{
			name: "quotes removed",
			text: block(`role: "refactorer"`, `status: 'ok'`, `files:`, `  - "a b.go"`, `  - 'c.go'`, `command: "go test ./..."`, `output_excerpt: ""`, `notes: "'kept'"`),
			want: Result{Role: "refactorer", Status: "ok", State: "success", Files: []string{"a b.go", "c.go"}, Command: "go test ./...", OutputExcerpt: "", Notes: "'kept'"},
		},
		{
			name: "mismatched quotes kept",
			text: block(append(minimal[:5:5], `output_excerpt: "half'`)...),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{"calc/add.go"}, Command: "go test ./calc", OutputExcerpt: `"half'`},
		},
		{
			name: "empty list",
			text: block("role: refactorer", "status: ok", "files: []", "command: go test ./...", "output_excerpt: PASS"),
			want: Result{Role: "refactorer", Status: "ok", State: "success", Files: []string{}, Command: "go test ./...", OutputExcerpt: "PASS"},
		},
		{
			name: "list items without indentation, with blank lines, tab after dash",
			text: block("role: implementer", "status: ok", "files:", "- a.go", "", "    -\tb.go", "command: x", "output_excerpt: y"),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{"a.go", "b.go"}, Command: "x", OutputExcerpt: "y"},
		},
		{
			name: "literal: one indent level removed, deeper kept, blank inside kept, trailing dropped",
			text: block("role: implementer", "status: ok", "files: []", "command: |", "    go test \\", "      ./calc", "output_excerpt: |", "  line 1", "", "    indented", "  ", "  line 4", "", "   ", "notes: n"),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{}, Command: "go test \\\n  ./calc", OutputExcerpt: "line 1\n\n  indented\n\nline 4", Notes: "n"},
		},
		{
			name: "literal: less indented line loses its indentation, tabs count",
			text: block("role: implementer", "status: ok", "files: []", "command: c", "output_excerpt: |-", "\t\tfirst", "\tsecond", "\t\t\tthird"),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{}, Command: "c", OutputExcerpt: "first\nsecond\n\tthird"},
		},
		{
			name: "literal: empty, then the block closes",
			text: block("role: implementer", "status: ok", "files: []", "command: c", "output_excerpt: |+"),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{}, Command: "c"},
		},
		{
			name: "literal holding fences and keys",
			text: block("role: implementer", "status: ok", "files: []", "command: c", "output_excerpt: |", "  ```go", "  role: judge", "  ```", "notes: x"),
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{}, Command: "c", OutputExcerpt: "```go\nrole: judge\n```", Notes: "x"},
		},
		{
			name: "CRLF, trailing white space on fences, blank lines between fields",
			text: "```tdd-result  \r\nrole: verifier\r\n\r\nstatus: ok\r\nfiles: []\r\ncommand: pytest -q\r\noutput_excerpt: |\r\n  5 passed\r\n``` \r\n",
			want: Result{Role: "verifier", Status: "ok", State: "success", Files: []string{}, Command: "pytest -q", OutputExcerpt: "5 passed"},
		},
		{
			name: "empty scalar",
			text: block("role: qa", "status: ok", "files: []", "command:", "output_excerpt:", "notes:"),
			want: Result{Role: "qa", Status: "ok", State: "success", Files: []string{}},
		},
		{
			name: "colons in values",
			text: block("role: judge", "status: ok", "files: []", "command: go test -run 'A:B' ./x", "output_excerpt: at http://localhost:8080: refused"),
			want: Result{Role: "judge", Status: "ok", State: "success", Files: []string{}, Command: "go test -run 'A:B' ./x", OutputExcerpt: "at http://localhost:8080: refused"},
		},
		{
			name: "block fenced by a longer fence is still found",
			text: "````\n" + block(minimal...) + "````\n",
			want: Result{Role: "implementer", Status: "ok", State: "success", Files: []string{"calc/add.go"}, Command: "go test ./calc", OutputExcerpt: "ok"},
		},
		{
			name:     "wanted role",
			text:     block(minimal...),
			wantRole: RoleImplementer,
			want:     Result{Role: "implementer", Status: "ok", State: "success", Files: []string{"calc/add.go"}, Command: "go test ./calc", OutputExcerpt: "ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResult(tt.text, tt.wantRole)
			if err != nil {
				t.Fatalf("ParseResult: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("ParseResult =\n%#v\nwant\n%#v", *got, tt.want)
			}
			again, err := ParseResult(got.Render(), tt.wantRole)
			if err != nil {
				t.Fatalf("parse of Render: %v\n%s", err, got.Render())
			}
			if !reflect.DeepEqual(again, got) {
				t.Errorf("Render round trip =\n%#v\nwant\n%#v", again, got)
			}
		})
	}
}

func TestParseResultErrors(t *testing.T) {
	with := func(extra ...string) string { return block(append(minimal[:len(minimal):len(minimal)], extra...)...) }
	without := func(key string) string {
		var ls []string
		for _, l := range minimal {
			if !strings.HasPrefix(l, key+":") && !(key == "files" && strings.HasPrefix(l, "  -")) {
				ls = append(ls, l)
			}
		}
		return block(ls...)
	}
	tests := []struct {
		name     string
		text     string
		wantRole string
		rule     string
		msg      string
	}{
		{"empty text", "", "", RuleNoBlock, "exactly one block required, found none"},
		{"plain done", "done\n", "", RuleNoBlock, "found none"},
		{"wrong info string", strings.Replace(block(minimal...), "tdd-result", "yaml", 1), "", RuleNoBlock, "found none"},
		{"indented opening", "  " + block(minimal...), "", RuleNoBlock, "found none"},
		{"opening with a title", strings.Replace(block(minimal...), "tdd-result", "tdd-result title", 1), "", RuleNoBlock, "found none"},
		{"two blocks", block(minimal...) + "text\n" + block(minimal...), "", RuleOneBlock, "exactly one block required, found 2"},
		{"three blocks", block(minimal...) + block(minimal...) + block(minimal...), "", RuleOneBlock, "found 3"},
		{"unterminated", "```tdd-result\nrole: implementer\n", "", RuleUnterminated, "block opened on line 1 has no closing ``` line"},
		{"unterminated after text", "a\nb\n```tdd-result\n", "", RuleUnterminated, "line 3"},
		{"indented closing fence", "```tdd-result\nrole: qa\n  ```\n", "", RuleUnterminated, "line 1"},
		{"missing role", without("role"), "", RuleMissing, `missing required field "role"`},
		{"missing status", without("status"), "", RuleMissing, `missing required field "status"`},
		{"missing files", without("files"), "", RuleMissing, `missing required field "files"`},
		{"missing command", without("command"), "", RuleMissing, `missing required field "command"`},
		{"missing output_excerpt", without("output_excerpt"), "", RuleMissing, `missing required field "output_excerpt"`},
		{"empty block", block(), "", RuleMissing, `missing required fields "role", "status", "files", "command", "output_excerpt"`},
		{"unknown role", strings.Replace(block(minimal...), "role: implementer", "role: coder", 1), "", RuleUnknownRole, `unknown role "coder" (want one of test-writer, implementer, refactorer, verifier, qa, reviewer, judge, planner)`},
		{"role case matters", strings.Replace(block(minimal...), "role: implementer", "role: Implementer", 1), "", RuleUnknownRole, `unknown role "Implementer"`},
		{"unknown status", strings.Replace(block(minimal...), "status: ok", "status: done", 1), "", RuleUnknownStatus, `unknown status "done" (want one of ok, failed)`},
		{"unknown state", with("state: Success"), "", RuleUnknownState, `unknown state "Success" (want one of success, failure, issue, dependency)`},
		{"ok with failure", with("state: failure"), "", RuleStateMismatch, "status ok contradicts state failure"},
		{"failed with success", strings.Replace(with("state: success"), "status: ok", "status: failed", 1), "", RuleStateMismatch, "status failed contradicts state success"},
		{"wrong role", block(minimal...), RoleTestWriter, RuleWrongRole, `role is "implementer", want "test-writer"`},
		{"duplicate field", with("status: failed"), "", RuleDuplicate, `line 8: field "status" given twice`},
		{"unknown field", with("confidence: high"), "", RuleSchema, "unexpected additional properties [\"confidence\"]"},
		{"files as scalar", strings.Replace(block(minimal...), "files:\n  - calc/add.go", "files: calc/add.go", 1), "", RuleSchema, "at /files: type: "},
		{"files as bare key", strings.Replace(block(minimal...), "files:\n  - calc/add.go", "files:", 1), "", RuleSchema, "at /files: type: "},
		{"empty file name", strings.Replace(block(minimal...), "  - calc/add.go", "  -", 1), "", RuleSchema, "at /files/*: minLength"},
		{"command as list", strings.Replace(block(minimal...), "command: go test ./calc", "command: []", 1), "", RuleSchema, "at /command: type: "},
		{"role as list", strings.Replace(block(minimal...), "role: implementer", "role:\n  - implementer", 1), "", RuleSchema, "at /role: type: "},
		{"no space after colon", with("notes:x"), "", RuleSyntax, `line 8: want a space after "notes:"`},
		{"not a field", with("this is prose"), "", RuleSyntax, `line 8: want "key: value", got "this is prose"`},
		{"key with space", with("output excerpt: x"), "", RuleSyntax, `line 8: want "key: value"`},
		{"comment", with("# a comment"), "", RuleSyntax, "line 8"},
		{"indented line", with("  stray"), "", RuleSyntax, "line 8: unexpected indented line"},
		{"item outside a list", with("- x.go"), "", RuleSyntax, "line 8: list item outside a list"},
		{"continuation of a list", strings.Replace(block(minimal...), "  - calc/add.go", "  - calc/add.go\n    more", 1), "", RuleSyntax, "line 6: unexpected indented line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseResult(tt.text, tt.wantRole)
			if err == nil {
				t.Fatalf("ParseResult = %+v, want error", r)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FormatError", err, err)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("errors.Is(%v, ErrFormat) = false", err)
			}
			if fe.Rule != tt.rule {
				t.Errorf("Rule = %q, want %q (%v)", fe.Rule, tt.rule, err)
			}
			if !strings.HasPrefix(err.Error(), "tdd-result: ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.msg)
			}
		})
	}
}

func TestRender(t *testing.T) {
	r := &Result{
		Role: "implementer", Status: "ok", State: "success",
		Files:         []string{"a.go", " spaced.go", `"q".go`, `'q'`},
		Command:       "|",
		OutputExcerpt: "line 1\n\n  line 3",
		Notes:         "[]",
	}
	want := "```tdd-result\n" +
		"role: implementer\n" +
		"status: ok\n" +
		"state: success\n" +
		"files:\n" +
		"  - a.go\n" +
		"  - \" spaced.go\"\n" +
		"  - \"q\".go\n" +
		"  - \"'q'\"\n" +
		"command: \"|\"\n" +
		"output_excerpt: |\n" +
		"  line 1\n" +
		"\n" +
		"    line 3\n" +
		"notes: \"[]\"\n" +
		"```\n"
	if got := r.Render(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
	back, err := ParseResult(r.Render(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip = %#v", back)
	}
}

// TestSchemaFile checks that the embedded schema is a valid JSON Schema and that the enums
// ParseResult reports come from it.
func TestSchemaFile(t *testing.T) {
	var doc jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := doc.Resolve(nil); err != nil {
		t.Fatal(err)
	}
	s := loadSchema()
	want := []string{RoleTestWriter, RoleImplementer, RoleRefactorer, RoleVerifier, RoleQA, RoleReviewer, RoleJudge, RolePlanner}
	if !reflect.DeepEqual(s.roles, want) {
		t.Errorf("roles = %v, want %v", s.roles, want)
	}
	if !reflect.DeepEqual(s.statuses, []string{StatusOK, StatusFailed}) {
		t.Errorf("statuses = %v", s.statuses)
	}
	if !reflect.DeepEqual(s.states, []string{StateSuccess, StateFailure, StateIssue, StateDependency}) {
		t.Errorf("states = %v", s.states)
	}
}

func FuzzParseResult(f *testing.F) {
	f.Add(block(minimal...), "")
	f.Add(block(minimal...), "implementer")
	f.Add(block("role: refactorer", "status: ok", "files: []", "command: |", "  a", "", "    b", "output_excerpt: '|'", "notes: \"x\""), "")
	f.Add(block(minimal...)+block(minimal...), "")
	f.Add("```tdd-result\r\nrole: qa\r\n", "qa")
	f.Add("```tdd-result\nrole: qa\nstatus: failed\nstate: issue\nfiles:\n- \"\"\ncommand:\noutput_excerpt: |\n\t x\n```", "")
	f.Fuzz(func(t *testing.T, text, wantRole string) {
		r, err := ParseResult(text, wantRole)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) || fe.Rule == "" {
				t.Fatalf("error %T %v is not a FormatError with a rule", err, err)
			}
			return
		}
		if wantRole != "" && r.Role != wantRole {
			t.Fatalf("role %q accepted, want %q", r.Role, wantRole)
		}
		if r.State == "" || r.Files == nil {
			t.Fatalf("result not normalized: %#v", r)
		}
		again, err := ParseResult(r.Render(), wantRole)
		if err != nil {
			t.Fatalf("rendered result does not parse: %v\n%s", err, r.Render())
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip changed the result:\n%#v\n%#v\nrendered:\n%s", r, again, r.Render())
		}
	})
}
