package gate

import "testing"

// TestRegexpsCompile compiles every lazily compiled regexp of the package, so that a bad
// expression fails here rather than the first time a command needs it.
func TestRegexpsCompile(t *testing.T) {
	declaredPatterns()
}
