package watch

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/retry"
)

// precheck is the attempt's third stage: before any of the candidate's code runs, it
// reads the agent's exit and its claim (marker, or result block in its final message) and
// decides every attempt that cannot reach the gate: a malformed claim, no claim, a claim
// of failure, a rate limit, a candidate that could not be read. It returns the result so
// far, the start of gate.log, and whether the claim of done stands for the gate to check
// (the result is then the gate's to decide).
func (r *runner) precheck(a *attempt, candErr error) (res result, log *strings.Builder, gated bool) {
	log = &strings.Builder{}
	fmt.Fprintf(log, "task %s attempt %d (%s task, agent %s)\n", a.id, a.n, a.task.Kind, a.agent)
	res = result{Outcome: "failed"}
	if code, ok := a.exitCode(); ok {
		res.ExitCode = &code
		fmt.Fprintf(log, "agent exit code: %d\n", code)
	}
	// The agent's final message, read once; or what the agent program itself reported
	// instead: an API error, or running out of turns.
	var agentErr *agents.AgentError
	text, err := a.finalText()
	if errors.As(err, &agentErr) {
		fmt.Fprintf(log, "agent error: %s\n", agentErr.Error())
	}
	a.final = text
	claim, block, claimErr := r.claim(a, text)
	claimErr = cycleClaim(a, claim, block, claimErr, agentErr)
	res.Claim = claim
	fmt.Fprintf(log, "claim: %s\n", orNone(claim))
	if block != nil && block.Message != "" {
		res.Message = block.Message
		fmt.Fprintf(log, "message: %s\n", block.Message)
	}
	// A failure without test output takes a fixed description as its primary error (SPEC
	// §8.1), never text that changes from one attempt to the next: the same failure three
	// times must halt like any other.
	switch {
	case claimErr != nil:
		res.Type, res.Reason = "format_violation", "format_violation: "+claimErr.Error()
		res.Primary = "format_violation: " + retry.Normalize(claimErr.Error())
	case r.limitedFor(a, claim) != nil:
		// Not the agent's failure, and no retry: see cost.go.
		res.Outcome, res.Type, res.Reason = "rate_limited", "rate_limit", r.holdAgent(a)
	case claim == "" && a.stopReason == reasonTimeout:
		res.Type, res.Reason = "timeout", fmt.Sprintf("timeout: no marker after %v; the process group was killed", r.o.Config.TaskTimeout.Duration)
		res.Primary = "timeout: no marker within the task timeout"
	case claim == "" && agentErr != nil && agentErr.Mode == agents.ModeOutOfTurns:
		res.Type, res.Reason = "no_marker", "out of turns (failure mode E): "+agentErr.Error()
		res.Primary = "no_marker: out of turns"
	case claim == "" && agentErr != nil:
		res.Type, res.Reason = "no_marker", "agent error: "+agentErr.Error()
		res.Primary = "no_marker: agent error: " + retry.Normalize(agentErr.Error())
	case claim == "" && a.lost():
		res.Type, res.Reason = "agent_lost", "agent_lost: the agent's process is gone and left no marker"
		res.Primary = res.Reason
	case claim == "":
		res.Type, res.Reason = "no_marker", "no_marker: the agent exited without a marker or a result block"
		res.Primary = res.Reason
	case claim == "failed" && block != nil && block.State == agents.StateIssue:
		res.Outcome, res.Type, res.Reason = "issue", "issue", "the agent is stuck on an unclear requirement: "+orNone(block.Message)
	case claim == "failed" && block != nil && block.State == agents.StateDependency:
		res.Outcome, res.Type, res.Reason = "blocked", "dependency", "the agent needs something it cannot get: "+orNone(block.Message)
	case claim == "failed":
		res.Type, res.Reason = "agent_failed", "the agent reported failure"
		res.Primary = res.Reason
	case candErr != nil && a.slot == nil:
		res.Type, res.Reason = "agent_lost", "agent_lost: the agent's worktree is gone, and its changes with it"
		res.Primary = res.Reason
	case candErr != nil:
		res.Type, res.Reason = "gate_error", "the agent's changes could not be read: "+candErr.Error()
		res.Primary = retry.Normalize(res.Reason)
	default:
		fmt.Fprintf(log, "candidate: %s (%d changes from %.12s)\n", a.candidate, len(a.changes), a.base)
		gated = true
	}
	return res, log, gated
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// claim returns "done", "failed" or "" (no claim), and the result block if there is one. A
// result block, in the marker or in the agent's final message, is parsed strictly: a
// malformed block, two blocks or a wrong role is a format violation even when a marker says
// done. The marker's word decides the claim; without a marker, the block's state does.
// final is the agent's final message ("" when there is none).
func (r *runner) claim(a *attempt, final string) (string, *agents.Result, error) {
	// The role an agent's result block must name (SPEC §10.3) is the one its prompt gave it.
	role := a.role()
	var block *agents.Result
	if strings.Contains(final, "```tdd-result") {
		res, err := agents.ParseResult(final, role)
		if err != nil {
			return "", nil, err
		}
		block = res
	}
	if m, err := markers.Find(r.o.Layout.Markers(), a.id); err == nil && m != nil {
		if bytes.Contains(m.Body, []byte("```tdd-result")) {
			res, err := agents.ParseResult(string(m.Body), role)
			if err != nil {
				return "", nil, err
			}
			return stateClaim(res), res, nil
		}
		return m.Claim(), block, nil
	}
	if block != nil {
		return stateClaim(block), block, nil
	}
	return "", nil, nil
}

// stateClaim turns a result block's state into a claim: only success claims done.
func stateClaim(res *agents.Result) string {
	if res.State == agents.StateSuccess {
		return "done"
	}
	return "failed"
}
