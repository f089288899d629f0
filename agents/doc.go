// Package agents owns the agents' side of the loop: starting and supervising agent
// processes, the adapters that say how to run each kind of agent and read its final
// message, the tdd-result hand-off contract, and the replay agent.
//
// # Processes
//
// [Start] runs an agent directly (never through a shell) in a process group of its own, with
// the prompt on standard input and its output appended to the attempt's agent.log; the last
// [MaxStdout] bytes of standard output are kept for [Adapter.FinalText]. [Process.Stop] ends
// the whole group, grandchildren included: SIGTERM, SIGKILL after a grace period, then it
// waits until no process of the group is left. For crash recovery, an agent of an earlier
// run is known by its PID and start time (recorded in the attempt folder): [Alive] tells
// whether it still runs, [WaitGone] waits for it, [StopGroup] ends its group.
//
// # Adapters
//
// An [Adapter] gives the command line of an agent (claude, codex, exec, replay, or one
// from the config) and finds its final message in its standard output (SPEC §10.1); a
// failure the agent reports about itself (an API error, a run out of turns) is an
// [*AgentError]. See [Lookup]. The claude and codex adapters are tested against the real
// programs (Claude Code 2.1.197, Codex CLI 0.169.0, installed by
// testdata/install-agents.sh), driven by the scripted model server of internal/modelserver;
// the outputs of those runs are kept in testdata/recorded for the unit tests.
//
// # The hand-off contract
//
// Every agent ends its final message with one tdd-result block (SPEC §10.3). [ParseResult]
// parses it by the grammar of the spec and validates it against the JSON Schema in
// tdd-result.schema.json, embedded in the binary; any violation is a [*FormatError]
// (mode D), matched by [ErrFormat].
//
// # The replay agent
//
// [ReplayMain] is a scripted agent for demos and tests: the orchestrator binary re-executes
// itself as `orchestrator __replay --from DIR`. For task ID on attempt N (the base name of
// ORCHESTRATOR_ATTEMPT_DIR; attempt folders are named 1, 2, 3...), it uses the recording
// DIR/<ID>/<N>/, or if there is none the highest recorded attempt below N. A recording is a
// folder:
//
//	DIR/
//	  TASK-001/
//	    1/
//	      files/       copied over the repository (ORCHESTRATOR_ROOT), same relative
//	                   paths, folders created, permissions kept
//	      delete       optional: paths to remove, relative to the root, one a line
//	                   (blank lines and # comments skipped); removed after the copy
//	      result.md    optional: printed to standard output (the final message, with
//	                   its tdd-result block)
//	      marker       optional: "done" or "failed", written last as the marker
//	                   <ID>.done or <ID>.failed in ORCHESTRATOR_MARKER_DIR
//	      exit         optional: the exit code, 0 if absent
//	    2/             the second attempt (a retry); a third would use 2/ again
//
// No path of a recording can reach outside the repository root: files are written through
// an [os.Root].
//
// # What it does not own
//
// The package does not decide what an agent's claim is worth: gates check results by
// running the tests. It does not choose which agent or model a task gets (the config and
// the retry ladder, in the watch loop), render prompts (package prompts), or read and write
// marker files (package markers, which the replay agent uses).
package agents
