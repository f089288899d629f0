package watch

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/queue"
)

// TestPreflight checks that every agent that cannot start is reported before anything is
// launched, each problem at the line that names the agent: a task's Agent field, or the
// config.yaml line of agent, ladder or the agent's command.
func TestPreflight(t *testing.T) {
	// A PATH that holds only a "present" program: "claude" and "absent" are not installed.
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "present"), "#!/bin/sh\n", 0o755)
	t.Setenv("PATH", bin)

	task := func(id, status, agent string) string {
		s := "### " + id + "\n\n| Field | Value |\n|-------|-------|\n| Status | " + status + " |\n| Category | docs |\n"
		if agent != "" {
			s += "| Agent | " + agent + " |\n"
		}
		return s + "\n"
	}
	tests := []struct {
		name   string
		config string
		tasks  []string
		only   []string
		want   []string // the problems; $Q is the task queue, $C config.yaml
	}{
		{"all can start", "agent: replay\nagents:\n  mine: {command: [present, -x]}\n  local: {command: [./run.sh]}\n",
			[]string{task("TASK-001", "pending", "mine"), task("TASK-002", "pending", ""), task("TASK-003", "failed", "local"), task("TASK-004", "pending", "replay")}, nil, nil},
		{"unknown agent in a task", "agent: replay\n",
			[]string{task("TASK-001", "pending", ""), task("TASK-002", "pending", "nope")}, nil,
			[]string{`$Q:16: TASK-002: unknown agent "nope" (known: claude, codex, exec, replay)`}},
		{"exec without a command", "agent: replay\n",
			[]string{task("TASK-001", "blocked", "exec")}, nil,
			[]string{"$Q:9: TASK-001: agent exec has no command: give it one under agents: in config.yaml"}},
		{"program not installed", "agent: replay\nagents:\n  gone: {command: [absent]}\n  missing: {command: [./nope.sh]}\n  plain: {command: [./plain.txt]}\n",
			[]string{task("TASK-001", "pending", "gone"), task("TASK-002", "in_progress", "missing"), task("TASK-003", "halted", "plain")}, nil,
			[]string{
				`$Q:9: TASK-001: agent gone: program "absent" is not installed (not on PATH)`,
				`$Q:17: TASK-002: agent missing: program "./nope.sh" does not exist`,
				`$Q:25: TASK-003: agent plain: program "./plain.txt" is not executable`,
			}},
		{"a missing program once", "agent: replay\nagents:\n  gone: {command: [absent]}\n",
			[]string{task("TASK-001", "pending", "gone"), task("TASK-002", "pending", "nope"), task("TASK-003", "pending", "gone"), task("TASK-004", "pending", "gone")}, nil,
			[]string{
				`$Q:9: TASK-001: agent gone: program "absent" is not installed (not on PATH) (named 2 more times)`,
				`$Q:17: TASK-002: unknown agent "nope" (known: claude, codex, exec, gone, replay)`,
			}},
		{"done tasks are not checked", "agent: replay\n",
			[]string{task("TASK-001", "completed", "nope"), task("TASK-002", "skipped", "exec")}, nil, nil},
		{"only the named task", "agent: replay\n",
			[]string{task("TASK-001", "pending", "nope"), task("TASK-002", "pending", "replay")}, []string{"TASK-002"}, nil},
		{"default agent not installed", "jobs: 1\n",
			[]string{task("TASK-001", "pending", "")}, nil,
			[]string{`agent claude: program "claude" is not installed (not on PATH)`}},
		{"default agent unused", "jobs: 1\n",
			[]string{task("TASK-001", "pending", "replay")}, nil, nil},
		{"configured default agent not installed", "jobs: 1\nagent: gone\nagents:\n  gone:\n    command: [absent, '{{.Model}}']\n",
			[]string{task("TASK-001", "pending", "")}, nil,
			[]string{`$C:5: agent gone: program "absent" is not installed (not on PATH)`}},
		{"unknown default agent", "\nagent: nope\n",
			[]string{task("TASK-001", "pending", ""), task("TASK-002", "pending", "replay")}, nil,
			[]string{`$C:2: unknown agent "nope" (known: claude, codex, exec, replay)`}},
		{"unknown default agent unused", "\nagent: nope\nladder: [nope2]\n",
			[]string{task("TASK-001", "pending", "replay")}, nil, nil},
		{"ladder", "agent: replay\nladder:\n  - replay\n  - codex\n  - nope\n",
			[]string{task("TASK-001", "pending", "")}, nil,
			[]string{
				`$C:4: agent codex: program "codex" is not installed (not on PATH)`,
				`$C:5: unknown agent "nope" (known: claude, codex, exec, replay)`,
			}},
		{"one problem once", "agent: gone\nladder: [gone, gone]\nagents:\n  gone: {command: [absent]}\n",
			[]string{task("TASK-001", "pending", ""), task("TASK-002", "pending", "")}, nil,
			[]string{`$C:4: agent gone: program "absent" is not installed (not on PATH)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := queue.Layout{Root: t.TempDir()}
			writeFile(t, l.Config(), tt.config, 0o644)
			writeFile(t, l.Tasks(), "# Task Queue\n\n"+strings.Join(tt.tasks, ""), 0o644)
			writeFile(t, filepath.Join(l.Root, "run.sh"), "#!/bin/sh\n", 0o755)
			writeFile(t, filepath.Join(l.Root, "plain.txt"), "text\n", 0o644)
			cfg, err := config.Load(l.Config())
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := queue.Load(l.Tasks())
			if err != nil {
				t.Fatal(err)
			}
			err = Preflight(l, cfg, tasks, tt.only...)
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.NewReplacer("$Q", l.Tasks(), "$C", l.Config()).Replace(w))
			}
			if tt.only == nil {
				agree(t, l, cfg, tasks, err)
			}
			if len(want) == 0 {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			var pe *PreflightError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want a *PreflightError", err, err)
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// TestPreflightFlagAgent checks that an agent given by a flag is not said to be on a line
// of config.yaml.
func TestPreflightFlagAgent(t *testing.T) {
	l := queue.Layout{Root: t.TempDir()}
	writeFile(t, l.Config(), "agent: replay\n", 0o644)
	writeFile(t, l.Tasks(), "# Tasks\n\n### TASK-001\n\n| Field | Value |\n|---|---|\n| Status | pending |\n", 0o644)
	cfg, err := config.Load(l.Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agent = "nope"
	cfg.Override("agent", "ladder")
	tasks, err := queue.Load(l.Tasks())
	if err != nil {
		t.Fatal(err)
	}
	err = Preflight(l, cfg, tasks)
	if want := `unknown agent "nope" (known: claude, codex, exec, replay)`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// agree checks that validate's check (CheckStart) finds every problem that Preflight
// refused a run of all the tasks with (err, or nil): validate and watch agree on what
// cannot start.
func agree(t *testing.T, l queue.Layout, cfg *config.Config, tasks *queue.Doc, err error) {
	t.Helper()
	named, notInstalled := CheckStart(l, cfg, tasks)
	found := map[string]bool{}
	for _, p := range append(named, notInstalled...) {
		found[p.Error()] = true
	}
	var pe *PreflightError
	if err != nil && !errors.As(err, &pe) {
		t.Fatalf("Preflight: %v", err)
	}
	if pe == nil {
		return
	}
	for _, p := range pe.Problems {
		if !found[p.Error()] {
			t.Errorf("watch refuses to start with %q, which validate's CheckStart does not report (it reports %q, %q)", p, named, notInstalled)
		}
	}
}

// TestCheckStart checks validate's view: names and commands apart from programs that are
// not installed, the built-in default agent's program among them when a task would start it
// (watch refuses to start without it).
func TestCheckStart(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	tasks := "# Tasks\n\n### TASK-001\n\n| Field | Value |\n|---|---|\n| Status | pending |\n\n" +
		"### TASK-002\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Agent | codex |\n\n" +
		"### TASK-003\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Agent | exec |\n"
	for _, tt := range []struct {
		name, config        string
		named, notInstalled string
	}{
		{"built-in default", "jobs: 1\n",
			"$Q:21: TASK-003: agent exec has no command: give it one under agents: in config.yaml",
			"agent claude: program \"claude\" is not installed (not on PATH)\n" +
				`$Q:14: TASK-002: agent codex: program "codex" is not installed (not on PATH)`},
		{"unknown names unused", "agent: nope\nladder: [replay]\n",
			"$C:1: unknown agent \"nope\" (known: claude, codex, exec, replay)\n" +
				"$Q:21: TASK-003: agent exec has no command: give it one under agents: in config.yaml",
			`$Q:14: TASK-002: agent codex: program "codex" is not installed (not on PATH)`},
		{"named default", "agent: claude\n",
			"$Q:21: TASK-003: agent exec has no command: give it one under agents: in config.yaml",
			"$C:1: agent claude: program \"claude\" is not installed (not on PATH)\n" +
				`$Q:14: TASK-002: agent codex: program "codex" is not installed (not on PATH)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := queue.Layout{Root: t.TempDir()}
			writeFile(t, l.Config(), tt.config, 0o644)
			writeFile(t, l.Tasks(), tasks, 0o644)
			cfg, err := config.Load(l.Config())
			if err != nil {
				t.Fatal(err)
			}
			d, err := queue.Load(l.Tasks())
			if err != nil {
				t.Fatal(err)
			}
			named, missing := CheckStart(l, cfg, d)
			agree(t, l, cfg, d, Preflight(l, cfg, d))
			r := strings.NewReplacer("$Q", l.Tasks(), "$C", l.Config())
			if got := errors.Join(named...); got == nil || got.Error() != r.Replace(tt.named) {
				t.Errorf("named = %v\nwant %s", got, r.Replace(tt.named))
			}
			if got := errors.Join(mergeProblems(nil, missing)...); got == nil || got.Error() != r.Replace(tt.notInstalled) {
				t.Errorf("not installed = %v\nwant %s", got, r.Replace(tt.notInstalled))
			}
		})
	}
}

