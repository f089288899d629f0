package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orchestrator/orchestrator/markers"
)

// env is what the watch loop passes an agent: our environment plus the orchestrator's
// variables, plus the test agent's settings.
type env struct {
	root, markerDir, attemptDir string
}

func newEnv(t *testing.T) env {
	t.Helper()
	root := t.TempDir()
	e := env{
		root:       root,
		markerDir:  filepath.Join(root, ".orchestrator", "complete"),
		attemptDir: filepath.Join(root, ".orchestrator", "runs", "TASK-1", "1"),
	}
	for _, d := range []string{e.markerDir, e.attemptDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e env) vars(extra ...string) []string {
	return append(os.Environ(), append([]string{
		"ORCHESTRATOR_TASK_ID=TASK-1",
		"ORCHESTRATOR_MARKER_DIR=" + e.markerDir,
		"ORCHESTRATOR_ATTEMPT_DIR=" + e.attemptDir,
		"ORCHESTRATOR_ROOT=" + e.root,
	}, extra...)...)
}

func (e env) log() string { return filepath.Join(e.attemptDir, "agent.log") }

// startAgent starts the test agent in mode with extra environment, and makes sure it and
// its group are gone when the test ends.
func startAgent(t *testing.T, e env, prompt, mode string, extra ...string) *Process {
	t.Helper()
	p, err := Start(StartOptions{
		Command: []string{testAgent},
		Dir:     e.root,
		Prompt:  prompt,
		Env:     e.vars(append([]string{"TESTAGENT_MODE=" + mode}, extra...)...),
		LogPath: e.log(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Millisecond) })
	return p
}

func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(scaled(10 * time.Second)):
		t.Fatal("agent did not exit")
	}
}

// assertGroupGone checks that no live process is left in the group pgid.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if groupAlive(pgid) {
		t.Errorf("process group %d still has live processes", pgid)
	}
}

func TestStartHonest(t *testing.T) {
	e := newEnv(t)
	prompt := strings.Repeat("Write the code.\n", 10000) // more than a pipe buffer
	p := startAgent(t, e, prompt, "honest", "TESTAGENT_WRITE=calc/add.go=package calc\nREADME=hi", "TESTAGENT_ROLE=implementer")
	if p.PID() <= 0 {
		t.Fatalf("PID = %d", p.PID())
	}
	if p.StartTime() == 0 {
		t.Error("StartTime = 0")
	}
	waitDone(t, p)
	if p.ExitCode() != 0 {
		t.Fatalf("exit code %d", p.ExitCode())
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "calc", "add.go")); err != nil || string(b) != "package calc" {
		t.Errorf("calc/add.go = %q, %v", b, err)
	}
	r, err := ParseResult(p.Stdout(), RoleImplementer)
	if err != nil {
		t.Fatalf("ParseResult(stdout): %v\n%s", err, p.Stdout())
	}
	if want := fmt.Sprintf("prompt of %d bytes", len(prompt)); r.Notes != want {
		t.Errorf("notes = %q, want %q", r.Notes, want)
	}
	if strings.Join(r.Files, ",") != "calc/add.go,README" {
		t.Errorf("files = %v", r.Files)
	}
	m, err := markers.Find(e.markerDir, "TASK-1")
	if err != nil || m == nil || m.Claim() != "done" {
		t.Errorf("marker = %+v, %v", m, err)
	}
	log, err := os.ReadFile(e.log())
	if err != nil || !strings.Contains(string(log), "```tdd-result") {
		t.Errorf("agent.log = %q, %v", log, err)
	}
	assertGroupGone(t, p.PID())
}

func TestStartEnvAndDir(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "env")
	waitDone(t, p)
	want := strings.Join([]string{
		"ORCHESTRATOR_ATTEMPT_DIR=" + e.attemptDir,
		"ORCHESTRATOR_MARKER_DIR=" + e.markerDir,
		"ORCHESTRATOR_ROOT=" + e.root,
		"ORCHESTRATOR_TASK_ID=TASK-1",
	}, "\n") + "\n"
	// The tests' own deadline scale (make test-busy sets it) passes as every ORCHESTRATOR_
	// variable of the orchestrator's environment does.
	got := regexp.MustCompile(`(?m)^ORCHESTRATOR_TEST_TIMESCALE=.*\n`).ReplaceAllString(p.Stdout(), "")
	if got != want {
		t.Errorf("environment =\n%s\nwant\n%s", got, want)
	}
}

