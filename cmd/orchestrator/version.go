package main

import (
	"fmt"
	"runtime/debug"
)

// version is the release this program was built as, set at build time with
// `go build -ldflags "-X main.version=v1.2.0"` (the Makefile does); "dev" otherwise.
var version = "dev"

// versionText returns what `orchestrator --version` prints: the version and the commit it
// was built from, as the Go toolchain recorded it ("unknown" for a build outside a git
// checkout, such as a test binary), marked "modified" when the checkout had uncommitted
// changes.
func versionText(info *debug.BuildInfo, ok bool) string {
	commit, modified := "unknown", false
	if ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if modified {
		commit += ", modified"
	}
	return fmt.Sprintf("orchestrator %s (commit %s)\n", version, commit)
}
