package retry

import (
	"regexp"
	"testing"
)

// TestRegexpsCompile compiles every lazily compiled regexp of the package, so that a bad
// expression fails here rather than the first time a command needs it.
func TestRegexpsCompile(t *testing.T) {
	for _, re := range []func() *regexp.Regexp{
		addrRE, ansiRE, bracketRE, clockRE, decorationRE, durationRE, goCompileRE, goFailRE,
		goLogRE, goPanicRE, goPkgFailRE, goroutineRE, goRunRE, hex16RE, issueIDRE, jestDotRE,
		jsErrorRE, jsFailRE, pidRE, pyCollectingRE, pyELineRE, pyFailedRE, pyHeaderRE,
		rustErrorRE, rustPanicRE, rustTestRE, spacesRE, taskNumRE, tempRE, threadIDRE,
		timestampRE, tsErrorRE, valueRE,
	} {
		re()
	}
}
