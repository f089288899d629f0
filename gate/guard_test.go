package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGuardSeesTestsRewrittenDuringTheRun: a test file or test data that the command
// changes while it runs is refused as test_tampered, even when the command puts the file
// back as it was (bytes and times) before it ends; what honest runs write beside the
// tests (bytecode, caches, new files, snapshots) is not.
func TestGuardSeesTestsRewrittenDuringTheRun(t *testing.T) {
	base := map[string]string{
		"tests/test_discount.py":      "from shop import discount\n\ndef test_unit_001():\n    assert discount(1000, 15) == 850\n",
		"shop/__init__.py":            "def discount(c, p):\n    return c\n",
		"tests/data/rates.txt":        "15\n",
		"web/__snapshots__/a.js.snap": "exports[`a`] = 1;\n",
		"cart/cart_test.go":           "package cart\n",
		"README.md":                   "# shop\n",
	}
	tests := []struct {
		name, command string
		file, what    string // refused naming file (what happened to it), or "" for none
	}{
		{"a test file rewritten in place by sed (a new file renamed over it)", `sed -i 's/assert /assert True or /' tests/test_discount.py`, "tests/test_discount.py", "replaced"},
		{"a test file rewritten and put back, times too",
			`cp -p tests/test_discount.py /tmp/keep.$$ && echo 'x = 1' >> tests/test_discount.py && cp -p /tmp/keep.$$ tests/test_discount.py && rm /tmp/keep.$$`,
			"tests/test_discount.py", "changed"},
		{"a test file replaced by a rename", `printf 'def test_unit_001(): pass\n' > t.tmp && mv t.tmp tests/test_discount.py`, "tests/test_discount.py", "replaced"},
		{"a test file deleted", `rm cart/cart_test.go`, "cart/cart_test.go", "deleted"},
		{"test data rewritten", `echo 0 > tests/data/rates.txt`, "tests/data/rates.txt", "changed"},
		{"honest: bytecode, caches and new files beside the tests", `mkdir -p tests/__pycache__ .pytest_cache && touch tests/__pycache__/x.pyc .pytest_cache/v tests/out.log cart/new_test.go`, "", ""},
		{"honest: the times and mode of test data set (a test of staleness)", `touch -d 2001-01-01 tests/data/rates.txt && chmod 600 tests/data/rates.txt`, "", ""},
		{"honest: a snapshot written, a README read, the code changed", `echo 2 >> web/__snapshots__/a.js.snap && cat README.md > /dev/null && echo '# x' >> shop/__init__.py`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range base {
				os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
				// Times in the past: a rewrite within the same clock tick still shows.
				old := time.Now().Add(-time.Hour)
				os.Chtimes(filepath.Join(root, p), old, old)
			}
			in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1,
				TestCommand: tt.command + " && echo ran", Timeout: time.Minute}
			v, err := Verify(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.file == "" {
				if !v.Pass {
					t.Errorf("refused: %s\n%s", v.Reason, v.Log.String())
				}
				return
			}
			want := tt.file + " was " + tt.what + " while "
			if v.Pass || v.Type != TypeTampered || v.File != tt.file || !strings.Contains(v.Reason, want) {
				t.Errorf("pass %v, %s, file %q: %s\nwant test_tampered: %s…\n%s", v.Pass, v.Type, v.File, v.Reason, want, v.Log.String())
			}
		})
	}
}

// TestGuardWithoutWatch: where the watch cannot start, the stat after the run still sees
// a file left changed.
func TestGuardWithoutWatch(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "calc_test.go")
	os.WriteFile(p, []byte("package calc\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	g, _ := guardTests(root, nil)
	g.w.Close()
	<-g.ended
	g.w = nil // as if the watch had not started
	os.WriteFile(p, []byte("package calc // x\n"), 0o644)
	if e := g.stop("go test ./..."); e == nil || e.Path != "calc_test.go" || e.What != "changed" {
		t.Errorf("stop = %v, want calc_test.go changed", e)
	}
}
