// Package calc is the demo project of orchestrator: a small library built test-first by
// replayed agents.
package calc
