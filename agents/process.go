package agents

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/internal/ownproc"
	"golang.org/x/sys/unix"
)

// MaxStdout is how much of an agent's output Stdout returns: the last MaxStdout bytes,
// where the final message is. All of it is in the log.
const MaxStdout = 1 << 20

// promptDrain is how long a Process waits, after the agent exits, for the copy of the prompt
// to its standard input to end.
var promptDrain = 500 * time.Millisecond

// StartOptions says how to start an agent.
type StartOptions struct {
	// Command is the program and its arguments. It is run directly, never through a shell;
	// a relative program path is taken relative to Dir.
	Command []string
	// Dir is the working folder; "" is the orchestrator's own.
	Dir string
	// Prompt is written to the agent's standard input, which is then closed.
	Prompt string
	// Env is the agent's whole environment. The caller passes os.Environ() plus
	// ORCHESTRATOR_TASK_ID, ORCHESTRATOR_MARKER_DIR, ORCHESTRATOR_ATTEMPT_DIR and
	// ORCHESTRATOR_ROOT. nil means the orchestrator's environment as it is. In a Sandbox,
	// the agent gets only what AgentEnv keeps of it.
	Env []string
	// LogPath is the file (agent.log) that the agent's standard output and standard error
	// are appended to; it is created if needed. "" means a temporary file, removed once the
	// agent has exited and its output has been read.
	LogPath string
	// Sandbox, if not nil, runs the agent inside it (see Sandbox.Wrap), in a session of
	// its own. Its Dir defaults to Dir.
	Sandbox *Sandbox
}

// A Process is a running agent, started by Start, in a process group of its own.
type Process struct {
	cmd     *exec.Cmd
	pid     int
	start   uint64
	logPath string
	logFrom int64    // the log's size when the agent started: its output follows
	temp    bool     // the log is a temporary file
	jail    *Sandbox // the agent's Sandbox, nil for none: the process started is bwrap
	out     string
	done    chan struct{}
	code    int
}

