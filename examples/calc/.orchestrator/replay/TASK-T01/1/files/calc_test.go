package calc

import "testing"

func TestAdd_UNIT_001(t *testing.T) {
	for _, c := range []struct{ a, b, want int }{{2, 3, 5}, {-1, 1, 0}} {
		if got := Add(c.a, c.b); got != c.want {
			t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestMultiply_UNIT_002(t *testing.T) {
	for _, c := range []struct{ a, b, want int }{{4, 5, 20}, {7, 0, 0}} {
		if got := Multiply(c.a, c.b); got != c.want {
			t.Errorf("Multiply(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
