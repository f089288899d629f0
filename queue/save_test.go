package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const saveQueue = "# Tasks\n\n### TASK-1\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Notes | - |\n\n### TASK-2\n\n| Field | Value |\n|---|---|\n| Status | pending |\n"

// writeQueue writes a task queue file into a fresh .orchestrator folder and dates it an hour
// back, so that a write made by the test shows in its modification time.
func writeQueue(t *testing.T, src string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), DirName)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "task_queue.md")
	if err := os.WriteFile(path, []byte(src), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	return path
}

func set(id, field, value string) EditFunc {
	return func(*Doc) ([]Op, error) { return []Op{SetField{ID: id, Field: field, Value: value}}, nil }
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTempFiles checks that the queue folder holds nothing but the queue and the lock file.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "task_queue.md" && e.Name() != ".lock" {
			t.Errorf("left in the folder: %s", e.Name())
		}
	}
}

// TestUpdateKeepsMode checks that a saved file keeps its permission bits.
func TestUpdateKeepsMode(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o644, 0o640} {
		path := writeQueue(t, saveQueue, mode)
		changed, err := Update(context.Background(), path, Tasks, set("TASK-1", "Status", "completed"))
		if err != nil || !changed {
			t.Fatalf("Update = %v, %v", changed, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("mode = %v, want %v", fi.Mode().Perm(), mode)
		}
		if !strings.Contains(readString(t, path), "| Status | completed |") {
			t.Errorf("edit not saved:\n%s", readString(t, path))
		}
		noTempFiles(t, filepath.Dir(path))
	}
}

