package calc

import "testing"

func TestMul_UNIT_001(t *testing.T) {
	if got := Mul(2, 3); got != 6 {
		t.Fatalf("Mul(2, 3) = %d, want 6", got)
	}
}
