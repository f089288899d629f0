package agents

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/internal/ownproc"
	"golang.org/x/sys/unix"
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

// sibling is a C program that makes a sibling of itself (clone with CLONE_PARENT: the new
// process's parent is its own parent) running sleep with an empty environment, writes its
// PID to argv[1] and exits.
const sibling = `#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
	long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		char *args[] = {"sleep", "60", 0}, *env[] = {0};
		execve("/bin/sleep", args, env);
		_exit(127);
	}
	FILE *f = fopen(argv[1], "w");
	fprintf(f, "%ld\n", pid);
	fclose(f);
	return 0;
}
`

// TestReaperReadsEveryThreadsChildren: the kernel gives an orphan to the subreaper's main
// thread, but an agent can make a process the child of the very thread that started it,
// without being an orphan: clone with CLONE_PARENT gives the new process the agent's own
// parent. The cheat: an agent started by a thread other than the main one makes such a
// sibling, without the attempt's folder in its environment, and exits. The reaper finds it
// among that thread's children and ends it; a reaper that read the main thread's list alone,
// where every orphan is (tried for 0.2 ms an attempt, and taken back),
// misses it. The honest twin: escapees of agents started by other threads, some of which
// end before their agent does, are orphans, and are all found and ended too.
func TestReaperReadsEveryThreadsChildren(t *testing.T) {
	bin := buildC(t, "sibling", sibling)
	inChild(t, func() error {
		if err := BecomeSubreaper(); err != nil {
			return err
		}
		self := os.Getpid()
		// onThread runs fn on a thread of its own other than the main one. With end,
		// the thread ends with fn (its lock is never released); else it is held until
		// the test ends, so that no other goroutine ends it (a thread that ends gives its
		// children to the main thread, as it would orphans).
		held := make(chan struct{})
		defer close(held)
		onThread := func(end bool, fn func()) error {
			done := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				if unix.Gettid() == self {
					done <- errMainThread
					return
				}
				fn()
				done <- nil
				if !end {
					<-held
					runtime.UnlockOSThread()
				}
			}()
			return <-done
		}
		retry := func(end bool, fn func()) error {
			for {
				if err := onThread(end, fn); err != errMainThread {
					return err
				}
			}
		}
		// The cheat.
		pidFile := filepath.Join(os.TempDir(), fmt.Sprintf("sibling-%d", self))
		defer os.Remove(pidFile)
		var agentErr error
		if err := retry(false, func() {
			agent := exec.Command(bin, pidFile)
			agent.Env = append(os.Environ(), "ORCHESTRATOR_ATTEMPT_DIR=/attempts/1")
			agentErr = agent.Run()
		}); err != nil {
			return err
		}
		if agentErr != nil {
			return agentErr
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return err
		}
		cheat, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return err
		}
		defer syscall.Kill(cheat, syscall.SIGKILL)
		if st, err := readStat(cheat); err != nil || st.ppid != self {
			return fmt.Errorf("the sibling %d is not ours (%v, %+v)", cheat, err, st)
		}
		if slices.Contains(taskList(self, self), cheat) {
			return fmt.Errorf("the sibling %d is a child of the main thread: the test proves nothing", cheat)
		}
		// The honest twin's part: orphans of agents that other threads started.
		const agents = 4
		escapees := make(chan int, agents)
		for i := range agents {
			if err := retry(i%2 == 0, func() {
				agent := exec.Command("sh", "-c", `read _; setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!`)
				in, _ := agent.StdinPipe()
				out, _ := agent.StdoutPipe()
				if agent.Start() != nil {
					escapees <- 0
					return
				}
				// The agent runs on after its thread ended: told to go on, and waited
				// for, from another goroutine.
				go func() {
					fmt.Fprintln(in, "go")
					line, _ := bufio.NewReader(out).ReadString('\n')
					escapee, _ := strconv.Atoi(strings.TrimSpace(line))
					_ = agent.Wait()
					escapees <- escapee
				}()
			}); err != nil {
				return err
			}
		}
		want := []int{cheat}
		for range agents {
			e := <-escapees
			if e == 0 {
				return fmt.Errorf("an agent did not start")
			}
			defer syscall.Kill(e, syscall.SIGKILL)
			if !slices.Contains(taskList(self, self), e) {
				return fmt.Errorf("the orphan %d is not a child of the main thread", e)
			}
			want = append(want, e)
		}
		ended := ReapOrphans(map[int]bool{}, "ORCHESTRATOR_ATTEMPT_DIR", nil)
		slices.Sort(ended)
		slices.Sort(want)
		if !slices.Equal(ended, want) {
			return fmt.Errorf("the reaper ended %v, want %v (the sibling %d and the orphans)", ended, want, cheat)
		}
		return nil
	})
}

