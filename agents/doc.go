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
// # The sandbox
//
// With [StartOptions].Sandbox, the agent runs under bubblewrap (SPEC §15.2 item 2; see
// [Sandbox.Profile], and [BwrapAvailable] for whether it can here), with least privilege.
// The agent is untrusted: it wants its task marked done and may write any file it can
// reach, and read any secret it can find. So the file system is read-only to it, except
// its worktree (it works there and nowhere else), its own marker folder (its claim), a
// private /tmp and what the config's sandbox_writable adds; the person's tree, the
// repository's .git, the orchestrator's state and host sockets (/run) are hidden, and the
// home folder is an empty one, thrown away with the sandbox. The agent program's own
// state (Claude Code's CLAUDE_CONFIG_DIR, Codex's CODEX_HOME) is a private folder of the
// run, seeded with the person's login ([SeedConfig]) and removed after: nothing the agent
// writes there (hooks in settings.json) reaches the person or the next run. Its
// environment is cleared but for [AgentEnv]: the path, the home, the locale, the terminal,
// the ORCHESTRATOR_* variables, its program's own (the adapter's list) and config
// agent_env. It runs in a PID namespace of its own whose init exits with it, so that every
// process it started ends when it ends, even one that left its process group with setsid;
// a process it leaves behind cannot act while the gate runs. The network is the
// orchestrator's: the agent talks to its model's API. It is not tied to the orchestrator's
// life: after a crash it runs on and is adopted ([FindByEnv] finds bwrap, the process
// Start started). Claude Code and Codex run inside with their usual command lines: Codex's
// own sandbox nests (bubblewrap in bubblewrap) and can be relaxed with --sandbox
// danger-full-access where it does not.
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
// # Usage and rate limits
//
// [ReadUsage] reads what a run spent from the program's own final report (SPEC §16):
// Claude Code's result object (total_cost_usd, usage, num_turns, duration_api_ms), the
// usage of Codex's turn.completed events summed over turns, or an exec agent's usage line
// ([ParseUsageLine]). A figure not reported is nil in [Usage]: unknown, never 0.
// [Usage.Priced] prices tokens for a program that reports no money. [RateLimitOf] finds a
// rate or usage limit in the same structured output (Claude Code's error result with
// api_error_status 429, Codex's error events), with the reset time where the program
// gives one; the model's text and what the agent wrote never make one.
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
