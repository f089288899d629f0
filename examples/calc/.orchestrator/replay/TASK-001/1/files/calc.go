package calc

// Add returns a + b.
func Add(a, b int) int { return a + b }

// Multiply returns a × b.
func Multiply(a, b int) int { return a + b }
