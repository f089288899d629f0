// Package cost owns what agent runs cost (SPEC §16): the usage of each run of an attempt,
// a task's sums, the budgets' check before an attempt starts, and the report that
// `orchestrator cost` and `status` print, each split into what verified work cost and what
// the rest did. It reads no record: the loop (package watch) gives it the runs of each
// attempt from the records it keeps, and writes what it decides.
package cost
