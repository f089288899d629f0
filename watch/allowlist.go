package watch

import (
	"github.com/orchestrator/orchestrator/gate"
)

// redTestFiles returns the test files the RED hand-offs of a task's TEST dependencies name
// (handoff-red.json's test_files, SPEC §10.2), in dependency order. A dependency with no RED
// yet, or whose hand-off cannot be read, adds nothing: its GREEN gate fails closed on it.
func redTestFiles(runs string, deps []string) []string {
	var out []string
	for _, dep := range deps {
		if m, err := gate.FindRed(sealKey(), runs, dep); err == nil && m != nil {
			out = append(out, m.TestFiles...)
		}
	}
	return out
}