func TestStartNoShell(t *testing.T) {
	e := newEnv(t)
	// Through a shell, the ; would run touch.
	p, err := Start(StartOptions{Command: []string{"echo", "a;", "touch", "pwned", "$HOME"}, Dir: e.root, LogPath: e.log()})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if got := p.Stdout(); got != "a; touch pwned $HOME\n" {
		t.Errorf("stdout = %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.root, "pwned")); err == nil {
		t.Error("the command went through a shell")
	}
}

func TestStartRelativeCommandAndAppend(t *testing.T) {
	e := newEnv(t)
	script := filepath.Join(e.root, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho out; echo err >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.log(), []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start(StartOptions{Command: []string{"./agent.sh"}, Dir: e.root, LogPath: e.log()})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	// Standard output and standard error both go to the log; Stdout is this run's part.
	if out := p.Stdout(); !strings.Contains(out, "out\n") || !strings.Contains(out, "err\n") || strings.Contains(out, "earlier") {
		t.Errorf("stdout = %q, want out and err but not the earlier text", out)
	}
	log, _ := os.ReadFile(e.log())
	if !strings.HasPrefix(string(log), "earlier\n") || !strings.Contains(string(log), "out\n") || !strings.Contains(string(log), "err\n") {
		t.Errorf("agent.log = %q, want the earlier text then out and err", log)
	}
}

func TestStartErrors(t *testing.T) {
	e := newEnv(t)
	if _, err := Start(StartOptions{}); err == nil {
		t.Error("Start with no command succeeded")
	}
	if _, err := Start(StartOptions{Command: []string{filepath.Join(e.root, "missing")}, LogPath: e.log()}); err == nil {
		t.Error("Start of a missing program succeeded")
	}
	if _, err := Start(StartOptions{Command: []string{testAgent}, LogPath: filepath.Join(e.root, "no", "such", "agent.log")}); err == nil {
		t.Error("Start with an unwritable log succeeded")
	}
}

func TestExitCodes(t *testing.T) {
	for _, tt := range []struct {
		mode string
		want int
	}{{"nomarker", 0}, {"exit1", 1}} {
		t.Run(tt.mode, func(t *testing.T) {
			e := newEnv(t)
			p := startAgent(t, e, "", tt.mode)
			waitDone(t, p)
			if p.ExitCode() != tt.want {
				t.Errorf("exit code %d, want %d", p.ExitCode(), tt.want)
			}
			if m, _ := markers.Find(e.markerDir, "TASK-1"); m != nil {
				t.Errorf("marker %s written", m.Path)
			}
		})
	}
}

func TestStopHang(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "hang")
	if p.ExitCode() != -1 {
		t.Errorf("ExitCode while running = %d", p.ExitCode())
	}
	start := time.Now()
	p.Stop(10 * time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop of an agent that obeys SIGTERM took %v", d)
	}
	if p.ExitCode() != -1 {
		t.Errorf("exit code %d, want -1 (signal)", p.ExitCode())
	}
	assertGroupGone(t, p.PID())
	if Alive(p.PID(), p.StartTime()) {
		t.Error("Alive after Stop")
	}
}

func TestStopStubbornNeedsKill(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "stubborn")
	waitOutput(t, p, "ignoring SIGTERM")
	start := time.Now()
	p.Stop(100 * time.Millisecond)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("Stop returned after %v, before the grace period", d)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the agent was reaped")
	}
	assertGroupGone(t, p.PID())
}

