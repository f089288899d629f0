package retry

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

var update = flag.Bool("update", false, "rewrite the want/ folders of the golden tests")

// t0 is the fixed clock of the tests.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// at returns t0 plus minutes.
func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

// gateOutput is a go test output whose primary error is line.
func gateOutput(line string) string {
	return "--- FAIL: TestAdd (0.00s)\n    " + line + "\nFAIL\nFAIL\texample.com/calc\t0.003s\nFAIL\n"
}

// failure is a failed attempt of task at minute m whose test logged line.
func failure(task, line string, m int) Failure {
	return Failure{Task: task, Type: TestFails, Output: gateOutput(line), File: "calc/add.go", At: at(m)}
}

// newRepo copies testdata/<dir>/in/ into a new repository's .orchestrator folder.
func newRepo(t *testing.T, dir string) queue.Layout {
	t.Helper()
	l := queue.Layout{Root: t.TempDir()}
	if err := os.MkdirAll(l.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join("testdata", dir, "in")
	err := filepath.WalkDir(in, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(in, p)
		dst := filepath.Join(l.Dir(), rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tree reads every file under dir except the lock, by path relative to dir.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == ".lock" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// checkTree compares the repository's .orchestrator folder with testdata/<dir>/want/, file
// by file (and no file more or less), or rewrites want/ with -update.
func checkTree(t *testing.T, l queue.Layout, dir string) {
	t.Helper()
	got := tree(t, l.Dir())
	wantDir := filepath.Join("testdata", dir, "want")
	if *update {
		if err := os.RemoveAll(wantDir); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			p := filepath.Join(wantDir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := tree(t, wantDir)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: missing", name)
		case !bytes.Equal(g, w):
			t.Errorf("%s differs from %s (run with -update to accept):\n%s", name, filepath.Join(wantDir, name), lineDiff(string(w), string(g)))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: not expected (run with -update to accept)", name)
		}
	}
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "  line %d:\n    want %q\n    got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}

// setStatus plays the watch loop starting the task's next attempt.
func setStatus(t *testing.T, l queue.Layout, id, status string) {
	t.Helper()
	_, err := queue.Update(context.Background(), l.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		return []queue.Op{queue.SetField{ID: id, Field: "Status", Value: status}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// record calls Record and checks the decision's kind ("retry", "failed" or "halt").
func record(t *testing.T, l queue.Layout, f Failure, lim Limits, want string) Decision {
	t.Helper()
	d, err := Record(context.Background(), l, f, lim)
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	got := "failed"
	switch {
	case d.Retry:
		got = "retry"
	case d.Halt:
		got = "halt"
	case d.Deferred:
		got = "deferred"
	}
	if got != want {
		t.Fatalf("Record decided %s (%s), want %s", got, d.Reason, want)
	}
	return d
}

// TestGolden runs Record, Resolve, ResetRun and WriteHaltReport on the files of
// testdata/record/<case>/in and compares every file of .orchestrator/ afterwards with
// testdata/record/<case>/want.
func TestGolden(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, l queue.Layout)
	}{
		{"new-issue", func(t *testing.T, l queue.Layout) {
			// The first failure of a task: a new issue under the marker, counts, a retry.
			record(t, l, failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0), Limits{}, "retry")
		}},
		{"new-issue-no-marker", func(t *testing.T, l queue.Layout) {
			// No marker line: the issue goes at the end. No Queue Status: no counts. No
			// session_state.md: it is made from the init template.
			record(t, l, failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0), Limits{}, "retry")
		}},
		{"counts", func(t *testing.T, l queue.Layout) {
			// claudestrator's issue queue: the counts cover every status; Last Polled stays.
			record(t, l, failure("TASK-004", "sub_test.go:9: Sub(4, 2) = 3, want 2", 0), Limits{}, "retry")
		}},
		{"update-open-issue", func(t *testing.T, l queue.Layout) {
			// A later failure of the same task updates its open issue.
			record(t, l, failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0), Limits{}, "retry")
		}},
		{"halt-repeated", func(t *testing.T, l queue.Layout) {
			f := failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0)
			record(t, l, f, Limits{}, "retry")
			setStatus(t, l, "TASK-003", "in_progress")
			f.At = at(5)
			f.Output = strings.ReplaceAll(f.Output, "0.003s", "0.004s") // another run
			record(t, l, f, Limits{}, "retry")
			setStatus(t, l, "TASK-003", "in_progress")
			f.At = at(10)
			d := record(t, l, f, Limits{}, "halt")
			if _, err := WriteHaltReport(l, d, f); err != nil {
				t.Fatal(err)
			}
		}},
		{"halt-max-retries", func(t *testing.T, l queue.Layout) {
			d := record(t, l, failure("TASK-003", "add_test.go:9: Add(2, 2) = 3, want 4", 0), Limits{}, "halt")
			if _, err := WriteHaltReport(l, d, failure("TASK-003", "add_test.go:9: Add(2, 2) = 3, want 4", 0)); err != nil {
				t.Fatal(err)
			}
		}},
		{"global-cap-deferred", func(t *testing.T, l queue.Layout) {
			// The cap holds the retry back for this run: failed, not halted.
			f := failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0)
			d := record(t, l, f, Limits{}, "deferred")
			// The report lists the unresolved issues for a person.
			if _, err := WriteHaltReport(l, d, f); err != nil {
				t.Fatal(err)
			}
			if got := fields(t, l.Tasks(), "TASK-003")["Status"]; got != "failed" {
				t.Fatalf("Status %q, want failed", got)
			}
			// The next run: the counter starts again and the held-back retry is due.
			if err := ResetRun(ctx, l); err != nil {
				t.Fatal(err)
			}
			ids, err := Requeue(ctx, l)
			if err != nil || len(ids) != 1 || ids[0] != "TASK-003" {
				t.Fatalf("Requeue: %v, %v; want [TASK-003]", ids, err)
			}
		}},
		{"session-claudestrator", func(t *testing.T, l queue.Layout) {
			// claudestrator's session_state.md has no Auto-Retry State: it is added at the end.
			record(t, l, failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0), Limits{}, "retry")
		}},
		{"crlf", func(t *testing.T, l queue.Layout) {
			record(t, l, failure("TASK-003", "add_test.go:9: Add(2, 2) = 5, want 4", 0), Limits{}, "retry")
		}},
		{"resolve", func(t *testing.T, l queue.Layout) {
			if err := Resolve(ctx, l, "TASK-003", at(30)); err != nil {
				t.Fatal(err)
			}
			before := tree(t, l.Dir())
			if err := Resolve(ctx, l, "TASK-003", at(40)); err != nil {
				t.Fatal(err)
			}
			if after := tree(t, l.Dir()); !bytes.Equal(after["issue_queue.md"], before["issue_queue.md"]) {
				t.Error("a second Resolve changed the issue queue")
			}
		}},
		{"reset-run", func(t *testing.T, l queue.Layout) {
			if err := ResetRun(ctx, l); err != nil {
				t.Fatal(err)
			}
			before := tree(t, l.Dir())
			info, _ := os.Stat(l.Session())
			if err := ResetRun(ctx, l); err != nil {
				t.Fatal(err)
			}
			info2, _ := os.Stat(l.Session())
			if after := tree(t, l.Dir()); !bytes.Equal(after["session_state.md"], before["session_state.md"]) || !os.SameFile(info, info2) {
				t.Error("a second ResetRun wrote session_state.md")
			}
		}},
	}
	old := Now
	Now = func() time.Time { return at(60) }
	defer func() { Now = old }()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newRepo(t, filepath.Join("record", tt.name))
			tt.run(t, l)
			checkTree(t, l, filepath.Join("record", tt.name))
		})
	}
}
