package tdd

import (
	"errors"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // ID|text of each AC
		err       string   // the error, "" for none
	}{
		{name: "bullets", src: "# FR-1: Title\n\n## Acceptance Criteria\n\n- AC-STE.1: adds\n- AC-STE.2 — subtracts\n  across two lines\n\n## Notes\n- AC-STE.9 not an item of the section\n",
			want: []string{"AC-STE.1|AC-STE.1: adds", "AC-STE.2|AC-STE.2 — subtracts\n  across two lines"}},
		{name: "bold numbered", src: "## acceptance criteria\n1. **AC-A-B.1** one\n2. **AC-A-B.2** two, after AC-A-B.1\n",
			want: []string{"AC-A-B.1|**AC-A-B.1** one", "AC-A-B.2|**AC-A-B.2** two, after AC-A-B.1"}},
		{name: "nested list and fence stay in the item", src: "## Acceptance Criteria\n- AC-X.1 one\n  - detail\n  ```\n  - AC-X.1 in code\n  ```\n- AC-X.2 two\n",
			want: []string{"AC-X.1|AC-X.1 one\n  - detail\n  ```\n  - AC-X.1 in code\n  ```", "AC-X.2|AC-X.2 two"}},
		{name: "heading in a fence is no section", src: "```\n## Acceptance Criteria\n- AC-X.1 one\n```\n", err: "f.md:4: no \"## Acceptance Criteria\" section"},
		{name: "no ID", src: "## Acceptance Criteria\n- AC-X.1 one\n- two\n", err: "f.md:3: acceptance criterion without an AC ID"},
		{name: "ID without number", src: "## Acceptance Criteria\n- AC-X one\n", err: "f.md:2: acceptance criterion without an AC ID"},
		{name: "duplicate", src: "## Acceptance Criteria\n- AC-X.1 one\n- AC-X.1 again\n", err: "f.md:3: duplicate AC ID AC-X.1 (first at line 2)"},
		{name: "lines of their own", src: "## Acceptance Criteria\nSome prose first.\n\nAC-X.1: one\ngoes on\n\n**AC-X.2** two\n\nMore prose.\n",
			want: []string{"AC-X.1|AC-X.1: one\ngoes on", "AC-X.2|**AC-X.2** two"}},
		{name: "sub-headings", src: "## Acceptance Criteria\n\n### AC-X.1: Adds\n\nGiven two numbers,\n- it adds them\n\n### AC-X.2 — Subtracts\nthe second.\n## Notes\n",
			want: []string{"AC-X.1|AC-X.1: Adds\n\nGiven two numbers,\n- it adds them", "AC-X.2|AC-X.2 — Subtracts\nthe second."}},
		{name: "table", src: "## Acceptance Criteria\n\n| ID | Criterion |\n|----|-----------|\n| AC-X.1 | one |\n| AC-X.2 | two |\n",
			want: []string{"AC-X.1|AC-X.1 one", "AC-X.2|AC-X.2 two"}},
		{name: "task list", src: "## Acceptance Criteria\n- [ ] AC-X.1 one\n- [x] AC-X.2 two\n",
			want: []string{"AC-X.1|[ ] AC-X.1 one", "AC-X.2|[x] AC-X.2 two"}},
		{name: "two sections", src: "## Acceptance Criteria\n- AC-X.1 one\n## Acceptance Criteria\n- AC-X.2 two\n", err: "f.md:3: a second ## Acceptance Criteria section (the first is at line 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr, err := Parse("f.md", "FR-1", []byte(tt.src))
			if tt.err != "" {
				var pe *queue.ParseError
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) || !errors.As(err, &pe) {
					t.Fatalf("err = %v, want %q… as a *queue.ParseError", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ac := range fr.ACs {
				got = append(got, ac.ID+"|"+ac.Text)
			}
			if strings.Join(got, "\n#\n") != strings.Join(tt.want, "\n#\n") {
				t.Errorf("ACs:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

// TestOps: the cycle is appended once after what a person wrote, which stays byte for
// byte; a second run appends nothing; a task a person removed comes back alone.
func TestOps(t *testing.T) {
	fr, err := Parse("f.md", "STE-001", []byte("# STE-001: Promotions\n\n## Acceptance Criteria\n\n- AC-STE.1 one\n- AC-STE.2 two\n"))
	if err != nil {
		t.Fatal(err)
	}
	person := "# Task Queue\r\n\r\nNotes | with a pipe\r\n\r\n### TASK-001: mine\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Status   | pending |\r\n"
	d, err := queue.Parse("q.md", []byte(person), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	out, err := queue.Apply(d, fr.Ops(d)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), person) {
		t.Fatalf("the person's bytes changed:\n%q", out)
	}
	d2, err := queue.Parse("q.md", out, queue.Tasks)
	if err != nil {
		t.Fatalf("the queue with the cycle does not parse: %v\n%s", err, out)
	}
	var ids []string
	for _, tk := range d2.Tasks() {
		ids = append(ids, tk.ID+"("+tk.Kind.String()+" <- "+strings.Join(tk.Deps, ",")+")")
	}
	want := "TASK-001(BUILD <- ) TASK-STE-001-RED(TEST <- ) TASK-STE-001-AC1(BUILD <- TASK-STE-001-RED) TASK-STE-001-AC2(BUILD <- TASK-STE-001-AC1) TASK-STE-001-REFACTOR(BUILD <- TASK-STE-001-AC2)"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("tasks:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(string(out), "## `STE-001`\r\n") {
		t.Errorf("no section heading for the requirement (CRLF kept):\n%s", out)
	}
	if ops := fr.Ops(d2); len(ops) != 0 {
		t.Errorf("a second run appends %v", ops)
	}
	// A person removed AC2's task: only it comes back.
	rec, _ := d2.Record("TASK-STE-001-AC2")
	cut := append(append([]byte{}, out[:rec.Start]...), out[rec.End:]...)
	d3, err := queue.Parse("q.md", cut, queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	ops := fr.Ops(d3)
	if len(ops) != 1 || !strings.HasPrefix(ops[0].(queue.AppendRecord).Text, "### TASK-STE-001-AC2:") {
		t.Errorf("ops = %v, want AC2 alone", ops)
	}
}

func TestTestSource(t *testing.T) {
	goSrc := "package p\n\n// One.\nfunc TestAC_X_1(t *testing.T) {\n\tt.Log(\"a\")\n}\n\nfunc TestAC_X_2(t *testing.T) {}\n"
	if got := TestSource("p_test.go", goSrc, []string{"TestAC_X_1"}); got != "// One.\nfunc TestAC_X_1(t *testing.T) {\n\tt.Log(\"a\")\n}" {
		t.Errorf("go: %q", got)
	}
	pySrc := "import x\n\n@mark\ndef test_ac_x_1():\n    assert 1\n\n    assert 2\n\n\ndef test_ac_x_2():\n    pass\n"
	if got := TestSource("t.py", pySrc, []string{"test_ac_x_1"}); got != "@mark\ndef test_ac_x_1():\n    assert 1\n\n    assert 2" {
		t.Errorf("py: %q", got)
	}
	jsSrc := "test('AC-X.1 adds', () => { expect(f(1)).toBe(2) });\nit(\"AC-X.2 other\", () => {})\n"
	if got := TestSource("a.test.ts", jsSrc, []string{"AC-X.1 adds"}); got != "test('AC-X.1 adds', () => { expect(f(1)).toBe(2) });" {
		t.Errorf("js: %q", got)
	}
}

// FuzzParse: any bytes parse or are refused with a *queue.ParseError; a parsed
// requirement has ACs with unique IDs and numbers, each found on its line.
func FuzzParse(f *testing.F) {
	f.Add([]byte("## Acceptance Criteria\n- AC-X.1 one\n  - sub\n- AC-X.2 two\n"))
	f.Add([]byte("# T\n```\n## Acceptance Criteria\n```\n## Acceptance Criteria\n1. **AC-A.3** x\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		fr, err := Parse("f.md", "FR-1", src)
		if err != nil {
			var pe *queue.ParseError
			var pes queue.ParseErrors
			if !errors.As(err, &pe) && !errors.As(err, &pes) {
				t.Fatalf("error %v is not a parse error", err)
			}
			return
		}
		lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
		ids, nums := map[string]bool{}, map[int]bool{}
		for _, ac := range fr.ACs {
			if ids[ac.ID] || nums[ac.N] {
				t.Fatalf("AC %s twice", ac.ID)
			}
			ids[ac.ID], nums[ac.N] = true, true
			if ac.Line < 1 || ac.Line > len(lines) || !strings.Contains(lines[ac.Line-1], ac.ID) {
				t.Fatalf("AC %s is not on line %d", ac.ID, ac.Line)
			}
		}
	})
}
