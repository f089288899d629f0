// Package strs repeats strings.
package strs

import "strings"

// Twice returns s twice.
func Twice(s string) string { return strings.Repeat(s, 2) }