var errMainThread = errors.New("on the main thread")

// buildC compiles the C program src as name with gcc, which the test needs (it fails
// without it), and returns the program's path. The test's copy of itself that runs in a
// child (inChild) finds it by the variable AGENTS_TEST_<NAME>, not built again.
func buildC(t *testing.T, name, src string, flags ...string) string {
	t.Helper()
	env := "AGENTS_TEST_" + strings.ToUpper(name)
	if bin := os.Getenv(env); bin != "" {
		return bin
	}
	dir := t.TempDir()
	file := filepath.Join(dir, name+".c")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("gcc", append(flags, "-o", bin, file)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc (the machine's C compiler, which the test needs): %v\n%s", err, out)
	}
	t.Setenv(env, bin)
	return bin
}

// taskList is the kernel's list of the children that thread tid of process pid started,
// or that were given to it.
func taskList(pid, tid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, tid))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
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
	// environment's attempt folder, and returns the agent, its start and the job once it
	// runs sleep with that folder.
	submit := func(attempt string) (int, uint64, int) {
		t.Helper()
		pidFile := filepath.Join(dir, filepath.Base(attempt)+".pid")
		agent, start, job, err := leaveBehind(attempt, pidFile, func(job int) bool {
			return strings.Contains(readEnviron(job), "ORCHESTRATOR_ATTEMPT_DIR="+attempt) && isSleep(job)
		}, `printf '%s\n' "ORCHESTRATOR_ATTEMPT_DIR='$ORCHESTRATOR_ATTEMPT_DIR' sh -c 'echo \$\$ >$1.tmp && mv $1.tmp $1 && exec sleep 600'" >"$0"`, fifo, pidFile)
		if err != nil {
			t.Fatal(err)
		}
		return agent, start, job
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

// leaderless is a program whose main thread ends (pthread_exit) while another thread runs
// on: to its stat line the process is a zombie, its environment is unreadable at its own
// path, and a wait for it blocks until the other thread ends. It writes its PID to the
// file it is given.
const leaderless = `#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *run(void *a) { for (;;) pause(); return a; }
int main(int argc, char **argv) {
	pthread_t t;
	pthread_create(&t, 0, run, 0);
	FILE *f = fopen(argv[1], "w");
	fprintf(f, "%d\n", getpid());
	fclose(f);
	pthread_exit(0);
}
`

// TestStopEndsAProcessWhoseMainThreadEnded: the cheat, a process an agent leaves in a
// session of its own whose main thread then ends while another thread runs on, looks dead
// to its stat line. The end of the attempt ends it all the same; and the subreaper's
// reaper, to which it falls once its parent is gone, ends it and does not wait on it for
// ever. The honest twin, the same program left by another attempt, is left alone.
func TestStopEndsAProcessWhoseMainThreadEnded(t *testing.T) {
	bin := buildC(t, "leaderless", leaderless, "-pthread")
	// leave runs an agent for attempt that leaves the program in a session of its own,
	// and returns the agent, its start and the program's PID once its main thread ended.
	leave := func(attempt string) (int, uint64, int, error) {
		pidFile := filepath.Join(os.TempDir(), fmt.Sprintf("leaderless-%d-%s", os.Getpid(), filepath.Base(attempt)))
		defer os.Remove(pidFile)
		return leaveBehind(attempt, pidFile, func(pid int) bool {
			st, err := readStat(pid)
			return err == nil && st.state == 'Z' && liveThread(pid) != ""
		}, `setsid "$0" "$1" </dev/null >/dev/null 2>&1 &`, bin, pidFile)
	}
	inChild(t, func() error {
		if err := BecomeSubreaper(); err != nil {
			return err
		}
		agent, start, left, err := leave("/attempts/1")
		if err != nil {
			return err
		}
		_, _, other, err := leave("/attempts/2")
		if err != nil {
			return err
		}
		leftStart, otherStart := mustStart(left), mustStart(other)
		if !Alive(left, leftStart) {
			return fmt.Errorf("the program %d, whose other thread runs, is said not to be alive", left)
		}
		StopAdopted(agent, start, "ORCHESTRATOR_ATTEMPT_DIR", "/attempts/1", time.Second)
		if liveThread(left) != "" {
			return fmt.Errorf("the program %d the agent left still runs a thread", left)
		}
		if !Alive(other, otherStart) {
			return fmt.Errorf("another attempt's program %d was ended", other)
		}
		// The reaper: the other program is our child now, unknown and of no running
		// attempt; it is ended and reaped, not waited on for ever.
		reaped := make(chan []int, 1)
		go func() { reaped <- ReapOrphans(nil, "ORCHESTRATOR_ATTEMPT_DIR", nil) }()
		select {
		case ended := <-reaped:
			if !slices.Contains(ended, other) {
				return fmt.Errorf("the reaper ended %v, not the program %d", ended, other)
			}
		case <-time.After(scaled(10 * time.Second)):
			syscall.Kill(other, syscall.SIGKILL)
			return fmt.Errorf("the reaper waits on the program %d, whose main thread ended", other)
		}
		if _, err := readStat(other); err == nil {
			return fmt.Errorf("the program %d is still there after the reaper", other)
		}
		return nil
	})
}

// TestReapWaitsNoLongerThanItsBound: the reaper's wait for a child is bounded, so that a
// process that does not end (one the reaper did not kill, or asleep in the kernel) holds
// neither the loop nor the starts of the orchestrator's processes; a child that has ended
// is reaped at once.
func TestReapWaitsNoLongerThanItsBound(t *testing.T) {
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	pid := sleeper.Process.Pid
	defer sleeper.Process.Kill()
	done := make(chan bool, 1)
	go func() { done <- reap(pid, 50*time.Millisecond) }()
	select {
	case reaped := <-done:
		if reaped {
			t.Fatalf("a running child %d is said to be reaped", pid)
		}
	case <-time.After(scaled(10 * time.Second)):
		t.Fatalf("the wait for the running child %d did not end at its bound", pid)
	}
	if err := sleeper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !reap(pid, scaled(10*time.Second)) {
		t.Fatalf("the killed child %d was not reaped", pid)
	}
	if _, err := readStat(pid); err == nil {
		t.Fatalf("the child %d is still in the process table", pid)
	}
}

// leaveBehind runs script (sh -c, with args) as an agent of attempt, in a process group
// of its own, and waits for it; then it waits for the PID that what the agent left writes
// to pidFile, until ready says that process is as the test needs it. It returns the
// agent's PID and start, and the PID of what it left.
func leaveBehind(attempt, pidFile string, ready func(pid int) bool, script string, args ...string) (int, uint64, int, error) {
	agent := exec.Command("sh", append([]string{"-c", script}, args...)...)
	agent.Env = append(os.Environ(), "ORCHESTRATOR_ATTEMPT_DIR="+attempt)
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := agent.Start(); err != nil {
		return 0, 0, 0, err
	}
	start := mustStart(agent.Process.Pid)
	if err := agent.Wait(); err != nil {
		return 0, 0, 0, err
	}
	for deadline := time.Now().Add(scaled(5 * time.Second)); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && ready(pid) {
			return agent.Process.Pid, start, pid, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, 0, fmt.Errorf("what the agent of %s left never ran as the test needs (%s holds %q)", attempt, pidFile, b)
		}
	}
}
