package testrun

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanSetup: which programs of a command line are certain to run, and so are checked.
func TestPlanSetup(t *testing.T) {
	for _, tt := range []struct {
		command string
		names   []string
		paths   []string
		probe   string // runner:program
	}{
		{"go test ./...", []string{"go"}, nil, "go:go"},
		{"nosuchrunner ./...", []string{"nosuchrunner"}, nil, ""},
		{"CGO_ENABLED=0 go test -race ./...", []string{"go"}, nil, "go:go"},
		{"cd app && go vet ./... && go test ./...", []string{"cd", "go", "go"}, nil, "go:go"},
		{"/usr/bin/python3 -m pytest -q", nil, []string{"/usr/bin/python3"}, "pytest:/usr/bin/python3"},
		{"python3 -m pytest tests/", []string{"python3"}, nil, "pytest:python3"},
		{"pytest -q", []string{"pytest"}, nil, ""},
		{"npx vitest run", []string{"npx"}, nil, "vitest:vitest"},
		{"npx jest", []string{"npx"}, nil, "jest:jest"},
		{"npx --yes vitest run", []string{"npx"}, nil, ""},
		{"uv run pytest", []string{"uv"}, nil, ""},
		{"cargo test", []string{"cargo"}, nil, "cargo:cargo"},
		{"env GOFLAGS=-mod=mod go test ./...", []string{"env", "go"}, nil, "go:go"},
		{"./scripts/test.sh 2>&1 | tee out.log", []string{"tee"}, []string{"./scripts/test.sh"}, ""},
		{"cd sub && ./t.sh", []string{"cd"}, nil, ""},
		{"make test; echo done", []string{"make", "echo"}, nil, ""},
		// What the line handles, or cannot be read for sure, is not checked.
		{"nosuch || go test ./...", nil, nil, ""},
		{"go vet ./... && nosuch || true", nil, nil, ""},
		{"make test; nosuch || true", []string{"make"}, nil, ""},
		{"if nosuch; then go test; fi", nil, nil, ""},
		{"! nosuch", nil, nil, ""},
		{". .venv/bin/activate && pytest", nil, nil, ""},
		{"PATH=./bin:$PATH; nosuch", nil, nil, ""},
		{"PATH=./bin:$PATH nosuch ./...", nil, nil, ""},
		{"$GO test ./...", nil, nil, ""},
		{"$(which python) -m pytest", nil, nil, ""},
		{"nosuch & wait", []string{"wait"}, nil, ""},
		{"f() { go test; }; f", nil, nil, ""},
		{"command -v nosuch && go test", []string{"go"}, nil, "go:go"},
		{"nice -n 5 nosuch", []string{"nice"}, nil, ""},
		{"for d in a b; do nosuch $d; done", nil, nil, ""},
		{"python - <<EOF\nimport nosuch\nEOF", nil, nil, ""},
	} {
		p := planSetup(tt.command)
		probe := ""
		if p.probe != nil {
			probe = string(p.probe.runner) + ":" + p.probe.program
		}
		if !slices.Equal(p.names, tt.names) || !slices.Equal(p.paths, tt.paths) || probe != tt.probe {
			t.Errorf("%q: names %q, paths %q, probe %q; want %q, %q, %q", tt.command, p.names, p.paths, probe, tt.names, tt.paths, tt.probe)
		}
	}
}

// pythonWithoutPytest makes a real Python that cannot import pytest: a virtual environment
// of Debian's Python (which has it) without its site-packages.
func pythonWithoutPytest(t *testing.T) string {
	t.Helper()
	needTool(t, "pytest (Debian's python3-pytest)", havePytest())
	dir := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		t.Fatalf("make a venv: %v\n%s", err, out)
	}
	return filepath.Join(dir, "bin", "python")
}

