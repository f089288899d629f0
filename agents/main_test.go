package agents

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/internal/racebuild"
)

// testAgent is the path of the internal/testagent program, built once for the test run.
var testAgent string

// TestTempDir is a folder that lives as long as the test binary runs, for programs built
// once for all tests (the external test package's real-agent tests build the orchestrator
// there).
var TestTempDir string

func TestMain(m *testing.M) {
	// The replay adapter re-executes "this program" with the replay subcommand, as the
	// orchestrator binary does; here this program is the test binary.
	if len(os.Args) > 1 && os.Args[1] == ReplaySubcommand {
		os.Exit(ReplayMain(os.Args[2:], os.Stdin, os.Stdout))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agents-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	TestTempDir = dir
	testAgent = filepath.Join(dir, "testagent")
	build := exec.Command("go", "build", "-o", testAgent, "../internal/testagent")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testagent:", err)
		return 1
	}
	// The orchestrator these tests build is race-built under `go test -race`
	// (orchestratorBin); what its race detector finds fails the run.
	racebuild.LogTo(dir)
	code := m.Run()
	if racebuild.Failed(dir) {
		code = 1
	}
	return code
}

// scaled returns a test's deadline d times ORCHESTRATOR_TEST_TIMESCALE (6 when unset). The
// tests wait on events; a deadline only bounds how long a test that fails waits, and on a
// busy machine the events come late, never wrong.
func scaled(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv("ORCHESTRATOR_TEST_TIMESCALE"), 64)
	if err != nil || f <= 0 {
		f = 6
	}
	return time.Duration(float64(d) * f)
}
