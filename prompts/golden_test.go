package prompts

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenRoot is a small repository the golden inputs include files from.
const goldenRoot = "testdata/repo"

// goldenCases are one typical input per role, plus a retry, as the loop would build them.
var goldenCases = []struct {
	name string
	in   Input
}{
	{"test-writer", Input{
		Role: "test-writer", TaskID: "TASK-CALC-RED", Title: "Tests for FR-CALC",
		Fields: []Field{
			{"Status", "in_progress"}, {"Category", "testing"}, {"Mode", "write"},
			{"Test IDs", "AC-CALC.1, AC-CALC.2"}, {"Test File", "calc/calc_test.go"},
		},
		Body:        "\n**Objective:** Write failing tests for every acceptance criterion of FR-CALC.\n\n",
		Allowlist:   []string{"specs/frs/FR-CALC.md"},
		Include:     []string{"specs/frs/FR-CALC.md"},
		TestCommand: "go test ./calc", Attempt: 1,
	}},
	{"verifier", Input{
		Role: "verifier", TaskID: "TASK-V01", Title: "Verify the calculator tests",
		Fields:      []Field{{"Status", "in_progress"}, {"Category", "test_verification"}, {"Mode", "verify"}},
		Allowlist:   []string{"calc/calc_test.go"},
		Include:     []string{"calc/calc_test.go"},
		TestCommand: "go test ./calc", Attempt: 1,
	}},
	{"implementer", Input{
		Role: "implementer", TaskID: "TASK-CALC-AC1", Title: "AC-CALC.1",
		Fields:      []Field{{"Status", "in_progress"}, {"Category", "backend"}, {"Depends On", "TASK-CALC-RED"}},
		Body:        "- AC-CALC.1: `Add(a, b)` returns the sum of two integers.\n",
		Allowlist:   []string{"calc/calc_test.go"},
		Include:     []string{"calc/calc_test.go"},
		TestCommand: "go test ./calc -run 'TestAC_CALC_1$'", Attempt: 1,
	}},
	{"implementer-retry", Input{
		Role: "implementer", TaskID: "TASK-CALC-AC1", Title: "AC-CALC.1",
		Fields:    []Field{{"Status", "in_progress"}, {"Category", "backend"}, {"Retry-Count", "1"}},
		Body:      "- AC-CALC.1: `Add(a, b)` returns the sum of two integers.\n",
		Allowlist: []string{"calc/calc_test.go"},
		Include:   []string{"calc/calc_test.go"},
		LastGateOutput: "--- FAIL: TestAC_CALC_1 (0.00s)\n    calc_test.go:7: Add(2, 3) = 6, want 5\nFAIL\n" +
			"FAIL\texample.com/calc\t0.003s\n",
		TestCommand: "go test ./calc -run 'TestAC_CALC_1$'", Attempt: 2,
	}},
	{"refactorer", Input{
		Role: "refactorer", TaskID: "TASK-CALC-REFACTOR", Title: "Refactor FR-CALC",
		Fields:      []Field{{"Status", "in_progress"}, {"Category", "backend"}},
		Allowlist:   []string{"calc/calc_test.go", "calc/calc.go"},
		Include:     []string{"calc/calc.go", "calc/calc_test.go"},
		TestCommand: "go test ./...", Attempt: 1,
	}},
	{"qa", Input{
		Role: "qa", TaskID: "TASK-QA1", Title: "Spot check the calculator",
		Fields:      []Field{{"Status", "in_progress"}, {"Category", "qa"}, {"Test IDs", "AC-CALC.1"}},
		TestCommand: "go test ./...", Attempt: 1,
	}},
	{"reviewer", Input{
		Role: "reviewer", TaskID: "TASK-CALC-AC1", Title: "AC-CALC.1",
		Body:        "- AC-CALC.1: `Add(a, b)` returns the sum of two integers.\n",
		Allowlist:   []string{"review/change.diff", "calc/calc_test.go", "review/gate.log"},
		Include:     []string{"review/change.diff", "calc/calc_test.go", "review/gate.log"},
		TestCommand: "go test ./calc -run 'TestAC_CALC_1$'", Attempt: 1,
	}},
	{"judge", Input{
		Role: "judge", TaskID: "TASK-CALC-AC1", Title: "AC-CALC.1",
		Body:        "- AC-CALC.1: `Add(a, b)` returns the sum of two integers.\n",
		Allowlist:   []string{"review/notes.json", "review/change.diff", "review/gate.log"},
		Include:     []string{"review/notes.json", "review/change.diff", "review/gate.log"},
		TestCommand: "go test ./calc -run 'TestAC_CALC_1$'", Attempt: 1,
	}},
}

// TestGolden compares each rendered prompt with testdata/golden/<name>.md. Run
// `go test ./prompts -run TestGolden -update` after changing a template, and read the diff.
func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Root = goldenRoot
			got, err := Render(in, "")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", tc.name+".md")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the rendered prompt (run with -update and read the diff):\n%s", path, got)
			}
		})
	}
}

// TestGoldenCoversEveryRole keeps the golden set complete as roles are added.
func TestGoldenCoversEveryRole(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range goldenCases {
		seen[tc.in.Role] = true
	}
	for _, r := range Roles() {
		if !seen[r] {
			t.Errorf("no golden case for role %q", r)
		}
	}
}
