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
//	noblock     works for TESTAGENT_WORK (a duration, if set), writes the files of
//	            TESTAGENT_WRITE and TESTAGENT_FROM and <ID>.done, and prints a final
//	            message without a tdd-result block
//	malformed   prints a broken tdd-result block and writes <ID>.done
//	double      prints two valid blocks and writes <ID>.done
//	linger      prints a valid block, writes <ID>.done and keeps running
//	cat         copies its prompt to standard output and exits 0
//	env         prints the ORCHESTRATOR_* variables, one NAME=value a line, and exits 0
//	slow        works as a real agent does, slowly and with chatter: prints a progress line
//	            every quarter second for TESTAGENT_WORK (a duration), writes the files of
//	            TESTAGENT_WRITE and TESTAGENT_FROM, writes its marker, says so, waits
//	            TESTAGENT_AFTER (a duration) and only then prints its final message with
//	            the result block (honest mode's, or TESTAGENT_STATE's) and exits 0
//	plan        behaves per attempt, as TESTAGENT_PLAN says (below)
//	planner     the planner of `orchestrator plan`: prints the SHA-256 of its prompt, waits
//	            TESTAGENT_WORK, copies the file TESTAGENT_FROMFILE (relative to
//	            ORCHESTRATOR_ROOT) to ORCHESTRATOR_PLAN_FILE, runs TESTAGENT_SH if set (its
//	            failure is printed, not fatal: a cheat the sandbox stops goes on), and prints
//	            a result block of role planner; with TESTAGENT_STATE=issue, a failed one
//	            with TESTAGENT_MESSAGE
//	script      a cheat, or any agent a test spells out in shell: writes the files of
//	            TESTAGENT_WRITE and TESTAGENT_FROM, runs TESTAGENT_SH with /bin/sh in
//	            ORCHESTRATOR_ROOT (the ORCHESTRATOR_* variables in its environment, its
//	            output in the agent's), and if that exits 0 prints honest mode's result
//	            block and writes its marker; else it exits with the snippet's code
//
// TESTAGENT_PLAN lists one entry per attempt number, separated by ";": "N=mode" followed by
// optional KEY=VALUE settings (no spaces in them) that hold for that attempt only, e.g.
// "1=lie; 2=slow TESTAGENT_WORK=3s". The attempt number is the last element of
// ORCHESTRATOR_ATTEMPT_DIR; an attempt the plan does not list takes the entry of the highest
// attempt number below it. So one task can lie on its first attempt and be honest on its
// second.
//
// TESTAGENT_BYTASK names a folder: if it holds <task ID>.env, its KEY=VALUE lines are set
// before anything else, so that one agent command plays every task of a queue its own way
// (the tasks `orchestrator tdd` writes have no Agent field).
//
// TESTAGENT_USAGE is the usage line of the result block (SPEC §16), with "," for spaces
// so that a plan entry can set it: "input_tokens=100,cost_usd=0.4".
//
// TESTAGENT_STARTLOG, in every mode, names a file to which each start appends one line,
// "<task ID> <attempt number> <PID>", so that a test can count the agents each attempt
// had.
//
// TESTAGENT_WRITE holds one path=content pair a line; paths are relative to
// ORCHESTRATOR_ROOT (or the working folder). TESTAGENT_FROM names a folder whose files,
// with their paths relative to it, are written the same way (for files of many lines).
// TESTAGENT_MARKER, if set to "failed", makes the marker <ID>.failed instead; "none" writes
// no marker at all.
// TESTAGENT_DELAY (a duration) waits before the marker, and TESTAGENT_STAMP (any value)
// writes the wall-clock time of the marker, in nanoseconds, to marker-time in the attempt
// folder. TESTAGENT_DELETE lists files (space-separated) that
// honest mode removes before writing. TESTAGENT_STATE=issue or dependency makes the result
// block a failed one with that state and TESTAGENT_MESSAGE as its message (use it with
// TESTAGENT_MARKER=failed).
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
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
	if err := logStart(); err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(2)
	}
	if err := byTask(); err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(2)
	}
	if role := os.Getenv("ORCHESTRATOR_ROLE"); role == agents.RoleReviewer || role == agents.RoleJudge {
		if err := reviewRole(role); err != nil {
			fmt.Fprintln(os.Stderr, "testagent:", err)
			os.Exit(2)
		}
		return
	}
	mode := os.Getenv("TESTAGENT_MODE")
	if mode == "plan" {
		var err error
		if mode, err = planned(); err != nil {
			fmt.Fprintln(os.Stderr, "testagent:", err)
			os.Exit(2)
		}
	}
	if err := run(mode); err != nil {
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
	case "noblock":
		if work, err := duration("TESTAGENT_WORK"); err == nil && work > 0 {
			fmt.Println("working")
			time.Sleep(work)
		}
		files, err := writeFiles()
		if err != nil {
			return err
		}
		fmt.Printf("I did the work (%d files); the tests pass.\n", len(files))
		return marker()
	case "slow":
		return slow(len(prompt))
	case "script":
		return script(len(prompt))
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
	case "planner":
		return planner(prompt)
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
		Usage:         strings.ReplaceAll(os.Getenv("TESTAGENT_USAGE"), ",", " "),
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

// readTree returns the files under dir as path=content pairs, paths relative to dir.
func readTree(dir string) ([][2]string, error) {
	var pairs [][2]string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		pairs = append(pairs, [2]string{filepath.ToSlash(rel), string(b)})
		return nil
	})
	return pairs, err
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
	pairs := writeList()
	if from := os.Getenv("TESTAGENT_FROM"); from != "" {
		more, err := readTree(from)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, more...)
	}
	for _, p := range pairs {
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
	switch os.Getenv("TESTAGENT_MARKER") {
	case "failed":
		k, body = markers.Failed, "failed\n"
	case "none":
		return nil
	}
	var stamp *os.File
	if os.Getenv("TESTAGENT_STAMP") != "" {
		// For latency benchmarks: when the marker was written, by the wall clock. The file
		// is made first, so that what is timed holds no file made but the marker's.
		var err error
		if stamp, err = os.Create(filepath.Join(os.Getenv("ORCHESTRATOR_ATTEMPT_DIR"), "marker-time")); err != nil {
			return err
		}
		defer stamp.Close()
	}
	if d, err := time.ParseDuration(os.Getenv("TESTAGENT_DELAY")); err == nil {
		time.Sleep(d)
	}
	if stamp != nil {
		if _, err := stamp.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10)); err != nil {
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

// attemptNumber returns the attempt number: the last element of ORCHESTRATOR_ATTEMPT_DIR.
func attemptNumber() (int, error) {
	dir := os.Getenv("ORCHESTRATOR_ATTEMPT_DIR")
	n, err := strconv.Atoi(filepath.Base(dir))
	if err != nil {
		return 0, fmt.Errorf("attempt number of ORCHESTRATOR_ATTEMPT_DIR %q: %w", dir, err)
	}
	return n, nil
}

// logStart appends "<task> <attempt> <pid>" to TESTAGENT_STARTLOG, when it is set.
func logStart() error {
	path := os.Getenv("TESTAGENT_STARTLOG")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %s %d\n", os.Getenv("ORCHESTRATOR_TASK_ID"), filepath.Base(os.Getenv("ORCHESTRATOR_ATTEMPT_DIR")), os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// planned picks this attempt's entry of TESTAGENT_PLAN: it sets the entry's variables and
// returns its mode.
func planned() (string, error) {
	n, err := attemptNumber()
	if err != nil {
		return "", err
	}
	best, bestN := "", 0
	for _, entry := range strings.Split(os.Getenv("TESTAGENT_PLAN"), ";") {
		head, _, _ := strings.Cut(strings.TrimSpace(entry), " ")
		k, _, ok := strings.Cut(head, "=")
		at, err := strconv.Atoi(k)
		if !ok || err != nil {
			if strings.TrimSpace(entry) != "" {
				return "", fmt.Errorf("TESTAGENT_PLAN entry %q: want N=mode [KEY=VALUE...]", entry)
			}
			continue
		}
		if at <= n && at > bestN {
			best, bestN = strings.TrimSpace(entry), at
		}
	}
	if best == "" {
		return "", fmt.Errorf("TESTAGENT_PLAN has no entry for attempt %d", n)
	}
	fields := strings.Fields(best)
	_, mode, _ := strings.Cut(fields[0], "=")
	for _, kv := range fields[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", fmt.Errorf("TESTAGENT_PLAN setting %q: want KEY=VALUE", kv)
		}
		if err := os.Setenv(k, v); err != nil {
			return "", err
		}
	}
	fmt.Printf("attempt %d: mode %s\n", n, mode)
	return mode, nil
}

// duration reads a duration from the environment variable name; unset means zero.
func duration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// slow is a chatty agent that takes its time: progress lines while it works, then its
// files and its marker, then a pause, and only then its final message.
func slow(promptLen int) error {
	work, err := duration("TESTAGENT_WORK")
	if err != nil {
		return err
	}
	after, err := duration("TESTAGENT_AFTER")
	if err != nil {
		return err
	}
	fmt.Println("Reading the task.")
	for step, end := 1, time.Now().Add(work); time.Now().Before(end); step++ {
		fmt.Printf("working: step %d\n", step)
		time.Sleep(min(250*time.Millisecond, time.Until(end)))
	}
	files, err := writeFiles()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d files\n", len(files))
	if err := marker(); err != nil {
		return err
	}
	fmt.Println("marker written; writing my summary")
	time.Sleep(after)
	fmt.Print("Here is what I did.\n\n" + result(files, promptLen).Render())
	return nil
}

// script writes the files honest mode writes, then runs the shell snippet TESTAGENT_SH in
// ORCHESTRATOR_ROOT. A snippet that succeeds is followed by honest mode's result block and
// marker; one that fails makes the agent exit with its code, with no marker.
func script(promptLen int) error {
	files, err := writeFiles()
	if err != nil {
		return err
	}
	sh := exec.Command("/bin/sh", "-c", os.Getenv("TESTAGENT_SH"))
	sh.Dir = os.Getenv("ORCHESTRATOR_ROOT")
	sh.Stdout, sh.Stderr = os.Stdout, os.Stderr
	if err := sh.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
			fmt.Fprintf(os.Stderr, "testagent: the script exited %d\n", ee.ExitCode())
			os.Exit(ee.ExitCode())
		}
		return err
	}
	fmt.Print("I did the work.\n\n" + result(files, promptLen).Render())
	return marker()
}

