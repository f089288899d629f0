// Package plan owns `orchestrator plan` (SPEC §17): a decomposition agent, the planner,
// turns a requirements document and the test plan into tasks, and a gate decides whether
// they go into the task queue.
//
// The planner's output is a claim like any other agent's. It writes its tasks to one
// scratch file (ORCHESTRATOR_PLAN_FILE), never to the queue, and ends its message with a
// tdd-result block of role planner. [Judge] appends the scratch file's records to the queue
// as it is, with the coverage matrix that goes with them, and runs validate's rules (SPEC
// §6.1) on that candidate: the scratch file must parse, its IDs must be new (a task of the
// queue copied exactly as it is, is left out), and the
// candidate must have no error: every plan test ID mapped exactly once to a TEST task, TEST
// tasks before BUILD tasks, no cycles, no dangling dependencies, values well-formed. On top
// of validate, new tasks must be pending, without the state only the orchestrator writes
// (Commit, retry and halt fields, cost) and without `| TDD | exempt |`, which is a person's
// decision: a planner cannot mark its tasks done or take them out of TDD.
//
// [Run] runs the rounds: a rejected output goes back to the planner with the findings,
// verbatim, and nothing else, up to the retry budget; then it halts with a report of what
// is still wrong (exit 3), and the queue is untouched. An accepted output is written with
// [queue.Update]: under the lock, atomically, the new tasks appended (§3.5) and the matrix
// replaced, every byte of the tasks already there kept. The write re-checks the candidate
// on the queue's bytes of that moment, so a person's edit made meanwhile is neither lost
// nor overwritten.
//
// The planner works in the person's tree, read-only: in the bubblewrap sandbox (config
// sandbox) the tree is bound read-only but for the scratch file's own folder (tools that
// save by renaming a temporary file need the folder; nothing else in it is read). Without a sandbox, or in
// case it leaks, every round is also checked from outside: the files of the tree are
// listed before and after the agent runs (inode, size, change time), and an agent that
// changed anything but its scratch file is refused: the queue files it changed are put
// back as they were (its version is kept beside the round's records) and the run halts.
//
// Each run keeps its records in .orchestrator/runs/plan/<n>/: the scratch file
// scratch/plan.md, and
// per round <r>/ the prompt, the agent's log, the scratch file as judged, the candidate
// queue (task_queue.md, which the findings name) and the findings.
//
// The package does not parse queues or check rules itself (package queue), start processes
// (package agents) or render prompts (package prompts).
package plan
