// Package old is an earlier feature.
package old

// Old returns 1.
func Old() int { return 2 }
