package calc

import "testing"

// This file covers UNIT-001 (the ID is only in this comment and in a string).
func TestMul(t *testing.T) {
	t.Log("UNIT-001")
	if got := Mul(2, 3); got != 6 {
		t.Fatalf("Mul(2, 3) = %d, want 6", got)
	}
}
