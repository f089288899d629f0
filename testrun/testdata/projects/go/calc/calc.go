// Package calc is a fixture of the testrun tests: some of its tests pass, some fail.
package calc

// Add adds.
func Add(a, b int) int { return a + b }

// Sub subtracts, wrongly.
func Sub(a, b int) int { return a + b }
