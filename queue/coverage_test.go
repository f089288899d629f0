package queue

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoverageGolden reads each testdata/coverage/<case>/ (plan.json, task_queue.md), renders
// the matrix and compares it with want.txt (what `orchestrator coverage` prints), writes it
// into the queue as `coverage --write` does and compares the file with want.md. A second
// write must change nothing, and validate must then find the matrix current. Run with
// -update to rewrite the want files.
func TestCoverageGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "coverage", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no coverage cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			plan, err := LoadPlan(filepath.Join(dir, "plan.json"))
			if err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join(dir, "task_queue.md"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse("task_queue.md", src, Tasks)
			if err != nil {
				t.Fatal(err)
			}
			text := Coverage(d, plan).Render()
			got, err := Apply(d, ReplaceSection{Title: CoverageTitle, Text: text})
			if err != nil {
				t.Fatal(err)
			}
			checkCoverageGolden(t, filepath.Join(dir, "want.txt"), []byte(text))
			checkCoverageGolden(t, filepath.Join(dir, "want.md"), got)

			_, stale := checkMatrix(d, Coverage(d, plan))
			if changed := !bytes.Equal(got, src); stale != changed {
				t.Errorf("input: stale finding = %v, but coverage --write changes the file = %v", stale, changed)
			}
			d2, err := Parse("task_queue.md", got, Tasks)
			if err != nil {
				t.Fatalf("written queue does not parse: %v", err)
			}
			if want, have := d.IDs(), d2.IDs(); strings.Join(want, ",") != strings.Join(have, ",") {
				t.Errorf("records after writing = %v, want %v", have, want)
			}
			again, err := Apply(d2, ReplaceSection{Title: CoverageTitle, Text: Coverage(d2, plan).Render()})
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("a second write changed the file (err %v):\n%s", err, again)
			}
			if f, stale := checkMatrix(d2, Coverage(d2, plan)); stale {
				t.Errorf("after writing, validate says: %v", f)
			}
		})
	}
}

