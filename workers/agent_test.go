package workers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/gate"
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
	// The go command the sandbox asks for its toolchain's folders writes telemetry in the
	// configuration folder, from a process that may outlive it: kept where it was, out of
	// the home this test removes.
	if cfg, err := os.UserConfigDir(); err == nil {
		t.Setenv("XDG_CONFIG_HOME", cfg)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	ws := Workspace{Dir: t.TempDir(), Markers: t.TempDir(), Objects: t.TempDir(), Attempt: t.TempDir()}
	sb := sandboxOf(Job{Attempt: AttemptID{"TASK-001", 1}, Agent: "exec", Argv: []string{"true"}}, ws, gate.Toolchains(os.Environ()))
	if !slices.ContainsFunc(sb.ReadOnly, func(p string) bool { return strings.HasPrefix(p, filepath.Join(home, ".cargo")) }) {
		t.Errorf("the worker's cargo under its home is not readable in the agent's sandbox: %v", sb.ReadOnly)
	}
	if !slices.Contains(sb.ReadOnly, ws.Objects) {
		t.Errorf("the cache's objects are not readable: %v", sb.ReadOnly)
	}
}

// TestAgentStartsInTheProject: a job of a project in a sub-folder of its repository starts
// its agent there, with ORCHESTRATOR_ROOT naming it, as the watch's agents start in the
// project's folder of their worktree; a folder outside the checkout is refused.
func TestAgentStartsInTheProject(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "services", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	attempt := t.TempDir()
	ws := Workspace{Dir: dir, Markers: t.TempDir(), Log: filepath.Join(attempt, "agent.log"), Attempt: attempt, Worker: "w1"}
	run := AgentRunner(AgentOptions{})
	job := Job{Attempt: AttemptID{"TASK-001", 1}, Agent: "exec", Sub: "services/app",
		Argv: []string{"sh", "-c", `pwd > where.txt; echo "$ORCHESTRATOR_ROOT" >> where.txt`}}
	res, err := run(context.Background(), job, ws)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	app := filepath.Join(dir, "services", "app")
	b, err := os.ReadFile(filepath.Join(app, "where.txt"))
	if err != nil || string(b) != app+"\n"+app+"\n" {
		t.Errorf("the agent ran in, and was told, %q (%v); want %s twice", b, err, app)
	}
	job.Sub = "../elsewhere"
	if _, err := run(context.Background(), job, ws); err == nil {
		t.Error("a project folder outside the checkout was taken")
	}
}
