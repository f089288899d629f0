package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/testrun"
)

// TestBaselineGoProject runs `orchestrator baseline` on a real Go project (the testrun
// fixture, whose tests partly fail) and checks the summary and baseline.json.
func TestBaselineGoProject(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "testrun", "testdata", "projects", "go")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".orchestrator"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".orchestrator", "config.yaml"), []byte("commands: {test: \"go test ./...\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"baseline", "--dir", dir}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	want := "runner:  go (go test ./...)\n" +
		"tests:   10 total, 6 passed, 3 failed, 1 skipped (assertion_failure)\n" +
		"files:   2 test files hashed\n" +
		"wrote .orchestrator/baseline.json\n"
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	b, err := testrun.ReadBaseline(filepath.Join(dir, ".orchestrator", "baseline.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.PassingTests) != 6 || b.PassingTests[0] != "example.com/proj/calc.TestAdd" ||
		!strings.Contains(b.RegressionCommand, "go test ./strs -run '^(TestUpper|TestUpperEmpty)$'") {
		t.Errorf("baseline: %+v", b)
	}
}
