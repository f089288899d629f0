package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPinnedEnv: the gate's environment is the orchestrator's at start, with Go reading no
// environment file (what `go env -w` writes later has no effect), the file's module settings
// kept as variables and its build settings dropped, the toolchain local, and PYTHONSTARTUP
// gone.
func TestPinnedEnv(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, ".config", "go", "env")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte("GOPROXY=https://proxy.example.com\nGOFLAGS=-overlay=/tmp/x.json\nGOPRIVATE=example.com/*\nCGO_ENABLED=1\n"), 0o644)
	base := []string{"HOME=" + home, "PATH=/usr/bin", "GOPRIVATE=mine.example.com", "PYTEST_ADDOPTS=-q", "PYTHONSTARTUP=/tmp/s.py"}
	env := PinnedEnv(base)
	for _, want := range []string{"GOENV=off", "GOTOOLCHAIN=local", "GOPROXY=https://proxy.example.com", "GOPRIVATE=mine.example.com", "PYTEST_ADDOPTS=-q", "PATH=/usr/bin"} {
		if !slices.Contains(env, want) {
			t.Errorf("pinned env lacks %s: %q", want, env)
		}
	}
	for _, key := range []string{"GOFLAGS", "CGO_ENABLED", "PYTHONSTARTUP"} {
		if _, ok := lookupEnv(env, key); ok {
			t.Errorf("pinned env has %s: %q", key, env)
		}
	}
	if strings.Count(strings.Join(env, "\n"), "GOPRIVATE=") != 1 {
		t.Errorf("GOPRIVATE twice: %q", env)
	}
	// A person's own GOTOOLCHAIN and GOFLAGS stand.
	env = PinnedEnv([]string{"HOME=" + home, "GOTOOLCHAIN=go1.22.0", "GOFLAGS=-mod=mod"})
	if !slices.Contains(env, "GOTOOLCHAIN=go1.22.0") || !slices.Contains(env, "GOFLAGS=-mod=mod") {
		t.Errorf("pinned env %q, want the person's GOTOOLCHAIN and GOFLAGS", env)
	}
	// GOENV off at start: no file read.
	env = PinnedEnv([]string{"HOME=" + home, "GOENV=off"})
	if _, ok := lookupEnv(env, "GOPROXY"); ok {
		t.Errorf("GOENV=off at start, yet the file was read: %q", env)
	}
}

// TestEnvForGoWork: the checkout's own go.work is used; none above it.
func TestEnvForGoWork(t *testing.T) {
	outer := t.TempDir()
	os.WriteFile(filepath.Join(outer, "go.work"), []byte("go 1.22\n"), 0o644)
	checkout := filepath.Join(outer, "slot")
	os.MkdirAll(filepath.Join(checkout, "app"), 0o755)
	os.WriteFile(filepath.Join(checkout, ".git"), []byte("gitdir: x\n"), 0o644)
	env := EnvFor([]string{"PATH=/usr/bin"}, filepath.Join(checkout, "app"))
	if !slices.Contains(env, "GOWORK=off") {
		t.Errorf("go.work above the checkout: env %q, want GOWORK=off", env)
	}
	os.WriteFile(filepath.Join(checkout, "go.work"), []byte("go 1.22\n"), 0o644)
	env = EnvFor([]string{"PATH=/usr/bin"}, filepath.Join(checkout, "app"))
	if !slices.Contains(env, "GOWORK="+filepath.Join(checkout, "go.work")) {
		t.Errorf("the checkout's go.work: env %q", env)
	}
	if EnvFor(nil, checkout) != nil {
		t.Error("EnvFor(nil) is not nil")
	}
}

// TestPinnedEnvGoEnvWrite: `go env -w GOFLAGS=…` after the start has no effect on a go
// command run with the pinned environment.
func TestPinnedEnvGoEnvWrite(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	home := t.TempDir()
	// Go's telemetry off in this home: on, the go command leaves a process behind that
	// writes its counters there after the command ended, while the folder is removed.
	mode := filepath.Join(home, ".config", "go", "telemetry", "mode")
	if err := os.MkdirAll(filepath.Dir(mode), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mode, []byte("off"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GOCACHE=" + filepath.Join(t.TempDir(), "cache"), "GOPATH=" + filepath.Join(home, "go")}
	env := PinnedEnv(base)
	w := exec.Command("go", "env", "-w", "GOFLAGS=-tags=cheat")
	w.Env = base
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("go env -w: %v\n%s", err, out)
	}
	r := exec.Command("go", "env", "GOFLAGS")
	r.Env = env
	out, err := r.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("go env GOFLAGS under the pinned env = %q (%v), want empty", out, err)
	}
}
