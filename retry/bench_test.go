package retry

import (
	"strings"
	"testing"
)

// BenchmarkPrimaryErrorLarge reads the primary error and failing test of a 2.6 MB verbose
// go test log whose failure is at the end.
func BenchmarkPrimaryErrorLarge(b *testing.B) {
	out := strings.Repeat("=== RUN   TestX\n    x_test.go:3: log line with some text 0.01s\n--- PASS: TestX (0.00s)\n", 30000) + "--- FAIL: TestY (0.00s)\n    y_test.go:3: boom\n"
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		PrimaryError(out)
		FailingTest(out)
	}
}