// byTask sets the variables of TESTAGENT_BYTASK/<task ID>.env, when there is one.
func byTask() error {
	dir := os.Getenv("TESTAGENT_BYTASK")
	if dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, os.Getenv("ORCHESTRATOR_TASK_ID")+".env"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k != "" {
			if err := os.Setenv(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// planner plays the planner of `orchestrator plan` (see the package comment).
func planner(prompt []byte) error {
	fmt.Printf("prompt sha256 %x\n", sha256.Sum256(prompt))
	work, err := duration("TESTAGENT_WORK")
	if err != nil {
		return err
	}
	time.Sleep(work)
	root := os.Getenv("ORCHESTRATOR_ROOT")
	scratch := os.Getenv("ORCHESTRATOR_PLAN_FILE")
	if from := os.Getenv("TESTAGENT_FROMFILE"); from != "" {
		if !filepath.IsAbs(from) {
			from = filepath.Join(root, from)
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(scratch, b, 0o644); err != nil {
			return err
		}
		fmt.Printf("wrote %d bytes of tasks to the scratch file\n", len(b))
	}
	if snippet := os.Getenv("TESTAGENT_SH"); snippet != "" {
		sh := exec.Command("/bin/sh", "-c", snippet)
		sh.Dir = root
		sh.Stdout, sh.Stderr = os.Stdout, os.Stderr
		if err := sh.Run(); err != nil {
			fmt.Printf("my script failed (%v); going on\n", err)
		}
	}
	r := &agents.Result{Role: agents.RolePlanner, Status: agents.StatusOK, State: agents.StateSuccess,
		Files: []string{scratch}, Command: "none", OutputExcerpt: "tasks written"}
	if os.Getenv("TESTAGENT_STATE") == agents.StateIssue {
		r.Status, r.State, r.Message = agents.StatusFailed, agents.StateIssue, os.Getenv("TESTAGENT_MESSAGE")
	}
	fmt.Print("My tasks are in the scratch file.\n\n" + r.Render())
	return nil
}
