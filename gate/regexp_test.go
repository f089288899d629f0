package gate

import (
	"regexp"
	"testing"
)

// TestRegexpsCompile compiles every lazily compiled regexp of the package, so that a bad
// expression fails here rather than the first time a command needs it.
func TestRegexpsCompile(t *testing.T) {
	for _, re := range []func() *regexp.Regexp{pyDefRE, rsTestRE, goNameRE, testFlagRE, binaryNameRE, jsRunnerRE} {
		re()
	}
}
