// Package tdd owns the TDD cycle of a requirement (SPEC §9). Before the loop runs, what
// `orchestrator tdd FR-ID` reads and writes: the functional requirement file
// (specs/frs/<FR-ID>.md) and its acceptance criteria, the cycle's task records
// (TASK-<FR>-RED, TASK-<FR>-AC<N>, TASK-<FR>-REFACTOR) under the queue's section of the
// requirement, and the names tests take after their criteria. While it runs, the cycle's
// policy: a task's place in it (its role, its AC, the tests its gate runs), what an
// implementer may be shown of the other ACs (SPEC §10.2), and the budgets of failure modes
// A to E. Package watch runs the cycle's agents with them; package gate judges them.
package tdd
