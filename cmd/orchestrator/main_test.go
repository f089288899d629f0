package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var updateScripts = flag.Bool("update", false, "rewrite the expected files inside testdata/script/*.txtar whose cmp fails")

// exitCodeVar names the file where the orchestrator command of the scripts leaves its exit
// code, for the scripts' `exitcode` command.
const exitCodeVar = "ORCHESTRATOR_TEST_EXITCODE"

// TestMain lets the test binary run as the `orchestrator` command inside the scripts.
//
// The tests run in the package's own process (cmd_baseline_test.go, say) get a home and a
// configuration folder of their own, so that the key that seals the orchestrator's evidence
// is never the person's; each script gets its own in its work folder (Setup).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) != "orchestrator" {
		isolateHome()
	}
	testscript.Main(m, map[string]func(){
		"orchestrator": func() {
			code := Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			if p := os.Getenv(exitCodeVar); p != "" {
				_ = os.WriteFile(p, []byte(strconv.Itoa(code)), 0o644)
			}
			os.Exit(code)
		},
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: each runs the real command on
// the queue files it holds and checks its output, exit code and files. Besides the standard
// commands, a script may say `exitcode N` after `exec orchestrator ...` or `! exec
// orchestrator ...` to check the exact exit code. Queue errors name files by absolute path,
// so scripts compare them with cmpenv against $WORK/... lines. Run with -update to rewrite
// expected files that differ.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *updateScripts,
		Setup: func(env *testscript.Env) error {
			env.Setenv(exitCodeVar, filepath.Join(env.WorkDir, ".exitcode"))
			// The key that seals the evidence (package seal): the script's own.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			// Under -race a process sleeps a second before it exits (to catch races at
			// exit); the scripts start hundreds of them.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return nil
		},
		Condition: missingCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":    cmdExitCode,
			"writebytes":  cmdWriteBytes,
			"appendbytes": cmdAppendBytes,
		},
	})
}

// cmdWriteBytes writes a file from a Go string literal, for bytes a script cannot hold (a
// NUL, invalid UTF-8), repeated N times if N is given: `writebytes file.md "a\x00b"`.
// appendbytes, the same, adds to the end of the file.
func cmdWriteBytes(ts *testscript.TestScript, neg bool, args []string) {
	writeBytes(ts, neg, args, os.O_TRUNC)
}

func cmdAppendBytes(ts *testscript.TestScript, neg bool, args []string) {
	writeBytes(ts, neg, args, os.O_APPEND)
}

func writeBytes(ts *testscript.TestScript, neg bool, args []string, mode int) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: writebytes|appendbytes file \"go string\" [times]")
	}
	data, err := strconv.Unquote(`"` + args[1] + `"`)
	if err != nil {
		ts.Fatalf("bad string: %v", err)
	}
	n := 1
	if len(args) == 3 {
		if n, err = strconv.Atoi(args[2]); err != nil || n < 0 {
			ts.Fatalf("bad count %q", args[2])
		}
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_CREATE|mode, 0o644)
	ts.Check(err)
	_, err = f.Write([]byte(strings.Repeat(data, n)))
	ts.Check(err)
	ts.Check(f.Close())
}

// missingCondition is the scripts' condition [missing:PROGRAM]: true when PROGRAM is not on
// PATH, so that `[missing:git] skip 'no git'` skips the rest of the script; with CI=true,
// where everything the tests need is installed, a missing program fails the script.
func missingCondition(cond string) (bool, error) {
	prog, ok := strings.CutPrefix(cond, "missing:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if _, err := exec.LookPath(prog); err == nil {
		return false, nil
	}
	if os.Getenv("CI") == "true" {
		return false, fmt.Errorf("%s is not installed, and CI=true: a test that needs it may not be skipped", prog)
	}
	return true, nil
}

// cmdExitCode checks the exit code of the last orchestrator command: `exitcode 2`.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: exitcode N")
	}
	p := ts.Getenv(exitCodeVar)
	data, err := os.ReadFile(p)
	if err != nil {
		ts.Fatalf("no exit code recorded: %v", err)
	}
	_ = os.Remove(p)
	if got := strings.TrimSpace(string(data)); got != args[0] {
		ts.Fatalf("exit code %s, want %s", got, args[0])
	}
}

// isolateHome gives the test process a home and a configuration folder of its own (left
// in the temporary folder), keeping Go's caches and settings where they were: the tests
// must never make or read the person's key.
func isolateHome() {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	if err == nil {
		names := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
		for i, v := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if i < len(names) && os.Getenv(names[i]) == "" && v != "" {
				os.Setenv(names[i], v)
			}
		}
	}
	dir, err := os.MkdirTemp("", "orchestrator-cmd-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
}
