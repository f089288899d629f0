// Package calc adds numbers.
package calc

// Add returns a + b.
func Add(a, b int) int { return a + b }