// TestCheckSetup: a program that is not found, or a runner that is not installed, is a
// *SetupError naming the program; a command whose programs and runner are there is none.
// In a candidate's checkout, a program that would be a file of the checkout is the
// candidate's: its absence is no set-up error.
func TestCheckSetup(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	noPytest := pythonWithoutPytest(t)
	writeFile(t, filepath.Join(root, "tests", "test_a.py"), []byte("def test_a():\n    pass\n"))
	// A folder named pytest in the tree does not make pytest installed.
	writeFile(t, filepath.Join(root, "pytest", "__init__.py"), []byte("raise SystemExit('the tree was imported')\n"))
	writeFile(t, filepath.Join(root, "ok.sh"), []byte("#!/bin/sh\nexit 0\n"))
	if err := os.Chmod(filepath.Join(root, "ok.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "plain.sh"), []byte("exit 0\n"))
	js := t.TempDir()
	writeFile(t, filepath.Join(js, "node_modules", ".bin", "vitest"), []byte("#!/bin/sh\n"))
	if err := os.Chmod(filepath.Join(js, "node_modules", ".bin", "vitest"), 0o755); err != nil {
		t.Fatal(err)
	}
	noGo := []string{"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}
	for _, tt := range []struct {
		name, root, command string
		env                 []string
		candidate           bool
		program, reason     string // the SetupError's ("" program: no error)
	}{
		{name: "not found", command: "nosuchrunner ./...", program: "nosuchrunner", reason: `program "nosuchrunner" is not installed (not on PATH)`},
		{name: "not found after cd", command: "cd tests && nosuchrunner", program: "nosuchrunner"},
		{name: "not found in a pipeline", command: "nosuchrunner ./... | tee log", program: "nosuchrunner"},
		{name: "go not on PATH", command: "go test ./...", env: noGo, program: "go"},
		{name: "go", command: "go test ./...", program: ""},
		{name: "pytest not importable", command: noPytest + " -m pytest -q", program: noPytest, reason: "pytest is not installed for"},
		{name: "pytest importable", command: "/usr/bin/python3 -m pytest -q", program: ""},
		{name: "pytest importable, bare python3 on PATH", command: "python3 -m pytest", env: []string{"PATH=/usr/bin:/bin"}, program: ""},
		{name: "a missing file named by path", command: "/nonexistent/bin/pytest", program: "/nonexistent/bin/pytest", reason: "does not exist"},
		{name: "the person's script, missing", command: "./run_tests.sh", program: "./run_tests.sh", reason: "does not exist"},
		{name: "the person's script, not executable", command: "./plain.sh", program: "./plain.sh", reason: "is not executable"},
		{name: "the person's script", command: "./ok.sh", program: ""},
		{name: "the candidate's script, missing", command: "./run_tests.sh", candidate: true, program: ""},
		{name: "the candidate's script, not executable", command: "./plain.sh", candidate: true, program: ""},
		{name: "npx vitest, not installed", command: "npx vitest run", program: "vitest", reason: "vitest is not installed"},
		{name: "npx vitest, installed", root: js, command: "npx vitest run", program: ""},
		{name: "a fallback", command: "nosuchrunner || true", program: ""},
		{name: "a builtin", command: "cd tests && true", program: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := root
			if tt.root != "" {
				dir = tt.root
			}
			c := &SetupCheck{Root: dir, Env: tt.env, Candidate: tt.candidate}
			err := c.Check(ctx, tt.command)
			var se *SetupError
			if tt.program == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SetupError", err)
			}
			if se.Program != tt.program || se.Command != tt.command || !strings.Contains(se.Reason, tt.reason) || !errors.Is(err, ErrNotRun) {
				t.Errorf("got %+v, want program %q and a reason with %q", se, tt.program, tt.reason)
			}
		})
	}
}

// TestRunSetupError: Run runs nothing when the set-up check fails; the honest twin, a
// program that is found but runs something missing (the candidate's code may be what is
// missing), is a result with exit 127, as before.
func TestRunSetupError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, err := Run(ctx, dir, "touch ran; nosuchrunner ./...", time.Minute)
	var se *SetupError
	if !errors.As(err, &se) || se.Program != "nosuchrunner" {
		t.Fatalf("err = %v, want a *SetupError for nosuchrunner", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
	writeFile(t, filepath.Join(dir, "t.sh"), []byte("nosuchhelper --check\n"))
	for _, command := range []string{"sh t.sh", "./gone.sh"} {
		res, err := Run(ctx, dir, command, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		if res.ExitCode != 127 || res.Class != ClassError {
			t.Errorf("%s: exit %d, %s; want 127, error", command, res.ExitCode, res.Class)
		}
	}
	noPytest := pythonWithoutPytest(t)
	_, err = Run(ctx, dir, noPytest+" -m pytest", time.Minute)
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "No module named pytest") {
		t.Errorf("err = %v, want a *SetupError: pytest is not installed", err)
	}
}

// TestPlanKey: commands that differ only in their arguments share a check; any other line
// is its own.
func TestPlanKey(t *testing.T) {
	for _, tt := range []struct{ command, key string }{
		{"go test ./pkg/f1", "go test"},
		{"go  test -run TestX ./pkg/f1", "go test"},
		{"go vet ./...", "go vet"},
		{"/usr/bin/python3 -m pytest tests/a.py", "/usr/bin/python3 -m pytest"},
		{"cargo +nightly test --lib", "cargo +nightly test"},
		{"pytest", "pytest "},
		{"npx vitest run", "npx vitest run"},
		{"env go test ./...", "env go test ./..."},
		{"time go test ./...", "time go test ./..."},
		{"CGO_ENABLED=0 go test ./...", "CGO_ENABLED=0 go test ./..."},
		{"go test ./... | tee log", "go test ./... | tee log"},
		{"go\ttest ./...", "go\ttest ./..."},
	} {
		if got := planKey(tt.command); got != tt.key {
			t.Errorf("planKey(%q) = %q, want %q", tt.command, got, tt.key)
		}
	}
	c := &SetupCheck{Root: t.TempDir()}
	for _, command := range []string{"nosuchrunner ./a", "nosuchrunner ./b"} {
		var se *SetupError
		if err := c.Check(context.Background(), command); !errors.As(err, &se) || se.Command != command {
			t.Errorf("%s: err = %v, want a *SetupError of that command", command, err)
		}
	}
}

// TestLookupRemembered: a program found on a PATH of absolute folders outside the
// checkout is looked up once for the process, not once per run; one removed after that is
// still a *SetupError, not the candidate's exit 127 (Run looks again when the command
// exits 126 or 127). On a PATH that reaches into the checkout nothing is remembered: the
// candidate's own files could be what the shell finds.
func TestLookupRemembered(t *testing.T) {
	ctx := context.Background()
	dir, bin := t.TempDir(), t.TempDir()
	tool := filepath.Join(bin, "remembered-tool")
	writeFile(t, tool, []byte("#!/bin/sh\nexit 0\n"))
	if err := os.Chmod(tool, 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + ":/usr/bin:/bin"
	env := []string{"PATH=" + path}
	res, err := Run(ctx, dir, "remembered-tool", time.Minute, WithEnv(env))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("first run: %v, %+v", err, res)
	}
	if v, ok := foundOnPath.Load(path + "\x00remembered-tool"); !ok || v != tool {
		t.Fatalf("remembered %v, %v; want %s", v, ok, tool)
	}
	if err := os.Remove(tool); err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, dir, "remembered-tool", time.Minute, WithEnv(env))
	var se *SetupError
	if !errors.As(err, &se) || se.Program != "remembered-tool" {
		t.Fatalf("after the program was removed: err = %v, want a *SetupError for it", err)
	}

	rel := []string{"PATH=tools:/usr/bin:/bin"}
	writeFile(t, filepath.Join(dir, "tools", "own-tool"), []byte("#!/bin/sh\nexit 0\n"))
	if err := os.Chmod(filepath.Join(dir, "tools", "own-tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res, err := Run(ctx, dir, "own-tool", time.Minute, WithEnv(rel)); err != nil || res.ExitCode != 0 {
		t.Fatalf("own-tool: %v, %+v", err, res)
	}
	if v, ok := foundOnPath.Load("tools:/usr/bin:/bin\x00own-tool"); ok {
		t.Errorf("a program of a PATH into the checkout was remembered: %v", v)
	}
}

// TestProbeRememberedWhateverTheOverlay: the runner's probe (`go version`) runs once for
// commands whose environments differ only by GOFLAGS' -overlay, as each RED probe run's
// does; any other difference in the environment, another flag of GOFLAGS among them,
// probes again.
func TestProbeRememberedWhateverTheOverlay(t *testing.T) {
	ctx := context.Background()
	dir, bin := t.TempDir(), t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	writeFile(t, filepath.Join(bin, "go"), []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\nexit 0\n"))
	if err := os.Chmod(filepath.Join(bin, "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), []byte("module example.com/probe\n"))
	env := func(flags string) []string {
		return []string{"PATH=" + bin + ":/usr/bin:/bin", "GOFLAGS=" + flags, "PROBE_TEST=" + t.Name()}
	}
	probes := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "version")
	}
	for i, c := range []struct {
		flags string
		want  int
	}{
		{"-vet=off -overlay=/tmp/a/overlay.json", 1},
		{"-vet=off -overlay=/tmp/b/overlay.json", 1},
		{"-vet=off", 1},
		{"-vet=off -mod=mod -overlay=/tmp/c/overlay.json", 2},
	} {
		if err := CheckSetup(ctx, dir, "go test ./...", env(c.flags)); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		if got := probes(); got != c.want {
			t.Errorf("after GOFLAGS=%q: %d probes, want %d", c.flags, got, c.want)
		}
	}
}
