package queue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DirName is the folder that holds the orchestrator's state in a repository.
const DirName = ".orchestrator"

// A Layout names the files of a repository's orchestrator state (SPEC §2).
type Layout struct {
	Root string // the repository root
}

// Dir returns the .orchestrator folder.
func (l Layout) Dir() string { return filepath.Join(l.Root, DirName) }

// Tasks returns the task queue's path.
func (l Layout) Tasks() string { return filepath.Join(l.Dir(), "task_queue.md") }

// Issues returns the issue queue's path.
func (l Layout) Issues() string { return filepath.Join(l.Dir(), "issue_queue.md") }

// Session returns session_state.md's path.
func (l Layout) Session() string { return filepath.Join(l.Dir(), "session_state.md") }

// Config returns config.yaml's path.
func (l Layout) Config() string { return filepath.Join(l.Dir(), "config.yaml") }

// Markers returns the completion marker folder.
func (l Layout) Markers() string { return filepath.Join(l.Dir(), "complete") }

// Runs returns the folder of attempt folders.
func (l Layout) Runs() string { return filepath.Join(l.Dir(), "runs") }

// Baseline returns baseline.json's path (SPEC §7.5).
func (l Layout) Baseline() string { return filepath.Join(l.Dir(), "baseline.json") }

// Plan returns the default test plan path.
func (l Layout) Plan() string { return filepath.Join(l.Root, "projectspec", "test-plan-output.json") }

// ErrNoRepo means no folder up from the working directory holds .orchestrator/.
var ErrNoRepo = errors.New("no .orchestrator folder here or in any parent (run `orchestrator init`, or pass --dir)")

// FindRoot returns the repository root: dir if given (or $ORCHESTRATOR_DIR), else the first
// folder up from start that holds .orchestrator/.
func FindRoot(dir, start string) (Layout, error) {
	if dir == "" {
		dir = os.Getenv("ORCHESTRATOR_DIR")
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Layout{}, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return Layout{}, fmt.Errorf("--dir %s: not a folder", dir)
		}
		return Layout{Root: abs}, nil
	}
	for d := start; ; {
		if fi, err := os.Stat(filepath.Join(d, DirName)); err == nil && fi.IsDir() {
			return Layout{Root: d}, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Layout{}, ErrNoRepo
		}
		d = parent
	}
}