// Start starts an agent as o says, in a new process group whose ID is the agent's PID, so
// that Stop can end the agent and every process it started.
func Start(o StartOptions) (*Process, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, errors.New("start agent: empty command")
	}
	argv, env := o.Command, o.Env
	// The agent's process group is its own: Stop signals it.
	attr := &syscall.SysProcAttr{Setpgid: true}
	var jail *Sandbox
	if o.Sandbox != nil {
		sb := *o.Sandbox
		if sb.Dir == "" {
			sb.Dir = o.Dir
		}
		var err error
		if env, err = sb.prepare(env); err != nil {
			return nil, fmt.Errorf("start agent: %w", err)
		}
		// bwrap itself gets the agent's environment too: crash recovery finds it by its
		// ORCHESTRATOR_ATTEMPT_DIR (FindByEnv), and it needs no secret.
		argv = sb.Wrap(argv, env)
		// A session is a process group too, and off the terminal (see Sandbox.Wrap).
		attr = &syscall.SysProcAttr{Setsid: true}
		jail = &sb
	}
	var log *os.File
	var err error
	temp := o.LogPath == ""
	if temp {
		log, err = os.CreateTemp("", "agent-*.log")
	} else {
		log, err = os.OpenFile(o.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	if err != nil {
		if jail != nil {
			jail.finish()
		}
		return nil, fmt.Errorf("start agent: %w", err)
	}
	defer log.Close() // the child has its own copy of the descriptor
	from, _ := log.Seek(0, io.SeekEnd)
	p := &Process{logPath: log.Name(), logFrom: from, temp: temp, done: make(chan struct{}), code: -1}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.Dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(o.Prompt)
	// The agent writes straight into the log file, not through a pipe to us: if the
	// orchestrator dies, the agent goes on (a broken pipe would kill it) and a restarted
	// orchestrator can adopt it. Its final message is read back from the log.
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = attr
	// The prompt is copied to the agent's standard input by a goroutine; do not wait on it
	// for long if the agent never reads it.
	cmd.WaitDelay = promptDrain
	if err := cmd.Start(); err != nil {
		if temp {
			os.Remove(log.Name())
		}
		if jail != nil {
			jail.finish()
		}
		return nil, fmt.Errorf("start agent %s: %w", o.Command[0], err)
	}
	p.cmd = cmd
	p.jail = jail
	p.pid = cmd.Process.Pid
	// The agent is our unreaped child, so /proc/<pid> exists even if it has already exited.
	p.start, _ = procStartTime(p.pid)
	go p.wait()
	return p, nil
}

func (p *Process) wait() {
	p.cmd.Wait() // the exit status is in ProcessState; I/O errors are not the agent's doing
	p.code = p.cmd.ProcessState.ExitCode()
	if p.jail != nil {
		// bwrap exits with the agent, except on a signal sent to the group (Stop), which
		// ends bwrap at once and the agent maybe later: the agent has exited when the
		// group is gone (see Sandbox.Wrap).
		pollUntil(func() bool { return !groupAlive(p.pid) }, time.Time{}, nil)
		p.jail.finish()
	}
	p.out = readTail(p.logPath, p.logFrom, MaxStdout)
	if p.temp {
		os.Remove(p.logPath)
	}
	close(p.done)
}

// readTail returns the last max bytes of the file at path after offset from.
func readTail(path string, from int64, max int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil || end <= from {
		return ""
	}
	if end-from > int64(max) {
		from = end - int64(max)
	}
	b := make([]byte, end-from)
	n, _ := f.ReadAt(b, from)
	return string(b[:n])
}

// PID returns the agent's process ID, which is also its process group ID.
func (p *Process) PID() int { return p.pid }

// StartTime returns the agent's start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat). With the PID it identifies the process across a restart of the
// orchestrator, since PIDs are reused; see Alive. It is 0 where /proc is not available.
func (p *Process) StartTime() uint64 { return p.start }

// Done is closed when the agent has exited (processes it left behind may still run: Stop
// ends them).
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode returns the agent's exit code once Done is closed: -1 if a signal ended it, or
// if it is still running.
func (p *Process) ExitCode() int {
	if !p.exited() {
		return -1
	}
	return p.code
}

// Stdout returns the last MaxStdout bytes the agent wrote to its log (standard output and
// standard error), once Done is closed; before that, what it has written so far.
func (p *Process) Stdout() string {
	if !p.exited() {
		return readTail(p.logPath, p.logFrom, MaxStdout)
	}
	return p.out
}

// exited reports whether Done is closed.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the agent's whole process group: SIGTERM to the group, then SIGKILL after
// grace, and returns once no process of the group is left (grandchildren included, even if
// the agent itself had already exited) and the agent has been reaped. A process that left
// the group (setsid, setpgid) is out of its reach, except the agent itself.
func (p *Process) Stop(grace time.Duration) {
	signal := func(sig syscall.Signal) {
		unix.Kill(-p.pid, sig)
		if !p.exited() {
			// In case the agent moved itself to another group.
			p.cmd.Process.Signal(sig)
		}
	}
	gone := func() bool {
		if !p.exited() {
			return false
		}
		// Once the agent is reaped, its PID can be reused, but only after the last
		// process of its group is gone: a process with that PID and another start time
		// means the group is gone, and the group with that ID now is someone else's.
		if st, err := readStat(p.pid); err == nil && st.start != p.start {
			return true
		}
		return !groupAlive(p.pid)
	}
	if gone() {
		return
	}
	terminate(signal, gone, grace)
	<-p.done
}

// terminate sends SIGTERM, waits up to grace for gone, then sends SIGKILL until gone.
func terminate(signal func(syscall.Signal), gone func() bool, grace time.Duration) {
	signal(unix.SIGTERM)
	if !pollUntil(gone, time.Now().Add(grace), nil) {
		pollUntil(gone, time.Time{}, func() { signal(unix.SIGKILL) })
	}
}

// pollUntil calls cond, with a short growing pause between calls, until it is true (then it
// returns true) or deadline passes (false). A zero deadline means no deadline. each, if not
// nil, runs after every call that found cond false: signals are sent only to a group that
// was still there a moment ago.
func pollUntil(cond func() bool, deadline time.Time, each func()) bool {
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return false
		}
		if each != nil {
			each()
		}
		time.Sleep(pause)
		pause = min(pause*2, 20*time.Millisecond)
	}
}

