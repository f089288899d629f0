package worktree

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain gives the tests a home and a configuration folder of their own: the key that
// seals the evidence (package seal) is made there, never in the person's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "worktree-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
