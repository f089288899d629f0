// Package tdd owns what `orchestrator tdd FR-ID` reads and writes before the loop runs
// (SPEC §9): the functional requirement file (specs/frs/<FR-ID>.md) and its acceptance
// criteria, the cycle's task records (TASK-<FR>-RED, TASK-<FR>-AC<N>, TASK-<FR>-REFACTOR)
// under the queue's section of the requirement, and the names tests take after their
// criteria. Running the cycle, its gates and its budgets belong to packages watch and gate.
package tdd
