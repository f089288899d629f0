package queue

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoadParsesTheSameBytesOnce: the loop reads the queue several times an attempt; the
// same bytes give the same Doc, but any change is seen, even one that keeps the file's size
// and modification time (an edit made within the same clock tick), and a file that does
// not parse is never remembered as one that does.
func TestLoadParsesTheSameBytesOnce(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	first, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil || again != first {
		t.Fatalf("the same bytes parsed again (%p, %p, %v)", first, again, err)
	}
	only, err := LoadOnly(path, "TASK-2")
	if err != nil || only != first {
		t.Errorf("LoadOnly of the same bytes did not reuse the whole Doc (%v)", err)
	}
	if rec, ok := only.Record("TASK-2"); !ok || only.Task(rec).Status != StatusPending {
		t.Errorf("TASK-2 not pending in the reused Doc")
	}

	// Same size, same modification time, other bytes.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(saveQueue, "| Notes | - |", "| Notes | x |", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := d.Record("TASK-1"); d == first || d.Get(rec, "Notes") != "x" {
		t.Errorf("an edit that kept the size and time was not seen: Notes %q", d.Get(rec, "Notes"))
	}

	// A half-saved file fails every time, and its fix is read.
	if err := os.WriteFile(path, []byte(strings.Replace(saveQueue, "| Status | pending |\n| Notes", "| Status | pending |\n| Status | done |\n| Notes", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := Load(path); err == nil {
			t.Fatal("a queue with a field twice parsed")
		}
	}
	if _, err := Update(context.Background(), path, Tasks, set("TASK-1", "Status", "completed")); err == nil {
		t.Error("Update wrote a queue that does not parse")
	}
	if err := os.WriteFile(path, []byte(saveQueue), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("the fixed file: %v", err)
	}

	// An Update of bytes Load parsed edits what the file holds, and the next Load sees it.
	if _, err := Update(context.Background(), path, Tasks, set("TASK-2", "Status", "completed")); err != nil {
		t.Fatal(err)
	}
	d, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := d.Record("TASK-2"); d.Task(rec).Status != StatusCompleted {
		t.Errorf("after Update, TASK-2 is %s", d.Task(rec).Status)
	}
}

// TestLoadSharedAcrossGoroutines reads two files from several goroutines at once, one of
// them rewritten meanwhile: each Doc is its own file's (run it with -race).
func TestLoadSharedAcrossGoroutines(t *testing.T) {
	a := writeQueue(t, saveQueue, 0o644)
	b := writeQueue(t, strings.Replace(saveQueue, "TASK-2", "TASK-3", 2), 0o644)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				path, want := a, "TASK-2"
				if (g+i)%2 == 1 {
					path, want = b, "TASK-3"
				}
				if g == 0 && i%10 == 0 {
					if _, err := Update(context.Background(), a, Tasks, set("TASK-1", "Notes", strings.Repeat("n", i%7+1))); err != nil {
						t.Error(err)
						return
					}
				}
				d, err := Load(path)
				if err != nil {
					t.Error(err)
					return
				}
				if _, ok := d.Record(want); !ok || d.Path != path {
					t.Errorf("Load(%s) gave the Doc of %s", path, d.Path)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLoadKeepsEachFile: the loop reads the issue queue between two reads of the task
// queue; the task queue's Doc is still found.
func TestLoadKeepsEachFile(t *testing.T) {
	tasks := writeQueue(t, saveQueue, 0o644)
	issues := writeQueue(t, strings.Replace(saveQueue, "TASK-2", "TASK-3", 2), 0o644)
	first, err := Load(tasks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(issues); err != nil {
		t.Fatal(err)
	}
	if again, err := Load(tasks); err != nil || again != first {
		t.Errorf("the task queue was parsed again after another file was (%v)", err)
	}
}

// parseCount is how many whole parses parseCached and Preload have made.
func parseCount() int {
	parsed.Lock()
	defer parsed.Unlock()
	return parsed.parses
}

// TestPreloadServesTheNextLoad: after the loop's own write it preloads the queue; the next
// Load of the same bytes, even one that comes while the preload parses, gets the preloaded
// Doc and parses nothing itself, and a file changed after the preload is read as it is now.
func TestPreloadServesTheNextLoad(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	before := parseCount()
	// The preload is held until the read has come and waits for it.
	release := make(chan struct{})
	preloadHold = func() { <-release }
	Preload(path)
	preloadHold = nil
	type loaded struct {
		d   *Doc
		err error
	}
	got := make(chan loaded, 1)
	go func() {
		d, err := Load(path)
		got <- loaded{d, err}
	}()
	var l loaded
	for waiting := false; !waiting; {
		select {
		case l = <-got:
			t.Fatalf("a Load during a Preload of the same file did not wait for it (%v)", l.err)
		case <-time.After(time.Millisecond):
			parsed.Lock()
			waiting = parsed.waits > 0
			parsed.Unlock()
		}
	}
	close(release)
	l = <-got
	d, err := l.d, l.err
	if err != nil {
		t.Fatal(err)
	}
	if got := parseCount() - before; got != 1 {
		t.Fatalf("a Load after a Preload of the same bytes: %d parses in all, want the preload's one", got)
	}
	if string(d.Src) != saveQueue {
		t.Fatalf("the Doc is not of the file's bytes")
	}
	again, err := Load(path)
	if err != nil || again != d {
		t.Fatalf("the preloaded Doc was not kept (%v)", err)
	}

	// A person saves after the preload: their version is read.
	Preload(path)
	edited := strings.Replace(saveQueue, "| Notes | - |", "| Notes | edited |", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := d.Record("TASK-1"); d.Get(rec, "Notes") != "edited" {
		t.Fatalf("the save after the preload was not read: Notes %q", d.Get(rec, "Notes"))
	}

	// A preload of a file that does not parse keeps nothing, and the read reports it.
	if err := os.WriteFile(path, []byte(strings.Replace(saveQueue, "| Status | pending |\n| Notes", "| Status | pending |\n| Status | done |\n| Notes", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	Preload(path)
	if _, err := Load(path); err == nil {
		t.Fatal("a queue with a field twice parsed after its preload")
	}
}

// TestPreloadBesideWrites: preloads, loads and the loop's updates of one file from many
// goroutines at once (run with -race): every Load gets a Doc of bytes the file held, and
// every update lands.
func TestPreloadBesideWrites(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				Preload(path)
				if _, err := Load(path); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if _, err := Update(context.Background(), path, Tasks, func(d *Doc) ([]Op, error) {
						return []Op{SetField{ID: "TASK-1", Field: "Notes", Value: "n" + strings.Repeat("x", i)}}, nil
					}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	waitPreload(path, Tasks)
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := d.Record("TASK-1"); !strings.HasPrefix(d.Get(rec, "Notes"), "n") {
		t.Fatalf("Notes %q", d.Get(rec, "Notes"))
	}
}
