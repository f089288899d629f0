// Package spotcheck is the QA spot check (SPEC §11.1): a deterministic sample of the test
// plan, run by name and decided by the decision matrix, and mutation of landed code to show
// that its tests can fail; its report is the verdict of a QA task.
package spotcheck

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
)

// A Rule is a category's row of the selection table: the share of its available tests
// that is selected, bounded by Min and Max (0: no bound).
type Rule struct {
	Pct, Min, Max int
}

// Rules are the rows of SPEC §11.1's table, by category. Smoke and critical tests, and the
// task's own (feature) tests, are all selected.
var Rules = map[string]Rule{
	"smoke":       {100, 0, 0},
	"critical":    {100, 0, 0},
	"unit":        {10, 2, 10},
	"integration": {20, 2, 5},
	"e2e":         {25, 1, 3},
	"security":    {30, 2, 5},
	"performance": {10, 1, 2},
}

// RuleFor returns a category's rule; a category the table does not name is sampled as
// unit tests are.
func RuleFor(category string) Rule {
	if r, ok := Rules[strings.ToLower(category)]; ok {
		return r
	}
	return Rules["unit"]
}

// Count is how many of a category's available tests are selected:
// min(available, clamp(ceil(available × pct / 100), min, max)).
func Count(available int, r Rule) int {
	if available <= 0 {
		return 0
	}
	n := (available*r.Pct + 99) / 100
	if r.Min > 0 && n < r.Min {
		n = r.Min
	}
	if r.Max > 0 && n > r.Max {
		n = r.Max
	}
	return min(n, available)
}

// Seed is the first 4 bytes of SHA-256(taskID + category), big-endian.
func Seed(taskID, category string) uint32 {
	sum := sha256.Sum256([]byte(taskID + category))
	return binary.BigEndian.Uint32(sum[:4])
}

// Indices are the positions of the selected tests among a category's available ones:
// index_i = (seed + floor(i × available / selected)) mod available, i in 0..selected-1.
func Indices(taskID, category string, available, selected int) []int {
	if available <= 0 || selected <= 0 {
		return nil
	}
	seed := uint64(Seed(taskID, category))
	out := make([]int, selected)
	for i := range selected {
		out[i] = int((seed + uint64(i*available/selected)) % uint64(available))
	}
	return out
}
