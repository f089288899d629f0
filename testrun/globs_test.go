package testrun

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orchestrator/orchestrator/config"
)

func TestDefaultGlobsAreTheConfigDefaults(t *testing.T) {
	if want := config.Default().TestGlobs; !slices.Equal(DefaultGlobs, want) {
		t.Errorf("DefaultGlobs = %q\nconfig.Default().TestGlobs = %q", DefaultGlobs, want)
	}
}

func TestIsTestFile(t *testing.T) {
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"calc_test.go", true},
		{"pkg/deep/calc_test.go", true},
		{"./pkg/calc_test.go", true},
		{"calc.go", false},
		{"tests/test_calc.py", true},
		{"tests/unit/helpers.py", true},
		{"pkg/tests/helpers.py", false},
		{"test/fixtures/x.json", true},
		{"src/test_calc.py", true},
		{"src/calc_test.py", true},
		{"src/calc.py", false},
		{"src/calc.test.ts", true},
		{"src/calc.spec.js", true},
		{"src/calc.ts", false},
		{"tests/integration.rs", true},
		{"crates/a/tests/integration.rs", true},
		{"crates/a/tests/data/x.rs", false},
		{"src/lib.rs", false},
		{"testsuite/x.py", false},
	} {
		if got := IsTestFile(tt.path, DefaultGlobs); got != tt.want {
			t.Errorf("IsTestFile(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tt := range []struct {
		glob, path string
		want       bool
	}{
		{"*.go", "x.go", true},
		{"*.go", "a/x.go", false},
		{"**/*.go", "x.go", true},
		{"**/*.go", "a/b/c/x.go", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**", "a/x/y", true},
		{"a/**", "a", true},
		{"**", "anything/at/all", true},
		{"a/**/**/b", "a/b", true},
		{"**/*.{test,spec}.{ts,tsx}", "src/x.spec.tsx", true},
		{"**/*.{test,spec}.{ts,tsx}", "src/x.spec.js", false},
		{"{a,b/{c,d}}/x", "b/d/x", true},
		{"{a,b/{c,d}}/x", "b/e/x", false},
		{"x?.go", "x1.go", true},
		{"[ab].go", "b.go", true},
		{"[", "[", false}, // malformed: matches nothing
		{"a\\*b", "a*b", true},
	} {
		if got := matchGlob(tt.glob, tt.path); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}

func TestTestFilesAndHashes(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{
		"calc_test.go", "calc.go", "pkg/a_test.go", "tests/test_x.py",
		"node_modules/dep/x_test.go", ".git/x_test.go", "vendor/v/v_test.go",
		".orchestrator/runs/x_test.go", "target/debug/x_test.go", "deep/node_modules/y_test.go",
	} {
		writeFile(t, filepath.Join(dir, f), []byte(f))
	}
	files, err := TestFiles(dir, DefaultGlobs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"calc_test.go", "pkg/a_test.go", "tests/test_x.py"}
	if !slices.Equal(files, want) {
		t.Errorf("TestFiles = %q, want %q", files, want)
	}
	sums, err := HashFiles(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte("calc_test.go")); sums["calc_test.go"] != hex.EncodeToString(sum[:]) {
		t.Errorf("hash of calc_test.go = %q", sums["calc_test.go"])
	}
	if len(sums) != 3 || sums["pkg/a_test.go"] == sums["calc_test.go"] {
		t.Errorf("sums %v", sums)
	}
	if _, err := HashFiles(dir, []string{"gone_test.go"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := TestFiles(filepath.Join(dir, "nope"), DefaultGlobs); err == nil {
		t.Error("missing root: no error")
	}
}