// TestPreflightTestCommands checks that a test command that cannot run here is reported
// before anything is launched, at the line that sets it: config commands.test, the task
// queue's Project Commands row, a task's Test Command field. A program the shell does not
// find, and pytest that the Python the command names cannot import, are problems; a
// command whose program and runner are there, and the commands of tasks that will not run
// again, are not.
func TestPreflightTestCommands(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	// A Python with no pytest: a virtual environment of Debian's, without its packages.
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("make a venv: %v\n%s", err, out)
	}
	noPytest := filepath.Join(venv, "bin", "python")
	task := func(id, status, command string) string {
		s := "### " + id + "\n\n| Field | Value |\n|-------|-------|\n| Status | " + status + " |\n| Agent | replay |\n"
		if command != "" {
			s += "| Test Command | " + command + " |\n"
		}
		return s + "\n"
	}
	project := func(command string) string {
		return "## Project Commands\n\n| Command | Value |\n|---------|-------|\n| Build | - |\n| Test | " + command + " |\n\n"
	}
	notFound := `test command "nosuchrunner ./..." cannot run: program "nosuchrunner" is not installed (not on PATH)`
	tests := []struct {
		name, config, queue string
		only                []string
		want                []string // $Q is the task queue, $C config.yaml
	}{
		{"all can run", "agent: replay\ncommands: {test: \"go test ./...\"}\n",
			task("TASK-001", "pending", "true") + task("TASK-002", "pending", "/usr/bin/python3 -m pytest -q"), nil, nil},
		{"config's command", "agent: replay\ncommands:\n  build: go build ./...\n  test: nosuchrunner ./...\n",
			task("TASK-001", "pending", ""), nil, []string{"$C:4: " + notFound}},
		{"Project Commands", "agent: replay\n", project("nosuchrunner ./...") + task("TASK-001", "pending", ""), nil,
			[]string{"$Q:8: " + notFound}},
		{"a task's Test Command", "agent: replay\n",
			task("TASK-001", "pending", "go test ./...") + task("TASK-002", "failed", "nosuchrunner ./..."), nil,
			[]string{"$Q:17: TASK-002: " + notFound}},
		{"pytest not installed for the Python named", "agent: replay\n",
			task("TASK-001", "pending", noPytest+" -m pytest -q"), nil,
			[]string{`$Q:9: TASK-001: test command "` + noPytest + ` -m pytest -q" cannot run: pytest is not installed for "` + noPytest + `": it cannot import pytest (No module named pytest)`}},
		{"one missing runner once", "agent: replay\n",
			task("TASK-001", "pending", "nosuchrunner ./a") + task("TASK-002", "pending", "nosuchrunner ./b") + task("TASK-003", "pending", "nosuchrunner ./c"), nil,
			[]string{`$Q:9: TASK-001: test command "nosuchrunner ./a" cannot run: program "nosuchrunner" is not installed (not on PATH) (and 2 more test commands)`}},
		{"done tasks are not checked", "agent: replay\n", project("nosuchrunner ./...") +
			task("TASK-001", "completed", "nosuchrunner ./x") + task("TASK-002", "skipped", "nosuchrunner ./y"), nil, nil},
		{"only the named task", "agent: replay\n",
			task("TASK-001", "pending", "nosuchrunner ./...") + task("TASK-002", "pending", "true"), []string{"TASK-002"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := queue.Layout{Root: t.TempDir()}
			writeFile(t, l.Config(), tt.config, 0o644)
			writeFile(t, l.Tasks(), "# Task Queue\n\n"+tt.queue, 0o644)
			cfg, err := config.Load(l.Config())
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := queue.Load(l.Tasks())
			if err != nil {
				t.Fatal(err)
			}
			err = Preflight(l, cfg, tasks, tt.only...)
			r := strings.NewReplacer("$Q", l.Tasks(), "$C", l.Config())
			want := r.Replace(strings.Join(tt.want, "\n"))
			if want == "" {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			var pe *PreflightError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want a *PreflightError", err, err)
			}
			if got := err.Error(); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// validate sees the same, whatever the tasks' statuses.
			if _, got := CheckStart(l, cfg, tasks); tt.only == nil && (errors.Join(got...) == nil || errors.Join(got...).Error() != want) {
				t.Errorf("CheckStart = %v\nwant %s", got, want)
			}
		})
	}
}
