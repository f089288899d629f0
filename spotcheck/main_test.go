package spotcheck_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain gives the tests a home and a configuration folder of their own: the key that
// seals the orchestrator's evidence (package seal) is made there, never in the person's.
// Go's caches stay where they were.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spotcheck-test-")
	if err != nil {
		panic(err)
	}
	goenv := ""
	if d, err := os.UserConfigDir(); err == nil {
		goenv = filepath.Join(d, "go", "env")
	}
	for name, v := range map[string]string{"GOCACHE": cacheDir(), "GOPATH": goPath(), "GOENV": goenv} {
		if os.Getenv(name) == "" && v != "" {
			os.Setenv(name, v)
		}
	}
	os.Setenv("HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cacheDir is Go's build cache as it would be without the test's home.
func cacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "go-build")
	}
	return ""
}

// goPath is Go's GOPATH as it would be without the test's home.
func goPath() string {
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, "go")
	}
	return ""
}
