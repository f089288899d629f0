// Command orchestrator runs AI coding agents through a strict test-driven loop, with its
// state in markdown files that people edit by hand (.orchestrator/task_queue.md and
// issue_queue.md).
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// A run is short and reads whole files: collect garbage less often.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
