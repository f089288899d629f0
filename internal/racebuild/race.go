//go:build race

package racebuild

// Enabled is true: this binary was built with -race.
const Enabled = true
