package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/orchestrator/orchestrator/worktree"
)

// stateRuns is the folder of the attempt records the gate and crash recovery trust: in the
// repository's git folder, outside every working tree (SPEC §15.2 item 4).
// .orchestrator/runs holds their readable copies.
func stateRuns(repo *worktree.Repo) string { return filepath.Join(repo.State(), "runs") }

// projectDir returns the folder of a checkout that corresponds to the person's project
// root (the folder that holds .orchestrator/, which may be below the repository's top).
func (r *runner) projectDir(checkout string) string {
	return filepath.Join(checkout, r.sub)
}

// takeSlot gives attempt a a worktree: the first job slot no running attempt holds, reset
// to the integration head, which becomes the attempt's base. An attempt whose agent runs
// on a worker gets the slot's name alone.
func (r *runner) takeSlot(ctx context.Context, a *attempt) error {
	name := ""
	for i := 1; ; i++ {
		name = fmt.Sprintf("job-%d", i)
		if _, held := r.slots[name]; !held {
			break
		}
	}
	if r.remote != nil {
		// Its agent runs on a worker, in the worker's own checkout of the base: nothing
		// here writes or reads the slot, which gives the attempt a name for its record
		// and no worktree (made and reset for each remote attempt, 30–300 ms, it held
		// back every job behind it).
		r.slots[name] = a.id
		a.slot = r.repo.NamedSlot(name)
		var err error
		a.base, err = r.repo.Head(ctx)
		return err
	}
	return r.holdSlot(ctx, a, name, true)
}

// holdSlot gives attempt a the slot called name; with reset, it is made a pristine
// checkout of the integration head first (an adopted attempt keeps its slot as it is).
func (r *runner) holdSlot(ctx context.Context, a *attempt, name string, reset bool) error {
	s, err := r.repo.Slot(ctx, name)
	if err != nil {
		return err
	}
	r.slots[name] = a.id
	a.slot = s
	if !reset {
		return nil
	}
	if a.base, err = r.repo.Head(ctx); err != nil {
		return err
	}
	if err := s.Reset(ctx, a.base); err != nil {
		return err
	}
	return r.linkShared(s.Dir)
}

// releaseSlot frees the attempt's slot for the next attempt.
func (r *runner) releaseSlot(a *attempt) {
	if a.slot != nil && r.slots[a.slot.Name] == a.id {
		delete(r.slots, a.slot.Name)
	}
}

// sharedDirs are folders that git ignores but tests need, taken from the person's tree
// into every checkout as a symbolic link (a JavaScript project's node_modules).
var sharedDirs = []string{"node_modules"}

// linkShared links the shared folders the person's project has into a checkout.
func (r *runner) linkShared(checkout string) error {
	for _, l := range r.sharedLinks(checkout) {
		dst := filepath.Join(checkout, filepath.FromSlash(l.Path))
		if _, err := os.Lstat(dst); err == nil {
			continue // tracked, or linked already
		}
		if err := os.Symlink(l.Target, dst); err != nil {
			return err
		}
	}
	return nil
}

// sharedLinks are the links linkShared puts in a checkout, one for each shared folder the
// person's project has. A candidate leaves them out (worktree.Slot.Commit): they are the
// orchestrator's, not the agent's change, even where .gitignore ignores only folders of
// their name ("node_modules/").
func (r *runner) sharedLinks(checkout string) []worktree.Link {
	var out []worktree.Link
	for _, d := range sharedDirs {
		src := filepath.Join(r.o.Layout.Root, d)
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		rel, err := filepath.Rel(checkout, filepath.Join(r.projectDir(checkout), d))
		if err != nil {
			continue
		}
		out = append(out, worktree.Link{Path: filepath.ToSlash(rel), Target: src})
	}
	return out
}

// scopeDir is the orchestrator's folder as a path of the repository: no candidate may
// change anything under it.
func (r *runner) scopeDir() string {
	return filepath.ToSlash(filepath.Join(r.sub, ".orchestrator")) + "/"
}
