package agents

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/markers"
)

// files writes path -> content under dir.
func files(t *testing.T, dir string, m map[string]string) {
	t.Helper()
	for p, c := range m {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var recordedResult = (&Result{
	Role: RoleImplementer, Status: StatusOK, State: StateSuccess,
	Files: []string{"calc/add.go"}, Command: "go test ./calc", OutputExcerpt: "ok",
}).Render()

// replayEnv sets the ORCHESTRATOR_* variables for ReplayMain in this process.
func replayEnv(t *testing.T, e env, id string, attempt string) {
	t.Setenv("ORCHESTRATOR_TASK_ID", id)
	t.Setenv("ORCHESTRATOR_ROOT", e.root)
	t.Setenv("ORCHESTRATOR_MARKER_DIR", e.markerDir)
	t.Setenv("ORCHESTRATOR_ATTEMPT_DIR", filepath.Join(e.root, ".orchestrator", "runs", id, attempt))
}

func TestReplayMain(t *testing.T) {
	e := newEnv(t)
	rec := filepath.Join(e.root, ".orchestrator", "replay")
	files(t, rec, map[string]string{
		"TASK-1/1/files/calc/add.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"TASK-1/1/files/calc/add_test.go": "package calc\n",
		"TASK-1/1/delete":                 "# stale files\nold.txt\n\ngone/\nnever-existed.txt\n",
		"TASK-1/1/result.md":              "Implemented Add.\n\n" + recordedResult,
		"TASK-1/1/marker":                 "done\n",
	})
	files(t, e.root, map[string]string{
		"old.txt":     "old",
		"gone/a.txt":  "a",
		"calc/add.go": "package calc // before",
		"keep.txt":    "keep",
	})
	replayEnv(t, e, "TASK-1", "1")

	var out bytes.Buffer
	code := ReplayMain(nil, strings.NewReader("the prompt"), &out)
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got := readFile(t, filepath.Join(e.root, "calc", "add.go")); !strings.Contains(got, "func Add") {
		t.Errorf("calc/add.go = %q", got)
	}
	if got := readFile(t, filepath.Join(e.root, "keep.txt")); got != "keep" {
		t.Errorf("keep.txt = %q", got)
	}
	for _, p := range []string{"old.txt", "gone"} {
		if _, err := os.Stat(filepath.Join(e.root, p)); !os.IsNotExist(err) {
			t.Errorf("%s not deleted: %v", p, err)
		}
	}
	if r, err := ParseResult(out.String(), RoleImplementer); err != nil || r.Files[0] != "calc/add.go" {
		t.Errorf("printed result = %+v, %v", r, err)
	}
	m, err := markers.Find(e.markerDir, "TASK-1")
	if err != nil || m == nil || m.Kind != markers.Done || m.Claim() != "done" {
		t.Errorf("marker = %+v, %v", m, err)
	}
}

func TestReplayAttemptFallback(t *testing.T) {
	e := newEnv(t)
	rec := t.TempDir() // an absolute --from
	files(t, rec, map[string]string{
		"TASK-1/1/result.md": "one",
		"TASK-1/2/result.md": "two",
		"TASK-1/2/marker":    "failed",
		"TASK-1/2/exit":      "3\n",
		"TASK-1/5/result.md": "five",
		"TASK-1/02/x":        "not an attempt folder",
	})
	for _, tt := range []struct {
		attempt, want string
		code          int
	}{{"1", "one", 0}, {"2", "two", 3}, {"4", "two", 3}, {"5", "five", 0}, {"9", "five", 0}} {
		replayEnv(t, e, "TASK-1", tt.attempt)
		var out bytes.Buffer
		if code := ReplayMain([]string{"--from", rec}, nil, &out); code != tt.code || out.String() != tt.want {
			t.Errorf("attempt %s: exit %d, output %q; want %d, %q", tt.attempt, code, out.String(), tt.code, tt.want)
		}
	}
	if m, _ := markers.Find(e.markerDir, "TASK-1"); m == nil || m.Kind != markers.Failed {
		t.Errorf("marker = %+v, want TASK-1.failed", m)
	}
}

func TestReplayErrors(t *testing.T) {
	tests := []struct {
		name    string
		rec     map[string]string
		id      string
		attempt string
		args    []string
		code    int
	}{
		{"no recording", nil, "TASK-1", "1", nil, 1},
		{"only later attempts", map[string]string{"TASK-1/2/result.md": "x"}, "TASK-1", "1", nil, 1},
		{"bad task ID", map[string]string{"TASK-1/1/result.md": "x"}, "../TASK-1", "1", nil, 1},
		{"empty task ID", nil, "", "1", nil, 1},
		{"attempt folder not a number", map[string]string{"TASK-1/1/result.md": "x"}, "TASK-1", "latest", nil, 1},
		{"bad marker", map[string]string{"TASK-1/1/marker": "finished"}, "TASK-1", "1", nil, 1},
		{"bad exit", map[string]string{"TASK-1/1/exit": "-1"}, "TASK-1", "1", nil, 1},
		{"delete escapes", map[string]string{"TASK-1/1/delete": "../outside.txt"}, "TASK-1", "1", nil, 1},
		{"delete absolute", map[string]string{"TASK-1/1/delete": "/tmp"}, "TASK-1", "1", nil, 1},
		{"delete root", map[string]string{"TASK-1/1/delete": "./"}, "TASK-1", "1", nil, 1},
		{"extra argument", nil, "TASK-1", "1", []string{"extra"}, 2},
		{"unknown flag", nil, "TASK-1", "1", []string{"--to", "x"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			files(t, filepath.Join(e.root, ".orchestrator", "replay"), tt.rec)
			outside := filepath.Join(filepath.Dir(e.root), "outside.txt")
			files(t, filepath.Dir(e.root), map[string]string{"outside.txt": "safe"})
			replayEnv(t, e, tt.id, tt.attempt)
			if code := ReplayMain(tt.args, nil, new(bytes.Buffer)); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if readFile(t, outside) != "safe" {
				t.Error("a file outside the root changed")
			}
			if m, _ := markers.Find(e.markerDir, "TASK-1"); m != nil {
				t.Errorf("marker written: %s", m.Path)
			}
		})
	}
}

// TestReplayCannotWriteOutsideRoot: a symbolic link in the repository pointing outside it
// must not let a recording write there.
func TestReplayCannotWriteOutsideRoot(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.root, "link")); err != nil {
		t.Fatal(err)
	}
	files(t, filepath.Join(e.root, ".orchestrator", "replay"), map[string]string{
		"TASK-1/1/files/link/evil.txt": "evil",
	})
	replayEnv(t, e, "TASK-1", "1")
	if code := ReplayMain(nil, nil, new(bytes.Buffer)); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.txt")); err == nil {
		t.Error("the recording wrote outside the root")
	}
}

