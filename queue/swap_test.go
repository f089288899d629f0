package queue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// saveAs plays a person saving the file in an editor: a new file with src renamed over path.
func saveAs(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".person"
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// once returns a function that runs fn the first time it is called and does nothing after.
func once(fn func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			fn()
		}
	}
}

// TestUpdatePutsBackASaveMadeAtTheSwap saves a person's edit in the moment between Update's
// last look at the file and its swap. The swap displaces their version; it must be back at
// the path before Update does anything else: while the edit is computed again on it, the
// file at the path is theirs, not the orchestrator's version made from the older bytes (an
// editor that read that one would save on top of it, and the person's edit would be lost).
func TestUpdatePutsBackASaveMadeAtTheSwap(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	person := strings.Replace(saveQueue, "| Notes | - |", "| Notes | mine |", 1)
	beforeSwap = once(func() { saveAs(t, path, person) })
	t.Cleanup(func() { beforeSwap = nil })

	calls := 0
	changed, err := Update(context.Background(), path, Tasks, func(*Doc) ([]Op, error) {
		calls++
		if calls == 2 {
			if got := readString(t, path); got != person {
				t.Errorf("while the edit is made again, the file is not the person's version:\n%s", got)
			}
		}
		return []Op{SetField{ID: "TASK-2", Field: "Status", Value: "completed"}}, nil
	})
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v", changed, err)
	}
	want := person[:strings.LastIndex(person, "| Status | pending |")] + "| Status | completed |\n"
	if got := readString(t, path); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if calls != 2 {
		t.Errorf("edit computed %d times, want 2", calls)
	}
	noTempFiles(t, filepath.Dir(path))
}

// TestUpdatePutsBackTheNewestSave saves twice around the swap: once just before it (the swap
// displaces that save) and once just after it, over the orchestrator's version. Putting the
// first save back hands the second one to Update, which must put that one back in turn: the
// newest save is the one that stays, with the orchestrator's edit made on top of it.
func TestUpdatePutsBackTheNewestSave(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	first := strings.Replace(saveQueue, "| Notes | - |", "| Notes | first |", 1)
	second := strings.Replace(first, "| Notes | first |", "| Notes | second |", 1)
	beforeSwap = once(func() { saveAs(t, path, first) })
	afterSwap = once(func() { saveAs(t, path, second) })
	t.Cleanup(func() { beforeSwap, afterSwap = nil, nil })

	changed, err := Update(context.Background(), path, Tasks, set("TASK-2", "Status", "completed"))
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v", changed, err)
	}
	want := second[:strings.LastIndex(second, "| Status | pending |")] + "| Status | completed |\n"
	if got := readString(t, path); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	noTempFiles(t, filepath.Dir(path))
}

// TestUpdateSeesASameSizeEditOnCoarseTimes plays a file system that keeps whole seconds
// (ext3, HFS+, FAT, many network file systems): a person edits the file in place after
// Update read it, within the same second, with a value of the same length. The inode, the
// size and the modification time stay the same; only the bytes tell, and they must be
// compared.
func TestUpdateSeesASameSizeEditOnCoarseTimes(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	second := time.Now().Truncate(time.Second)
	if err := os.Chtimes(path, second, second); err != nil {
		t.Fatal(err)
	}
	person := strings.Replace(saveQueue, "| Status | pending |", "| Status | skipped |", 1)
	calls := 0
	changed, err := Update(context.Background(), path, Tasks, func(*Doc) ([]Op, error) {
		calls++
		if calls == 1 {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(person), 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := os.Chtimes(path, second, second); err != nil {
				t.Fatal(err)
			}
		}
		return []Op{SetField{ID: "TASK-2", Field: "Status", Value: "completed"}}, nil
	})
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v", changed, err)
	}
	want := person[:strings.LastIndex(person, "| Status | pending |")] + "| Status | completed |\n"
	if got := readString(t, path); got != want {
		t.Errorf("the person's edit was lost:\ngot\n%s\nwant\n%s", got, want)
	}
	if calls != 2 {
		t.Errorf("edit computed %d times, want 2", calls)
	}
}

// TestSettled checks when a file's modification time alone proves it unchanged since a read.
func TestSettled(t *testing.T) {
	readAt := time.Date(2026, 11, 23, 12, 0, 0, 500_000_000, time.UTC)
	ts := func(d time.Duration) unix.Timespec { return unix.NsecToTimespec(readAt.Add(d).UnixNano()) }
	for _, tt := range []struct {
		name  string
		mtime unix.Timespec
		want  bool
	}{
		{"an hour before", ts(-time.Hour + 123), true},
		{"50 ms before", ts(-50*time.Millisecond + 123), true},
		{"5 ms before: the same clock tick may follow", ts(-5*time.Millisecond + 123), false},
		{"after the read", ts(time.Millisecond + 123), false},
		{"whole second, 1.5 s before", unix.Timespec{Sec: readAt.Unix() - 1}, false},
		{"whole second, 3 s before", unix.Timespec{Sec: readAt.Unix() - 3}, true},
		{"whole second of the read", unix.Timespec{Sec: readAt.Unix()}, false},
	} {
		if got := settled(tt.mtime, readAt); got != tt.want {
			t.Errorf("%s: settled = %v, want %v", tt.name, got, tt.want)
		}
	}
}
