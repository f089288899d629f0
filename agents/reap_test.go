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
	if os.Getenv("AGENTS_TEST_REAPER") == "1" {
		if err := reaper(); err != nil {
			fmt.Println("reaper:", err)
			os.Exit(1)
		}
		fmt.Println("reaper: ok")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReapOrphansFindsEscapee$")
	cmd.Env = append(os.Environ(), "AGENTS_TEST_REAPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reaper: ok") {
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