// StopGroup ends the process group pgid as Stop does (SIGTERM, SIGKILL after grace, wait
// until no process of it is left), for a group that is not our child's: an agent of an
// earlier orchestrator run found by crash recovery. The caller must first make sure, with
// Alive and the recorded start time, that pgid is still that agent's: PIDs are reused. It
// refuses pgid 0 and 1 and our own group, and gives up on a group it may not signal.
func StopGroup(pgid int, grace time.Duration) {
	if pgid <= 1 || pgid == unix.Getpgrp() {
		return
	}
	permitted := true
	signal := func(sig syscall.Signal) {
		if err := unix.Kill(-pgid, sig); err == unix.EPERM {
			permitted = false
		}
	}
	gone := func() bool { return !permitted || !groupAlive(pgid) }
	terminate(signal, gone, grace)
}

// groupAlive reports whether process group pgid has a member that is not a zombie. kill(2)
// with signal 0 says whether the group exists, but a zombie counts as a member until its
// parent reaps it, and an orphan's new parent (init in a container) may be slow to.
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); err == unix.ESRCH {
		return false
	}
	alive := false
	if err := scanProcs(func(pid int, st procStat) {
		alive = alive || st.pgrp == pgid && running(pid, st)
	}); err != nil {
		return true // no /proc: trust kill
	}
	return alive
}

// Alive reports whether process pid is running and is the process that started at
// startTime (see Process.StartTime), not a later one that got the same PID. A zombie is not
// alive. Where /proc is not mounted, the start time cannot be checked and kill(2) decides.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := readStat(pid)
	if err == nil {
		return running(pid, st) && st.start == startTime
	}
	if _, procErr := os.Stat("/proc/self/stat"); procErr == nil {
		return false // /proc works: the process is gone
	}
	err = unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}

// WaitGone returns a channel that is closed once the process pid that started at startTime
// is no longer alive (see Alive), checking every poll (100 ms if poll <= 0). It is for an
// adopted agent of an earlier run, which is not our child and so cannot be waited for.
func WaitGone(pid int, startTime uint64, poll time.Duration) <-chan struct{} {
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTicker(poll)
		defer t.Stop()
		for Alive(pid, startTime) {
			<-t.C
		}
	}()
	return ch
}

type procStat struct {
	state byte
	ppid  int
	pgrp  int
	start uint64
}

// running reports whether process pid, whose stat line is st, still runs: it is not a
// zombie, or it is one only because its main thread ended (pthread_exit) while another of
// its threads runs on. Such a process is a zombie to its stat line, its environment
// unreadable at its own path, and its parent's wait for it blocks until its last thread
// ends: taken for dead, it would outlive the agent that left it, and the reaper's wait
// for it would hold the loop.
func running(pid int, st procStat) bool {
	switch st.state {
	case 'X':
		return false
	case 'Z':
		return liveThread(pid) != ""
	}
	return true
}

// liveThread returns the path under /proc of a thread of process pid other than its main
// one that is not a zombie, or "".
func liveThread(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, t := range tasks {
		if t.Name() == strconv.Itoa(pid) {
			continue
		}
		if st, err := readStatAt(dir + "/" + t.Name() + "/stat"); err == nil && st.state != 'Z' && st.state != 'X' {
			return dir + "/" + t.Name()
		}
	}
	return ""
}

// environ returns the environment of process pid: read through a thread that runs when
// its main thread has ended (running), whose own path then answers ESRCH.
func environ(pid int) ([]byte, error) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err == nil {
		return env, nil
	}
	if t := liveThread(pid); t != "" {
		return os.ReadFile(t + "/environ")
	}
	return env, err
}