// checkCoverageGolden compares got with the file at path, or rewrites the file with -update.
func checkCoverageGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestRenderSpecExample renders the matrix of SPEC §5.2 and claudestrator's
// decomposition_agent.md byte for byte.
func TestRenderSpecExample(t *testing.T) {
	c := &CoverageReport{
		Categories: []CategoryCoverage{
			{Category: "unit", Planned: 21, Mapped: 21},
			{Category: "security", Planned: 14, Mapped: 12, Missing: []string{"SEC-003", "SEC-009"}},
		},
		Planned: 76, Mapped: 74,
	}
	want := "## Test Coverage Matrix\n\n" +
		"| Category | Plan Count | Mapped Count | Missing IDs |\n" +
		"|----------|------------|--------------|-------------|\n" +
		"| unit | 21 | 21 | - |\n" +
		"| security | 14 | 12 | SEC-003, SEC-009 |\n" +
		"\n**Coverage: 97% (74/76)**\n"
	if got := c.Render(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRenderCorpusMatrix checks that the matrix of claudestrator's decomposition_agent.md is
// exactly what Render makes for a plan of the same counts, fully mapped.
func TestRenderCorpusMatrix(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(corpusDir, "prompts", "decomposition_agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	example := string(fencedExample(t, "prompts/decomposition_agent.md", "Add a coverage matrix at the bottom of task_queue.md:"))
	if !bytes.Contains(src, []byte(example)) {
		t.Fatal("example not found")
	}
	c := &CoverageReport{}
	for _, row := range []struct {
		name string
		n    int
	}{{"unit", 21}, {"integration", 10}, {"e2e", 5}, {"security", 14}, {"performance", 9}, {"edge_cases", 17}} {
		c.Categories = append(c.Categories, CategoryCoverage{Category: row.name, Planned: row.n, Mapped: row.n})
		c.Planned += row.n
		c.Mapped += row.n
	}
	if got := c.Render(); got != example {
		t.Errorf("got\n%s\nwant (from the corpus)\n%s", got, example)
	}
}

func TestPercentRoundsDown(t *testing.T) {
	tests := []struct{ mapped, planned, want int }{
		{0, 0, 100}, {0, 5, 0}, {1, 3, 33}, {2, 3, 66}, {74, 76, 97}, {199, 200, 99}, {9999, 10000, 99}, {5, 5, 100},
	}
	for _, tt := range tests {
		c := &CoverageReport{Planned: tt.planned, Mapped: tt.mapped}
		if got := c.Percent(); got != tt.want {
			t.Errorf("%d/%d = %d%%, want %d%%", tt.mapped, tt.planned, got, tt.want)
		}
	}
}

// TestCoverageCountsAnIDMappedTwiceOnce: an ID in two TEST tasks is mapped (not missing) and
// counted once; validate reports the second mapping (TestCheckCoverage).
func TestCoverageCountsAnIDMappedTwiceOnce(t *testing.T) {
	plan := planOf(t, `{"tests": {"unit": [{"id": "U-1"}, {"id": "U-2"}]}}`)
	d := queueOf(t, taskRecord("TASK-T01", "testing", "write", "", "U-1, U-1")+taskRecord("TASK-T02", "testing", "write", "", "U-1"))
	c := Coverage(d, plan)
	if c.Mapped != 1 || c.Planned != 2 || c.Categories[0].Mapped != 1 || strings.Join(c.Categories[0].Missing, ",") != "U-2" {
		t.Errorf("coverage = %+v", c)
	}
}

// TestCoverageDiffShowsOnlyMatrixLines changes the mapping of one test ID in a queue whose
// matrix is current, rewrites the matrix, and checks what a line diff of the file shows:
// the Test IDs cell that was edited, and the matrix lines whose numbers changed, and
// nothing else.
func TestCoverageDiffShowsOnlyMatrixLines(t *testing.T) {
	dir := filepath.Join("testdata", "coverage", "current")
	plan, err := LoadPlan(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "want.md"))
	if err != nil {
		t.Fatal(err)
	}
	d := queueOf(t, string(before))
	edited, err := Apply(d, SetField{ID: "TASK-T01", Field: "Test IDs", Value: "UNIT-001, SEC-001, INT-001"})
	if err != nil {
		t.Fatal(err)
	}
	d = queueOf(t, string(edited))
	after, err := Apply(d, ReplaceSection{Title: CoverageTitle, Text: Coverage(d, plan).Render()})
	if err != nil {
		t.Fatal(err)
	}
	got := matrixDiff(string(before), string(after))
	want := []string{
		"-| Test IDs | UNIT-001, SEC-001 |",
		"+| Test IDs | UNIT-001, SEC-001, INT-001 |",
		"-| integration | 1 | 0 | INT-001 |",
		"+| integration | 1 | 1 | - |",
		"-**Coverage: 50% (2/4)**",
		"+**Coverage: 75% (3/4)**",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// matrixDiff is a minimal diff of two texts with the same number of lines: the changed lines,
// old then new. (A change in coverage never adds or removes lines unless a category does.)
func matrixDiff(a, b string) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(al) != len(bl) {
		return []string{"line counts differ"}
	}
	var out []string
	for i := range al {
		if al[i] != bl[i] {
			out = append(out, "-"+al[i], "+"+bl[i])
		}
	}
	return out
}

func planOf(t *testing.T, src string) *Plan {
	t.Helper()
	p, err := ParsePlan("plan.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func queueOf(t *testing.T, src string) *Doc {
	t.Helper()
	d, err := Parse("task_queue.md", []byte(src), Tasks)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return d
}

// taskRecord returns a task record with the given fields ("" leaves a field out).
func taskRecord(id, category, mode, deps, testIDs string, extra ...string) string {
	var b strings.Builder
	b.WriteString("### " + id + "\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n")
	for _, f := range [][2]string{{"Category", category}, {"Mode", mode}, {"Depends On", deps}, {"Test IDs", testIDs}} {
		if f[1] != "" {
			b.WriteString("| " + f[0] + " | " + f[1] + " |\n")
		}
	}
	for _, row := range extra {
		b.WriteString(row + "\n")
	}
	b.WriteString("\n")
	return b.String()
}
