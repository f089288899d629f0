package cart

import (
	"testing"

	"example.com/shop/money"
)

// Discount takes a percentage off an amount of money, rounded half up.
func TestAC_STE_1_Discount(t *testing.T) {
	if got := Discount(money.Cents(1000), 15); got != 850 {
		t.Errorf("Discount(10.00, 15%%) = %v, want 8.50", got)
	}
	if got := Discount(money.Cents(5), 50); got != 2 {
		t.Errorf("Discount(0.05, 50%%) = %v, want 0.02", got)
	}
}

// Coupon codes map to percentages: TEN gives ten, HALF gives fifty, any
// other code gives nothing.
func TestAC_STE_2_Coupon(t *testing.T) {
	for code, want := range map[string]int64{"TEN": 10, "HALF": 50, "ten": 0, "": 0} {
		if got := Coupon(code); got != want {
			t.Errorf("Coupon(%q) = %d, want %d", code, got, want)
		}
	}
}

// Total is the net sum of the cart's lines less the percentage of the coupon.
func TestAC_STE_3_Total(t *testing.T) {
	lines := []Line{{Price: 1000, Qty: 2}, {Price: 250, Qty: 4}}
	if got := Total(lines, "TEN"); got != 2700 {
		t.Errorf("Total(30.00, TEN) = %v, want 27.00", got)
	}
	if got := Total(lines, "NONE"); got != 3000 {
		t.Errorf("Total(30.00, NONE) = %v, want 30.00", got)
	}
}
