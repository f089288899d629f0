//go:build !race

package racebuild

// Enabled is false: this binary was built without -race.
const Enabled = false
