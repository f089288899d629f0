package testrun

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMakeBaseline(t *testing.T) {
	dir := copyProject(t, "go")
	b, err := MakeBaseline(context.Background(), dir, "go test ./...", nil, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Runner != Go || b.Class != ClassAssertionFailure || b.Command != "go test ./..." || b.ExitCode != 1 {
		t.Errorf("runner %s, class %s, command %q, exit %d", b.Runner, b.Class, b.Command, b.ExitCode)
	}
	if want := (Summary{Total: 10, Passed: 6, Failed: 3, Skipped: 1}); b.Summary != want {
		t.Errorf("summary %+v, want %+v", b.Summary, want)
	}
	sameSet(t, "passing", b.PassingTests, projectCases[0].passed)
	if !strings.HasPrefix(b.RegressionCommand, "f=0; go test ./calc -run ") {
		t.Errorf("regression command %q", b.RegressionCommand)
	}
	if len(b.TestFileHashes) != 2 || len(b.TestFileHashes["calc/calc_test.go"]) != 64 {
		t.Errorf("hashes %v", b.TestFileHashes)
	}
	if time.Since(b.Created) > time.Hour || b.Created.Location() != time.UTC {
		t.Errorf("created %v", b.Created)
	}

	path := filepath.Join(dir, ".orchestrator", "baseline.json")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, b)
	}
	// The file has the SPEC's field names, and nothing else is left in the folder.
	data, _ := os.ReadFile(path)
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"baseline_summary", "passing_tests", "baseline_regression_command", "test_file_hashes", "runner", "created"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("baseline.json lacks %s:\n%s", k, data)
		}
	}
	summary, _ := raw["baseline_summary"].(map[string]any)
	for _, k := range []string{"total_tests", "passed", "failed"} {
		if _, ok := summary[k]; !ok {
			t.Errorf("baseline_summary lacks %s", k)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d files, want only baseline.json", len(entries))
	}
}

func TestBaselineOfExitRunner(t *testing.T) {
	dir := t.TempDir()
	b, err := MakeBaseline(context.Background(), dir, "true", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Runner != Exit || b.RegressionCommand != "true" || b.PassingTests == nil || b.Summary != (Summary{}) {
		t.Errorf("%+v", b)
	}
	b, err = MakeBaseline(context.Background(), dir, "false", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.RegressionCommand != "" || b.Class != ClassAssertionFailure {
		t.Errorf("failing exit command: %+v", b)
	}
	// Marshalled, empty lists are [] and {}, not null.
	data, _ := json.Marshal(b)
	if !strings.Contains(string(data), `"passing_tests":[]`) || !strings.Contains(string(data), `"test_file_hashes":{}`) {
		t.Errorf("%s", data)
	}
}

func TestMakeBaselineNotRun(t *testing.T) {
	dir := t.TempDir()
	for _, command := range []string{"no-such-runner-xyz ./...", "sleep 5"} {
		_, err := MakeBaseline(context.Background(), dir, command, nil, 300*time.Millisecond)
		if !errors.Is(err, ErrNotRun) {
			t.Errorf("%q: err = %v, want ErrNotRun", command, err)
		}
	}
}

func TestReadBaselineErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadBaseline(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, []byte("{"))
	if _, err := ReadBaseline(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("malformed: %v", err)
	}
	// The SPEC's example reads.
	spec := filepath.Join(dir, "spec.json")
	writeFile(t, spec, []byte(`{"baseline_summary": {"total_tests": 142, "passed": 137, "failed": 5},
 "passing_tests": ["tests/unit/foo_test.py::test_bar"],
 "baseline_regression_command": "pytest -q tests/unit/foo_test.py::test_bar",
 "test_file_hashes": {"tests/unit/foo_test.py": "abc"},
 "runner": "pytest", "created": "2026-11-21T10:00:00Z"}`))
	b, err := ReadBaseline(spec)
	if err != nil {
		t.Fatal(err)
	}
	if b.Summary.Total != 142 || b.Runner != Pytest || b.PassingTests[0] != "tests/unit/foo_test.py::test_bar" {
		t.Errorf("%+v", b)
	}
}
