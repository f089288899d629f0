package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
)

// roles maps task kinds to the role an agent's result block must name (SPEC §10.3).
var roles = map[queue.TaskKind]string{
	queue.KindTest:   "test-writer",
	queue.KindVerify: "verifier",
	queue.KindBuild:  "implementer",
	queue.KindQA:     "qa",
}

// gate is what the day-one gate ran and decided: a claim is never accepted on its word.
type gate struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Want     string `json:"want"` // "exit 0" or "exit non-zero"
	Pass     bool   `json:"pass"`
	Output   string `json:"-"`
}

// finish decides an attempt whose agent has ended: it reads the claim (marker, or result
// block in the agent's final message), checks it with the gate, records the attempt and
// moves the task's Status with compare-and-set.
func (r *runner) finish(ctx context.Context, a *attempt) error {
	delete(r.running, a.id)
	if a.timeout != nil {
		a.timeout.Stop()
	}
	if a.graceTimer != nil {
		a.graceTimer.Stop()
	}
	l := r.o.Layout
	defer os.Remove(filepath.Join(l.Markers(), a.id+".kill"))
	// The agent has exited, but what it started in its process group may still run: end
	// it before judging, so that nothing the agent left changes files under the gate.
	a.stop(r.o.Config.Grace.Duration)
	switch a.stopReason {
	case reasonSignal:
		return nil // interrupt puts the task back to pending
	case reasonPerson:
		a.record(result{Outcome: "stopped", Reason: "a person changed the task's status"})
		if m, _ := markers.Find(l.Markers(), a.id); m != nil {
			_ = m.Consume(a.dir)
		}
		return nil
	}
	res, log := r.decide(a)
	writeGateLog(a.dir, log)
	a.record(res)
	status := queue.StatusFailed
	if res.Outcome == "completed" {
		status = queue.StatusCompleted
	}
	// Record the outcome and start what it made ready in one write of the queue.
	doc, picks, err := r.advance(ctx, &transition{id: a.id, to: status})
	if err != nil {
		return err
	}
	if m, _ := markers.Find(l.Markers(), a.id); m != nil {
		if err := m.Consume(a.dir); err != nil {
			r.report.event(a.id, "warning", "marker: "+err.Error())
		}
	}
	if status == queue.StatusCompleted {
		r.report.event(a.id, "completed", fmt.Sprintf("attempt %d: %s", a.n, res.Reason))
	} else {
		r.report.event(a.id, "failed", fmt.Sprintf("attempt %d: %s", a.n, res.Reason))
	}
	return r.launchAll(ctx, doc, picks)
}

// decide reads the claim and runs the gate. It returns the result and the text of gate.log.
func (r *runner) decide(a *attempt) (result, string) {
	var log strings.Builder
	fmt.Fprintf(&log, "task %s attempt %d (%s task, agent %s)\n", a.id, a.n, a.task.Kind, a.agent)
	res := result{Outcome: "failed"}
	if a.proc != nil {
		code := a.proc.ExitCode()
		res.ExitCode = &code
		fmt.Fprintf(&log, "agent exit code: %d\n", code)
	}
	claim, claimErr := r.claim(a)
	res.Claim = claim
	fmt.Fprintf(&log, "claim: %s\n", orNone(claim))
	switch {
	case claimErr != nil:
		res.Reason = "format_violation: " + claimErr.Error()
	case claim == "" && a.stopReason == reasonTimeout:
		res.Reason = fmt.Sprintf("timeout: no marker after %v; the process group was killed", r.o.Config.TaskTimeout.Duration)
	case claim == "" && a.proc == nil:
		res.Reason = "agent_lost: the agent's process is gone and left no marker"
	case claim == "":
		res.Reason = "no_marker: the agent exited without a marker or a result block"
	case claim == "failed":
		res.Reason = "the agent reported failure"
	default:
		g := r.runGate(a)
		res.Gate = &g
		fmt.Fprintf(&log, "gate: $ %s\nexit code: %d (a %s claim passes on %s)\n", g.Command, g.ExitCode, a.task.Kind, g.Want)
		if g.Output != "" {
			log.WriteString(outputStart + g.Output)
			if !strings.HasSuffix(g.Output, "\n") {
				log.WriteByte('\n')
			}
			log.WriteString(outputEnd)
		}
		if g.Pass {
			res.Outcome = "completed"
			res.Reason = fmt.Sprintf("claim verified: %s exited %d", g.Command, g.ExitCode)
		} else {
			res.Reason = rejectReason(a.task.Kind, g)
		}
	}
	fmt.Fprintf(&log, "decision: %s: %s\n", res.Outcome, res.Reason)
	return res, log.String()
}

