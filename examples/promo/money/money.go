// Package money holds amounts of money in cents.
package money

import "fmt"

// Cents is an amount of money in cents.
type Cents int64

// String formats c as euros.
func (c Cents) String() string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

// Percent returns p percent of c, rounded half away from zero.
func (c Cents) Percent(p int64) Cents {
	v := int64(c) * p
	if v >= 0 {
		return Cents((v + 50) / 100)
	}
	return Cents((v - 50) / 100)
}
