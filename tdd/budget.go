package tdd

// A cycle's budgets (SPEC §9): what a failed attempt of a cycle's task costs, and when the
// task halts.

import (
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// ReemitPrompt is the whole prompt of the one retry a format violation gets in a TDD cycle
// (failure mode D).
const ReemitPrompt = "re-emit your last message with one valid tdd-result block"

// Budgets of a cycle's task: attempts per role per AC that end in a semantic failure
// (modes A, B, C, E), and format violations (mode D), the last of which halts.
const (
	SemanticBudget = 2
	FormatBudget   = 2
)

// Mode returns the failure mode of a failed attempt of a cycle, from its role and its
// outcome's type and reason, and what the mode is called: D for a format violation, E for
// running out of turns or time, else A (test writer), B (implementer) or C (refactorer).
func Mode(role, typ, reason string) (mode, what string) {
	switch {
	case typ == "format_violation":
		return "D", "format violation"
	case typ == "timeout" || strings.Contains(reason, "failure mode E"):
		return "E", "out of turns"
	case role == RoleTestWriter:
		return "A", "false RED"
	case role == RoleRefactorer:
		return "C", "refactor broke GREEN"
	}
	return "B", "no GREEN"
}

var acInReason = lazyre.New(`\bAC-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\.[0-9]+\b`)

// FailedAC returns the AC a failed attempt is charged to: the place's own; for a test
// writer, the first AC its refusal names; else every AC of the cycle.
func (p *Place) FailedAC(reason string) string {
	if p.AC != "" {
		return p.AC
	}
	if m := acInReason().FindString(reason); m != "" && p.Role == RoleTestWriter {
		return m
	}
	return strings.Join(p.ACs, ", ")
}

// Spent returns what the budget says of a failed attempt of mode (what: its name) charged
// to ac, the n-th of its budget that counts (format violations for mode D, other failures
// else): halt, the reason the task halts; stop, the reason a refactor is dropped (the task
// fails, the cycle keeps its GREEN state); both "" while budget is left.
func (p *Place) Spent(mode, what, ac string, n int) (halt, stop string) {
	if mode == "D" {
		if n >= FormatBudget {
			return fmt.Sprintf("failure mode D (%s), role %s, %s: %d format violations, the second after the re-emit prompt", what, p.Role, ac, n), ""
		}
		return "", ""
	}
	if n < SemanticBudget {
		return "", ""
	}
	reason := fmt.Sprintf("failure mode %s (%s), role %s, %s: %d failed attempts, the budget of %d", mode, what, p.Role, ac, n, SemanticBudget)
	if p.Role == RoleRefactorer {
		return "", reason + "; the refactor is dropped and the cycle keeps its GREEN state"
	}
	return reason, ""
}

// ResultBlock returns the tdd-result block of an agent's final message as it wrote it
// (the last one, when there are several), or "".
func ResultBlock(final string) string {
	i := strings.LastIndex(final, "```tdd-result")
	if i < 0 {
		return ""
	}
	rest := final[i:]
	if j := strings.Index(rest[3:], "\n```"); j >= 0 {
		return rest[:3+j+4]
	}
	return rest
}
