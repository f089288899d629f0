package testrun

import (
	"regexp"
	"testing"
)

// TestRegexpsCompile compiles every lazily compiled regexp of the package, so that a bad
// expression fails here rather than the first time a command needs it.
func TestRegexpsCompile(t *testing.T) {
	for _, re := range []func() *regexp.Regexp{
		ansiRE, cargoDocRE, jsTestFileRE, cargoErrorRE, cargoLocRE, cargoRunningRE, cargoStdoutRE,
		cargoTestRE, goErrRE, goTestNameRE, jsLocRE, jsSyntaxRE, locRE, missingRE, noTestsRE,
		pyConftest, pyExcRE, pyFileRE, pySectionRE, pySubRE, pySummaryRE, pyWhereRE, tsDiagRE,
	} {
		re()
	}
	syntaxRE()
}