// TestUpdateKeepsCRLF checks that a CRLF file stays CRLF through a splice and a new row.
func TestUpdateKeepsCRLF(t *testing.T) {
	src := strings.ReplaceAll(saveQueue, "\n", "\r\n")
	path := writeQueue(t, src, 0o644)
	_, err := Update(context.Background(), path, Tasks, func(*Doc) ([]Op, error) {
		return []Op{
			SetField{ID: "TASK-1", Field: "Status", Value: "in_progress"},
			SetField{ID: "TASK-2", Field: "Retry-Count", Value: "1"},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := readString(t, path)
	if strings.Count(got, "\n") != strings.Count(got, "\r\n") {
		t.Errorf("bare line feeds in a CRLF file:\n%q", got)
	}
	want := strings.Replace(src, "| Status | pending |", "| Status | in_progress |", 1) + "| Retry-Count | 1 |\r\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestUpdateWritesNothingWhenNothingChanges checks that an edit that changes no byte leaves
// the file itself alone: same inode, same modification time, no temp files.
func TestUpdateWritesNothingWhenNothingChanges(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []EditFunc{
		set("TASK-1", "Status", "pending"),
		set("TASK-1", "Status", " pending "),
		set("TASK-1", "Notes", "-"),
		func(*Doc) ([]Op, error) { return nil, nil },
	} {
		changed, err := Update(context.Background(), path, Tasks, edit)
		if err != nil || changed {
			t.Fatalf("Update = %v, %v; want false, nil", changed, err)
		}
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("file rewritten: inode or mtime changed (%v -> %v)", before.ModTime(), after.ModTime())
	}
	noTempFiles(t, filepath.Dir(path))
}

// TestUpdateLeavesBadInputAlone checks that a failed edit writes nothing: a file that does
// not parse, a compare-and-set that declines, an unknown record, a bad value.
func TestUpdateLeavesBadInputAlone(t *testing.T) {
	tests := []struct {
		name string
		src  string
		edit EditFunc
		is   error
	}{
		{"parse error", saveQueue + "\n### TASK-1\n\n| Field | Value |\n|---|---|\n| Status | pending |\n", set("TASK-2", "Status", "completed"), nil},
		{"conflict", saveQueue, func(*Doc) ([]Op, error) {
			return []Op{CompareAndSet{ID: "TASK-1", Field: "Status", Expect: "in_progress", Value: "completed"}}, nil
		}, ErrConflict},
		{"unknown record", saveQueue, set("TASK-9", "Status", "completed"), ErrNotFound},
		{"bad value", saveQueue, set("TASK-1", "Status", "finished"), nil},
		{"line break", saveQueue, set("TASK-1", "Notes", "a\nb"), nil},
		{"duplicate append", saveQueue, func(*Doc) ([]Op, error) {
			return []Op{AppendRecord{Text: "### TASK-2\n\n| Field | Value |\n|---|---|\n| Status | pending |\n"}}, nil
		}, ErrExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeQueue(t, tt.src, 0o644)
			before, _ := os.Stat(path)
			changed, err := Update(context.Background(), path, Tasks, tt.edit)
			if err == nil || changed {
				t.Fatalf("Update = %v, %v; want an error", changed, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			after, _ := os.Stat(path)
			if got := readString(t, path); got != tt.src || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("file touched:\n%s", got)
			}
			noTempFiles(t, filepath.Dir(path))
		})
	}
}

// personSaves returns an EditFunc that, the first time it runs, plays a person saving the
// file in an editor (a new file renamed over the old one) after Update has read it, and then
// asks for edit. It counts its calls in *calls.
func personSaves(t *testing.T, path string, from, to string, calls *int, edit []Op) EditFunc {
	return func(*Doc) ([]Op, error) {
		*calls++
		if *calls == 1 {
			src := readString(t, path)
			if !strings.Contains(src, from) {
				t.Fatalf("%q not in the file", from)
			}
			tmp := path + ".person"
			if err := os.WriteFile(tmp, []byte(strings.Replace(src, from, to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}
		return edit, nil
	}
}

// TestUpdateKeepsAPersonsEdit checks SPEC §4.3: a person who saves the file between
// Update's read and its write keeps their edit, and the orchestrator's edit is made on top
// of it; a compare-and-set that their edit makes false declines and leaves their version.
func TestUpdateKeepsAPersonsEdit(t *testing.T) {
	t.Run("both edits kept", func(t *testing.T) {
		path := writeQueue(t, saveQueue, 0o644)
		calls := 0
		changed, err := Update(context.Background(), path, Tasks,
			personSaves(t, path, "| Notes | - |", "| Notes | mine |", &calls,
				[]Op{SetField{ID: "TASK-2", Field: "Status", Value: "completed"}}))
		if err != nil || !changed {
			t.Fatalf("Update = %v, %v", changed, err)
		}
		got := readString(t, path)
		want := "# Tasks\n\n### TASK-1\n\n| Field | Value |\n|---|---|\n| Status | pending |\n| Notes | mine |\n\n" +
			"### TASK-2\n\n| Field | Value |\n|---|---|\n| Status | completed |\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
		if calls != 2 {
			t.Errorf("edit computed %d times, want 2", calls)
		}
		noTempFiles(t, filepath.Dir(path))
	})
	t.Run("compare-and-set declines", func(t *testing.T) {
		path := writeQueue(t, saveQueue, 0o644)
		calls := 0
		_, err := Update(context.Background(), path, Tasks,
			personSaves(t, path, "| Status | pending |", "| Status | skipped |", &calls,
				[]Op{CompareAndSet{ID: "TASK-1", Field: "Status", Expect: "pending", Value: "in_progress"}}))
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("Update error = %v, want a conflict", err)
		}
		want := strings.Replace(saveQueue, "| Status | pending |", "| Status | skipped |", 1)
		if got := readString(t, path); got != want {
			t.Errorf("the person's edit was not kept:\n%s", got)
		}
		noTempFiles(t, filepath.Dir(path))
	})
}

// TestUpdateSerializes runs many in-process writers on different cells at once: the lock
// makes every edit land.
func TestUpdateSerializes(t *testing.T) {
	path := writeQueue(t, saveQueue, 0o644)
	errs := make(chan error, 40)
	for i := range 40 {
		go func() {
			id := []string{"TASK-1", "TASK-2"}[i%2]
			_, err := Update(context.Background(), path, Tasks, set(id, fmt.Sprintf("Note %d", i), "x"))
			errs <- err
		}()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		r, _ := d.Record([]string{"TASK-1", "TASK-2"}[i%2])
		if got := d.Get(r, fmt.Sprintf("Note %d", i)); got != "x" {
			t.Errorf("edit %d lost", i)
		}
	}
	if !bytes.HasPrefix(d.Src, []byte(saveQueue[:40])) {
		t.Errorf("file damaged:\n%s", d.Src)
	}
}

// TestUpdateAfterWaitsForReady: UpdateAfter's new version takes the file's place only once
// ready returns, and ready runs once, after the version is written and synced beside the
// file: the caller's own write (an attempt's record) runs beside everything else. A person
// who saves meanwhile keeps their edit, and ready is not asked again; an error from ready
// leaves the file as it was; an edit that changes nothing asks nothing.
func TestUpdateAfterWaitsForReady(t *testing.T) {
	ctx := context.Background()
	path := writeQueue(t, saveQueue, 0o644)
	dir := filepath.Dir(path)
	calls := 0
	changed, err := UpdateAfter(ctx, path, Tasks, func() error {
		calls++
		if s := readString(t, path); s != saveQueue {
			t.Errorf("the file changed before ready returned:\n%s", s)
		}
		temps, _ := filepath.Glob(filepath.Join(dir, ".task_queue.md.tmp-*"))
		if len(temps) != 1 || !strings.Contains(readString(t, temps[0]), "| Status | in_progress |") {
			t.Errorf("ready was asked before the new version was written beside the file: %v", temps)
		}
		return nil
	}, set("TASK-1", "Status", "in_progress"))
	if err != nil || !changed || calls != 1 {
		t.Fatalf("UpdateAfter = %v, %v after %d calls of ready; want true, nil after 1", changed, err, calls)
	}
	if s := readString(t, path); !strings.Contains(s, "| Status | in_progress |") {
		t.Errorf("the edit is not in the file:\n%s", s)
	}
	noTempFiles(t, dir)

	// A person saves while ready runs: their edit stays, and ours is made on top of it.
	path = writeQueue(t, saveQueue, 0o644)
	calls = 0
	changed, err = UpdateAfter(ctx, path, Tasks, func() error {
		calls++
		return os.WriteFile(path, []byte(strings.Replace(saveQueue, "| Notes | - |", "| Notes | theirs |", 1)), 0o644)
	}, set("TASK-2", "Status", "in_progress"))
	if err != nil || !changed || calls != 1 {
		t.Fatalf("UpdateAfter = %v, %v after %d calls of ready; want true, nil after 1", changed, err, calls)
	}
	if s := readString(t, path); !strings.Contains(s, "| Notes | theirs |") || !strings.Contains(s, "| Status | in_progress |") {
		t.Errorf("the person's save or the edit is lost:\n%s", s)
	}

	// ready fails: nothing changes.
	path = writeQueue(t, saveQueue, 0o644)
	refused := errors.New("the record could not be written")
	changed, err = UpdateAfter(ctx, path, Tasks, func() error { return refused }, set("TASK-1", "Status", "in_progress"))
	if !errors.Is(err, refused) || changed {
		t.Fatalf("UpdateAfter = %v, %v; want false, %v", changed, err, refused)
	}
	if s := readString(t, path); s != saveQueue {
		t.Errorf("the file changed though ready failed:\n%s", s)
	}
	noTempFiles(t, filepath.Dir(path))

	// Nothing to change: ready is not asked.
	changed, err = UpdateAfter(ctx, path, Tasks, func() error {
		t.Error("ready was asked for an edit that changes nothing")
		return nil
	}, set("TASK-1", "Status", "pending"))
	if err != nil || changed {
		t.Fatalf("UpdateAfter = %v, %v; want false, nil", changed, err)
	}
}

// TestUpdateWritesIntoItsSpare: where the loop asks for it (KeepSpares), each write makes
// the next one's temp file once it is done, in a folder of its own, and the next write
// writes into it and makes no file: the queue's new version is that file. A spare is always
// a new file: never a version that stood at the queue's path, which a reader may still hold.
// A spare that is a link to another file, hard or symbolic, or that another user owns, is
// never written through: that file keeps what it holds. The queue's folder holds nothing
// else than it did.
func TestUpdateWritesIntoItsSpare(t *testing.T) {
	ctx := context.Background()
	path := writeQueue(t, saveQueue, 0o644)
	if err := KeepSpares(filepath.Dir(path), filepath.Join(t.TempDir(), "spares")); err != nil {
		t.Fatal(err)
	}
	defer spares.Delete(filepath.Dir(path))
	inode := func(p string) uint64 {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	if _, err := Update(ctx, path, Tasks, set("TASK-1", "Status", "in_progress")); err != nil {
		t.Fatal(err)
	}
	sparing.Wait()
	spare := spareName(path)
	if got := readString(t, spare); got != "" {
		t.Fatalf("the spare holds %q, want a new, empty file", got)
	}
	was := inode(spare)
	if _, err := Update(ctx, path, Tasks, set("TASK-2", "Status", "in_progress")); err != nil {
		t.Fatal(err)
	}
	if inode(path) != was {
		t.Errorf("the second write made a file: the queue is inode %d, the spare was %d", inode(path), was)
	}
	sparing.Wait()
	// (A version that stood at the path holds a queue; a new spare holds nothing.)
	if now := inode(spare); now == was || readString(t, spare) != "" {
		t.Errorf("the next spare holds %q: a version that stood at the path is kept", readString(t, spare))
	}

	other := filepath.Join(t.TempDir(), "other")
	for i, link := range []func() error{
		func() error { return os.Link(other, spare) },
		func() error { return os.Symlink(other, spare) },
		func() error {
			if err := os.WriteFile(spare, nil, 0o666); err != nil {
				return err
			}
			return os.Chown(spare, 4242, 4242) // another user's (the tests run as root)
		},
	} {
		sparing.Wait()
		if err := os.WriteFile(other, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(spare); err != nil {
			t.Fatal(err)
		}
		if err := link(); err != nil {
			t.Fatal(err)
		}
		// What was at the spare's name, as it is: written through, it would change.
		held, err := os.Open(spare)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		before, err := io.ReadAll(held)
		if err != nil {
			t.Fatal(err)
		}
		value := fmt.Sprintf("note %d", i)
		if _, err := Update(ctx, path, Tasks, set("TASK-1", "Notes", value)); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, other); got != "keep me\n" {
			t.Errorf("link %d: the write went through the spare into another file: %q", i, got)
		}
		if got := readString(t, path); !strings.Contains(got, "| Notes | "+value+" |") {
			t.Errorf("link %d: the edit is not in the queue:\n%s", i, got)
		}
		if after, err := io.ReadAll(io.NewSectionReader(held, 0, 1<<20)); err != nil || !bytes.Equal(after, before) {
			t.Errorf("link %d: the queue was written into a spare it must not use: %q, %v", i, after, err)
		}
	}
	sparing.Wait()
	noTempFiles(t, filepath.Dir(path))
}
