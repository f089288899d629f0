package money

import "testing"

func TestString(t *testing.T) {
	for c, want := range map[Cents]string{0: "0.00", 5: "0.05", 1234: "12.34", -250: "-2.50"} {
		if got := c.String(); got != want {
			t.Errorf("Cents(%d).String() = %q, want %q", int64(c), got, want)
		}
	}
}

func TestPercent(t *testing.T) {
	if got := Cents(1000).Percent(15); got != 150 {
		t.Errorf("Percent = %d, want 150", got)
	}
	if got := Cents(5).Percent(50); got != 3 {
		t.Errorf("Percent rounds half up: %d, want 3", got)
	}
}
