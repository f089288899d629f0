package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runMain runs the orchestrator's Main as the binary would, in root, and returns its exit
// code, standard output and standard error.
func runMain(t *testing.T, root string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"--dir", root}, args...), nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// onlyOnPath makes PATH a new folder that holds only stand-ins for programs, and the shell
// and true (for a test command), and returns it.
func onlyOnPath(t *testing.T, programs ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, p := range []string{"sh", "true"} {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bin, p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range programs {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	return bin
}

// TestValidateAgreesWithWatch checks that validate reports what watch refuses to start
// with. The cheat: a queue whose tasks use the built-in default agent, claude, on a machine
// without it: watch refuses to start (exit 2), and validate, which used to pass it, warns
// with the same words at config.yaml (exit 0: a program missing here is a warning), and
// nothing is written. The honest twin: with claude installed, validate says nothing.
func TestValidateAgreesWithWatch(t *testing.T) {
	root := t.TempDir()
	l := filepath.Join(root, ".orchestrator")
	if err := os.MkdirAll(l, 0o755); err != nil {
		t.Fatal(err)
	}
	queue := "# Task Queue\n\n### TASK-001: Docs\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | docs |\n"
	for name, text := range map[string]string{"task_queue.md": queue, "config.yaml": "jobs: 1\n"} {
		if err := os.WriteFile(filepath.Join(l, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const refusal = `agent claude: program "claude" is not installed (not on PATH)`

	onlyOnPath(t)
	code, _, errOut := runMain(t, root, "watch", "--once")
	if code != exitUsage || !strings.Contains(errOut, refusal) {
		t.Fatalf("watch --once: exit %d, stderr %q; want exit 2 and %q", code, errOut, refusal)
	}
	code, out, errOut := runMain(t, root, "validate")
	want := filepath.Join(l, "config.yaml") + ":1: warning: " + refusal + "\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("validate: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, out, errOut, want)
	}
	if got, _ := os.ReadFile(filepath.Join(l, "task_queue.md")); string(got) != queue {
		t.Errorf("the task queue changed:\n%s", got)
	}
	if entries, _ := os.ReadDir(l); len(entries) != 2 {
		t.Errorf("validate and a refused watch wrote files: %v", entries)
	}

	onlyOnPath(t, "claude")
	if code, out, errOut := runMain(t, root, "validate"); code != 0 || out != "" || errOut != "" {
		t.Errorf("validate with claude installed: exit %d, stdout %q, stderr %q; want nothing", code, out, errOut)
	}
}

// TestInitNamesInstalledAgent checks that init's config.yaml names the agent program found on
// PATH (claude, else codex), or an exec agent when neither is there, and that its example
// tasks, taken out of their comment, are a queue that validate passes with that agent
// installed and that watch refuses, as validate warns, without it.
func TestInitNamesInstalledAgent(t *testing.T) {
	for _, tt := range []struct {
		name      string
		programs  []string
		agentLine string
		missing   string // validate's warning without the program, after the config's path
	}{
		{"claude", []string{"claude", "codex"}, "agent: claude ", `:7: warning: agent claude: program "claude" is not installed (not on PATH)`},
		{"codex", []string{"codex"}, "agent: codex ", `:7: warning: agent codex: program "codex" is not installed (not on PATH)`},
		{"neither", nil, "agent: my-agent ", `:11: warning: agent my-agent: program "./scripts/agent.sh" does not exist`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			onlyOnPath(t, tt.programs...)
			if code, _, errOut := runMain(t, root, "init"); code != 0 {
				t.Fatalf("init: exit %d: %s", code, errOut)
			}
			cfgPath := filepath.Join(root, ".orchestrator", "config.yaml")
			cfg, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains("\n"+string(cfg), "\n"+tt.agentLine) {
				t.Fatalf("config.yaml has no line %q:\n%s", tt.agentLine, cfg)
			}
			// The example, out of its comment, with a test command.
			qPath := filepath.Join(root, ".orchestrator", "task_queue.md")
			q, err := os.ReadFile(qPath)
			if err != nil {
				t.Fatal(err)
			}
			text := string(q)
			open, start, end := strings.Index(text, "<!-- Example"), strings.Index(text, "\n### TASK-T01"), strings.LastIndex(text, "-->")
			if open < 0 || start < open || end < start {
				t.Fatalf("no example tasks in the task queue:\n%s", text)
			}
			text = strings.Replace(text[:open], "| Test | - |", "| Test | true |", 1) + text[start:end]
			if err := os.WriteFile(qPath, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.programs == nil {
				// The exec agent's program is the person's to write: until then validate
				// warns and watch refuses, with the same words.
				code, out, _ := runMain(t, root, "validate")
				if want := cfgPath + tt.missing + "\n"; code != 0 || out != want {
					t.Fatalf("validate: exit %d\n%s\nwant exit 0 and\n%s", code, out, want)
				}
				code, _, errOut := runMain(t, root, "watch", "--once")
				if code != exitUsage || !strings.Contains(errOut, strings.TrimPrefix(tt.missing, ":11: warning: ")) {
					t.Fatalf("watch --once: exit %d: %s", code, errOut)
				}
				if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "scripts", "agent.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := runMain(t, root, "validate")
			if code != 0 || out != "" || errOut != "" {
				t.Fatalf("validate of the example: exit %d, stdout %q, stderr %q; want nothing", code, out, errOut)
			}
			code, out, _ = runMain(t, root, "status")
			if code != 0 || !strings.Contains(out, "2 tasks: 2 pending") {
				t.Errorf("status of the example: exit %d\n%s", code, out)
			}
			if tt.programs != nil {
				onlyOnPath(t)
				code, out, _ := runMain(t, root, "validate")
				if want := cfgPath + tt.missing + "\n"; code != 0 || out != want {
					t.Errorf("validate without %s: exit %d\n%s\nwant exit 0 and\n%s", tt.name, code, out, want)
				}
			}
		})
	}
}
