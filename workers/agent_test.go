package workers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWorkerSandboxShowsToolchains: an agent on a worker sees the worker's toolchains that
// its hidden home folder holds (a program folder of PATH under home, cargo's), read-only,
// as an agent of the watch sees the watch's.
func TestWorkerSandboxShowsToolchains(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, ".cargo", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	ws := Workspace{Dir: t.TempDir(), Markers: t.TempDir(), Objects: t.TempDir(), Attempt: t.TempDir()}
	sb := sandboxOf(Job{Attempt: AttemptID{"TASK-001", 1}, Agent: "exec", Argv: []string{"true"}}, ws)
	if !slices.ContainsFunc(sb.ReadOnly, func(p string) bool { return strings.HasPrefix(p, filepath.Join(home, ".cargo")) }) {
		t.Errorf("the worker's cargo under its home is not readable in the agent's sandbox: %v", sb.ReadOnly)
	}
	if !slices.Contains(sb.ReadOnly, ws.Objects) {
		t.Errorf("the cache's objects are not readable: %v", sb.ReadOnly)
	}
}
