package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// TestConcurrency runs the real binary as several writers at once on one queue file, while a
// person edits the same file in an editor (SPEC §4.3):
//
//   - four loops each run `orchestrator set TASK-n Notes=vK` for K = 1..20, as separate
//     processes, so that they serialize on the lock file;
//   - an editor changes TASK-5's Notes cell 20 times the way editors save: read the file,
//     change the cell in memory, write a temp file in the same folder, rename it over the
//     original. It takes no lock.
//
// At the end every cell holds its last value, the file parses, and no temp file is left.
//
// The orchestrator's guarantee is one-way: it never overwrites a person's edit. It checks the
// file just before swapping its version in with RENAME_EXCHANGE, and checks what the swap
// displaced; if a person saved in between, their version goes straight back and the edit is
// applied to it (queue/save.go; TestEditorSaveRace is the stress of that). The
// other way round, no program can stop an editor that renames its buffer over the file
// blindly from dropping an orchestrator write made since the editor read the file. So that the
// test checks the guarantee the orchestrator makes and does not depend on luck, the editor
// here is a careful one: just before its rename it reads the file again and starts over if
// the file changed. Even so, a write landing between that check and the rename can be lost;
// that is why each loop makes its last write only after the editor has finished, and only
// last values are checked. The editor's last edit, in contrast, races with the loops' writes
// and must survive them.
func TestConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it 80 times")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no go command to build the binary, and CI=true")
		}
		t.Skip("no go command to build the binary")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "orchestrator")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	repo := filepath.Join(tmp, "repo")
	dir := filepath.Join(repo, queue.DirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "task_queue.md")
	var src bytes.Buffer
	src.WriteString("# Task Queue\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&src, "\n### TASK-%d\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | docs |\n| Notes | - |\n\nBody of task %d.\n", i, i)
	}
	if err := os.WriteFile(path, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	const (
		loops  = 4
		values = 20
		edits  = 20
	)
	var (
		progress   atomic.Int64 // orchestrator runs finished
		failed     atomic.Bool  // a loop gave up: the editor must not wait for it
		editorDone = make(chan struct{})
		wg         sync.WaitGroup
		errs       = make(chan error, loops+1)
	)
	for n := 1; n <= loops; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1; k <= values; k++ {
				if k == values {
					<-editorDone
				}
				cmd := exec.Command(bin, "--dir", repo, "set", fmt.Sprintf("TASK-%d", n), fmt.Sprintf("Notes=v%d", k))
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("set TASK-%d Notes=v%d: %v\n%s", n, k, err, out)
					failed.Store(true)
					if k < values {
						<-editorDone
					}
					return
				}
				progress.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(editorDone)
		for e := 1; e <= edits; e++ {
			// Spread the edits over the loops' runs (about one per three runs), so that
			// they meet orchestrator writes in flight.
			for progress.Load() < int64(3*(e-1)) && !failed.Load() {
				time.Sleep(100 * time.Microsecond)
			}
			if err := editorSave(path, "TASK-5", fmt.Sprintf("e%d", e)); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	d, err := queue.Load(path)
	if err != nil {
		t.Fatalf("the queue does not parse: %v", err)
	}
	want := map[string]string{"TASK-5": fmt.Sprintf("e%d", edits)}
	for n := 1; n <= loops; n++ {
		want[fmt.Sprintf("TASK-%d", n)] = fmt.Sprintf("v%d", values)
	}
	for id, v := range want {
		r, ok := d.Record(id)
		if !ok {
			t.Errorf("%s lost", id)
			continue
		}
		if got := d.Get(r, "Notes"); got != v {
			t.Errorf("%s Notes = %q, want %q", id, got, v)
		}
		if body := d.Body(r); !bytes.Contains([]byte(body), []byte("Body of task "+id[len("TASK-"):]+".")) {
			t.Errorf("%s body changed: %q", id, body)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "task_queue.md" && e.Name() != ".lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("queue file mode: %v %v", fi.Mode(), err)
	}
}

// editorSave plays a careful editor saving the Notes cell of record id: read the file, change
// the cell in memory, write a temp file in the same folder, and, if the file still holds what
// it read, rename the temp file over it; otherwise start over. Every version it reads must
// parse: a reader never sees a half-written file.
func editorSave(path, id, value string) error {
	cell := regexp.MustCompile(`(?m)^\| Notes \| .* \|$`)
	for {
		before, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := queue.Parse(path, before, queue.Tasks); err != nil {
			return fmt.Errorf("the editor read a file that does not parse: %v\n%s", err, before)
		}
		at := bytes.Index(before, []byte("### "+id+"\n"))
		var loc []int
		if at >= 0 {
			loc = cell.FindIndex(before[at:])
		}
		if loc == nil {
			return fmt.Errorf("%s's Notes row not found:\n%s", id, before)
		}
		var edited []byte
		edited = append(edited, before[:at+loc[0]]...)
		edited = append(edited, "| Notes | "+value+" |"...)
		edited = append(edited, before[at+loc[1]:]...)

		f, err := os.CreateTemp(filepath.Dir(path), ".task_queue.md.editor-*")
		if err != nil {
			return err
		}
		_, werr := f.Write(edited)
		if err := f.Chmod(0o644); werr == nil {
			werr = err
		}
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			os.Remove(f.Name())
			return werr
		}
		now, err := os.ReadFile(path)
		if err != nil {
			os.Remove(f.Name())
			return err
		}
		if !bytes.Equal(now, before) {
			os.Remove(f.Name()) // someone saved meanwhile: read it again
			continue
		}
		return os.Rename(f.Name(), path)
	}
}
