// Package lazyre compiles regular expressions on first use rather than at package
// initialisation, so that a process does not pay for the patterns it never uses.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr the first time it is called and returns the
// same *regexp.Regexp on every call. It is safe for concurrent use. As with
// regexp.MustCompile, an invalid expr panics, but on the first call rather than in New.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
