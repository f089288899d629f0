package testrun

import (
	"slices"
	"testing"
)

// TestDocTestIDs: Rust's doc tests are named by the item they test, the second code block
// of an item by its order; other tests keep their names.
func TestDocTestIDs(t *testing.T) {
	in := []string{"tests::adds", "src/lib.rs - add (line 40)", "src/lib.rs - sub (line 9)", "src/lib.rs - add (line 12)", "int_add"}
	want := []string{"tests::adds", "src/lib.rs - add (#2)", "src/lib.rs - sub", "src/lib.rs - add", "int_add"}
	got := DocTestIDs(in)
	if !slices.Equal(got, want) {
		t.Errorf("DocTestIDs = %q, want %q", got, want)
	}
	if in[1] != "src/lib.rs - add (line 40)" {
		t.Errorf("DocTestIDs changed its argument: %q", in)
	}
	// The same doc tests, 36 lines lower: the same names.
	moved := DocTestIDs([]string{"src/lib.rs - add (line 76)", "src/lib.rs - add (line 48)", "src/lib.rs - sub (line 45)"})
	if !slices.Equal(moved, []string{"src/lib.rs - add (#2)", "src/lib.rs - add", "src/lib.rs - sub"}) {
		t.Errorf("moved: %q", moved)
	}
}
