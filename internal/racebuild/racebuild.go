// Package racebuild tells a test binary whether it was built with the race detector, so
// that the programs it builds to test (the orchestrator, run end to end) are built the
// same way: `go test -race ./watch` then checks the loop itself for data races, not only
// the test code that drives it.
package racebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Flags are the go build flags of a program built for the tests: -race when this binary
// has the race detector.
func Flags() []string {
	if Enabled {
		return []string{"-race"}
	}
	return nil
}

// LogTo makes every race-built program the tests start (they inherit the environment)
// write what its race detector finds to files under dir, whatever the test does with the
// program's output or exit code; Reports reads them back. A program built without the
// race detector ignores it.
func LogTo(dir string) {
	opts := strings.TrimSpace(os.Getenv("GORACE") + " log_path=" + filepath.Join(dir, "race"))
	os.Setenv("GORACE", opts)
}

// Reports returns what the race detectors of the programs started since LogTo(dir) wrote:
// one report per file, named by the file. Empty when none found a race.
func Reports(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "race.*"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s:\n%s", filepath.Base(f), b))
	}
	return out, nil
}

// Failed reports whether the programs started since LogTo(dir) found a race, or their
// reports could not be read, and says so on standard error: a test binary's TestMain
// fails its run on it.
func Failed(dir string) bool {
	races, err := Reports(dir)
	if err == nil && len(races) == 0 {
		return false
	}
	fmt.Fprintf(os.Stderr, "the race detector of the programs under test: %v\n%s", err, strings.Join(races, "\n"))
	return true
}
