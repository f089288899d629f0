// Package retry owns the deterministic part of what happens after a failed attempt (SPEC
// §8): the failure signature that tells one failure from another across runs, the issue
// record a failure leaves in .orchestrator/issue_queue.md, the decision to retry the task
// or to halt it (Max-Retries, the same signature a third time, the run's global cap, the
// no_auto_retry switch), the halt report, and `orchestrator issues convert`, which turns a
// person's issues into tasks.
//
// Signatures: PrimaryError picks the first error line of a test runner's output (go test,
// pytest, vitest, jest, cargo test), Normalize removes what changes from run to run (temp
// folders, durations, timestamps, addresses, goroutine numbers, process IDs, ANSI codes),
// and Signature hashes it with the failure's Type, test and file.
//
// State: Record, Resolve, ResetRun and Convert keep everything in the markdown files,
// edited through queue.Update one cell or one appended record at a time, so that a person
// may edit them while the loop runs. The run's auto-retry count lives in session_state.md's
// "## Auto-Retry State" table.
//
// The package does not run agents, gates or tests, and does not decide when a failure
// happened: the watch loop calls Record after a failed attempt, then starts the retry or
// stops, and calls Resolve when a task passes.
package retry
