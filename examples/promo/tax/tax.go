// Package tax computes value-added tax.
package tax

import "example.com/shop/money"

// Rate is a VAT rate in percent.
type Rate int64

// Standard is the standard rate.
const Standard Rate = 20

// On returns the tax on net.
func (r Rate) On(net money.Cents) money.Cents { return net.Percent(int64(r)) }
