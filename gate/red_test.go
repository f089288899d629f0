package gate

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// fixture copies testdata/<lang>/base and then testdata/<lang>/variants/<variant> into a new
// folder, and returns it with the files the variant adds (what a test writer changed).
func fixture(t *testing.T, lang, variant string) (string, []string) {
	t.Helper()
	root := t.TempDir()
	copyTree := func(from string) []string {
		var files []string
		err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(from, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dst := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	copyTree(filepath.Join("testdata", lang, "base"))
	return root, copyTree(filepath.Join("testdata", lang, "variants", variant))
}

// redOn runs the RED gate of a task with Test ID UNIT-001 and the project's test command (no
// Test Command of its own) on a fixture.
func redOn(t *testing.T, lang, variant, projectCmd string) (*Verdict, *Manifest) {
	t.Helper()
	return redWith(t, lang, variant, projectCmd, true)
}

// redWith is redOn with the command the task's own (project false) or the project's.
func redWith(t *testing.T, lang, variant, command string, project bool) (*Verdict, *Manifest) {
	t.Helper()
	root, changed := fixture(t, lang, variant)
	dir := t.TempDir()
	in := Input{Root: root, AttemptDir: dir, Task: "TASK-T01", Attempt: 1, TestIDs: []string{"UNIT-001"},
		TestCommand: command, ProjectCommand: project, Globs: testrun.DefaultGlobs, Changed: changed, Timeout: 2 * time.Minute}
	v, err := Red(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "handoff-red.json"))
	if err != nil {
		return v, nil
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return v, &m
}

// TestRedGoModule: in a Go module of three packages whose tests pass, a test writer adds
// calc/mul_test.go calling Mul, which does not exist yet. RED runs only ./calc, passes, and
// hands on the declared test. A file that names the Test ID only in a comment and a string,
// and one whose test named after the ID passes while another new test fails, are false REDs.
func TestRedGoModule(t *testing.T) {
	t.Parallel()
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		v, m := redOn(t, "go", "honest", "go test -count=1 ./...")
		if !v.Pass {
			t.Fatalf("honest RED refused: %s\n%s", v.Reason, v.Log.String())
		}
		// The build fails for the missing Mul; the second run is the probe of the tests
		// with Mul cut out (probe.go), of the same command.
		if len(v.Runs) != 2 || v.Runs[0].Command != "go test -count=1 ./calc" || v.Runs[1].Command != v.Runs[0].Command || v.Runs[1].Class == string(testrun.ClassMissingImplementation) {
			t.Errorf("RED ran %+v, want only go test -count=1 ./calc, then its probe", v.Runs)
		}
		if m == nil || m.Command != "go test -count=1 ./calc" || !slices.Contains(m.DeclaredTests, "TestMul_UNIT_001") ||
			!slices.Equal(m.Tests["UNIT-001"], []string{"TestMul_UNIT_001"}) || !slices.Equal(m.TestFiles, []string{"calc/mul_test.go"}) {
			t.Errorf("manifest = %+v", m)
		}
	})
	t.Run("ID only in a comment and a string", func(t *testing.T) {
		t.Parallel()
		v, m := redOn(t, "go", "cheat", "go test ./...")
		if v.Pass || v.Type != TypeFalseRed || !strings.Contains(v.Reason, "no test is named after UNIT-001") || m != nil {
			t.Fatalf("verdict %+v, want a false RED naming UNIT-001\n%s", v, v.Log.String())
		}
	})
	t.Run("ID only in a comment and a string, the task's own command", func(t *testing.T) {
		t.Parallel()
		v, m := redWith(t, "go", "cheat", "go test ./calc", false)
		if v.Pass || v.Type != TypeFalseRed || !strings.Contains(v.Reason, "no test is named after UNIT-001") || m != nil {
			t.Fatalf("verdict %+v, want a false RED naming UNIT-001\n%s", v, v.Log.String())
		}
	})
	t.Run("the test named after the ID passes", func(t *testing.T) {
		t.Parallel()
		v, m := redOn(t, "go", "named-passes", "go test ./...")
		if v.Pass || v.Type != TypeFalseRed || !strings.Contains(v.Reason, "TestMul_UNIT_001 is named after UNIT-001 and passed") || m != nil {
			t.Fatalf("verdict %+v, want a false RED for the passing TestMul_UNIT_001\n%s", v, v.Log.String())
		}
		if len(v.Runs) != 1 || v.Runs[0].Command != "go test ./calc" {
			t.Errorf("RED ran %+v, want only go test ./calc", v.Runs)
		}
	})
}

// TestRedPytestProject: a pytest project whose existing tests pass; a test writer adds
// tests/test_mul.py importing a module that does not exist yet. RED runs only that file and
// passes.
func TestRedPytestProject(t *testing.T) {
	t.Parallel()
	if err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pytest is not installed for /usr/bin/python3")
		}
		t.Skip("pytest is not installed for /usr/bin/python3")
	}
	v, m := redOn(t, "python", "honest", "/usr/bin/python3 -m pytest -q")
	if !v.Pass {
		t.Fatalf("honest RED refused: %s\n%s", v.Reason, v.Log.String())
	}
	want := "/usr/bin/python3 -m pytest -q tests/test_mul.py"
	if len(v.Runs) != 1 || v.Runs[0].Command != want || v.Runs[0].Class != string(testrun.ClassMissingImplementation) {
		t.Errorf("RED ran %+v, want only %s, missing_implementation", v.Runs, want)
	}
	if m == nil || !slices.Equal(m.DeclaredTests, []string{"test_unit_001_mul"}) || !slices.Equal(m.Tests["UNIT-001"], []string{"test_unit_001_mul"}) {
		t.Errorf("manifest = %+v", m)
	}
}
