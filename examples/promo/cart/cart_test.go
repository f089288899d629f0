package cart

import (
	"testing"

	"example.com/shop/tax"
)

func TestNet(t *testing.T) {
	if got := Net([]Line{{Price: 250, Qty: 2}, {Price: 100, Qty: 1}}); got != 600 {
		t.Errorf("Net = %v, want 6.00", got)
	}
}

func TestGross(t *testing.T) {
	if got := Gross([]Line{{Price: 1000, Qty: 1}}, tax.Standard); got != 1200 {
		t.Errorf("Gross = %v, want 12.00", got)
	}
}
