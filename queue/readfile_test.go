package queue

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// bigQueue writes a queue file large enough for MapFile to map.
func bigQueue(t *testing.T) (string, []byte) {
	t.Helper()
	src := genQueue(t, 2000)
	if len(src) < parallelMin {
		t.Fatalf("generated queue is %d bytes, want at least %d", len(src), parallelMin)
	}
	path := filepath.Join(t.TempDir(), "task_queue.md")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, src
}

// TestReadFile checks that ReadFile, which reads a large file in two halves at once, gives
// the file's bytes, and the error of a missing file.
func TestReadFile(t *testing.T) {
	path, want := bigQueue(t)
	got, err := ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFile of a %d-byte file: %d bytes, %v", len(want), len(got), err)
	}
	small := filepath.Join(t.TempDir(), "small.md")
	if err := os.WriteFile(small, want[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(small); err != nil || !bytes.Equal(got, want[:100]) {
		t.Fatalf("ReadFile of a small file: %q, %v", got, err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
}
