// Package watch is the orchestrator's main loop (SPEC §7.1): it computes the ready set,
// starts an agent per ready task, waits for the agent's completion marker or exit, checks the
// agent's claim by running the tests itself, and records the outcome in the task queue with
// compare-and-set edits, so that a person's edit made meanwhile wins.
//
// It also recovers from its own crash: a task left in_progress whose agent is gone counts as
// a lost attempt, and one whose agent still runs is adopted and waited for.
//
// The tasks of a requirement's TDD cycle (`orchestrator tdd`, SPEC §9; tdd.go) run through
// the same loop: their FR and AC fields give them their role, their isolated prompts, their
// per-AC and refactor gates, the re-emit prompt of a format violation and their budgets.
//
// What agents spend (SPEC §16) is package cost's to sum, check against the budgets and
// report; the loop's part (cost.go) is to record each attempt's agent runs and their
// usage, as the agent programs reported it, in result.json; to write the task's Cost and
// Tokens fields; to halt a task whose next attempt cost.Over refuses before it starts; to
// hold back an agent program that reported a rate limit; and to run the notifiers of halts
// and completions.
//
// Its evidence is sealed (SPEC §15.2 item 4, evidence.go): the attempt records, the
// baseline and, through packages gate and worktree, the hand-offs, verified marks and
// landings carry an HMAC made with the person's key (package seal); a record whose seal
// fails is not evidence, and watch and `status` (EditedState) name it. The repository's own
// configuration is compared at each attempt's end, and around its gate, with the start: a
// change stops the run with a *worktree.ConfigChangedError, as does a gate checkout that is
// not its commit (*worktree.CheckoutError).
//
// What a run says is its concern too (report.go): one line per event, JSON lines with
// the attempt's fields, or a live table whose status words are painted on a terminal; a
// rejection, halt or block is one line with its attempt, failure type, reason and
// gate.log. Show (show.go) gathers the same for one task: `orchestrator show`.
//
// An attempt's path is a row of stages, each in its own file, that pass the attempt along
// (finish.go lists them): run.go starts the agent in its slot and sandbox and ends what it
// left; candidate.go reads what it changed; precheck.go its claim; judge.go runs the gate
// in the sandbox on the head the candidate would land on; review.go asks the reviewer and
// the judge; land.go lands; record.go records the attempt and moves its task. watch.go is
// the loop around them: the ready set, events, slots and the live view.
//
// The package owns scheduling, attempt folders, reading the agent's claim and putting the
// pieces together. It does not parse markdown (package queue), start or kill processes itself
// (package agents), read markers (package markers), write prompts (package prompts), judge
// claims (package gate, over package testrun) or decide retries and halts (package retry).
package watch
