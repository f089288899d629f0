package gate

import (
	"testing"
)

// BenchmarkGuard times the watch of a command's test files, set up and ended around a
// command that does nothing, on a project of 200 packages with a source and a test file
// each: what the guard adds to every test command the gate runs.
//
//	go test ./gate -run '^$' -bench BenchmarkGuard -benchtime 50x
func BenchmarkGuard(b *testing.B) {
	root := project(b, 200)
	for b.Loop() {
		g, note := guardTests(root, globs)
		if note != "" {
			b.Fatal(note)
		}
		if e := g.stop("true"); e != nil {
			b.Fatal(e)
		}
	}
}
