package workers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/gate"
)

// AgentOptions say how AgentRunner runs agents.
type AgentOptions struct {
	// Sandbox runs each agent in bubblewrap (agents.Sandbox): its checkout writable, its
	// marker folder, a private home and state folder, the worker's cache hidden, its own
	// git folder borrowing the cache's objects. Without it the agent runs as the worker.
	Sandbox bool
	// Grace is how long a stopped agent has between SIGTERM and SIGKILL (default 5s).
	Grace time.Duration
}

// AgentRunner returns the RunFunc that runs a job's agent as the watch loop runs one
// locally: agents.Start in the checkout, the prompt on standard input, its output in the
// log, the job's environment with ORCHESTRATOR_TASK_ID, ORCHESTRATOR_MARKER_DIR,
// ORCHESTRATOR_ATTEMPT_DIR and ORCHESTRATOR_ROOT (and ORCHESTRATOR_WORKER), and stopped,
// its whole process group, when ctx ends.
//
// The sandbox is agents.Sandbox with the worker's folders and the worker's toolchains
// (gate.Toolchains), as the watch's agents get the watch's. What the watch loop adds from
// its configuration (sandbox_writable and sandbox_readable, paths of the watch's machine)
// and Claude Code's sessions from attempt to attempt are not here.
func AgentRunner(o AgentOptions) RunFunc {
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	// The worker's toolchains, found once (`go env` is a process of its own): the worker's
	// environment does not change while it runs.
	toolchains := sync.OnceValue(func() []string { return gate.Toolchains(os.Environ()) })
	return func(ctx context.Context, job Job, ws Workspace) (RunResult, error) {
		root, err := projectIn(ws.Dir, job.Sub)
		if err != nil {
			return RunResult{}, err
		}
		env := append(os.Environ(), job.Env...)
		env = append(env,
			"ORCHESTRATOR_TASK_ID="+job.Attempt.Task,
			"ORCHESTRATOR_MARKER_DIR="+ws.Markers,
			"ORCHESTRATOR_ATTEMPT_DIR="+ws.Attempt,
			"ORCHESTRATOR_ROOT="+root,
			"ORCHESTRATOR_WORKER="+ws.Worker,
		)
		var sb *agents.Sandbox
		if o.Sandbox {
			sb = sandboxOf(job, ws, toolchains())
		}
		p, err := agents.Start(agents.StartOptions{Command: job.Argv, Dir: root, Prompt: job.Prompt, Env: env, LogPath: ws.Log, Sandbox: sb})
		if err != nil {
			return RunResult{}, fmt.Errorf("start %s: %w", strings.Join(job.Argv, " "), err)
		}
		stopped := ""
		select {
		case <-p.Done():
		case <-ctx.Done():
			stopped = "timeout"
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				stopped = "worker stopped"
			}
		}
		// Whatever the agent left in its group ends with it.
		p.Stop(o.Grace)
		return RunResult{ExitCode: p.ExitCode(), Stdout: p.Stdout(), Stopped: stopped}, nil
	}
}

// projectIn returns the project's folder sub of the checkout dir; a sub that leaves the
// checkout is an error.
func projectIn(dir, sub string) (string, error) {
	if sub == "" || sub == "." {
		return dir, nil
	}
	clean := filepath.Clean(filepath.FromSlash(sub))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("the job's project folder %q is not inside its checkout", sub)
	}
	return filepath.Join(dir, clean), nil
}

// sandboxOf is the agent's jail on a worker.
func sandboxOf(job Job, ws Workspace, toolchains []string) *agents.Sandbox {
	var pass []string
	for _, kv := range job.Env {
		if name, _, ok := strings.Cut(kv, "="); ok {
			pass = append(pass, name)
		}
	}
	sb := &agents.Sandbox{
		Dir:      ws.Dir,
		Writable: []string{ws.Markers},
		// The worker's toolchains under its home folder (Go's module cache, pyenv's, rustup's),
		// which the hidden home would hide, as the watch's agents see the watch's.
		ReadOnly: append([]string{ws.Objects}, toolchains...),
		Hide:     ws.Hide,
		Program:  agents.ProgramOf(job.Agent, job.Argv),
		Pass:     pass,
		Config:   filepath.Join(ws.Attempt, "agent-state"),
		// Its index starts from the worker's copy of the checkout's, whose file times spare
		// reading every file (agents.OwnGit.Index).
		Git: &agents.OwnGit{Dir: filepath.Join(ws.Attempt, "agent-git"), Objects: ws.Objects, Base: job.Base, Index: filepath.Join(ws.Attempt, "index"), IndexIsBase: true},
	}
	if home, err := os.UserHomeDir(); err == nil {
		sb.Home = home
	}
	return sb
}
