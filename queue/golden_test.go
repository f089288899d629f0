package queue

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the want.md (and want.err) files of the golden tests")

// A goldenOp is one operation of a golden case, read from its op.txt.
type goldenOp struct {
	op Op
	// again says what applying the op a second time to its own output must do: "same" (no
	// change, no error), "conflict" (ErrConflict, no change) or "duplicate" (an error, no
	// change: a record cannot be appended twice).
	again string
}

// readOps reads the operations of a golden case. op.txt holds one operation a line:
//
//	queue issues                            (optional first line: parse as an issue queue)
//	set ID Field=Value                      (SetField; the value is the rest of the line)
//	cas ID Field Expect Value               (CompareAndSet; "-" stands for an empty value)
//	append                                  (AppendRecord: the record is the rest of the file)
//	replace Title                           (ReplaceSection: the section is the rest of the file)
func readOps(t *testing.T, path string) (Kind, []goldenOp) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kind := Tasks
	var ops []goldenOp
	lines := strings.SplitAfter(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\n")
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "":
		case "queue":
			if rest != "issues" {
				t.Fatalf("%s: queue %q: want issues", path, rest)
			}
			kind = Issues
		case "set":
			id, assign, _ := strings.Cut(rest, " ")
			name, value, ok := strings.Cut(assign, "=")
			if !ok {
				t.Fatalf("%s:%d: want set ID Field=Value", path, i+1)
			}
			ops = append(ops, goldenOp{SetField{ID: id, Field: name, Value: value}, "same"})
		case "cas":
			f := strings.Fields(rest)
			if len(f) != 4 {
				t.Fatalf("%s:%d: want cas ID Field Expect Value", path, i+1)
			}
			dash := func(s string) string {
				if s == "-" {
					return ""
				}
				return s
			}
			ops = append(ops, goldenOp{CompareAndSet{ID: f[0], Field: f[1], Expect: dash(f[2]), Value: dash(f[3])}, "conflict"})
		case "append":
			ops = append(ops, goldenOp{AppendRecord{Text: strings.Join(lines[i+1:], "")}, "duplicate"})
			i = len(lines)
		case "replace":
			ops = append(ops, goldenOp{ReplaceSection{Title: rest, Text: strings.Join(lines[i+1:], "")}, "same"})
			i = len(lines)
		default:
			t.Fatalf("%s:%d: unknown operation %q", path, i+1, verb)
		}
	}
	if len(ops) == 0 {
		t.Fatalf("%s: no operation", path)
	}
	return kind, ops
}

// TestGolden applies the operation of each testdata/golden/<case>/op.txt to its input.md and
// compares the result with want.md (and an error with want.err, when the operation must fail).
// It then applies the same operation to the result, which must change nothing. Run with
// -update to rewrite the want files.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			input, err := os.ReadFile(filepath.Join(dir, "input.md"))
			if err != nil {
				t.Fatal(err)
			}
			kind, gops := readOps(t, filepath.Join(dir, "op.txt"))
			ops := make([]Op, len(gops))
			for i, g := range gops {
				ops[i] = g.op
			}
			d, err := Parse("input.md", input, kind)
			if err != nil {
				t.Fatalf("input does not parse: %v", err)
			}
			got, applyErr := Apply(d, ops...)
			gotErr := ""
			if applyErr != nil {
				gotErr = applyErr.Error() + "\n"
				if !bytes.Equal(got, input) {
					t.Errorf("a failed edit changed the file")
				}
			}
			wantPath, errPath := filepath.Join(dir, "want.md"), filepath.Join(dir, "want.err")
			if *update {
				writeGolden(t, wantPath, got)
				if gotErr != "" {
					writeGolden(t, errPath, []byte(gotErr))
				} else if err := os.Remove(errPath); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from want.md (run with -update to accept):\n%s", lineDiff(want, got))
			}
			wantErr, err := os.ReadFile(errPath)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if gotErr != string(wantErr) {
				t.Errorf("error = %q, want %q", gotErr, wantErr)
			}

			// The output must parse, and the same operations applied to it change nothing.
			d2, err := Parse("input.md", got, kind)
			if err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
			for _, g := range gops {
				again, err := Apply(d2, g.op)
				if !bytes.Equal(again, got) {
					t.Errorf("%T applied again changed the file:\n%s", g.op, lineDiff(got, again))
				}
				switch {
				case g.again == "same" && err != nil:
					t.Errorf("%T applied again: %v", g.op, err)
				case g.again == "conflict" && !errors.Is(err, ErrConflict):
					t.Errorf("%T applied again: error %v, want a conflict", g.op, err)
				case g.again == "duplicate" && err == nil:
					t.Errorf("%T applied again: no error, want a refusal to duplicate the record", g.op)
				}
			}
		})
	}
}

func writeGolden(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineDiff shows the lines of want and got that differ, with line endings made visible.
func lineDiff(want, got []byte) string {
	w := strings.SplitAfter(string(want), "\n")
	g := strings.SplitAfter(string(got), "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var x, y string
		if i < len(w) {
			x = w[i]
		}
		if i < len(g) {
			y = g[i]
		}
		if x != y {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, x, y)
		}
	}
	return b.String()
}

// TestProseDependencies checks that a record whose only dependency is a
// `**Dependencies:** TASK-1` prose line reads it, and that once `set` has written a
// Depends On row, the row is what counts (SPEC §3.1: the prose line supplies a field only
// when no table row does).
func TestProseDependencies(t *testing.T) {
	dir := filepath.Join("testdata", "golden", "prose_dependencies")
	input, err := os.ReadFile(filepath.Join(dir, "input.md"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse("input.md", input, Tasks)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := d.Record("TASK-2")
	if got := d.Deps(r); strings.Join(got, ",") != "TASK-1" {
		t.Errorf("deps from the prose line = %q, want [TASK-1]", got)
	}
	want, err := os.ReadFile(filepath.Join(dir, "want.md"))
	if err != nil {
		t.Fatal(err)
	}
	d, err = Parse("want.md", want, Tasks)
	if err != nil {
		t.Fatal(err)
	}
	r, _ = d.Record("TASK-2")
	if got := d.Deps(r); strings.Join(got, ",") != "TASK-3" {
		t.Errorf("deps after set = %q, want [TASK-3]", got)
	}
}