// TestReplayEndToEnd runs the replay adapter as the watch loop will: Lookup, Start the
// command (this test binary, re-executed with the replay subcommand, as the orchestrator
// binary re-executes itself), wait, read the final text, parse the result, find the marker.
func TestReplayEndToEnd(t *testing.T) {
	e := newEnv(t)
	files(t, filepath.Join(e.root, DefaultReplayDir), map[string]string{
		"TASK-1/1/files/calc/add.go": "package calc\n",
		"TASK-1/1/result.md":         "Done.\n\n" + recordedResult,
		"TASK-1/1/marker":            "done",
	})
	a, err := Lookup(Replay, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(StartOptions{
		Command: a.Command(ModelOptions{Model: "none"}),
		Dir:     e.root,
		Prompt:  "prompt",
		Env:     e.vars(),
		LogPath: e.log(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(10 * time.Millisecond)
	waitDone(t, p)
	if p.ExitCode() != 0 {
		t.Fatalf("exit code %d; log:\n%s", p.ExitCode(), readFile(t, e.log()))
	}
	text, err := a.FinalText([]byte(p.Stdout()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseResult(text, RoleImplementer); err != nil {
		t.Errorf("ParseResult: %v", err)
	}
	if readFile(t, filepath.Join(e.root, "calc", "add.go")) != "package calc\n" {
		t.Error("calc/add.go not replayed")
	}
	if m, err := markers.Find(e.markerDir, "TASK-1"); m == nil || err != nil {
		t.Errorf("marker = %v, %v", m, err)
	}
}
