// Package markers owns the completion-marker protocol (SPEC §2, §7.1): the files in
// .orchestrator/complete/ through which an agent says it has finished a task and the
// orchestrator asks a lingering agent to end.
//
// An agent writes <ID>.done or <ID>.failed when it stops working on task <ID>; the body is
// either the bare word (claudestrator writes just "done") or a tdd-result block. The
// orchestrator writes <ID>.kill when it is about to end an agent's process group, so that a
// cooperative agent can tell a kill from a crash. Before an attempt starts, stale markers of
// the task are cleared; after the attempt, its marker is moved into the attempt folder
// (runs/<ID>/<attempt>/) as evidence.
//
// Every function validates the task ID against [queue.IDPattern] before it builds a path, so
// an ID such as "../x" or "A/B" can never name a file outside the marker folder.
//
// The package does not decide what a marker means: a marker is only a claim, and checking it
// (running the tests, parsing a tdd-result body) belongs to the gates and to package agents.
// It does not watch the folder either; the watch loop does, and uses [ParseName] to filter
// the names it sees.
package markers
