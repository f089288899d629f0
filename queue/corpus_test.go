package queue

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDir holds claudestrator's markdown files (MIT; its LICENSE is beside them), kept in
// the repository so that the tests run on a clean clone.
const corpusDir = "testdata/claudestrator"

// corpusErrors are the parse errors expected in corpus files that are prompts, not queues.
// In decomposition_agent.md a ```python fence nested inside a ```markdown example closes the
// example early, so by CommonMark the "### TASK-002" skeleton after it is a real heading
// with no field table.
var corpusErrors = map[string]string{
	"decomposition_agent.md": "decomposition_agent.md:1284: TASK-002: record has no field table (| Field | Value |)",
}

// TestCorpusParses parses every claudestrator file: no file fails but for the known prompt
// file above, and the fast path agrees with goldmark on each.
func TestCorpusParses(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*", "*.md"))
	if len(files) == 0 {
		t.Fatalf("no corpus files in %s", corpusDir)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse(p, src, KindOf(p))
			want := corpusErrors[filepath.Base(p)]
			switch {
			case want == "" && err != nil:
				t.Fatalf("parse: %v", err)
			case want != "" && (err == nil || !strings.HasSuffix(err.Error(), want)):
				t.Fatalf("parse error = %v, want %s", err, want)
			}
			g, _ := parseGoldmark(p, src, KindOf(p))
			if diff := compareDocs(d, g); diff != "" {
				t.Errorf("fast path (used=%v) and goldmark disagree: %s", d.Fast, diff)
			}
		})
	}
}

// TestIssueTemplateExampleIsNotARecord checks that the example issue inside a code fence in
// templates/issue_queue.md is not read as an issue, while the Queue Status table is found.
func TestIssueTemplateExampleIsNotARecord(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(corpusDir, "templates", "issue_queue.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("### ISSUE-YYYYMMDD-NNN")) {
		t.Fatal("the template no longer has its fenced example")
	}
	d, err := Parse("issue_queue.md", src, Issues)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Records) != 0 {
		t.Errorf("records = %v, want none", d.IDs())
	}
	tbl, ok := d.SectionTable("Queue Status", "Field")
	if !ok || len(tbl.Rows) != 7 || d.CellText(tbl.Rows[2], 0) != "Pending" {
		t.Errorf("Queue Status table not found as expected: %+v", tbl)
	}
}

// fencedExample returns the body of the first ```markdown fence after the line that
// contains marker in a corpus file.
func fencedExample(t *testing.T, file, marker string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(corpusDir, file))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte(marker))
	if i < 0 {
		t.Fatalf("%s: %q not found", file, marker)
	}
	rest := src[i:]
	open := bytes.Index(rest, []byte("\n```"))
	rest = rest[open+1:]
	rest = rest[bytes.IndexByte(rest, '\n')+1:]
	end := bytes.Index(rest, []byte("\n```"))
	return rest[:end+1]
}

// TestDecompositionExamples copies the example queues of decomposition_agent.md into queue
// files and checks that they give the tasks and fields they show.
func TestDecompositionExamples(t *testing.T) {
	tests := []struct {
		marker string
		id     string
		fields map[string]string
		deps   []string
		kind   TaskKind
	}{
		{"**TASK-V## Format:**", "TASK-V01", map[string]string{
			"Status": "pending", "Category": "test_verification", "Complexity": "normal",
			"Depends On": "TASK-T01, TASK-001, TASK-002", "Test Scope": "unit", "Test IDs": "UNIT-001, UNIT-002, ...",
		}, []string{"TASK-T01", "TASK-001", "TASK-002"}, KindVerify},
		{"### D.6 Test Task Format", "TASK-T01", map[string]string{
			"Status": "pending", "Category": "testing", "Test IDs": "UNIT-001, UNIT-002, UNIT-019, UNIT-023",
			"Test Command": "pytest tests/unit/test_vulnerability_validation.py -v",
			"Dependencies": "TASK-001, TASK-002", // from the prose line
		}, []string{"TASK-001", "TASK-002"}, KindTest},
		{"PHASE 2C: TEST TASK FORMAT", "TASK-T01", map[string]string{
			"Mode": "write", "Integration Level": "real / mocked / unit", "Required Services": "ollama",
			"Mock Policy": "database-seeding-only", "Dependencies": "None",
		}, nil, KindTest},
		{"### REQUIRED: Final Testing & Verification Task", "TASK-99999", map[string]string{
			"Status": "pending", "Category": "testing", "Complexity": "normal",
			"Dependencies": "[ALL other TASK IDs]",
		}, []string{"ALL other TASK IDs"}, KindTest},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+tt.marker, func(t *testing.T) {
			src := fencedExample(t, "prompts/decomposition_agent.md", tt.marker)
			path := filepath.Join(t.TempDir(), "task_queue.md")
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := Load(path)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, src)
			}
			if got := d.IDs(); len(got) != 1 || got[0] != tt.id {
				t.Fatalf("records = %v, want [%s]", got, tt.id)
			}
			r, _ := d.Record(tt.id)
			for name, want := range tt.fields {
				if got := d.Get(r, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			task := d.Task(r)
			if strings.Join(task.Deps, "|") != strings.Join(tt.deps, "|") {
				t.Errorf("deps = %q, want %q", task.Deps, tt.deps)
			}
			if task.Kind != tt.kind {
				t.Errorf("kind = %v, want %v", task.Kind, tt.kind)
			}
		})
	}
}
