// Command testagent is a fake agent for tests: a real process that behaves as the
// environment variable TESTAGENT_MODE tells it, so that tests of process supervision and of
// the watch loop run against real processes without a model (STYLE.md, "Fakes for processes
// are real processes").
//
// It reads its prompt from standard input (all of it, in every mode but hang, stubborn and
// grandchild) and the orchestrator's variables ORCHESTRATOR_TASK_ID, ORCHESTRATOR_MARKER_DIR
// and ORCHESTRATOR_ROOT. Modes:
//
//	honest      writes the files of TESTAGENT_WRITE, prints a valid tdd-result block for
//	            TESTAGENT_ROLE (default implementer) naming them, writes <ID>.done
//	lie         prints the same block and writes <ID>.done, but writes no file
//	nomarker    exits 0 with no marker and no result
//	exit1       exits 1 with no marker and no result
//	hang        sleeps forever
//	stubborn    ignores SIGTERM, says so on standard output, and sleeps forever (only
//	            SIGKILL ends it)
//	grandchild  starts a copy of itself in mode hang, in the same process group, writes its
//	            PID to the file TESTAGENT_PIDFILE, writes <ID>.done and exits 0
//	malformed   prints a broken tdd-result block and writes <ID>.done
//	double      prints two valid blocks and writes <ID>.done
//	linger      prints a valid block, writes <ID>.done and keeps running
//	cat         copies its prompt to standard output and exits 0
//	env         prints the ORCHESTRATOR_* variables, one NAME=value a line, and exits 0
//
// TESTAGENT_WRITE holds one path=content pair a line; paths are relative to
// ORCHESTRATOR_ROOT (or the working folder). TESTAGENT_MARKER, if set to "failed", makes the
// marker <ID>.failed instead. TESTAGENT_DELAY (a duration) waits before the marker, and
// TESTAGENT_STAMP (any value) writes the wall-clock time of the marker, in nanoseconds, to
// marker-time in the attempt folder. TESTAGENT_DELETE lists files (space-separated) that
// honest mode removes before writing. TESTAGENT_STATE=issue or dependency makes the result
// block a failed one with that state and TESTAGENT_MESSAGE as its message (use it with
// TESTAGENT_MARKER=failed).
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/markers"
)

func main() {
	if err := run(os.Getenv("TESTAGENT_MODE")); err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(2)
	}
}

func run(mode string) error {
	switch mode {
	case "hang":
		sleepForever()
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		sleepForever()
	case "grandchild":
		return grandchild()
	}
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	switch mode {
	case "honest":
		files, err := writeFiles()
		if err != nil {
			return err
		}
		fmt.Print("I did the work.\n\n" + result(files, len(prompt)).Render())
		return marker()
	case "lie":
		fmt.Print("All done, every test passes.\n\n" + result(claimedFiles(), len(prompt)).Render())
		return marker()
	case "nomarker":
		fmt.Println("I am finished.")
		return nil
	case "exit1":
		fmt.Fprintln(os.Stderr, "testagent: failing on purpose")
		os.Exit(1)
	case "malformed":
		fmt.Print("Done.\n\n```tdd-result\nrole: " + role() + "\nstatus: ok\nthis line is not a field\n```\n")
		return marker()
	case "double":
		r := result(claimedFiles(), len(prompt)).Render()
		fmt.Print("First try:\n\n" + r + "\nSecond try:\n\n" + r)
		return marker()
	case "linger":
		fmt.Print(result(claimedFiles(), len(prompt)).Render())
		if err := marker(); err != nil {
			return err
		}
		sleepForever()
	case "cat":
		_, err := os.Stdout.Write(prompt)
		return err
	case "env":
		var lines []string
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "ORCHESTRATOR_") {
				lines = append(lines, kv)
			}
		}
		sort.Strings(lines)
		fmt.Print(strings.Join(lines, "\n") + "\n")
		return nil
	}
	return fmt.Errorf("unknown TESTAGENT_MODE %q", mode)
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func role() string {
	if r := os.Getenv("TESTAGENT_ROLE"); r != "" {
		return r
	}
	return agents.RoleImplementer
}

func result(files []string, promptLen int) *agents.Result {
	if st := os.Getenv("TESTAGENT_STATE"); st == agents.StateIssue || st == agents.StateDependency {
		// Stuck: a failed result with the state and the question or need.
		return &agents.Result{
			Role: role(), Status: agents.StatusFailed, State: st, Files: files,
			Command: "go test ./...", OutputExcerpt: "(not run)", Message: os.Getenv("TESTAGENT_MESSAGE"),
		}
	}
	return &agents.Result{
		Role:          role(),
		Status:        agents.StatusOK,
		State:         agents.StateSuccess,
		Files:         files,
		Command:       "go test ./...",
		OutputExcerpt: "ok  \texample.com/calc\t0.01s",
		Notes:         "prompt of " + strconv.Itoa(promptLen) + " bytes",
	}
}

// writeList returns the path=content pairs of TESTAGENT_WRITE.
func writeList() [][2]string {
	var pairs [][2]string
	for _, line := range strings.Split(os.Getenv("TESTAGENT_WRITE"), "\n") {
		if path, content, ok := strings.Cut(line, "="); ok && path != "" {
			pairs = append(pairs, [2]string{path, content})
		}
	}
	return pairs
}

func claimedFiles() []string {
	files := []string{}
	for _, p := range writeList() {
		files = append(files, p[0])
	}
	return files
}

func writeFiles() ([]string, error) {
	root := os.Getenv("ORCHESTRATOR_ROOT")
	files := []string{}
	for _, p := range strings.Fields(os.Getenv("TESTAGENT_DELETE")) {
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	for _, p := range writeList() {
		path := filepath.Join(root, p[0])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(p[1]), 0o644); err != nil {
			return nil, err
		}
		files = append(files, p[0])
	}
	return files, nil
}

func marker() error {
	k, body := markers.Done, "done\n"
	if os.Getenv("TESTAGENT_MARKER") == "failed" {
		k, body = markers.Failed, "failed\n"
	}
	if d, err := time.ParseDuration(os.Getenv("TESTAGENT_DELAY")); err == nil {
		time.Sleep(d)
	}
	if os.Getenv("TESTAGENT_STAMP") != "" {
		// For latency benchmarks: when the marker was written, by the wall clock.
		stamp := filepath.Join(os.Getenv("ORCHESTRATOR_ATTEMPT_DIR"), "marker-time")
		if err := os.WriteFile(stamp, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644); err != nil {
			return err
		}
	}
	return markers.Write(os.Getenv("ORCHESTRATOR_MARKER_DIR"), os.Getenv("ORCHESTRATOR_TASK_ID"), k, []byte(body))
}

// grandchild starts a copy of this program that hangs. It stays in our process group (no
// Setpgid) and inherits our standard output, as a server an agent starts in the background
// would, and it outlives us.
func grandchild() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "TESTAGENT_MODE=hang")
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	pidfile := os.Getenv("TESTAGENT_PIDFILE")
	if pidfile != "" {
		if err := os.WriteFile(pidfile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Println("started a child that will outlive me")
	return marker()
}
