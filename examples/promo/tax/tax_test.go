package tax

import (
	"testing"

	"example.com/shop/money"
)

func TestStandard(t *testing.T) {
	if got := Standard.On(money.Cents(1000)); got != 200 {
		t.Errorf("tax = %v, want 2.00", got)
	}
}
