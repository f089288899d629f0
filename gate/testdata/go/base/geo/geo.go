// Package geo measures squares.
package geo

// Area returns the area of a square of side s.
func Area(s int) int { return s * s }