// waitOutput waits until the agent has printed want.
func waitOutput(t *testing.T, p *Process, want string) {
	t.Helper()
	deadline := time.Now().Add(scaled(10 * time.Second))
	for !strings.Contains(p.Stdout(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("agent did not print %q; it printed %q", want, p.Stdout())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// readPID waits for the test agent to write the PID file.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(scaled(10 * time.Second))
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PID in %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStopKillsGrandchild: the agent starts a child in its group and exits; the child keeps
// the group (and the output pipe) alive. Stop must end it.
func TestStopKillsGrandchild(t *testing.T) {
	e := newEnv(t)
	pidfile := filepath.Join(e.root, "child.pid")
	p := startAgent(t, e, "", "grandchild", "TESTAGENT_PIDFILE="+pidfile)
	child := readPID(t, pidfile)
	childStart, err := procStartTime(child)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p) // the leader has exited; Done does not wait for the child
	if p.ExitCode() != 0 {
		t.Fatalf("exit code %d", p.ExitCode())
	}
	if !strings.Contains(p.Stdout(), "started a child") {
		t.Errorf("stdout = %q", p.Stdout())
	}
	if !Alive(child, childStart) {
		t.Fatal("grandchild is not running before Stop")
	}
	if st, _ := readStat(child); st.pgrp != p.PID() {
		t.Fatalf("grandchild is in group %d, want %d", st.pgrp, p.PID())
	}
	p.Stop(time.Second)
	if Alive(child, childStart) {
		t.Error("grandchild survived Stop")
	}
	assertGroupGone(t, p.PID())
}

func TestStopLinger(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "linger")
	deadline := time.Now().Add(scaled(10 * time.Second))
	for {
		m, err := markers.Find(e.markerDir, "TASK-1")
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no marker")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := markers.WriteKill(e.markerDir, "TASK-1"); err != nil {
		t.Fatal(err)
	}
	p.Stop(time.Second)
	if _, err := ParseResult(p.Stdout(), RoleImplementer); err != nil {
		t.Errorf("result of a killed agent: %v", err)
	}
	assertGroupGone(t, p.PID())
}

func TestStopAfterExitIsQuick(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "nomarker")
	waitDone(t, p)
	start := time.Now()
	p.Stop(time.Second)
	p.Stop(time.Second)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Stop of an exited agent took %v", d)
	}
}

func TestStdoutCapped(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("x", MaxStdout) + "THE END"
	p := startAgent(t, e, big, "cat")
	waitDone(t, p)
	out := p.Stdout()
	if len(out) != MaxStdout || !strings.HasSuffix(out, "THE END") {
		t.Errorf("stdout is %d bytes ending %q; want %d ending THE END", len(out), out[len(out)-10:], MaxStdout)
	}
	if info, err := os.Stat(e.log()); err != nil || info.Size() != int64(len(big)) {
		t.Errorf("agent.log holds %v bytes, want %d (%v)", info.Size(), len(big), err)
	}
}

// TestAdoptedProcess covers crash recovery: an agent started by an earlier orchestrator run
// is known only by PID and start time.
func TestAdoptedProcess(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "hang")
	pid, st := p.PID(), p.StartTime()
	if !Alive(pid, st) {
		t.Fatal("Alive = false for a running agent")
	}
	if Alive(pid, st+1) {
		t.Error("Alive = true for another start time (a reused PID)")
	}
	gone := WaitGone(pid, st, 5*time.Millisecond)
	select {
	case <-gone:
		t.Fatal("WaitGone closed while the agent runs")
	case <-time.After(30 * time.Millisecond):
	}
	StopGroup(pid, time.Second)
	select {
	case <-gone:
	case <-time.After(scaled(5 * time.Second)):
		t.Fatal("WaitGone did not close after StopGroup")
	}
	assertGroupGone(t, pid)
	waitDone(t, p)
}

func TestFindByEnv(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "hang")
	// Start returns once the agent's program runs, with its environment.
	pid, start, ok := FindByEnv("ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir)
	if !ok || pid != p.PID() || start != p.StartTime() {
		t.Errorf("FindByEnv = %d, %d, %v; want %d, %d, true", pid, start, ok, p.PID(), p.StartTime())
	}
	// Only a whole variable matches.
	for _, kv := range [][2]string{{"ORCHESTRATOR_ATTEMPT_DIR", filepath.Dir(e.attemptDir)}, {"ATTEMPT_DIR", e.attemptDir}} {
		if pid, _, ok := FindByEnv(kv[0], kv[1]); ok {
			t.Errorf("FindByEnv(%q, %q) found %d", kv[0], kv[1], pid)
		}
	}
}

