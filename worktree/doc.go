// Package worktree keeps the agent and the judge at separate desks (SPEC §1 principle 7,
// §7.1, §7.7), with git:
//
//   - the integration branch is the branch the person's HEAD is on when watch starts;
//     verified work lands on it as one commit per task;
//   - each attempt gets a checkout of the integration head in a slot, a git worktree kept
//     under the repository's git folder (outside the person's working tree, so that no test
//     run there ever sees it), reused from attempt to attempt after a reset and a clean;
//   - what the agent changed becomes a candidate commit, made with an index the
//     orchestrator keeps (never the agent's), under refs/orchestrator/attempts/<ID>/<n>;
//     the change list is git's: additions, edits, deletions, renames, symlinks, modes,
//     whatever the files' sizes and times, with .gitignore honoured;
//   - the gate judges a pristine checkout of the candidate in a slot of its own;
//   - a candidate whose base is no longer the integration head is rebased onto it (a
//     three-way merge of trees, in git's object store) before it is judged again;
//   - landing makes the commit, moves the branch with compare-and-swap, and brings the
//     person's working tree along as a fast-forward that keeps their uncommitted changes,
//     or refuses, naming the paths, where those would be overwritten.
//
// The package runs git; it does not decide what a change means (package gate) or when
// attempts run (package watch). Every git command runs with hooks, fsmonitor, filter
// drivers and line-ending conversion off (diffs with --no-textconv), so that nothing
// written in a repository runs code in the orchestrator and a checkout holds its commit's
// bytes; CheckCheckout proves it, blob by blob. The repository's own configuration
// (.git/config, info/attributes, hooks) is fingerprinted (ConfigPrint) so that the loop can
// tell when an attempt changed it.
//
// The evidence it keeps is sealed with the person's key (package seal): the verified marks
// (MarkVerified) and the landings' Orchestrator-Seal trailer (Land). A mark or a commit
// whose seal fails is not evidence: IsVerified, Landed and LastLanding ignore it, and
// EditedMarks and EditedLandings name it.
package worktree
