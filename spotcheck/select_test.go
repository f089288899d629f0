package spotcheck

import (
	"slices"
	"testing"
)

// TestSelectionVectors: the selection of SPEC §11.1 against vectors computed apart from
// this code (Python's hashlib and math.ceil, by hand from the formula), including a
// category with fewer available tests than its minimum, an empty one and a 100% one.
func TestSelectionVectors(t *testing.T) {
	for _, v := range []struct {
		task, category string
		available      int
		seed           uint32
		selected       int
		indices        []int
	}{
		{"TASK-Q01", "unit", 37, 68501548, 4, []int{7, 16, 25, 34}},
		{"TASK-Q01", "unit", 1, 68501548, 1, []int{0}}, // available < min (2)
		{"TASK-QA-7", "integration", 12, 2702373102, 3, []int{6, 10, 2}},
		{"TASK-Q02", "e2e", 0, 2573872546, 0, nil}, // empty category
		{"TASK-Q02", "security", 9, 618451147, 3, []int{1, 4, 7}},
		{"TASK-Q03", "smoke", 4, 3726374527, 4, []int{3, 0, 1, 2}}, // 100%
		{"TASK-Q03", "performance", 250, 4147706386, 2, []int{136, 11}},
		{"TASK-Q01", "unit", 10000, 68501548, 10, []int{1548, 2548, 3548, 4548, 5548, 6548, 7548, 8548, 9548, 548}},
	} {
		if got := Seed(v.task, v.category); got != v.seed {
			t.Errorf("Seed(%s, %s) = %d, want %d", v.task, v.category, got, v.seed)
		}
		n := Count(v.available, RuleFor(v.category))
		if n != v.selected {
			t.Errorf("%s %s: %d of %d selected, want %d", v.task, v.category, n, v.available, v.selected)
		}
		if got := Indices(v.task, v.category, v.available, n); !slices.Equal(got, v.indices) {
			t.Errorf("%s %s (%d available): indices %v, want %v", v.task, v.category, v.available, got, v.indices)
		}
	}
}

// BenchmarkSelect: the selection over a plan of 10,000 tests in five categories.
func BenchmarkSelect(b *testing.B) {
	cats := []string{"unit", "integration", "e2e", "security", "performance"}
	for b.Loop() {
		for _, c := range cats {
			n := Count(2000, RuleFor(c))
			_ = Indices("TASK-Q01", c, 2000, n)
		}
	}
}
