package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
)

// Why an attempt's agent was stopped before it ended on its own.
const (
	reasonTimeout     = "timeout"
	reasonAfterMarker = "after_marker" // it lingered past the grace period after its marker
	reasonPerson      = "person"       // a person set the task to another status
	reasonSignal      = "signal"       // the orchestrator was interrupted
)

// stop ends the attempt's whole process group: SIGTERM, then SIGKILL after grace. An
// adopted agent (not our child) is signalled only as far as it is proved to be the
// attempt's: see agents.StopAdopted.
//
// Either way, a descendant that left the agent's process group (setsid, a double fork) is
// found by the attempt folder in its environment and ended too, so that nothing the agent
// started changes files after it, or under the gate.
func (a *attempt) stop(grace time.Duration) {
	if a.remote != nil {
		// Its agent runs on a worker: the wait for its outcome ends, and the worker's
		// own timeout ends the agent there.
		a.remote.abandon()
		return
	}
	start := a.start
	if a.proc != nil {
		a.proc.Stop(grace)
	} else if !a.adopted {
		start = 0 // gone before we knew it: whatever carries its attempt folder is its
	}
	agents.StopAdopted(a.pid, start, "ORCHESTRATOR_ATTEMPT_DIR", a.dir, grace)
}

// finalText returns the agent's final message as its program reports it: from its output,
// or for an agent of an earlier run, from its log in the attempt folder. An agent program's own error
// (an API error, out of turns) is returned as an *agents.AgentError.
func (a *attempt) finalText() (string, error) {
	if a.adapter == nil {
		return "", nil
	}
	if a.proc != nil {
		return a.adapter.FinalText([]byte(a.proc.Stdout()))
	}
	if a.remote != nil && a.remote.arrived {
		return a.adapter.FinalText([]byte(a.remote.stdout))
	}
	// An agent of an earlier run: what it wrote is in its log.
	return a.adapter.FinalText([]byte(tail(filepath.Join(a.mirror, "agent.log"), agents.MaxStdout)))
}

// exitCode returns the exit code of the attempt's agent, if it is known: a local agent's,
// or one that ran on a worker, from its outcome.
func (a *attempt) exitCode() (int, bool) {
	switch {
	case a.proc != nil:
		return a.proc.ExitCode(), true
	case a.remote != nil && a.remote.arrived:
		return a.remote.exit, true
	}
	return 0, false
}

// lost reports whether nothing is known of how the attempt's agent ended: it was neither
// our child, nor adopted and waited for, nor did its outcome come from a worker.
func (a *attempt) lost() bool {
	return a.proc == nil && !a.adopted && (a.remote == nil || !a.remote.arrived)
}

// tail returns the last max bytes of the file at path ("" if it cannot be read).
func tail(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-limit, 0)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	return string(b[:n])
}

