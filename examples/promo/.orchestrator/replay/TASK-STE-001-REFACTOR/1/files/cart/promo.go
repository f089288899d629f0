package cart

import "example.com/shop/money"

// coupons are the percentages of the coupon codes.
var coupons = map[string]int64{"TEN": 10}

// Discount returns c less p percent of it.
func Discount(c money.Cents, p int64) money.Cents { return c - c.Percent(p) }

// Coupon returns the percentage a coupon code gives (0 for an unknown code).
func Coupon(code string) int64 { return coupons[code] }

// Total returns the net sum of lines less the coupon's percentage.
func Total(lines []Line, code string) money.Cents { return Discount(Net(lines), Coupon(code)) }
