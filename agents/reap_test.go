package agents

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/internal/ownproc"
)

// TestReapOrphansFindsEscapee: a process an agent started that left its group and lost
// its parent (setsid, then the parent exits) becomes the child subreaper's child; the
// kernel's lists of children name it as a read of every process's parent does, and
// ReapOrphans ends it, while a child of ours that it knows is left alone, and so are the
// orchestrator's own processes that run beside its loop (ownproc): one that runs, and one
// that has exited and waits to be reaped by its own Wait, which must get its exit status
// (killed and reaped by the reaper, the patch's and the dispatcher's git failed). It runs
// in a copy of the test binary, which alone becomes a subreaper.
func TestReapOrphansFindsEscapee(t *testing.T) {
	inChild(t, reaper)
}

// inChild runs fn in a child process of the test binary, which runs test t alone, so that
// it may become a child subreaper and have children of its own without the test process
// doing so; t fails when fn does.
func inChild(t *testing.T, fn func() error) {
	t.Helper()
	if os.Getenv("AGENTS_TEST_CHILD") == t.Name() {
		if err := fn(); err != nil {
			fmt.Println("child:", err)
			os.Exit(1)
		}
		fmt.Println("child: ok")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), "AGENTS_TEST_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child: ok") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// reaper is the subreaper's side of TestReapOrphansFindsEscapee.
func reaper() error {
	if err := BecomeSubreaper(); err != nil {
		return err
	}
	known := exec.Command("sleep", "60")
	if err := known.Start(); err != nil {
		return err
	}
	defer known.Wait()
	defer known.Process.Kill()
	// The orchestrator's own processes, started by another goroutine than the reaper's:
	// one runs, one has exited and is not reaped yet.
	running := exec.Command("sleep", "60")
	if err := ownproc.Start(running); err != nil {
		return err
	}
	defer ownproc.Wait(running)
	defer running.Process.Kill()
	exited := exec.Command("sh", "-c", "exit 3")
	if err := ownproc.Start(exited); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if st, err := readStat(exited.Process.Pid); err == nil && st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the own process %d never exited", exited.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The cheat: a grandchild in a session of its own, whose parent exits at once.
	agent := exec.Command("sh", "-c", `setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!`)
	out, err := agent.StdoutPipe()
	if err != nil {
		return err
	}
	if err := agent.Start(); err != nil {
		return err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return err
	}
	escapee, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return err
	}
	if err := agent.Wait(); err != nil {
		return err
	}
	// Its parent has exited (and been reaped): it is ours now.
	self := os.Getpid()
	listed, scanned := children(self), scanChildren(self)
	slices.Sort(listed)
	slices.Sort(scanned)
	if !slices.Equal(listed, scanned) {
		return fmt.Errorf("children listed %v, scanned %v", listed, scanned)
	}
	if !slices.Contains(listed, escapee) || !slices.Contains(listed, known.Process.Pid) {
		return fmt.Errorf("children %v lack the escapee %d or the known child %d", listed, escapee, known.Process.Pid)
	}
	ended := ReapOrphans(map[int]bool{known.Process.Pid: true}, "ORCHESTRATOR_ATTEMPT_DIR", nil)
	if !slices.Equal(ended, []int{escapee}) {
		return fmt.Errorf("ended %v, want the escapee %d alone", ended, escapee)
	}
	if _, err := readStat(escapee); err == nil {
		return fmt.Errorf("the escapee %d is still there", escapee)
	}
	if !Alive(known.Process.Pid, mustStart(known.Process.Pid)) {
		return fmt.Errorf("the known child %d was ended", known.Process.Pid)
	}
	if !Alive(running.Process.Pid, mustStart(running.Process.Pid)) {
		return fmt.Errorf("the orchestrator's own running process %d was ended", running.Process.Pid)
	}
	var ee *exec.ExitError
	if err := ownproc.Wait(exited); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		return fmt.Errorf("the own process that exited: Wait says %v, want exit status 3", err)
	}
	return nil
}

func mustStart(pid int) uint64 {
	st, _ := procStartTime(pid)
	return st
}

// TestStopOwnEndsWhatTheAgentLeft: StopOwn looks for what an agent of ours left among our
// descendants only. The cheats: a grandchild in a session of its own whose parent exits at
// once (ours now, as the child subreaper), and one a level deeper, under a process of ours
// that outlives the agent; both carry the attempt's folder and are ended. The honest twin,
// a process of another attempt that escaped the same way, is left alone. Without the
// subreaper, the descendants are not known (an orphan went to init), and every process is
// looked at instead.
func TestStopOwnEndsWhatTheAgentLeft(t *testing.T) {
	if os.Getenv("AGENTS_TEST_CHILD") == "" {
		if _, ok := ownDescendants(); ok {
			t.Error("the test process is no subreaper, yet its descendants are said to be known")
		}
	}
	inChild(t, stopOwn)
}

// stopOwn is the subreaper's side of TestStopOwnEndsWhatTheAgentLeft.
func stopOwn() error {
	if err := BecomeSubreaper(); err != nil {
		return err
	}
	// escape starts an agent for the attempt folder dir that leaves a sleeper in a session
	// of its own, in a subshell that then exits, and one under a shell that stays; it
	// returns the agent, its start and the sleepers' PIDs.
	escape := func(dir string) (*exec.Cmd, uint64, []int, error) {
		agent := exec.Command("sh", "-c", `(setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!)
sh -c 'setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 60' </dev/null 2>&1 &`)
		agent.Env = append(os.Environ(), "ORCHESTRATOR_ATTEMPT_DIR="+dir)
		agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := agent.StdoutPipe()
		if err != nil {
			return nil, 0, nil, err
		}
		if err := agent.Start(); err != nil {
			return nil, 0, nil, err
		}
		start := mustStart(agent.Process.Pid)
		r := bufio.NewReader(out)
		var pids []int
		for range 2 {
			line, err := r.ReadString('\n')
			if err != nil {
				return nil, 0, nil, err
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				return nil, 0, nil, err
			}
			pids = append(pids, pid)
		}
		return agent, start, pids, agent.Wait()
	}
	mine, start, left, err := escape("/attempts/1")
	if err != nil {
		return err
	}
	starts := map[int]uint64{}
	for _, p := range left {
		starts[p] = mustStart(p)
	}
	twin, twinStart, other, err := escape("/attempts/2")
	if err != nil {
		return err
	}
	defer StopOwn(twin.Process.Pid, twinStart, "ORCHESTRATOR_ATTEMPT_DIR", "/attempts/2", time.Second)
	pids, ok := ownDescendants()
	if !ok {
		return errors.New("the descendants of a subreaper are not known")
	}
	for _, p := range append(slices.Clone(left), other...) {
		if !slices.Contains(pids, p) {
			return fmt.Errorf("descendants %v lack %d", pids, p)
		}
	}
	StopOwn(mine.Process.Pid, start, "ORCHESTRATOR_ATTEMPT_DIR", "/attempts/1", time.Second)
	for _, p := range left {
		if Alive(p, starts[p]) {
			return fmt.Errorf("what the agent left, %d, still runs", p)
		}
	}
	for _, p := range other {
		if !Alive(p, mustStart(p)) {
			return fmt.Errorf("another attempt's process %d was ended", p)
		}
	}
	return nil
}
