package watch

import (
	"context"
	"path/filepath"
	"strings"
	"sync"

	"github.com/orchestrator/orchestrator/gate"
)

// harness returns the test harness the gate guards (SPEC §7.6): the test globs, config
// harness_globs, and the task's test command (a Makefile is harness when it runs make).
func (r *runner) harness(a *attempt) gate.Harness {
	return gate.Harness{TestGlobs: r.o.Config.TestGlobs, Globs: r.o.Config.HarnessGlobs, Commands: []string{a.testCmd, r.o.Config.Commands.Test}}
}

// contents returns how the gate reads a changed file of commit, a candidate of attempt a,
// before and after the change: from git, at commit's parent and at commit, never from a
// worktree. Whether the file exists on each side is what git's change list says (added,
// deleted, renamed); paths are the project's, as changedPaths gives them.
func (r *runner) contents(ctx context.Context, a *attempt, commit string) gate.Contents {
	prefix := ""
	if r.sub != "." && r.sub != "" {
		prefix = filepath.ToSlash(r.sub) + "/"
	}
	// exists says, by repository path, whether the file is there before and after.
	exists := map[string][2]bool{}
	for _, c := range a.changes {
		switch c.Status {
		case "A":
			exists[c.Path] = [2]bool{false, true}
		case "D":
			exists[c.Path] = [2]bool{true, false}
		case "R":
			exists[c.From] = [2]bool{true, false}
			exists[c.Path] = [2]bool{false, true}
		case "C":
			exists[c.From] = [2]bool{true, true}
			exists[c.Path] = [2]bool{false, true}
		default:
			exists[c.Path] = [2]bool{true, true}
		}
	}
	parent := sync.OnceValues(func() (string, error) { return r.repo.Parent(ctx, commit) })
	return func(p string) ([]byte, []byte, error) {
		rp := prefix + p
		if rest, ok := strings.CutPrefix(p, "../"); ok {
			rp = rest // outside the project (changedPaths)
		}
		ex, known := exists[rp]
		var before, after []byte
		if !known || ex[0] {
			base, err := parent()
			if err != nil {
				return nil, nil, err
			}
			b, err := r.repo.Show(ctx, base, rp)
			if err != nil && known {
				return nil, nil, err
			}
			if err == nil {
				before = b
			}
		}
		if !known || ex[1] {
			b, err := r.repo.Show(ctx, commit, rp)
			if err != nil && known {
				return nil, nil, err
			}
			if err == nil {
				after = b
			}
		}
		return nonNil(before, known && ex[0]), nonNil(after, known && ex[1]), nil
	}
}

// nonNil returns b, or an empty (not nil) slice when the file exists and is empty: nil
// stands for a file that does not exist.
func nonNil(b []byte, exists bool) []byte {
	if b == nil && exists {
		return []byte{}
	}
	return b
}
