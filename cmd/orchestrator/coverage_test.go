package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCoverageWriteUnchangedDoesNotWrite checks that `coverage --write` on a queue whose
// matrix is current does not write the file at all: the same inode (every write swaps in a
// new file, so no clock is needed to see one), the same modification time, the same bytes.
func TestCoverageWriteUnchangedDoesNotWrite(t *testing.T) {
	root := t.TempDir()
	queueFile := filepath.Join(root, ".orchestrator", "task_queue.md")
	planFile := filepath.Join(root, "projectspec", "test-plan-output.json")
	for _, p := range []string{queueFile, planFile} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	queueText := "### TASK-T01\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | testing |\n| Test IDs | U-1 |\n"
	if err := os.WriteFile(queueFile, []byte(queueText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planFile, []byte(`{"tests": {"unit": [{"id": "U-1"}, {"id": "U-2"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"--dir", root}, args...), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	run("coverage", "--write")
	written, err := os.ReadFile(queueFile)
	if err != nil {
		t.Fatal(err)
	}
	want := queueText + "\n" + run("coverage")
	if string(written) != want {
		t.Fatalf("after --write:\n%s\nwant:\n%s", written, want)
	}
	before, err := os.Stat(queueFile)
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's own 0600", before.Mode().Perm())
	}
	run("coverage", "--write")
	after, err := os.Stat(queueFile)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(queueFile)
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) || !bytes.Equal(again, written) {
		t.Errorf("the second --write wrote the file (same file %v, mtime %v -> %v)", os.SameFile(before, after), before.ModTime(), after.ModTime())
	}
}