func rejectReason(k queue.TaskKind, g gate) string {
	switch {
	case g.Command == "":
		return "claim rejected: the task has no test command, so the claim cannot be verified"
	case k == queue.KindTest:
		return fmt.Sprintf("claim rejected: the tests already pass (%s exited 0); RED needs failing tests", g.Command)
	case g.ExitCode < 0:
		return fmt.Sprintf("claim rejected: %s did not finish", g.Command)
	}
	return fmt.Sprintf("claim rejected: %s exited %d", g.Command, g.ExitCode)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// claim returns "done", "failed" or "" (no claim). A result block, in the marker or in the
// agent's final message, is parsed strictly: a malformed block, two blocks or a wrong role
// is a format violation even when a marker says done. The marker's word decides the claim;
// without a marker, the block's state does.
func (r *runner) claim(a *attempt) (string, error) {
	role := roles[a.task.Kind]
	var block *agents.Result
	if a.proc != nil && a.adapter != nil {
		if text, err := a.adapter.FinalText([]byte(a.proc.Stdout())); err == nil && strings.Contains(text, "```tdd-result") {
			res, err := agents.ParseResult(text, role)
			if err != nil {
				return "", err
			}
			block = res
		}
	}
	if m, err := markers.Find(r.o.Layout.Markers(), a.id); err == nil && m != nil {
		if bytes.Contains(m.Body, []byte("```tdd-result")) {
			res, err := agents.ParseResult(string(m.Body), role)
			if err != nil {
				return "", err
			}
			return stateClaim(res), nil
		}
		return m.Claim(), nil
	}
	if block != nil {
		return stateClaim(block), nil
	}
	return "", nil
}

// stateClaim turns a result block's state into a claim: only success claims done.
func stateClaim(res *agents.Result) string {
	if res.State == agents.StateSuccess {
		return "done"
	}
	return "failed"
}

// testCommand returns the command that checks a task: its Test Command, else the project's
// test command from config, else the task queue's Project Commands table.
func (r *runner) testCommand(tasks *queue.Doc, rec *queue.Record) string {
	if v := tasks.Get(rec, "Test Command"); !queue.IsEmpty(v) {
		return strings.TrimSpace(v)
	}
	if r.o.Config != nil && r.o.Config.Commands.Test != "" {
		return r.o.Config.Commands.Test
	}
	if t, ok := tasks.SectionTable("Project Commands", "Command"); ok {
		for _, row := range t.Rows {
			if strings.EqualFold(tasks.CellText(row, 0), "Test") {
				if v := tasks.CellText(row, 1); !queue.IsEmpty(v) {
					return v
				}
			}
		}
	}
	return ""
}

// runGate runs the task's test command itself (SPEC §7, day one): a BUILD, VERIFY or QA claim
// passes only if it exits 0, a TEST claim only if it exits non-zero.
func (r *runner) runGate(a *attempt) gate {
	g := gate{Want: "exit 0", Command: a.testCmd}
	if a.task.Kind == queue.KindTest {
		g.Want = "exit non-zero"
	}
	if g.Command == "" {
		g.ExitCode = -1
		return g
	}
	g.ExitCode, g.Output = runShell(r.o.Layout.Root, g.Command, r.o.Config.TaskTimeout.Duration)
	if a.task.Kind == queue.KindTest {
		g.Pass = g.ExitCode > 0
	} else {
		g.Pass = g.ExitCode == 0
	}
	return g
}

// maxOutput caps the gate output kept in memory and in gate.log.
const maxOutput = 256 << 10

// runShell runs a test command line with sh -c in dir, in its own process group, and returns
// its exit code (-1 if it did not finish in time) and its combined output. Test commands are
// shell command lines, as in a Makefile; agents, by contrast, are never run through a shell.
func runShell(dir, command string, timeout time.Duration) (int, string) {
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return -1, err.Error()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() < 0 {
				return -1, out.String()
			}
			return ee.ExitCode(), out.String()
		}
		if err != nil {
			return -1, out.String() + err.Error()
		}
		return 0, out.String()
	case <-time.After(timeout):
		agents.StopGroup(cmd.Process.Pid, 2*time.Second)
		<-done
		return -1, out.String() + "\n(timed out after " + timeout.String() + ")\n"
	}
}