// launch begins an attempt of task t, whose Status advance has just set to in_progress:
// the attempt folder, its prompt, and the agent process.
func (r *runner) launch(ctx context.Context, tasks *queue.Doc, t queue.Task) error {
	l := r.o.Layout
	r.started[t.ID] = true
	if down := unreachableServices(tasks.Get(t.Record, "Required Services"), r.o.Config.Services); len(down) > 0 {
		// Not the agent's failure, and no attempt is used: a person starts the service
		// and sets the task back to pending.
		why := "required service unavailable: " + strings.Join(down, "; ")
		r.report.event(t.ID, "blocked", "no attempt used: "+why)
		_, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusBlocked, queue.SetField{ID: t.ID, Field: "Blocked-Reason", Value: why})
		return err
	}
	if w, ok := r.waitingCandidate(ctx, t.ID); ok {
		// Verified work that waited for the person's uncommitted changes: it lands with no
		// new agent run (SPEC §7.7), and spends nothing a budget counts.
		return r.landWaiting(ctx, tasks, t, w)
	}
	if why := r.overBudget(tasks, t); why != "" {
		return r.haltForBudget(ctx, tasks, t, why) // before the attempt, which would pass it
	}
	n := nextAttempt(r.runs, t.ID)
	a := &attempt{id: t.ID, n: n, dir: filepath.Join(r.runs, t.ID, strconv.Itoa(n)), mirror: filepath.Join(l.Runs(), t.ID, strconv.Itoa(n)), task: t, started: time.Now()}
	for _, d := range []string{a.dir, a.mirror} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	r.attempts++
	a.readTask(r.o.Config, tasks)
	fail := func(reason, detail string) error {
		r.releaseSlot(a)
		a.write("gate.log", []byte("attempt could not start: "+detail+"\n"))
		res := result{Outcome: "failed", Reason: reason}
		a.record(res)
		ev := r.fieldsOf(a, res)
		r.report.eventWith(t.ID, "failed", reasonLine(n, "", "could not start ("+reason+"): "+detail, "", ev.GateLog), ev)
		_, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusFailed)
		return err
	}
	// The agent's desk: a checkout of the integration head, all verified work and nothing
	// of any rejected attempt.
	if err := r.takeSlot(ctx, a); err != nil {
		return fail("worktree", err.Error())
	}
	if err := r.seedReemit(ctx, a); err != nil {
		return fail("worktree", err.Error())
	}
	// The repository's own configuration as the agent finds it: compared when it ends.
	config, err := r.repo.ConfigPrint(ctx)
	if err != nil {
		return fail("worktree", err.Error())
	}
	a.config = config
	root := r.projectDir(a.slot.Dir)
	prompt, err := renderPrompt(l, place{root: root, runs: r.runs, feedback: r.o.Config.RetryFeedback == "review"}, tasks, t, a.testCmd, n)
	if err != nil {
		return fail("prompt", err.Error())
	}
	a.write("prompt.md", []byte(prompt))
	if err := markers.Clear(l.Markers(), t.ID); err != nil {
		return err
	}
	a.agent = tasks.Get(t.Record, "Agent")
	if queue.IsEmpty(a.agent) {
		a.agent = r.o.Config.AgentFor(n)
	}
	argv, adapter, err := r.command(a.agent, tasks.Get(t.Record, "Complexity"))
	if err != nil {
		return fail("agent", err.Error())
	}
	if prevRes, ok := readResult(filepath.Join(r.runs, t.ID, strconv.Itoa(n-1))); ok && a.cycle != nil && reemitDue(r.runs, t.ID, n) && prevRes.Slot == a.slot.Name {
		// The re-emit prompt of mode D reaches the same session where the program can
		// resume one (in the same worktree folder: Claude Code keeps its sessions by
		// folder), so that the agent has the message it is asked to re-emit. Elsewhere it
		// starts afresh with that prompt alone.
		prev := []byte(tail(filepath.Join(l.Runs(), t.ID, strconv.Itoa(n-1), "agent.log"), agents.MaxStdout))
		if resume := agents.ResumeCommand(adapter.Name(), argv, prev); resume != nil {
			argv = resume
		}
	}
	a.adapter, a.argv = adapter, argv
	// Before the agent starts, the record says where it works: a restart after a crash
	// between here and the agent's first breath finds its worktree.
	a.record(result{Outcome: "starting"})
	markerDir, err := r.agentMarkers(a)
	if err != nil {
		return fail("agent", err.Error())
	}
	if r.remote != nil {
		// Its agent runs on a worker (SPEC §18); everything above, and every stage after
		// its run, is the same as for a local agent.
		return r.launchRemote(ctx, a, prompt, markerDir)
	}
	env := append(os.Environ(),
		"ORCHESTRATOR_TASK_ID="+t.ID,
		"ORCHESTRATOR_MARKER_DIR="+markerDir,
		"ORCHESTRATOR_ATTEMPT_DIR="+a.dir,
		"ORCHESTRATOR_ROOT="+root,
	)
	p, err := agents.Start(agents.StartOptions{
		// The log is for people to follow, in the readable copy; what the gate trusts is
		// not in it (a result block is a claim, which the gate checks).
		Command: argv, Dir: root, Prompt: prompt, Env: env, LogPath: filepath.Join(a.mirror, "agent.log"),
		Sandbox: r.sandbox(a, a.agent, argv, a.slot.Dir, a.dir, markerDir),
	})
	if err != nil {
		return fail("agent", fmt.Sprintf("start %s: %v", strings.Join(argv, " "), err))
	}
	a.proc, a.pid, a.start = p, p.PID(), p.StartTime()
	a.record(result{Outcome: "running"})
	r.report.eventWith(t.ID, "started", fmt.Sprintf("attempt %d, %s task, agent %s (pid %d)", n, t.Kind, a.agent, a.pid), eventFields{Attempt: n, Agent: a.agent})
	r.track(a, p.Done())
	return nil
}

