package calc

// Add returns a + b.
func Add(a, b int) int {
	sum := a
	sum += b
	return sum
}