func TestStopGroupStubborn(t *testing.T) {
	e := newEnv(t)
	p := startAgent(t, e, "", "stubborn")
	waitOutput(t, p, "ignoring SIGTERM")
	StopGroup(p.PID(), 20*time.Millisecond)
	assertGroupGone(t, p.PID())
	waitDone(t, p)
}

func TestStopGroupRefusesDangerousGroups(t *testing.T) {
	// These must return at once and signal nothing: pgid 0 is our own group, -1 and 1
	// would reach every process.
	for _, pgid := range []int{-1, 0, 1, unix.Getpgrp()} {
		StopGroup(pgid, time.Millisecond)
	}
	StopGroup(1<<22-1, time.Millisecond) // no such group
}

func TestAliveEdgeCases(t *testing.T) {
	if Alive(0, 0) || Alive(-5, 0) {
		t.Error("Alive for a PID <= 0")
	}
	self, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(os.Getpid(), self) {
		t.Error("Alive(self) = false")
	}
	select {
	case <-WaitGone(1<<22-1, 0, 0):
	case <-time.After(time.Second):
		t.Error("WaitGone of a missing PID did not close")
	}
}

func TestReadStatOddName(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	dir := t.TempDir()
	odd := filepath.Join(dir, "a) (b c")
	if err := os.Link(testAgent, odd); err != nil {
		t.Skip(err)
	}
	e := newEnv(t)
	p, err := Start(StartOptions{Command: []string{odd}, Env: e.vars("TESTAGENT_MODE=hang"), LogPath: e.log()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(10 * time.Millisecond)
	st, err := readStat(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	if st.pgrp != p.PID() || st.start != p.StartTime() || st.start == 0 {
		t.Errorf("readStat = %+v, want group %d start %d", st, p.PID(), p.StartTime())
	}
}

// TestAgentClaims runs the test agent's claiming modes and checks what the orchestrator
// would read from each: the result block, the marker and the files.
func TestAgentClaims(t *testing.T) {
	tests := []struct {
		mode     string
		rule     string // the FormatError rule of the final text, "" for a valid block
		marker   string // the marker's claim, "" for none
		wantFile bool
	}{
		{"honest", "", "done", true},
		{"lie", "", "done", false},
		{"malformed", RuleSyntax, "done", false},
		{"double", RuleOneBlock, "done", false},
		{"nomarker", RuleNoBlock, "", false},
		{"exit1", RuleNoBlock, "", false},
	}
	ad, err := Lookup(Exec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			e := newEnv(t)
			p := startAgent(t, e, "prompt", tt.mode, "TESTAGENT_WRITE=calc/add.go=package calc", "TESTAGENT_ROLE=test-writer")
			waitDone(t, p)
			text, err := ad.FinalText([]byte(p.Stdout()))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseResult(text, RoleTestWriter)
			var fe *FormatError
			switch {
			case tt.rule == "" && err != nil:
				t.Errorf("ParseResult: %v", err)
			case tt.rule != "" && (!errors.As(err, &fe) || fe.Rule != tt.rule):
				t.Errorf("ParseResult error = %v, want rule %s", err, tt.rule)
			}
			m, err := markers.Find(e.markerDir, "TASK-1")
			if err != nil {
				t.Fatal(err)
			}
			if m != nil {
				if got := m.Claim(); got != tt.marker {
					t.Errorf("marker claims %q, want %q", got, tt.marker)
				}
			} else if tt.marker != "" {
				t.Errorf("no marker, want %q", tt.marker)
			}
			_, err = os.Stat(filepath.Join(e.root, "calc", "add.go"))
			if (err == nil) != tt.wantFile {
				t.Errorf("calc/add.go exists: %v, want %v", err == nil, tt.wantFile)
			}
		})
	}
}