// readStat reads the fields we need of /proc/<pid>/stat: state (field 3), parent (field 4),
// process group (field 5) and start time (field 22, clock ticks since boot).
func readStat(pid int) (procStat, error) {
	return readStatAt("/proc/" + strconv.Itoa(pid) + "/stat")
}

// readStatAt is readStat of the stat file at path: a process's, or one of its threads'
// (/proc/<pid>/task/<tid>/stat).
func readStatAt(path string) (procStat, error) {
	fd, st, err := openStat(path)
	if err == nil {
		unix.Close(fd)
	}
	return st, err
}

func procStartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}

// FindByEnv finds a live agent that was started with name=value in its environment (the
// orchestrator gives every attempt its own ORCHESTRATOR_ATTEMPT_DIR) and leads its own
// process group. It closes the gap between starting an agent and recording its PID: a
// restarted orchestrator finds such an agent here instead of starting a second one.
//
// Its descendants carry the variable too, and one may lead a group of its own (setsid, or
// a process in the agent's sandbox): the agent is the one that started first, and within
// one clock tick the one whose parent does not carry the variable. For an agent in a
// Sandbox, that is bwrap, the process that Start started.
func FindByEnv(name, value string) (pid int, startTime uint64, ok bool) {
	procs := withEnv(name, value)
	carries := make(map[int]bool, len(procs))
	for _, p := range procs {
		carries[p.pid] = true
	}
	var best *envProc
	for i, p := range procs {
		if p.stat.pgrp != p.pid {
			continue
		}
		if best == nil || p.stat.start < best.stat.start ||
			p.stat.start == best.stat.start && carries[best.stat.ppid] && !carries[p.stat.ppid] {
			best = &procs[i]
		}
	}
	if best == nil {
		return 0, 0, false
	}
	return best.pid, best.stat.start, true
}

type envProc struct {
	pid  int
	stat procStat
}

// withEnv lists the live processes that carry name=value in their environment.
func withEnv(name, value string) []envProc { return withEnvSince(name, value, 0) }

// withEnvSince is withEnv for the processes that started no earlier than since (clock
// ticks since boot, as Process.StartTime): the environment of one that started before is
// not read. Nearly every process of a machine started before an attempt's agent, so that
// an attempt's end reads a few environments, not one for each process.
func withEnvSince(name, value string, since uint64) []envProc {
	// NUL on both sides, so that only a whole variable matches (the first one has no NUL
	// before it).
	want := []byte("\x00" + name + "=" + value + "\x00")
	var out []envProc
	_ = scanProcs(func(p int, st procStat) {
		if st.start < since || !running(p, st) {
			return
		}
		env, err := environ(p)
		if err != nil || !(bytes.HasPrefix(env, want[1:]) || bytes.Contains(env, want)) {
			return
		}
		out = append(out, envProc{p, st})
	})
	return out
}

// StopAdopted ends an agent of an earlier orchestrator run, found by crash recovery, and
// what it left behind, without signalling any process it cannot prove to be the agent's.
// The agent's group is signalled only while its leader is still the process that started
// at startTime (PIDs are reused: a later process with the same PID, and its group, are
// someone else's). Then each process that still carries name=value in its environment (the
// attempt's own ORCHESTRATOR_ATTEMPT_DIR, which its descendants inherit, even those that
// left its group) and started no earlier than the agent is ended one by one.
func StopAdopted(pid int, startTime uint64, name, value string, grace time.Duration) {
	if Alive(pid, startTime) {
		StopGroup(pid, grace)
	}
	left := func() []envProc {
		var out []envProc
		for _, p := range withEnvSince(name, value, startTime) {
			if p.pid != os.Getpid() {
				out = append(out, p)
			}
		}
		return out
	}
	signal := func(sig syscall.Signal) {
		for _, p := range left() {
			// Checked again just before the signal: still the same process.
			if st, err := readStat(p.pid); err == nil && st.start == p.stat.start {
				unix.Kill(p.pid, sig)
			}
		}
	}
	gone := func() bool { return len(left()) == 0 }
	if gone() {
		return
	}
	terminate(signal, gone, grace)
}

