package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/sandbox"
	"github.com/orchestrator/orchestrator/testrun"
)

// The runners' build caches are the gate's, shared by every gate run so that builds stay
// warm; the code a test runs must never write them (SPEC §7.6): an init function that points
// the cache entry of its wrong package at a right build would have the next gate of the same
// candidate pass. So the cache is writable only to a `go test` the gate recognises, and its
// test binaries (the candidate's code) run through a program (GOFLAGS -exec) that starts each
// one in a sandbox of its own, nested in the gate's, where the caches are an empty folder.
// Every other command (pytest, a script, make) gets a private cache in its own /tmp. Where a
// sandbox cannot be nested, `go test` gets the private cache too: slower, never shared.

// testExecScript is the program of GOFLAGS -exec: %s is the caches' folder, quoted for
// the shell (shellQuote).
const testExecScript = `#!/bin/sh
# The gate's go test starts each test binary through this program: the binary runs where the
# runners' build caches are an empty folder of its own.
exec bwrap --dev-bind / / --tmpfs %s --die-with-parent -- "$@"
`

// shellQuote quotes s for the shell: in single quotes, where nothing is special but the
// single quote itself.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// testExec writes the -exec program for the caches' folder cache, beside it (never in it: the
// folder is writable in the sandbox), and returns its path.
func testExec(cache string) (string, error) {
	return writeExecFile(cache, "test-exec", []byte(fmt.Sprintf(testExecScript, shellQuote(cache))), 0o755)
}

// telemetryOff writes Go's telemetry setting "off" beside the -exec program, for the
// sandbox to show at the place Go reads it in its empty home folder (NewJail), and returns
// its path. Go's telemetry is on ("local") where no setting is found: each go command in a
// home folder that starts empty would start a second go process, its telemetry sidecar,
// whose counters the sandbox then throws away. (GOTELEMETRY is a name `go env` reports, not
// a setting Go reads.)
func telemetryOff(cache string) (string, error) {
	return writeExecFile(cache, "go-telemetry-mode", []byte("off\n"), 0o644)
}

// writeExecFile writes body to the file name beside the caches' folder cache (in its -exec
// folder, which the sandbox shows read-only), unless it already holds body, and returns its
// path.
func writeExecFile(cache, name string, body []byte, perm os.FileMode) (string, error) {
	dir := filepath.Join(filepath.Dir(cache), filepath.Base(cache)+"-exec")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, body) {
		return p, nil
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(body)
	if err := errors.Join(werr, tmp.Chmod(perm), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}

// nests reports whether the -exec program runs in the sandbox p: bubblewrap inside
// bubblewrap needs user namespaces that a machine may forbid.
func nests(p sandbox.Profile, exe string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.Dir, p.Env = "/", []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	argv := p.Wrap([]string{exe, "/bin/true"})
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// ForCommand returns the sandbox and the environment of the gate's command: for a `go test`
// the gate recognises (testrun.Detect), the caches writable and the test binaries started
// through the -exec program; for any other command, or where a sandbox does not nest, the
// caches out of sight and Go's cache private to the command.
func (j *Jail) ForCommand(command, checkout, dir string, env []string) (*sandbox.Profile, []string) {
	if j.testExec != "" && testrun.Detect(command) == testrun.Go {
		return j.Profile(checkout, dir, env), env
	}
	env = setEnv(slices.Clone(env), "GOCACHE", "/tmp/go-build")
	p := j.Profile(checkout, dir, env)
	p.Writable = slices.DeleteFunc(slices.Clone(p.Writable), func(w string) bool { return w == j.cache })
	p.Mask = append(slices.Clone(p.Mask), j.cache)
	return p, env
}
