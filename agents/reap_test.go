package agents

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestStopFindsWhatAServerStarted: an agent may have a process started for it by a server
// it did not start, the way `at` or a build daemon runs a job with its client's
// environment: the job carries the attempt's folder but is no descendant of the
// orchestrator's, so the end of an attempt looks at every process, not only at its own
// tree (a look at the orchestrator's descendants alone was tried and left this job
// running). The job is ended; the honest twin, another attempt's job from the same
// server, is left alone.
func TestStopFindsWhatAServerStarted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "jobs")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The server: reads a job a line at a time and runs it in the background.
	server := exec.Command("sh", "-c", `exec 3<>"$0"; while read -r job <&3; do sh -c "$job" </dev/null >/dev/null 2>&1 & done`, fifo)
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-server.Process.Pid, syscall.SIGKILL); server.Wait() }()
	// submit runs an agent for attempt that hands the server a job carrying its
	// environment's attempt folder, and returns the agent, its start and the job.
	submit := func(attempt string) (int, uint64, int) {
		t.Helper()
		pidFile := filepath.Join(dir, filepath.Base(attempt)+".pid")
		agent := exec.Command("sh", "-c", `printf '%s\n' "ORCHESTRATOR_ATTEMPT_DIR='$ORCHESTRATOR_ATTEMPT_DIR' sh -c 'echo \$\$ >$1.tmp && mv $1.tmp $1 && exec sleep 600'" >"$0"`, fifo, pidFile)
		agent.Env = append(os.Environ(), "ORCHESTRATOR_ATTEMPT_DIR="+attempt)
		agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := agent.Start(); err != nil {
			t.Fatal(err)
		}
		start := mustStart(agent.Process.Pid)
		if err := agent.Wait(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(scaled(5 * time.Second)); ; time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidFile); err == nil {
				job, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				// The job runs sleep, with the attempt's folder, once its stat says so.
				for !strings.Contains(readEnviron(job), "ORCHESTRATOR_ATTEMPT_DIR="+attempt) || !isSleep(job) {
					if time.Now().After(deadline) {
						t.Fatalf("the job %d never ran", job)
					}
					time.Sleep(10 * time.Millisecond)
				}
				return agent.Process.Pid, start, job
			}
			if time.Now().After(deadline) {
				t.Fatal("the server ran no job")
			}
		}
	}
	pid, start, job := submit("/attempts/1")
	_, _, other := submit("/attempts/2")
	jobStart, otherStart := mustStart(job), mustStart(other)
	defer syscall.Kill(other, syscall.SIGKILL)
	if !slices.Contains(children(os.Getpid()), server.Process.Pid) || slices.Contains(children(os.Getpid()), job) {
		t.Fatalf("the job %d should be the server's child, not ours", job)
	}
	StopAdopted(pid, start, "ORCHESTRATOR_ATTEMPT_DIR", "/attempts/1", time.Second)
	if Alive(job, jobStart) {
		syscall.Kill(job, syscall.SIGKILL)
		t.Error("the job the server ran for the agent, with its attempt's folder, still runs")
	}
	if !Alive(other, otherStart) {
		t.Error("another attempt's job was ended")
	}
}

// readEnviron returns the environment of process pid, or "".
func readEnviron(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return string(b)
}

// isSleep reports whether process pid runs sleep now.
func isSleep(pid int) bool {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b)) == "sleep"
}
