package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/worktree"
)

// makeCandidate turns what the agent left in its slot into the attempt's candidate commit,
// under refs/orchestrator/attempts/<ID>/<n>, and lists git's changes; the patch is kept as
// changes.diff in the attempt folder (writePatch).
func (r *runner) makeCandidate(ctx context.Context, a *attempt) error {
	if a.slot == nil {
		return errors.New("the attempt has no worktree")
	}
	remote := a.remote != nil
	var c string
	var err error
	if remote {
		// Its agent ran on a worker: the candidate is the commit fetched from it (remote.go),
		// or the base when none arrived (a timeout, an interrupt).
		c, err = r.remoteCandidate(ctx, a)
	} else {
		c, err = a.slot.Commit(ctx, a.base, a.ref(), fmt.Sprintf("%s attempt %d (candidate)\n", a.id, a.n), r.sharedLinks(a.slot.Dir)...)
	}
	if err != nil {
		return err
	}
	a.candidate = c
	if a.changes, err = r.repo.Diff(ctx, a.base, c); err != nil {
		return err
	}
	// Files under .orchestrator/ that .gitignore keeps out of the candidate still count.
	// A worker's agent left none here: the slot holds the base, which nothing wrote.
	if !remote {
		if a.strays, err = a.slot.Untracked(ctx, c, r.scopeDir()); err != nil {
			return err
		}
	}
	r.writePatch(ctx, a)
	return nil
}

// writePatch writes the candidate's patch, for people to read, as changes.diff in the
// attempt folder. Nothing decides from it (the changes are a.changes), so git makes it
// beside the attempt's next stages, and the readable copy waits for it (copyOut).
func (r *runner) writePatch(ctx context.Context, a *attempt) {
	done := make(chan struct{})
	a.patched = done
	base, cand, unchanged := a.base, a.candidate, a.unchanged()
	go func() {
		defer close(done)
		if unchanged {
			a.write("changes.diff", nil)
			return
		}
		_, patch, err := r.repo.DiffPatch(ctx, base, cand)
		if err != nil {
			patch = fmt.Sprintf("the patch of %.12s could not be made: %v\n", cand, err)
		}
		a.write("changes.diff", []byte(patch))
	}()
}

// changedPaths returns the candidate's changed paths relative to the project root, as the
// gates read them, and the paths under the orchestrator's folder, which are out of scope.
func (r *runner) changedPaths(a *attempt) (changed, forbidden []string) {
	prefix := ""
	if r.sub != "." && r.sub != "" {
		prefix = filepath.ToSlash(r.sub) + "/"
	}
	forbidden = append(forbidden, a.strays...)
	scope := r.scopeDir()
	for _, p := range worktree.Paths(a.changes) {
		// The folder itself too: a file or a symbolic link put where it is (a project
		// that does not track it) changes it as much as a file under it.
		if strings.HasPrefix(p, scope) || p == strings.TrimSuffix(scope, "/") {
			if !slices.Contains(forbidden, p) {
				forbidden = append(forbidden, p)
			}
			continue
		}
		if prefix != "" {
			if !strings.HasPrefix(p, prefix) {
				changed = append(changed, "../"+p) // outside the project: never a test file
				continue
			}
			p = strings.TrimPrefix(p, prefix)
		}
		changed = append(changed, p)
	}
	return changed, forbidden
}
