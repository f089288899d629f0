package watch

import (
	"slices"
	"testing"

	"github.com/orchestrator/orchestrator/worktree"
)

// TestChangedPathsScope: a candidate that puts a file or a symbolic link where the
// orchestrator's folder is (a project that does not track it: the person's queue is
// there, untracked) changes the orchestrator's folder as much as one that writes under
// it, and is out of scope; a worker's candidate, made byte by byte, can hold either
// without a .gitignore to pass. The honest twins, a file whose name only begins like the
// folder's and one in a folder of that name elsewhere, are the agent's.
func TestChangedPathsScope(t *testing.T) {
	for _, sub := range []string{".", "proj"} {
		r := &runner{sub: sub}
		prefix := ""
		if sub != "." {
			prefix = sub + "/"
		}
		for _, tt := range []struct {
			path, mode string
			forbidden  bool
		}{
			{".orchestrator/task_queue.md", "100644", true},
			{".orchestrator", "120000", true},
			{".orchestrator", "100644", true},
			{".orchestrator.md", "100644", false},
			{"docs/.orchestrator/notes.md", "100644", false},
		} {
			a := &attempt{changes: []worktree.Change{{Status: "A", Path: prefix + tt.path, OldMode: "000000", NewMode: tt.mode}}}
			changed, forbidden := r.changedPaths(a)
			if got := slices.Contains(forbidden, prefix+tt.path); got != tt.forbidden {
				t.Errorf("sub %s: %s (%s) forbidden %v, want %v (changed %v)", sub, tt.path, tt.mode, got, tt.forbidden, changed)
			}
		}
	}
}
