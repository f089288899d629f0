package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/worktree"
)

// queues holds the parsed queue files of a repository.
type queues struct {
	layout queue.Layout
	tasks  *queue.Doc
	issues *queue.Doc // nil when the repository has no issue queue
	// verified confirms that a completed task was verified by the loop at its Commit
	// (nil outside a git repository: nothing is).
	verified func(id, commit string) bool
	// repo opens the repository once, when first asked (nil outside a git repository).
	repo func() *worktree.Repo
}

// loadQueues reads both queue files. A parse error of either is returned as is (exit 2).
func loadQueues(l queue.Layout) (*queues, error) {
	q := &queues{layout: l}
	var err error
	if q.tasks, err = queue.Load(l.Tasks()); err != nil {
		return q, err
	}
	if q.issues, err = loadOptional(l.Issues()); err != nil {
		return q, err
	}
	// The repository is opened (four git processes) only when a completed task's mark is
	// looked up: `next` never needs it, and a folder with no verified marks needs no git.
	q.repo = sync.OnceValue(func() *worktree.Repo {
		repo, err := worktree.Open(context.Background(), l.Root)
		if err != nil {
			return nil
		}
		return repo
	})
	marks := sync.OnceValue(func() map[string]bool {
		repo := q.repo()
		if repo == nil {
			return nil
		}
		return dirNames(filepath.Join(repo.State(), "verified"))
	})
	q.verified = func(id, commit string) bool {
		if !marks()[id] {
			return false
		}
		return q.repo().IsVerified(id, commit)
	}
	return q, nil
}

// dirNames returns the names in folder dir (none when it cannot be read): one read of the
// folder instead of one lookup per task.
func dirNames(dir string) map[string]bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// loadOptional parses a queue file that may be missing (then it returns nil, nil).
func loadOptional(path string) (*queue.Doc, error) {
	src, err := queue.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return queue.Parse(path, src, queue.KindOf(path))
}

// loadPlan reads the test plan (SPEC §5.1): the file given with --plan, else the
// repository's projectspec/test-plan-output.json. Without --plan, a missing plan means no
// plan (nil, nil) unless required. Any other problem is bad input (exit 2), and the error
// names the file.
func loadPlan(l queue.Layout, path string, required bool) (*queue.Plan, error) {
	given := path != ""
	if !given {
		path = l.Plan()
	}
	p, err := queue.LoadPlan(path)
	switch {
	case err == nil:
		return p, nil
	case !given && errors.Is(err, fs.ErrNotExist):
		if !required {
			return nil, nil
		}
		return nil, usageErrorf("no test plan: %s does not exist (pass --plan)", path)
	}
	return nil, &exitError{code: exitUsage, err: err}
}
