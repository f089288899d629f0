package watch

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
)

// TestStatusWaitsForItsRecord: an attempt's records are written beside the first steps of
// its decision (recordBeside), but the task's status never says what its record does not
// say yet. The record's write is held; the queue's write of the status gets as far as its
// temp file and waits, and a read of the record meanwhile waits for it too. The cheat this
// refuses is the loop's own: a status of skipped or completed on disk, after a kill -9,
// over a record that still says the agent runs.
func TestStatusWaitsForItsRecord(t *testing.T) {
	ctx := context.Background()
	dir, repo := newGitRepo(t)
	l := queue.Layout{Root: dir}
	if err := os.MkdirAll(l.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	tasks := "# Tasks\n\n### TASK-001\n\n| Field | Value |\n|-------|-------|\n| Status | in_progress |\n| Category | docs |\n"
	if err := os.WriteFile(l.Tasks(), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRunner(Options{Layout: l, Config: config.Default(), Out: io.Discard})
	r.repo, r.runs = repo, stateRuns(repo)
	a := &attempt{id: "TASK-001", n: 1, dir: filepath.Join(r.runs, "TASK-001", "1"), mirror: filepath.Join(l.Runs(), "TASK-001", "1"), task: queue.Task{ID: "TASK-001"}}
	for _, d := range []string{a.dir, a.mirror} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a.record(result{Outcome: "running"})

	release := make(chan struct{})
	recordHold = func() { <-release }
	defer func() { recordHold = nil }()
	concluded := make(chan error, 1)
	go func() {
		concluded <- r.conclude(ctx, a, result{Outcome: "skipped", Reason: "nothing to do"}, "decision: skipped\n")
	}()

	// The status's write begins: its temp file is there, or (the cheat) the status moved.
	deadline := time.Now().Add(Scaled(10 * time.Second))
	for {
		if st, _ := r.statusNow("TASK-001"); st != queue.StatusInProgress {
			t.Fatalf("the status says %q while the record is not written", st)
		}
		temps, _ := filepath.Glob(filepath.Join(l.Dir(), ".task_queue.md.tmp-*"))
		if slices.ContainsFunc(temps, func(p string) bool {
			b, _ := os.ReadFile(p)
			return strings.Contains(string(b), "| Status | skipped |")
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the queue's write did not begin")
		}
		time.Sleep(time.Millisecond)
	}
	read := make(chan string, 1)
	go func() {
		res, _ := readResult(a.dir)
		read <- res.Outcome
	}()
	select {
	case got := <-read:
		t.Fatalf("a read of the record did not wait for its write: %q", got)
	case err := <-concluded:
		t.Fatalf("the decision was recorded while its record was held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if st, _ := r.statusNow("TASK-001"); st != queue.StatusInProgress {
		t.Fatalf("the status says %q while the record is not written", st)
	}

	close(release)
	if err := <-concluded; err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "skipped" {
		t.Errorf("the read waited for the record, and read %q", got)
	}
	if st, _ := r.statusNow("TASK-001"); st != queue.StatusSkipped {
		t.Errorf("status %q after the decision, want skipped", st)
	}
	if b, err := os.ReadFile(filepath.Join(a.mirror, "gate.log")); err != nil || !strings.Contains(string(b), "decision: skipped") {
		t.Errorf("gate.log's readable copy: %q, %v", b, err)
	}
}

// TestDecisionMakesNoFile: the files an attempt's decision writes (its record, gate.log,
// changes.diff and its hand-off, and their readable copies) are made while its agent runs
// (makeAhead), so that the decision writes into files that are there: each file it writes
// is one of those. What is left of them once it is decided is removed (dropAhead), and the
// readable copy never holds a temp file.
func TestDecisionMakesNoFile(t *testing.T) {
	root := t.TempDir()
	a := &attempt{id: "TASK-001", n: 1, dir: filepath.Join(root, "state", "TASK-001", "1"), mirror: filepath.Join(root, "runs", "TASK-001", "1"), task: queue.Task{ID: "TASK-001", Kind: queue.KindBuild}}
	for _, d := range []string{a.dir, a.mirror} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a.record(result{Outcome: "starting"})
	a.record(result{Outcome: "running"})
	a.ahead = make(chan struct{})
	a.makeAhead()
	close(a.ahead)
	inodes := func(dir string) map[string]uint64 {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = fi.Sys().(*syscall.Stat_t).Ino
		}
		return out
	}
	before := map[string]map[string]uint64{a.dir: inodes(a.dir), a.mirror: inodes(a.mirror)}
	// The cheat: a temp file that is a link to a file elsewhere, which a write through it
	// would overwrite. It is removed and made anew, the one file this decision makes.
	outside := filepath.Join(root, "outside")
	if err := os.WriteFile(outside, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(a.dir, ".changes.diff.tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(a.dir, ".changes.diff.tmp")); err != nil {
		t.Fatal(err)
	}

	a.write("changes.diff", []byte("diff\n"))
	m := &gate.Manifest{Phase: "green", Task: a.id, Attempt: a.n}
	if err := m.Write(filepath.Join(a.dir, "handoff-green.json"), nil); err != nil {
		t.Fatal(err)
	}
	a.recordWithLog(result{Outcome: "completed", Reason: "done"}, "decision: completed\n")
	for _, dir := range []string{a.dir, a.mirror} {
		made := map[uint64]bool{}
		for _, ino := range before[dir] {
			made[ino] = true
		}
		for name, ino := range inodes(dir) {
			if !made[ino] && !(dir == a.dir && name == "changes.diff") {
				t.Errorf("%s: the decision made a file: %s", filepath.Base(filepath.Dir(filepath.Dir(dir))), name)
			}
		}
	}

	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep me\n" {
		t.Errorf("the write went through a link into another file: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(a.dir, "changes.diff")); err != nil || string(b) != "diff\n" {
		t.Errorf("changes.diff holds %q, %v", b, err)
	}

	// A temp file in the state is not copied; none is left once decided.
	if err := os.WriteFile(filepath.Join(a.dir, ".stray.tmp"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.dropAhead()
	a.copyOut()
	for _, dir := range []string{a.dir, a.mirror} {
		for name := range inodes(dir) {
			if isTemp(name) && name != ".stray.tmp" || name == ".stray.tmp" && dir == a.mirror {
				t.Errorf("%s is left in %s", name, dir)
			}
		}
	}
	if res, ok := readResult(a.dir); !ok || res.Outcome != "completed" {
		t.Errorf("the record reads %+v, %v", res, ok)
	}
	if b, err := os.ReadFile(filepath.Join(a.mirror, "handoff-green.json")); err != nil || !strings.Contains(string(b), `"green"`) {
		t.Errorf("the hand-off's readable copy: %q, %v", b, err)
	}
}
