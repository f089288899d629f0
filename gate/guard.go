package gate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/orchestrator/orchestrator/testrun"
)

// A TestsChangedError says that a test file, or test data that was there before, changed
// while a test command ran: the code under test rewrote what judges it (a module that
// rewrites a test file when it is imported, a build script that edits the tests before
// they compile). The integrity checks before the run compare the files as the candidate
// has them; this is what the runner read.
type TestsChangedError struct {
	Path    string // relative to the project, slash-separated; "" when the watch overflowed
	What    string // changed, deleted, replaced
	Command string
}

func (e *TestsChangedError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("test_tampered: the test files could not be watched while %s ran (too many changes at once), so the gate cannot tell that they stayed as they were", e.Command)
	}
	return fmt.Sprintf("test_tampered: %s was %s while %s ran: the code under test rewrote what judges it", e.Path, e.What, e.Command)
}

// A runGuard watches the test files of a checkout, and the test data that was there
// before (isTestData), while one command runs: an inotify watch of their folders sees a
// file written and put back, and their stat compared after the run sees what the watch
// may have missed. Jest's and vitest's snapshot files are left out: their runners write
// them.
type runGuard struct {
	root    string
	files   map[string]fileState // by absolute path
	w       *fsnotify.Watcher
	dir     string // a watched folder, for the sentinel that flushes the watch (stop)
	mu      sync.Mutex
	touched map[string]string // absolute path: what happened to it
	over    bool              // the watch's queue overflowed
	// sentinel is the file stop creates, flushed closed when its event arrives.
	sentinel string
	flushed  chan struct{}
	ended    chan struct{}
}

// A fileState is what stat says of a file, enough to tell it was replaced or written.
type fileState struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func stateOf(p string) (fileState, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileState{}, false
	}
	st := fileState{size: fi.Size(), mtime: fi.ModTime()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(s.Dev), s.Ino
	}
	return st, true
}

// guardTests starts the watch of the test files under root (globs as testrun.IsTestFile
// reads them; nil for the defaults). A checkout without test files gets a guard that
// watches nothing. Where the watch cannot start (the user's inotify limits), the guard
// compares the files' stat after the run only, and note says so.
func guardTests(root string, globs []string) (g *runGuard, note string) {
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	g = &runGuard{root: root, files: map[string]fileState{}, touched: map[string]string{}, flushed: make(chan struct{})}
	dirs := map[string]bool{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || skippedDirs[name] || fileExists(filepath.Join(p, "pyvenv.cfg"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !guarded(rel, globs) {
			return nil
		}
		if st, ok := stateOf(p); ok {
			g.files[p] = st
			dirs[filepath.Dir(p)] = true
		}
		return nil
	})
	if len(g.files) == 0 {
		return g, ""
	}
	w, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return g, fmt.Sprintf("the test files are compared after the run only: %v", err)
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := w.Add(d); err != nil {
			w.Close()
			return g, fmt.Sprintf("the test files are compared after the run only: watch %s: %v", d, err)
		}
		if g.dir == "" {
			g.dir = d
		}
	}
	g.w, g.ended = w, make(chan struct{})
	go g.read()
	return g, ""
}

// skippedDirs are folders the guard does not look into: what runners and package managers
// write, and others' code.
var skippedDirs = map[string]bool{"node_modules": true, "__pycache__": true, "target": true, "vendor": true}

// guarded reports whether the file rel is one the guard watches: a test file, conftest.py,
// or test data (isTestData), but for snapshot files.
func guarded(rel string, globs []string) bool {
	if strings.HasSuffix(rel, ".snap") || slices.Contains(strings.Split(rel, "/"), "__snapshots__") {
		return false
	}
	return testrun.IsTestFile(rel, globs) || path.Base(rel) == "conftest.py" || isTestData(rel)
}

// read records the events of the guarded files until the watch is closed.
func (g *runGuard) read() {
	defer close(g.ended)
	for {
		select {
		case ev, ok := <-g.w.Events:
			if !ok {
				return
			}
			g.mu.Lock()
			if ev.Name == g.sentinel {
				close(g.flushed)
				g.sentinel = ""
			} else if _, ok := g.files[ev.Name]; ok {
				switch {
				case ev.Has(fsnotify.Write):
					g.touched[ev.Name] = "changed"
				case ev.Has(fsnotify.Create):
					g.touched[ev.Name] = "replaced"
				case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
					g.touched[ev.Name] = "deleted"
				}
			}
			g.mu.Unlock()
		case err, ok := <-g.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				g.mu.Lock()
				g.over = true
				g.mu.Unlock()
			}
		}
	}
}

// sentinelPrefix begins the name of the file stop creates to flush the watch.
const sentinelPrefix = ".orchestrator-guard-"

// stop ends the watch once the command has ended, and returns what changed of the guarded
// files (the first by path), or nil. Events are read in the order they happened: once the
// event of a file stop creates after the command ended arrives, every event of the run
// has.
func (g *runGuard) stop(command string) *TestsChangedError {
	if g.w != nil {
		g.flush()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, was := range g.files {
		now, ok := stateOf(p)
		switch {
		case !ok:
			g.touched[p] = "deleted"
		case now.dev != was.dev || now.ino != was.ino:
			g.touched[p] = "replaced"
		case now.size != was.size || g.w == nil && !now.mtime.Equal(was.mtime):
			// With the watch, a write is its event: a test that sets its data's times or
			// mode (os.Chtimes, to test staleness) writes nothing. Without it, the times
			// are all there is.
			g.touched[p] = "changed"
		}
	}
	if len(g.touched) > 0 {
		p := slices.Sorted(maps.Keys(g.touched))[0]
		rel, _ := filepath.Rel(g.root, p)
		return &TestsChangedError{Path: filepath.ToSlash(rel), What: g.touched[p], Command: command}
	}
	if g.over {
		return &TestsChangedError{Command: command}
	}
	return nil
}

// flush reads the watch's events up to the end of the run, then closes it.
func (g *runGuard) flush() {
	var b [8]byte
	_, _ = rand.Read(b[:])
	sentinel := filepath.Join(g.dir, sentinelPrefix+hex.EncodeToString(b[:]))
	g.mu.Lock()
	g.sentinel = sentinel
	g.mu.Unlock()
	if err := os.WriteFile(sentinel, nil, 0o600); err == nil {
		select {
		case <-g.flushed:
		case <-time.After(time.Minute): // the watch is stuck: the stat below still decides
		}
		os.Remove(sentinel)
	}
	g.w.Close()
	<-g.ended
}
