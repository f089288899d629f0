package watch_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// watchEvent is one line of `watch --json`, with the fields an attempt's events carry.
type watchEvent struct {
	Time        string `json:"time"`
	Event       string `json:"event"`
	Task        string `json:"task"`
	Message     string `json:"message"`
	Attempt     int    `json:"attempt"`
	Agent       string `json:"agent"`
	Outcome     string `json:"outcome"`
	FailureType string `json:"failure_type"`
	GateLog     string `json:"gate_log"`
}

// jsonEvents parses the output of `watch --json`, one event a line, failing the test on a
// line that is not JSON.
func jsonEvents(t *testing.T, out string) []watchEvent {
	t.Helper()
	var evs []watchEvent
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev watchEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestRejectionEventsJSON: every rejection and the halt that ends them are events of
// `watch --json` with the attempt, its agent, its outcome, its failure type and its
// gate.log (relative to the repository root, and there), besides the fields of before.
// The cheat claims done three times and writes nothing; the honest twin's completion
// carries its attempt and no failure type.
func TestRejectionEventsJSON(t *testing.T) {
	t.Parallel()
	t.Run("liar", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "test -f calc.go"}},
			map[string][]string{"honest": {"TESTAGENT_MODE=lie"}}, "")
		if err := os.Remove(filepath.Join(r.root, ".orchestrator/no_auto_retry")); err != nil {
			t.Fatal(err)
		}
		code, out := r.run("watch", "--once", "--json")
		if code != 3 {
			t.Fatalf("exit %d, want 3 (halted)\n%s", code, out)
		}
		var rejected, halted []watchEvent
		for _, ev := range jsonEvents(t, out) {
			switch ev.Event {
			case "started":
				if ev.Attempt == 0 || ev.Agent != "honest" {
					t.Errorf("started event without its attempt and agent: %+v", ev)
				}
			case "retry", "failed":
				rejected = append(rejected, ev)
			case "halted":
				halted = append(halted, ev)
			}
		}
		if len(rejected) != 2 || len(halted) != 1 {
			t.Fatalf("%d rejections and %d halts, want 2 retries and one halt:\n%s", len(rejected), len(halted), out)
		}
		for i, ev := range append(rejected, halted...) {
			n := i + 1
			gateLog := fmt.Sprintf(".orchestrator/runs/TASK-001/%d/gate.log", n)
			if ev.Time == "" || ev.Task != "TASK-001" || ev.Attempt != n || ev.Agent != "honest" || ev.Outcome != "failed" ||
				ev.FailureType != "test_fails" || ev.GateLog != gateLog {
				t.Errorf("event %d: %+v; want attempt %d by honest, failed, test_fails, %s", i, ev, n, gateLog)
			}
			if !strings.Contains(ev.Message, "claim rejected: test -f calc.go exited 1") || !strings.HasSuffix(ev.Message, "; see "+gateLog) {
				t.Errorf("event %d's message does not say why and where: %q", i, ev.Message)
			}
			if !strings.Contains(r.read(ev.GateLog), "decision: failed: claim rejected") {
				t.Errorf("%s does not hold the decision", ev.GateLog)
			}
		}
		if !strings.Contains(halted[0].Message, "Repeated identical failure (3x)") {
			t.Errorf("the halt does not say why: %q", halted[0].Message)
		}
	})
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "test -f calc.go"}},
			map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=package calc"}}, "")
		code, out := r.run("watch", "--once", "--json")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		var done []watchEvent
		for _, ev := range jsonEvents(t, out) {
			switch ev.Event {
			case "completed":
				done = append(done, ev)
			case "failed", "retry", "halted", "blocked":
				t.Errorf("honest work refused: %+v", ev)
			}
		}
		if len(done) != 1 {
			t.Fatalf("%d completed events, want 1:\n%s", len(done), out)
		}
		if ev := done[0]; ev.Attempt != 1 || ev.Agent != "honest" || ev.Outcome != "completed" || ev.FailureType != "" ||
			ev.GateLog != ".orchestrator/runs/TASK-001/1/gate.log" {
			t.Errorf("completed event: %+v", ev)
		}
	})
}

