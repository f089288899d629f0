package watch

import (
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/worktree"
)

// ChangedTests returns the existing tests that the landing of task id at commit changed,
// as file:name, the way its Orchestrator-Changed-Tests trailer names them (SPEC §7.2:
// rewritten to state new behaviour, each failing at the base), for `orchestrator status`.
// They come from the record the trailer was written from: the task's RED hand-off
// (gate.FindRed, its seal checked), which holds the commit it landed as; a hand-off of
// another commit (a later RED that did not land) names none. Nil for none.
func ChangedTests(repo *worktree.Repo, id, commit string) []string {
	m, err := gate.FindRed(sealKey(), stateRuns(repo), id)
	if err != nil || m == nil || commit == "" || m.Commit != commit {
		return nil
	}
	return m.ChangedTests
}