// BecomeSubreaper makes the calling process a child subreaper (Linux
// PR_SET_CHILD_SUBREAPER): a process that an agent started and that outlives its parent,
// or leaves its group (setsid, a double fork), becomes our child instead of init's, so that
// ReapOrphans can find it (SPEC §15.2 item 3).
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// ReapOrphans ends and reaps every child of ours that is not in known: with
// BecomeSubreaper, such a child is a descendant of an agent whose parent died, since every
// process the orchestrator starts itself is an agent (in known), a process that the loop
// waits for before it goes on, or one that runs beside the loop and is kept in ownproc's
// set from its start to its reaping (left alone, no start of one in between). One that
// carries name=value in its environment for one of keep (a running attempt's folder) is
// that attempt's, and is left to it. It returns the PIDs it ended. Call it from the loop,
// which starts no other process meanwhile.
func ReapOrphans(known map[int]bool, name string, keep []string) []int {
	var ended []int
	ownproc.Scan(func(own func(int) bool) {
		ended = reapOrphans(known, own, name, keep)
	})
	return ended
}

func reapOrphans(known map[int]bool, own func(int) bool, name string, keep []string) []int {
	self := os.Getpid()
	var ended []int
	for _, pid := range children(self) {
		if known[pid] || own(pid) || hasEnv(pid, name, keep) {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != self {
			continue
		}
		if running(pid, st) {
			unix.Kill(pid, unix.SIGKILL)
			ended = append(ended, pid)
		}
		// Ours to reap: it is our child. Wait for this PID only, never for any child, so
		// that no exec.Cmd loses its own child's status.
		reap(pid, reapWait)
	}
	return ended
}

// reapWait is how long the reaper waits for one process it ended.
var reapWait = 2 * time.Second

// reap waits for our child pid to end and reaps it, for at most d; it reports whether it
// did. A process that its kill does not end at once (asleep in the kernel, or one the
// reaper took for dead and did not kill) is left to a later pass rather than waited on for
// ever: the reaper runs on the loop, and every start of a process of ours waits for it.
func reap(pid int, d time.Duration) bool {
	var ws unix.WaitStatus
	return pollUntil(func() bool {
		wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		return wpid == pid || (err != nil && err != unix.EINTR)
	}, time.Now().Add(d), nil)
}

// hasEnv reports whether process pid has name=v in its environment for a v in values.
func hasEnv(pid int, name string, values []string) bool {
	if len(values) == 0 {
		return false
	}
	env, err := environ(pid)
	if err != nil {
		return false
	}
	for _, v := range values {
		want := []byte(name + "=" + v + "\x00")
		if bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)) {
			return true
		}
	}
	return false
}

// children lists the processes whose parent is ppid: from the kernel's lists of each of its
// threads' children where it keeps them (/proc/<pid>/task/<tid>/children), else from the
// parent of every process.
func children(ppid int) []int {
	if pids, ok := taskChildren(ppid); ok {
		return pids
	}
	return scanChildren(ppid)
}

// scanChildren lists the processes whose parent is ppid by reading every process's parent.
func scanChildren(ppid int) []int {
	var out []int
	_ = scanProcs(func(pid int, st procStat) {
		if st.ppid == ppid {
			out = append(out, pid)
		}
	})
	return out
}

// taskChildren lists the children of process ppid as the kernel lists them for each of
// its threads (a child's parent is the thread that started it). ok is false where the
// kernel keeps no such list (built without CONFIG_PROC_CHILDREN).
func taskChildren(ppid int) (pids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(ppid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, terr := os.Stat(dir + "/" + t.Name()); terr == nil {
				return nil, false // the thread is there, its list is not: no lists
			}
			continue // the thread ended meanwhile
		}
		if err != nil {
			return nil, false
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}
