package testrun

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/sandbox"
)

// TestSandboxThatCannotStart: a sandbox that does not start (here a folder to bind that is
// not there) is a problem of the set-up (SPEC §7.6), a *SetupError naming bwrap's
// complaint; a command that starts in it and fails, even with exit 1 as bwrap's own
// failures have, is a result.
func TestSandboxThatCannotStart(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap does not run here (CI=true): %v", err)
		}
		t.Skipf("bubblewrap does not run here: %v", err)
	}
	dir := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin"}
	good := &sandbox.Profile{Writable: []string{dir}, Env: env}
	broken := &sandbox.Profile{Writable: []string{dir, "/nonexistent/orchestrator-test"}, Env: env}
	for _, tt := range []struct {
		name    string
		p       *sandbox.Profile
		command string
		setup   bool
		code    int
	}{
		{"cannot start", broken, "true", true, 0},
		{"starts and passes", good, "true", false, 0},
		{"starts and fails", good, "echo 'bwrap: not really' >&2; exit 1", false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), dir, tt.command, time.Minute, WithSandbox(tt.p))
			var se *SetupError
			if tt.setup {
				if !errors.As(err, &se) || !strings.Contains(se.Reason, "the sandbox could not start") || !strings.Contains(se.Reason, "nonexistent") {
					t.Fatalf("Run = %v, %v; want a SetupError with bwrap's complaint", res, err)
				}
				return
			}
			if err != nil || res.ExitCode != tt.code {
				t.Fatalf("Run = %+v, %v; want exit %d", res, err, tt.code)
			}
		})
	}
}
