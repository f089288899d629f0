// Package gate decides whether an agent's claim holds (SPEC §7.2–7.4): the RED gate for a
// test writer, the GREEN gate for an implementer (with the integrity check of the tests it
// was given and the regression baseline), and the VERIFY gate. It runs the tests itself
// through package testrun, never trusts the agent's word, and writes the evidence (the
// hand-off manifests handoff-red.json and handoff-green.json, sealed with Input.Key) into
// the attempt folder; FindRed and OpenManifest read only hand-offs whose seal holds.
// Every test command it runs gets canaries (SPEC §7.6, canary.go): a report that gets them
// wrong fails the gate as forged_results.
//
// It guards what decides how tests run (SPEC §7.6): the harness (Harness: test files,
// conftest.py, runner configurations, TestMain, go.work, go.mod replaces into the tree,
// root files that shadow the standard library or a runner, committed bytecode and package
// metadata, packages only tests import, config harness_globs), which only a
// test writer may change, and only where it is the harness; and the environment the tests
// run with (PinnedEnv, made once when the orchestrator starts), which no file an agent
// writes later changes. Before any test runs, every gate reads the changed files for
// runner tampering (tamper.go): implementation code that reaches into the test runner, and
// harness that rewrites what the runner reports, fail as test_tampered naming the file and
// the line.
//
// A test writer's change to the tests already there is judged per test (SPEC §7.2,
// redrules.go, with package testdiff): tests added to or moved are allowed, deleted or
// skipped ones refused, and a rewritten test allowed only when it fails at the base, named
// in Verdict.ChangedTests for the landing's trailer. These scope rules are judged after
// the run, so that "the tests already pass" is the first reason a person reads. RED runs
// the tests that read the test data a change adds (redscope.go: for Go the package of
// testdata/, for pytest the test modules of the folder and above), and those that now fail
// where the baseline (Input.Baseline) had them passing are evidence. Test IDs are words of
// the tests' names, or, with config test_ids: names (Input.TestIDNames), the tests' full
// names. A Go test that does not build for the missing implementation is run with it cut
// out (probe.go), so that one that panics in its own code before the call is a broken test.
//
// For a requirement's TDD cycle (SPEC §9, tdd.go), GreenAC judges one acceptance
// criterion's implementer (its tests and the earlier ones by name, the whole suite for the
// baseline and for the later criteria, which must stay undone) and Refactor the refactorer
// (GREEN, and the whole suite passes).
//
// A GREEN or VERIFY gate whose command is a plain go test over package patterns runs only
// what the change can reach (SPEC §7.3, impact.go, with Input.Impact): each package the
// command tests gets an input key (its folder's files and testdata/, the keys of the
// module's packages its test binary imports, the module's other files with go.mod and
// go.sum, the toolchain, the command and the environment, read with go list run as the
// gate runs its commands); a package whose key has a sealed record of a pass, kept in the
// orchestrator's state where no sandbox reaches, does not run, and its tests count as
// they were, "reused: same inputs as <commit>" in gate.log; in GREEN, so does one whose
// record is of a failure that decides nothing (every baseline test of it that failed is
// owed to another TEST task, and it holds none of the task's RED tests); the others run,
// with canaries, and their results are sealed for the next gate. Anything unclear, and a
// record whose seal fails, runs the whole command.
//
// A test command that cannot run for a problem of the set-up (its program not found, its
// runner not installed, the sandbox not started: a *testrun.SetupError) gets no verdict:
// every gate returns that error instead, since no test ran and nothing was learned of the
// agent's work (SPEC §7.6). A command that runs and fails, however it fails, is a verdict.
//
// It also snapshots the repository's files before an attempt, so that what the agent changed
// is known without git.
//
// The package does not schedule, start agents or edit the queue (package watch), and does not
// decide retries (package retry).
package gate
