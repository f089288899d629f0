// Package cart adds up a shopping cart.
package cart

import (
	"example.com/shop/money"
	"example.com/shop/tax"
)

// Line is one line of a cart.
type Line struct {
	Price money.Cents
	Qty   int64
}

// Net returns the sum of the lines.
func Net(lines []Line) money.Cents {
	var sum money.Cents
	for _, l := range lines {
		sum += l.Price * money.Cents(l.Qty)
	}
	return sum
}

// Gross returns the net sum plus tax at rate r.
func Gross(lines []Line, r tax.Rate) money.Cents {
	n := Net(lines)
	return n + r.On(n)
}
