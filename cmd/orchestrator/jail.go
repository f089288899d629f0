package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/sandbox"
)

// commandJail returns the sandbox of the commands that run the project's code outside
// watch (`baseline`, `spotcheck`), as config sandbox says (SPEC §7.6): nil with sandbox off,
// or with auto where bubblewrap does not run (said on stderr); an error with bwrap where
// it does not run. The git folder of the repository is hidden from them, and the home
// folder, the orchestrator's state and the environment's secrets, as in the gate.
func commandJail(l queue.Layout, cfg *config.Config, stderr io.Writer) (*gate.Jail, []string, error) {
	switch cfg.Sandbox {
	case "off":
		return nil, nil, nil
	case "bwrap":
		if err := sandbox.Available(); err != nil {
			return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("sandbox: bwrap: %w", err)}
		}
	default:
		if err := sandbox.Available(); err != nil {
			fmt.Fprintf(stderr, "orchestrator: the tests run without a sandbox: %v\n", err)
			return nil, nil, nil
		}
	}
	var gitDirs []string
	out, err := exec.Command("git", "-C", l.Root, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir").Output()
	if err == nil {
		gitDirs = strings.Fields(string(out))
	}
	var readable []string
	for _, d := range cfg.SandboxReadable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(l.Root, d)
		}
		readable = append(readable, d)
	}
	j, err := gate.NewJail(gate.JailSpec{
		Env: gate.PinnedEnv(os.Environ()), Hide: append(slices.Clone(gitDirs), gate.ImpactDir()), Readable: readable,
		Cache: gate.CacheDir(), Network: cfg.GateNetwork == "host",
	})
	return j, gitDirs, err
}
