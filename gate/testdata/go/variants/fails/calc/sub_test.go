package calc

import "testing"

func TestSub(t *testing.T) {
	if got := Add(2, -3); got != 5 {
		t.Fatalf("Add(2, -3) = %d, want 5", got)
	}
}
