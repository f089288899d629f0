// Package testrun runs a project's tests and reads what its test runner reports, so that the
// orchestrator checks an agent's claims against test results it got itself (SPEC §7).
//
// Run takes a test command line as a person writes it ("go test ./...", "pytest -q tests/",
// "npx vitest run", "npx jest", "cargo test"), recognizes the runner (Detect), adds the flags
// that make it report structured output (go test -json on standard output; for pytest, a
// reporter plugin the orchestrator writes outside the checkout, which sends one JSON line
// per test report through a pipe the orchestrator holds; the JSON reporters of vitest and
// jest; libtest's human output is read as it is), runs it with sh -c in its own process
// group, with Python pinned (PythonEnv: no current folder or user site ahead of the
// standard library, no plugin autoload but the project's configured plugins named with
// -p, no bytecode written or trusted), and returns a Result: every test with its status and failure
// output, the build and import errors, and a Class that says why the run ended as it did
// (passed, failed assertions, missing implementation, broken test file, no tests, error).
// Any other command is judged by its exit code alone. Restrict narrows a project's command
// to some test files, as a RED gate runs only the tests a test writer wrote; PlainGoTest
// reads a plain go test over package patterns, which GoTest.Only narrows to packages.
//
// The package also owns the test baseline (SPEC §7.5, Baseline, MakeBaseline): the tests
// that passed on a run of the whole suite, a command that re-runs exactly them
// (RegressionCommand), and the SHA-256 of the test files (TestFiles, HashFiles, IsTestFile
// with the test_globs of config.yaml).
//
// Canaries (SPEC §7.6) are planted here too: PlantCanary writes, beside the tests a command
// runs, a test that must pass and one that must fail, named at random, and Planted.Check
// refuses a report that does not show them so (a ForgedError) and takes them out of one
// that does.
//
// It does not decide whether a gate passes, nor touch the queues: the gates in the loop
// read its results. Parse reads a recorded run, for tests and tools.
package testrun