// capped is a buffer that keeps the first maxOutput bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func writeGateLog(dir, text string) {
	_ = os.WriteFile(filepath.Join(dir, "gate.log"), []byte(text), 0o644)
}

// recoverAttempts handles tasks left in_progress by an orchestrator that died (SPEC §7.1):
// an agent that still runs is adopted and waited for; a finished decision is re-applied; an
// agent that is gone is decided from its marker, or counts as lost.
func (r *runner) recoverAttempts(ctx context.Context) error {
	r.recovering = true
	defer func() { r.recovering = false }()
	tasks, err := queue.Load(r.o.Layout.Tasks())
	if err != nil {
		return err
	}
	for _, t := range tasks.Tasks() {
		if t.Status != queue.StatusInProgress {
			continue
		}
		n := lastAttempt(r.o.Layout.Runs(), t.ID)
		dir := filepath.Join(r.o.Layout.Runs(), t.ID, strconv.Itoa(n))
		a := &attempt{id: t.ID, n: n, dir: dir, task: t}
		prev, _ := readResult(dir)
		if n > 0 && prev.PID <= 0 {
			// We may have died between starting the agent and recording it: look for
			// it by the attempt folder in its environment.
			if pid, start, ok := agents.FindByEnv("ORCHESTRATOR_ATTEMPT_DIR", dir); ok {
				prev.PID, prev.StartTime, prev.Started = pid, start, time.Now()
			}
		}
		if n == 0 || prev.PID <= 0 {
			// The agent never started: no attempt was used.
			if n > 0 {
				a.record(result{Outcome: "not_started", Reason: "the orchestrator stopped before the agent started"})
			}
			r.report.event(t.ID, "recovered", "never started; back to pending")
			if _, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusPending); err != nil {
				return err
			}
			continue
		}
		a.agent, a.argv, a.pid, a.start, a.started = prev.Agent, prev.Command, prev.PID, prev.StartTime, prev.Started
		if rec, ok := tasks.Record(t.ID); ok {
			a.testCmd = r.testCommand(tasks, rec)
		}
		r.started[t.ID] = true
		if prev.Outcome == "completed" || prev.Outcome == "failed" {
			// The decision was made and recorded; only the status write was lost.
			status := queue.StatusFailed
			if prev.Outcome == "completed" {
				status = queue.StatusCompleted
			}
			r.report.event(t.ID, "recovered", fmt.Sprintf("attempt %d was decided (%s); recording it", n, prev.Outcome))
			if _, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, status); err != nil {
				return err
			}
			continue
		}
		af := prev
		if agents.Alive(af.PID, af.StartTime) {
			r.report.event(t.ID, "adopted", fmt.Sprintf("attempt %d's agent (pid %d) still runs; waiting for it", n, af.PID))
			r.track(a, agents.WaitGone(af.PID, af.StartTime, 20*time.Millisecond))
			continue
		}
		r.report.event(t.ID, "recovered", fmt.Sprintf("attempt %d's agent (pid %d) is gone", n, af.PID))
		r.attempts++
		if err := r.finish(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

func readResult(dir string) (result, bool) {
	var res result
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil || json.Unmarshal(b, &res) != nil {
		return res, false
	}
	return res, true
}