// track makes the loop hear of the attempt's end and of its timeout.
func (r *runner) track(a *attempt, done <-chan struct{}) {
	r.running[a.id] = a
	// While the agent runs, the files its decision writes are made (makeAhead), and the
	// one its landing does.
	a.ahead = make(chan struct{})
	go func() {
		defer close(a.ahead)
		a.makeAhead()
		if r.repo != nil {
			r.repo.MarkAhead(a.id)
		}
	}()
	left := r.o.Config.TaskTimeout.Duration - time.Since(a.started)
	a.timeout = time.AfterFunc(max(left, 0), func() { r.timeouts <- a })
	go func() {
		<-done
		r.finished <- a
	}()
	// A marker written before the watch on the folder saw it (or while we were down).
	r.markerSeen(a.id)
}

// command builds the agent's argument vector.
func (r *runner) command(name, complexity string) ([]string, agents.Adapter, error) {
	if _, configured := r.o.Config.Agents[agents.Replay]; name == agents.Replay && !configured {
		exe := r.o.Executable
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				return nil, nil, err
			}
		}
		dir := r.o.Config.ReplayDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.o.Layout.Root, dir)
		}
		ad := agents.NewReplay(exe, dir)
		return ad.Command(agents.ModelOptions{}), ad, nil
	}
	configured := map[string][]string{}
	for k, v := range r.o.Config.Agents {
		configured[k] = v.Command
	}
	ad, err := agents.Lookup(name, configured)
	if err != nil {
		return nil, nil, err
	}
	argv := ad.Command(agents.ModelOptions{Model: r.o.Config.Model(strings.ToLower(strings.TrimSpace(complexity))), MaxTurns: r.o.Config.MaxTurns})
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("agent %s has no command", name)
	}
	return argv, ad, nil
}

// endRun ends the run stage of an attempt whose agent has exited: its timers, what it left
// running, its private folders, its usage; then it checks what the run may have changed
// that stops everything (the repository's configuration, a rewritten history). over is
// true when the attempt's path ends here (an interrupt, a person's status change, a
// configuration change), with what the loop should return.
func (r *runner) endRun(ctx context.Context, a *attempt) (over bool, err error) {
	delete(r.running, a.id)
	if a.timeout != nil {
		a.timeout.Stop()
	}
	if a.graceTimer != nil {
		a.graceTimer.Stop()
	}
	l := r.o.Layout
	if kill, err := markers.Path(l.Markers(), a.id, markers.Kill); err == nil {
		defer os.Remove(kill)
	}
	// The agent has exited, but what it started in its process group may still run: end
	// it before judging, so that nothing the agent left changes files under the gate. So
	// is what left its group and lost its parent (ours now, as the child subreaper), found
	// among our children once no gate of the merge queue runs one of its own.
	a.stop(r.o.Config.StopGrace.Duration)
	r.reapWhenIdle()
	// An agent that ran on a worker leaves its work here now, as a local one would have.
	r.endRemote(ctx, a)
	r.endPrivate(a)
	r.readAgentUsage(a)
	if a.stopReason != reasonSignal {
		// The agent is gone: what it did to the repository's own configuration (a filter
		// driver, a hook) stops the run before any git command of ours meets it.
		if err := r.checkConfig(ctx, a, "its agent's run"); err != nil {
			return true, r.stopForConfig(a, err)
		}
	}
	switch a.stopReason {
	case reasonSignal:
		return true, nil // interrupt puts the task back to pending
	case reasonPerson:
		a.record(result{Outcome: "stopped", Reason: "a person changed the task's status"})
		r.releaseSlot(a)
		_ = r.fileAway(a)
		// The person's edit may have made other tasks ready (or left them so).
		return true, r.schedule(ctx)
	}
	// A person may have reset the integration branch while the agent worked: the gate
	// judges against a baseline of the history the candidate lands on (SPEC §7.5).
	if err := r.followHistory(ctx); err != nil {
		return true, r.stopForConfig(a, err)
	}
	return false, nil
}