// TestBlockedEventLine: an agent that reports it is blocked gets one plain line (stdout is
// no terminal) with its attempt, its reason and its gate.log, and no colour.
func TestBlockedEventLine(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "true"}},
		map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_MARKER=failed", "TESTAGENT_STATE=dependency",
			"TESTAGENT_MESSAGE=needs the schema of TASK-000"}}, "")
	code, out := r.run("watch", "--once")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	line := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d TASK-001 blocked: attempt 1 \(dependency\): the agent needs something it cannot get: needs the schema of TASK-000; see (\S+)$`).FindStringSubmatch(out)
	if line == nil {
		t.Fatalf("no blocked line with its reason and gate.log:\n%s", out)
	}
	if line[1] != ".orchestrator/runs/TASK-001/1/gate.log" || r.read(line[1]) == "" {
		t.Errorf("gate.log named %q", line[1])
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("escape codes in output that is no terminal: %q", out)
	}
}

// TestTerminalColour runs watch with its output on a real terminal (a pseudo-terminal):
// the live table paints the status words and keeps the rejection's line, with its reason
// and gate.log, above it; with NO_COLOR set nothing is painted, though the table still
// redraws in place.
func TestTerminalColour(t *testing.T) {
	t.Parallel()
	for _, noColor := range []bool{false, true} {
		t.Run(fmt.Sprintf("NO_COLOR=%v", noColor), func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "test -f calc.go"}},
				map[string][]string{"honest": {"TESTAGENT_MODE=lie"}}, "")
			c := r.cmd("watch", "--once")
			c.Env = withoutEnv(os.Environ(), "NO_COLOR")
			if noColor {
				c.Env = append(c.Env, "NO_COLOR=1")
			}
			code, out := onTerminal(t, c)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%q", code, out)
			}
			if !strings.Contains(out, "\x1b[J") {
				t.Fatalf("no live table (is the output a terminal?): %q", out)
			}
			const why = ": attempt 1 (test_fails): claim rejected: test -f calc.go exited 1 (assertion_failure)"
			const where = "; see .orchestrator/runs/TASK-001/1/gate.log\r\n"
			painted := strings.Contains(out, "\x1b[31mfailed\x1b[0m")
			switch {
			case noColor && sgr.MatchString(out):
				t.Errorf("colour with NO_COLOR set: %q", out)
			case noColor && !strings.Contains(out, "TASK-001 failed"+why):
				t.Errorf("no rejection line above the table: %q", out)
			case !noColor && !painted:
				t.Errorf("the status word is not painted: %q", out)
			case !noColor && !strings.Contains(out, "TASK-001 \x1b[31mfailed\x1b[0m"+why):
				t.Errorf("no rejection line above the table: %q", out)
			}
			if !strings.Contains(out, where) {
				t.Errorf("the rejection line does not name gate.log: %q", out)
			}
		})
	}
}

// sgr matches a colour escape (Select Graphic Rendition); the live table's other escapes
// move the cursor and clear.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// withoutEnv returns env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// onTerminal runs c with its standard output and error on a new pseudo-terminal, and
// returns its exit code and everything it wrote there.
func onTerminal(t *testing.T, c *exec.Cmd) (int, string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pseudo-terminal number: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pseudo-terminal: %v", err)
	}
	c.Stdout, c.Stderr = slave, slave
	if err := c.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close() // the child has it: reading ends (EIO) once the child and its heirs close it
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&out, master) // ends with EIO once no one holds the terminal
		close(read)
	}()
	err = waitCmd(t, c, time.Minute)
	select {
	case <-read:
	case <-time.After(scaled(10 * time.Second)):
		t.Errorf("the terminal is still held after the command ended")
		master.Close()
		<-read
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}
