package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// planSummary writes a plan as "category: ID@line ID@line; ..." for comparisons.
func planSummary(p *Plan) string {
	var parts []string
	for _, c := range p.Categories {
		var ids []string
		for _, t := range c.Tests {
			ids = append(ids, t.ID+"@"+strconv.Itoa(t.Line))
		}
		parts = append(parts, c.Name+":"+strings.Join(ids, " "))
	}
	return strings.Join(parts, "; ")
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // planSummary, or the error
	}{
		{"spec shape", `{"tests": {"unit": [{"id": "UNIT-001", "name": "...", "category": "...", "priority": "high", "steps": []}],
           "integration": [], "e2e": [], "security": [], "performance": [], "edge_cases": []}}`,
			"unit:UNIT-001@1; integration:; e2e:; security:; performance:; edge_cases:"},
		{"file order, not sorted", "{\"tests\": {\n\"zeta\": [{\"id\": \"Z-1\"}],\n\"alpha\": [\n{\"id\": \"A-2\"},\n{\"id\": \"A-1\"}]}}",
			"zeta:Z-1@2; alpha:A-2@4 A-1@5"},
		{"other members skipped", `{"version": 2, "tests": {"unit": [{"steps": [{"id": "X"}, [1, {"a": null}]], "id": "U-1", "ok": false}]}, "summary": {"tests": 1}}`,
			"unit:U-1@1"},
		{"lines through skipped values", "{\"tests\": {\"unit\": [{\"steps\": [\n{\"a\": [\n1]}],\r\n\"id\": \"U-1\"},\n{\"id\": \"U-2\"}]}}",
			"unit:U-1@4 U-2@5"},
		{"strings that are not plain ASCII", "{\"tests\": {\"unit\": [{\"id\": \"U-1\"}],\n\"e2e\": [{\"id\": \"caf\xc3\xa9\"}, {\"name\": \"\\u00e9\\n\", \"id\": \"E-\\u0031\"}]}}",
			"unit:U-1@1; e2e:café@2 E-1@2"},
		{"null category", `{"tests": {"unit": null, "e2e": [{"id": "E-1"}]}}`, "unit:; e2e:E-1@1"},
		{"escapes", `{"te\u0073ts": {"un\"it": [{"i\u0064": "U\u002D1"}]}}`, `un"it:U-1@1`},
		{"id trimmed", `{"tests": {"unit": [{"id": " U-1 "}]}}`, "unit:U-1@1"},
		{"repeated id member: the last wins", `{"tests": {"unit": [{"id": "U-1", "id": "U-2"}]}}`, "unit:U-2@1"},
		{"repeated tests member: the last wins", `{"tests": {"a": [{"id": "A-1"}]}, "tests": {"b": []}}`, "b:"},
		{"empty", ``, "plan.json:1: invalid JSON: unexpected end of file"},
		{"not an object", `[1]`, `plan.json:1: a test plan is a JSON object with a "tests" member`},
		{"no tests", `{"test": {}}`, `plan.json:1: no "tests" member: a test plan is {"tests": {"unit": [{"id": ...}], ...}}`},
		{"tests not an object", "{\n\"tests\": []}", `plan.json:2: "tests" is not an object of categories`},
		{"category not an array", "{\"tests\": {\n\"unit\": {\"id\": \"U-1\"}}}", `plan.json:2: category "unit" is not an array of tests`},
		{"test not an object", "{\"tests\": {\"unit\": [\n\"U-1\"]}}", `plan.json:2: a test in "unit" is not an object`},
		{"test without id", "{\"tests\": {\"unit\": [{\"id\": \"U-1\"},\n {\"name\": \"x\"}]}}", `plan.json:2: a test in "unit" has no "id"`},
		{"id not a string", "{\"tests\": {\"unit\": [\n{\"id\": 1}]}}", `plan.json:2: the "id" of a test in "unit" is not a string`},
		{"id not a string, then one", `{"tests": {"unit": [{"id": null, "id": "U-1"}]}}`, "unit:U-1@1"},
		{"empty id", `{"tests": {"unit": [{"id": "  "}]}}`, `plan.json:1: test ID "" in "unit" cannot be written in a Test IDs list`},
		{"id with a comma", `{"tests": {"unit": [{"id": "A,B"}]}}`, `plan.json:1: test ID "A,B" in "unit" cannot be written in a Test IDs list`},
		{"empty category name", `{"tests": {" ": []}}`, `plan.json:1: category name " " cannot be written in the coverage matrix`},
		{"category repeated", "{\"tests\": {\"unit\": [],\n\"unit\": []}}", `plan.json:2: category "unit" repeated (first at line 1)`},
		{"trailing comma", "{\"tests\": {\"unit\": [{\"id\": \"U-1\"},\n]}}", `plan.json:2: invalid JSON: unexpected ']'`},
		{"unterminated", "{\"tests\": {\"unit\": [{\"id\": \"U-1", `plan.json:1: invalid JSON: unexpected end of file`},
		{"bad escape", `{"tests": {"unit": [{"id": "U\x"}]}}`, `plan.json:1: invalid JSON: bad escape \x in a string`},
		{"control character", "{\"tests\": {\"unit\": [{\"id\": \"U\t1\"}]}}", `plan.json:1: invalid JSON: control character '\t' in a string`},
		{"bad number", `{"n": 01, "tests": {}}`, `plan.json:1: invalid JSON: unexpected '1'`},
		{"bad literal", `{"n": tru, "tests": {}}`, `plan.json:1: invalid JSON: unexpected 't'`},
		{"garbage after", "{\"tests\": {}}\n}", `plan.json:2: invalid JSON: '}' after the top-level value`},
		{"duplicate IDs, each named", "{\"tests\": {\n\"unit\": [{\"id\": \"U-1\"}, {\"id\": \"U-2\"}],\n\"security\": [{\"id\": \"U-1\"},\n{\"id\": \"U-2\"}, {\"id\": \"U-1\"}]}}",
			"plan.json:3: U-1: duplicate test ID (in security; first at line 2, in unit)\n" +
				"plan.json:4: U-2: duplicate test ID (in security; first at line 2, in unit)\n" +
				"plan.json:4: U-1: duplicate test ID (in security; first at line 2, in unit)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePlan("plan.json", []byte(tt.src))
			got := ""
			if err != nil {
				got = err.Error()
				var pe ParseErrors
				var pe1 *ParseError
				if !errors.As(err, &pe) && !errors.As(err, &pe1) {
					t.Errorf("error %T is not a ParseError", err)
				}
			} else {
				got = planSummary(p)
				if p.Len() != len(p.Tests()) {
					t.Errorf("Len %d != %d tests", p.Len(), len(p.Tests()))
				}
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPlanTest(t *testing.T) {
	p := planOf(t, "{\"tests\": {\"unit\": [{\"id\": \"U-1\"}],\n\"e2e\": [{\"id\": \"E-1\"}]}}")
	if tt, cat, ok := p.Test("E-1"); !ok || cat != "e2e" || tt.Line != 2 {
		t.Errorf("Test(E-1) = %+v, %q, %v", tt, cat, ok)
	}
	if _, _, ok := p.Test("X-1"); ok {
		t.Error("Test(X-1) found")
	}
}

// TestLoadPlanNamesTheFile checks that every error of LoadPlan names the file.
func TestLoadPlanNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	if _, err := LoadPlan(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing plan: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n\"tests\": {\"unit\": [{\"id\": \"U-1\"}, {\"id\": \"U-1\"}]}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPlan(bad); err == nil || err.Error() != bad+":2: U-1: duplicate test ID (in unit; first at line 2, in unit)" {
		t.Errorf("duplicate IDs: %v", err)
	}
}

// refPlan reads a plan with encoding/json, for FuzzParsePlan: the categories in order with
// their IDs, or ok=false when it is not a plan.
func refPlan(src []byte) (cats []string, ids [][]string, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(src, &top) != nil {
		return nil, nil, false
	}
	raw, found := top["tests"]
	if !found {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		name := tok.(string)
		var tests []map[string]json.RawMessage
		if err := dec.Decode(&tests); err != nil {
			return nil, nil, false
		}
		var list []string
		for _, test := range tests {
			var id string
			if test == nil || test["id"] == nil || string(test["id"]) == "null" || json.Unmarshal(test["id"], &id) != nil {
				return nil, nil, false
			}
			list = append(list, strings.TrimSpace(id))
		}
		cats = append(cats, name)
		ids = append(ids, list)
	}
	return cats, ids, true
}

// FuzzParsePlan checks the plan scanner against encoding/json: it never accepts what is not
// JSON, and where both read a plan, they read the same categories and IDs in the same order.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		`{"tests": {"unit": [{"id": "UNIT-001", "steps": []}], "e2e": []}}`,
		`{"tests": {"a": [{"id": "A-1", "x": {"y": [1, -2.5e-3, true, false, null, "s\"\\\/\b\f\n\r\t\u00e9"]}}]}}`,
		`{"tests": {"a": null}, "other": [[], {}]}`,
		`{"tests": {"a": [{"id": "A-1"}, {"id": "A-1"}]}}`,
		`{"tests": {"é": [{"id": "\u00e9-1"}]}}`,
		"{\"tests\": {\"a\": [{\"id\": \"\xff\"}]}}",
		` {"tests" : { } } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := ParsePlan("plan.json", src)
		valid := json.Valid(src)
		if err == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", src)
		}
		var pe ParseErrors
		var pe1 *ParseError
		if err != nil && !errors.As(err, &pe) && !errors.As(err, &pe1) {
			t.Fatalf("error %T is not a ParseError: %v", err, err)
		}
		if !valid || !utf8.Valid(src) {
			return
		}
		cats, ids, ok := refPlan(src)
		if !ok {
			if err == nil {
				t.Fatalf("read a plan encoding/json does not: %s", planSummary(p))
			}
			return
		}
		if err != nil {
			// The scanner is stricter than encoding/json only about what cannot be a
			// plan: a repeated category, an ID or category that cannot be written in the
			// queue, a duplicate test ID.
			msg := err.Error()
			for _, ok := range []string{"repeated", "cannot be written", "duplicate test ID"} {
				if strings.Contains(msg, ok) {
					return
				}
			}
			t.Fatalf("refused a plan encoding/json reads (%q): %v", src, err)
		}
		if len(cats) != len(p.Categories) {
			t.Fatalf("categories %q, encoding/json %q", planSummary(p), cats)
		}
		for i, c := range p.Categories {
			if c.Name != cats[i] || len(c.Tests) != len(ids[i]) {
				t.Fatalf("category %d: %q with %d tests, encoding/json %q with %d", i, c.Name, len(c.Tests), cats[i], len(ids[i]))
			}
			for j, test := range c.Tests {
				if test.ID != ids[i][j] {
					t.Fatalf("test %d of %q: %q, encoding/json %q", j, c.Name, test.ID, ids[i][j])
				}
				if test.Line < 1 || test.Line > bytes.Count(src, []byte{'\n'})+1 {
					t.Fatalf("test %q: line %d out of range", test.ID, test.Line)
				}
			}
		}
	})
}

// BenchmarkParsePlan measures parsing a generated plan of 10,000 tests (5,000 of them
// mapped to queue tasks, as `orchestrator validate` sees on a 10,000-task queue).
func BenchmarkParsePlan(b *testing.B) {
	var buf bytes.Buffer
	if err := queuegen.WritePlan(&buf, 10000, 5000); err != nil {
		b.Fatal(err)
	}
	src := buf.Bytes()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := ParsePlan("test-plan-output.json", src)
		if err != nil || p.Len() != 10000 {
			b.Fatalf("parse: %v", err)
		}
	}
}
