package watch_test

// End-to-end tests of `orchestrator watch` on real projects (issue 11): a Go module of
// three packages and a pytest project, both with passing tests, run through the loop with a
// slow, chatty scripted agent (internal/testagent, modes slow and plan), auto-retry on, and
// the project's real test commands. Each test targets one behaviour of SPEC §7.1–§8: a
// retry that survives past the grace period, a repeated failure that halts, a final message
// read after the marker, a queue that does not parse for a moment, SIGINT and kill -9 at an
// agent, a gate and a baseline refresh, --once with a hand edit, and the TDD ordering rules.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/rogpeppe/go-internal/txtar"
)

// The projects' test commands, as a person would write them in the task queue.
const (
	goTest = "go test ./..."
	pyTest = "/usr/bin/python3 -m pytest -q"
)

// What the agents write: a failing test of a discount (RED) and its implementation (GREEN),
// in Go and in Python. The tests name Test ID UNIT-001.
var (
	goRedFiles = map[string]string{"cart/discount_test.go": `package cart

import (
	"testing"

	"example.com/shop/money"
)

func TestDiscount_UNIT_001(t *testing.T) {
	if got := Discount(money.Cents(1000), 10); got != 900 {
		t.Errorf("Discount(10.00, 10%%) = %v, want 9.00", got)
	}
}
`}
	goGreenFiles = map[string]string{"cart/discount.go": `package cart

import "example.com/shop/money"

// Discount returns c less p percent of it.
func Discount(c money.Cents, p int64) money.Cents { return c - c.Percent(p) }
`}
	pyRedFiles = map[string]string{"tests/test_discount.py": `from shop.discount import discount


def test_unit_001_discount():
    assert discount(1000, 10) == 900
`}
	pyGreenFiles = map[string]string{"shop/discount.py": `from shop.pricing import percent


def discount(cents, p):
    return cents - percent(cents, p)
`}
)

// A realTask is one task of a real project's queue.
type realTask struct {
	id, category, mode, agent, testCommand, deps, testIDs string
	// exempt marks a BUILD task `| TDD | exempt |`: it may run without a TEST task before
	// it (SPEC §6.1 item 3), for tests about something else than TDD ordering.
	exempt bool
}

// A realRepo is a copy of a fixture project, committed to git, with a task queue and agents.
type realRepo struct {
	*repo
	starts string // TESTAGENT_STARTLOG: one line per agent start
}

// newRealRepo copies the fixture testdata/real/<fixture>.txtar into a temporary folder,
// commits it to git on branch main, and writes a task queue (with the project's test
// command in its Project Commands table) and a config naming the agents. Every agent is
// the test agent with the given environment. Auto-retry is on. config is added to the
// config file as is (e.g. "grace: 1s\n"); without it the defaults hold.
func newRealRepo(t testing.TB, fixture, projectTest string, tasks []realTask, agents map[string][]string, config string) *realRepo {
	t.Helper()
	r := &realRepo{
		repo:   &repo{t: t, root: t.TempDir()},
		starts: filepath.Join(t.TempDir(), "starts.log"),
	}
	r.tag = strings.NewReplacer("/", "-", " ", "-").Replace(fmt.Sprintf("watch-real-%d-%s", os.Getpid(), t.Name()))
	ar, err := txtar.ParseFile(filepath.Join("testdata", "real", fixture+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		r.write(f.Name, string(f.Data))
	}
	git(t, r.root, "init", "-q", "-b", "main")
	// The orchestrator's state is the person's, never part of the project's history.
	r.write(".git/info/exclude", ".orchestrator/\n")
	git(t, r.root, "add", "-A")
	git(t, r.root, "commit", "-q", "-m", "fixture")

	var q strings.Builder
	q.WriteString("# Task Queue\n\n## Project Commands\n\n| Command | Value |\n|---------|-------|\n")
	fmt.Fprintf(&q, "| Build | - |\n| Test | %s |\n\n## Tasks\n\n", projectTest)
	for _, tk := range tasks {
		fmt.Fprintf(&q, "### %s: task %s\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | %s |\n", tk.id, tk.id, tk.category)
		if tk.mode != "" {
			fmt.Fprintf(&q, "| Mode | %s |\n", tk.mode)
		}
		fmt.Fprintf(&q, "| Agent | %s |\n", tk.agent)
		if tk.testIDs != "" {
			fmt.Fprintf(&q, "| Test IDs | %s |\n", tk.testIDs)
		}
		if tk.testCommand != "" {
			fmt.Fprintf(&q, "| Test Command | %s |\n", tk.testCommand)
		}
		if tk.exempt {
			q.WriteString("| TDD | exempt |\n")
		}
		fmt.Fprintf(&q, "| Depends On | %s |\n\n**Objective:** %s of the discount feature.\n\n", orDash(tk.deps), tk.id)
	}
	r.write(".orchestrator/task_queue.md", q.String())

	var c strings.Builder
	c.WriteString("agent: " + tasks[0].agent + "\n" + sandboxOff(config) + config + "agents:\n")
	names := make([]string, 0, len(agents))
	for name := range agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		argv := append([]string{"env", "TESTAGENT_TAG=" + r.tag, "TESTAGENT_STARTLOG=" + r.starts}, agents[name]...)
		argv = append(argv, agentBin)
		fmt.Fprintf(&c, "  %s: {command: [%s]}\n", name, quoteAll(argv))
	}
	r.write(".orchestrator/config.yaml", c.String())
	return r
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// files writes files into a new folder outside the repository and returns it, for an
// agent's TESTAGENT_FROM.
func files(t testing.TB, m map[string]string) string {
	t.Helper()
	return filesIn(t, t.TempDir(), m)
}

// filesIn writes the files m (relative path → content) under dir, and returns dir.
func filesIn(t testing.TB, dir string, m map[string]string) string {
	t.Helper()
	for rel, text := range m {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// needPytest skips the test when pytest is missing, and fails it under CI=true, where
// every test must run.
func needPytest(t *testing.T) {
	t.Helper()
	if out, err := pytestHere(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pytest is required under CI=true: %v\n%s", err, out)
		}
		t.Skipf("pytest not available: %v", err)
	}
}

// pytestHere asks Debian's Python once whether it has pytest: a Python start that imports
// pytest costs a third of a second of CPU, and dozens of tests ask.
var pytestHere = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("/usr/bin/python3", "-m", "pytest", "--version").CombinedOutput()
})

// field returns a field of a task as the queue holds it now ("" when absent).
func (r *realRepo) field(id, name string) string {
	r.t.Helper()
	d, err := queue.Load(filepath.Join(r.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		r.t.Fatalf("queue does not parse: %v", err)
	}
	rec, ok := d.Record(id)
	if !ok {
		r.t.Fatalf("no task %s", id)
	}
	return d.Get(rec, name)
}

// reasonFields returns the task's fields whose name holds "reason" (Blocked-Reason,
// Halt-Reason, …), as "Name: value" lines.
func (r *realRepo) reasonFields(id string) string {
	r.t.Helper()
	d, err := queue.Load(filepath.Join(r.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		r.t.Fatalf("queue does not parse: %v", err)
	}
	rec, ok := d.Record(id)
	if !ok {
		r.t.Fatalf("no task %s", id)
	}
	var out []string
	for _, f := range d.Fields(rec) {
		if strings.Contains(strings.ToLower(d.Name(f)), "reason") {
			out = append(out, d.Name(f)+": "+d.Value(f))
		}
	}
	return strings.Join(out, "\n")
}

// attemptDirs returns the numbers of a task's attempt folders, sorted.
func (r *realRepo) attemptDirs(id string) []int {
	entries, _ := os.ReadDir(filepath.Join(r.root, ".orchestrator", "runs", id))
	var ns []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	return ns
}

// nothingOwnReaped fails when the run's output says it ended processes an agent left
// behind, or an attempt's patch could not be made: in a run whose agents leave nothing,
// what the reaper ended was the orchestrator's own (a git that runs beside the loop).
func (r *realRepo) nothingOwnReaped(t testing.TB, out string, ids ...string) {
	t.Helper()
	if strings.Contains(out, "an agent left behind") {
		t.Errorf("the run ended processes of its own as an agent's orphans:\n%s", out)
	}
	for _, id := range ids {
		for _, n := range r.attemptDirs(id) {
			b, _ := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", id, strconv.Itoa(n), "changes.diff"))
			if bytes.Contains(b, []byte("could not be made")) {
				t.Errorf("%s attempt %d: %s", id, n, b)
			}
		}
	}
}

// result reads attempt n's result.json ({} when it is missing or does not parse).
func (r *realRepo) result(id string, n int) map[string]any {
	res := map[string]any{}
	b, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", id, strconv.Itoa(n), "result.json"))
	if err == nil {
		_ = json.Unmarshal(b, &res)
	}
	return res
}

// stagesOf lists the stages of a record's "stages", in order; a stage that took no time, or
// a negative one, is named with a "!".
func stagesOf(res map[string]any) string {
	var names []string
	list, _ := res["stages"].([]any)
	for _, e := range list {
		st, _ := e.(map[string]any)
		name, _ := st["stage"].(string)
		if ms, _ := st["ms"].(float64); ms <= 0 {
			name += "!"
		}
		names = append(names, name)
	}
	return strings.Join(names, " ")
}

// describeAttempts says what each attempt of a task ended as, for failure messages.
func (r *realRepo) describeAttempts(id string) string {
	var b strings.Builder
	for _, n := range r.attemptDirs(id) {
		res := r.result(id, n)
		fmt.Fprintf(&b, "\n  attempt %d: %v: %v", n, res["outcome"], res["reason"])
	}
	return b.String()
}

// startsOf returns, by attempt number, how many agents the start log saw for a task.
func (r *realRepo) startsOf(id string) map[int]int {
	out := map[int]int{}
	b, _ := os.ReadFile(r.starts)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == id {
			n, _ := strconv.Atoi(f[1])
			out[n]++
		}
	}
	return out
}

// oneAgentPerAttempt checks that a task's attempt folders are numbered 1, 2, … with no gap,
// and that each had exactly one agent (none for an attempt recorded as not started).
func (r *realRepo) oneAgentPerAttempt(id string) {
	r.t.Helper()
	dirs := r.attemptDirs(id)
	for i, n := range dirs {
		if n != i+1 {
			r.t.Errorf("%s: attempt folders %v, want 1..%d with no gap", id, dirs, len(dirs))
			break
		}
	}
	starts := r.startsOf(id)
	for n, k := range starts {
		if !slices.Contains(dirs, n) {
			r.t.Errorf("%s: an agent started for attempt %d, which has no folder (folders %v)", id, n, dirs)
		}
		if k != 1 {
			r.t.Errorf("%s: attempt %d had %d agents, want 1", id, n, k)
		}
	}
	for _, n := range dirs {
		if starts[n] == 0 && r.result(id, n)["outcome"] != "not_started" {
			r.t.Errorf("%s: attempt %d had no agent but is not recorded as not started: %v", id, n, r.result(id, n))
		}
	}
}

// noRetryUsed checks that a task used no retry: no Retry-Count above 0 and no issue.
func (r *realRepo) noRetryUsed(id string) {
	r.t.Helper()
	if rc := r.field(id, "Retry-Count"); !queue.IsEmpty(rc) && rc != "0" {
		r.t.Errorf("%s: Retry-Count %s, want it unchanged (no retry used)", id, rc)
	}
	if iq, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "issue_queue.md")); err == nil && bytes.Contains(iq, []byte("| Source Task | "+id+" |")) {
		r.t.Errorf("%s: an issue was recorded, want none:\n%s", id, iq)
	}
}

// A watchRun is an orchestrator started in the background.
type watchRun struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // valid once done is closed
}

// syncBuffer is a bytes.Buffer that the command's output copier and the test may use at
// once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start starts the orchestrator with args.
func (r *realRepo) start(args ...string) *watchRun {
	r.t.Helper()
	w := &watchRun{cmd: r.cmd(args...), out: &syncBuffer{}, done: make(chan struct{})}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	r.t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			w.cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// exited reports whether the orchestrator has ended.
func (w *watchRun) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// wait waits up to limit for the orchestrator to end and returns its exit code (-1 when a
// signal ended it). It fails the test if it runs longer.
func (w *watchRun) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	limit = scaled(limit)
	select {
	case <-w.done:
	case <-time.After(limit):
		w.cmd.Process.Kill()
		<-w.done
		t.Fatalf("%v did not end within %v\n%s", w.cmd.Args, limit, w.out.String())
	}
	if ee, ok := w.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	return 0
}

// kill9 ends the orchestrator with SIGKILL, as a crash or an OOM kill would: nothing of it
// runs after this, and what it started goes on.
func (w *watchRun) kill9(t *testing.T) {
	t.Helper()
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// waitLog waits until the agent's log of an attempt holds text.
func (r *realRepo) waitLog(id string, n int, text string) {
	r.t.Helper()
	p := filepath.Join(r.root, ".orchestrator", "runs", id, strconv.Itoa(n), "agent.log")
	r.waitFor(fmt.Sprintf("%s attempt %d's agent.log never said %q", id, n, text), func() bool {
		b, _ := os.ReadFile(p)
		return bytes.Contains(b, []byte(text))
	})
}

// waitGone waits until no agent of task id is alive.
func (r *realRepo) waitGone(id string) {
	r.t.Helper()
	r.waitFor(id+"'s agent never ended", func() bool { return len(r.agentsAlive()[id]) == 0 })
}

// sampleTwins watches, until the returned stop is called, for a task with two live agents;
// stop returns what it saw.
func (r *realRepo) sampleTwins() (stop func() []string) {
	var twice []string
	quit, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		for {
			select {
			case <-quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for id, pids := range r.agentsAlive() {
				if len(pids) > 1 {
					twice = append(twice, fmt.Sprintf("%s: %v", id, pids))
				}
			}
		}
	}()
	return func() []string {
		close(quit)
		<-over
		return twice
	}
}

// A decoy is a process that is not an agent but holds a PID an attempt recorded, as a
// process that got the PID of a dead agent would. Nothing may signal it.
type decoy struct {
	cmd  *exec.Cmd
	gone chan struct{}
}

func startDecoy(t *testing.T) *decoy {
	t.Helper()
	c := exec.Command("sleep", "120")
	// A group of its own, as an agent's: a signal to the recorded PID's group reaches it.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	d := &decoy{cmd: c, gone: make(chan struct{})}
	go func() {
		c.Wait()
		close(d.gone)
	}()
	t.Cleanup(func() {
		c.Process.Kill()
		<-d.gone
	})
	return d
}

// alive fails the test if the decoy was ended by a signal.
func (d *decoy) alive(t *testing.T) {
	t.Helper()
	select {
	case <-d.gone:
		t.Errorf("the decoy (pid %d, not an agent, holding a recorded agent PID) was signalled: %v", d.cmd.Process.Pid, d.cmd.ProcessState)
	default:
	}
}

// pointAt rewrites attempt n's result.json so that its recorded PID is the decoy's; its
// recorded start time stays the agent's, which the decoy's is not: PID reuse.
func (r *realRepo) pointAt(id string, n int, d *decoy) {
	r.t.Helper()
	p := filepath.Join(r.root, ".orchestrator", "runs", id, strconv.Itoa(n), "result.json")
	b, err := os.ReadFile(p)
	if err != nil {
		r.t.Fatal(err)
	}
	res := map[string]any{}
	if err := json.Unmarshal(b, &res); err != nil {
		r.t.Fatalf("%s: %v", p, err)
	}
	if res["pid"] == nil || res["start_time"] == nil {
		r.t.Logf("result.json records no pid or start_time: %s", b)
	}
	res["pid"] = d.cmd.Process.Pid
	b, _ = json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// killAgents ends a task's agent and every process of its group with SIGKILL.
func (r *realRepo) killAgents(id string) {
	r.t.Helper()
	for _, pid := range r.agentsAlive()[id] {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.waitGone(id)
}

// Agents' environments.

func slowAgent(role string, work, after time.Duration, from string) []string {
	env := []string{"TESTAGENT_MODE=slow", "TESTAGENT_ROLE=" + role, "TESTAGENT_WORK=" + work.String(), "TESTAGENT_AFTER=" + after.String()}
	if from != "" {
		env = append(env, "TESTAGENT_FROM="+from)
	}
	return env
}

// redGreenVerify is the queue of one TDD cycle: a test writer, an implementer that
// depends on it, and a verifier that depends on the implementer.
func redGreenVerify() []realTask {
	return []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
		{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
		{id: "TASK-V01", category: "test_verification", agent: "verifier", deps: "TASK-001"},
	}
}

// checkCycle checks the end of an honest TDD cycle: every task completed at its first
// attempt, each with one agent, and the agents' files in the person's tree.
func (r *realRepo) checkCycle(code int, out string, want ...string) {
	r.t.Helper()
	if code != 0 {
		r.t.Errorf("exit %d, want 0\n%s", code, out)
	}
	for _, id := range []string{"TASK-T01", "TASK-001", "TASK-V01"} {
		if got := r.statuses()[id]; got != "completed" {
			r.t.Errorf("%s is %q, want completed%s\n%s", id, got, r.describeAttempts(id), out)
		}
		if dirs := r.attemptDirs(id); len(dirs) != 1 {
			r.t.Errorf("%s: attempts %v, want one%s", id, dirs, r.describeAttempts(id))
		}
		r.oneAgentPerAttempt(id)
	}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(r.root, f)); err != nil {
			r.t.Errorf("the verified work is not in the person's tree: %v", err)
		}
	}
	r.noneLeft()
}

// TestRealGoRedGreenVerify runs an honest TDD cycle on the Go module: the test writer adds
// a failing test (the implementation is undefined), the implementer makes it pass without
// breaking the module's other tests, the verifier runs them. The agents are slow and
// chatty and write their marker before their final message.
func TestRealGoRedGreenVerify(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		name := "no sandbox"
		if sandboxed {
			name = "sandbox"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			red, green := files(t, goRedFiles), files(t, goGreenFiles)
			r := newRealRepo(t, "gomod", goTest, redGreenVerify(), map[string][]string{
				"writer":   slowAgent("test-writer", time.Second, 300*time.Millisecond, red),
				"builder":  slowAgent("implementer", time.Second, 300*time.Millisecond, green),
				"verifier": slowAgent("verifier", 500*time.Millisecond, 300*time.Millisecond, ""),
			}, "")
			if sandboxed {
				// The agents' files and the start log are the test's, in /tmp.
				r.sandboxed(filepath.Dir(r.starts), red, green)
			}
			code, out := r.run("watch", "--once")
			r.checkCycle(code, out, "cart/discount_test.go", "cart/discount.go")
		})
	}
}

// TestRealPytestRedGreenVerify is TestRealGoRedGreenVerify on the pytest project: the RED
// test fails to import the module the implementer then writes.
func TestRealPytestRedGreenVerify(t *testing.T) {
	t.Parallel()
	needPytest(t)
	r := newRealRepo(t, "pyproj", pyTest, redGreenVerify(), map[string][]string{
		"writer":   slowAgent("test-writer", time.Second, 300*time.Millisecond, files(t, pyRedFiles)),
		"builder":  slowAgent("implementer", time.Second, 300*time.Millisecond, files(t, pyGreenFiles)),
		"verifier": slowAgent("verifier", 500*time.Millisecond, 300*time.Millisecond, ""),
	}, "")
	code, out := r.run("watch", "--once")
	r.checkCycle(code, out, "tests/test_discount.py", "shop/discount.py")
}

// TestRealRetryAfterRejectedClaim: the implementer lies on its first attempt (claims done,
// writes nothing); the gate rejects the claim and the task is retried. The retry is honest
// and works longer than the grace period before its marker: it must not be taken for done
// (and killed) because the first attempt's marker was moved into its attempt folder.
func TestRealRetryAfterRejectedClaim(t *testing.T) {
	t.Parallel()
	// The test writer's command is its package's: this test is about the retry, not RED.
	tasks := redGreenVerify()[:2]
	tasks[0].testCommand = "go test ./cart"
	r := newRealRepo(t, "gomod", goTest, tasks, map[string][]string{
		"writer": slowAgent("test-writer", 200*time.Millisecond, 0, files(t, goRedFiles)),
		"builder": {"TESTAGENT_MODE=plan", "TESTAGENT_FROM=" + files(t, goGreenFiles),
			"TESTAGENT_PLAN=1=lie; 2=slow TESTAGENT_WORK=2500ms TESTAGENT_AFTER=200ms"},
	}, "grace: 1s\n")
	code, out := r.run("watch", "--once")
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out)
	}
	if got := r.statuses()["TASK-001"]; got != "completed" {
		t.Errorf("TASK-001 is %q, want completed%s", got, r.describeAttempts("TASK-001"))
	}
	if dirs := r.attemptDirs("TASK-001"); len(dirs) != 2 {
		t.Errorf("TASK-001: attempts %v, want 2 (the lie and the honest retry)%s", dirs, r.describeAttempts("TASK-001"))
	}
	if res := r.result("TASK-001", 2); res["outcome"] != "completed" {
		t.Errorf("the honest retry (attempt 2) ended %v: %v; want completed", res["outcome"], res["reason"])
	}
	// Each record says where its time went after the agent's run, stage by stage.
	for n, want := range map[int]string{1: "end_run candidate pre_checks gate", 2: "end_run candidate pre_checks gate landing"} {
		if got := stagesOf(r.result("TASK-001", n)); got != want {
			t.Errorf("attempt %d's stages: %q, want %q", n, got, want)
		}
	}
	if rc := r.field("TASK-001", "Retry-Count"); rc != "1" {
		t.Errorf("Retry-Count %q, want 1", rc)
	}
	r.oneAgentPerAttempt("TASK-001")
	r.noneLeft()
}

// TestRealNoMarkerHaltsOnThird: an agent that exits with no marker and no result block,
// every time. The failures are identical, so the third halts the task (SPEC §8.1, §8.4).
func TestRealNoMarkerHaltsOnThird(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "quiet", testCommand: "go test ./money", exempt: true},
	}, map[string][]string{"quiet": {"TESTAGENT_MODE=nomarker"}}, "")
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Errorf("exit %d, want 3 (halted)\n%s", code, out)
	}
	if got := r.statuses()["TASK-001"]; got != "halted" {
		t.Errorf("TASK-001 is %q, want halted", got)
	}
	if dirs := r.attemptDirs("TASK-001"); len(dirs) != 3 {
		t.Errorf("TASK-001: %d attempts, want 3: the same no_marker three times halts on the third%s", len(dirs), r.describeAttempts("TASK-001"))
	}
	if hr := r.field("TASK-001", "Halt-Reason"); hr != "Repeated identical failure (3x)" {
		t.Errorf("Halt-Reason %q, want Repeated identical failure (3x); Previous-Signatures %s", hr, r.field("TASK-001", "Previous-Signatures"))
	}
	r.noneLeft()
}

// TestRealGraceReadsLateResult: an agent writes its marker, pauses a few seconds, and then
// prints its final message, a result block saying it is stuck on an unclear requirement
// (state: issue). With the default grace period, that block must be read: the attempt is
// an issue (a re-prompt with the question recorded), not a failure that uses a retry.
func TestRealGraceReadsLateResult(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "asker", testCommand: goTest, exempt: true},
	}, map[string][]string{"asker": {"TESTAGENT_MODE=plan", "TESTAGENT_FROM=" + files(t, goGreenFiles),
		"TESTAGENT_MESSAGE=Should a discount round half up or down?",
		"TESTAGENT_PLAN=1=slow TESTAGENT_STATE=issue TESTAGENT_MARKER=failed TESTAGENT_AFTER=3s; 2=slow"}}, "")
	code, out := r.run("watch", "--once")
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out)
	}
	res := r.result("TASK-001", 1)
	if res["outcome"] != "issue" || !strings.Contains(fmt.Sprint(res["message"]), "round half up") {
		t.Errorf("attempt 1 ended %v (%v), message %v; want issue with the agent's question (its late result block read)",
			res["outcome"], res["reason"], res["message"])
	}
	r.noRetryUsed("TASK-001")
	if got := r.statuses()["TASK-001"]; got != "completed" {
		t.Errorf("TASK-001 is %q, want completed after the re-prompt%s", got, r.describeAttempts("TASK-001"))
	}
	r.noneLeft()
}

// TestRealUnparsableQueueAtFinish: while two agents run, a person leaves the task queue
// unparsable (half-way through a save: a duplicate record). One agent finishes meanwhile.
// Scheduling pauses with a warning; the loop and the other agent go on; once the file
// parses again, the finished attempt is recorded and the run ends normally.
func TestRealUnparsableQueueAtFinish(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "quick", testCommand: "go test ./cart", exempt: true},
		{id: "TASK-002", category: "backend", agent: "long", testCommand: "go test ./money", exempt: true},
	}, map[string][]string{
		"quick": slowAgent("implementer", 800*time.Millisecond, 0, files(t, goGreenFiles)),
		"long":  slowAgent("implementer", 6*time.Second, 0, files(t, map[string]string{"money/round.go": "package money\n\n// Round rounds c to whole euros.\nfunc Round(c Cents) Cents { return (c + 50) / 100 * 100 }\n"})),
	}, "")
	w := r.start("watch", "--once", "--jobs", "2", "--debounce", "20ms")
	r.waitFor("both tasks never ran at once", func() bool {
		st := r.statuses()
		return st["TASK-001"] == "in_progress" && st["TASK-002"] == "in_progress"
	})
	good := r.read(".orchestrator/task_queue.md")
	r.write(".orchestrator/task_queue.md", good+"### TASK-002: half-saved copy\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n")
	r.waitLog("TASK-001", 1, "```tdd-result")
	r.waitGone("TASK-001")
	// The loop meets the half-saved file once it has TASK-001's end to record (on a busy
	// machine, seconds after the agent is gone): it says so, naming the file. What must
	// not happen then (an exit, a stopped agent) would happen within a second.
	waitOutput(t, r, w, `task_queue\.md`)
	time.Sleep(time.Second)
	if w.exited() {
		t.Fatalf("watch ended (%v) when an attempt finished while the queue did not parse; want it to pause scheduling and go on\n%s", w.err, w.out.String())
	}
	if len(r.agentsAlive()["TASK-002"]) == 0 {
		t.Errorf("TASK-002's agent was stopped while the queue did not parse")
	}
	r.write(".orchestrator/task_queue.md", good)
	code := w.wait(t, 20*time.Second)
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, w.out.String())
	}
	st := r.statuses()
	for _, id := range []string{"TASK-001", "TASK-002"} {
		if st[id] != "completed" {
			t.Errorf("%s is %q, want completed%s", id, st[id], r.describeAttempts(id))
		}
		r.oneAgentPerAttempt(id)
	}
	r.noneLeft()
}

// TestRealSIGINT interrupts watch while an agent works, while a gate runs and while the
// baseline is refreshed: the interrupted task goes back to pending without using a retry,
// no agent starts after the signal, nothing is left running, and watch exits 130.
func TestRealSIGINT(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"agent", "gate", "baseline"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			r, w, ids := atPoint(t, p, "watch")
			startsBefore, _ := os.ReadFile(r.starts)
			dirsBefore := map[string][]int{}
			for _, id := range ids {
				dirsBefore[id] = r.attemptDirs(id)
			}
			w.cmd.Process.Signal(syscall.SIGINT)
			code := w.wait(t, 15*time.Second)
			if code != 130 {
				t.Errorf("exit %d, want 130\n%s", code, w.out.String())
			}
			st := r.statuses()
			for _, id := range ids {
				want := "pending"
				if p == "baseline" && id == "TASK-001" && st[id] == "completed" {
					// Its landing was under way: finished rather than rolled back. Either
					// is consistent; the work is then in the person's tree.
					want = "completed"
					if _, err := os.Stat(filepath.Join(r.root, "cart/discount.go")); err != nil {
						t.Errorf("TASK-001 is completed but its work is not in the person's tree: %v", err)
					}
				}
				if st[id] != want {
					t.Errorf("%s is %q, want %s%s\n%s", id, st[id], want, r.describeAttempts(id), w.out.String())
				}
				r.noRetryUsed(id)
				if dirs := r.attemptDirs(id); !slices.Equal(dirs, dirsBefore[id]) {
					t.Errorf("%s: attempt folders went from %v to %v after SIGINT: an attempt started after the signal%s\n%s",
						id, dirsBefore[id], dirs, r.describeAttempts(id), w.out.String())
				}
			}
			if startsAfter, _ := os.ReadFile(r.starts); !bytes.Equal(startsBefore, startsAfter) {
				t.Errorf("an agent started after SIGINT: start log went from\n%s\nto\n%s", startsBefore, startsAfter)
			}
			if b, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "baseline.json")); err == nil && !json.Valid(b) {
				t.Errorf("baseline.json is not valid JSON after the interrupt:\n%s", b)
			}
			r.noneLeft()
		})
	}
}

// atPoint makes a repository, starts the orchestrator with args on it, and returns once the
// moment p ("agent", "gate" or "baseline") of TASK-001's first attempt has come, with the
// tasks of the repository.
//
//   - agent: TASK-001's agent is working (it has printed progress lines).
//   - gate: the agent has written its work and its marker and exited; the task's test
//     command (slowed by a sleep, and touching a flag file first) runs.
//   - baseline: TASK-001 passed its gate; the project's test command (slowed, with a flag
//     file) runs to refresh the baseline, and TASK-002, which depends on TASK-001, waits.
func atPoint(t *testing.T, p string, args ...string) (*realRepo, *watchRun, []string) {
	t.Helper()
	flags := t.TempDir()
	flag := filepath.Join(flags, p+"-started")
	builder := slowAgent("implementer", 200*time.Millisecond, 0, files(t, goGreenFiles))
	var r *realRepo
	var ids []string
	switch p {
	case "agent":
		builder = slowAgent("implementer", 3*time.Second, 200*time.Millisecond, files(t, goGreenFiles))
		r = newRealRepo(t, "gomod", goTest, []realTask{
			{id: "TASK-001", category: "backend", agent: "builder", testCommand: "go test ./cart", exempt: true},
		}, map[string][]string{"builder": builder}, "")
		ids = []string{"TASK-001"}
	case "gate":
		// GREEN is one run of the project's whole suite (SPEC §7.3): that is the command
		// to catch.
		r = newRealRepo(t, "gomod", "touch "+flag+" && sleep 3 && "+goTest, []realTask{
			{id: "TASK-001", category: "backend", agent: "builder", testCommand: "go test ./cart", exempt: true},
		}, map[string][]string{"builder": builder}, "")
		ids = []string{"TASK-001"}
	case "baseline":
		// The baseline is made once, at the start of a run that has none (afterwards it
		// grows from the GREEN runs of landed candidates).
		r = newRealRepo(t, "gomod", "touch "+flag+" && sleep 3 && "+goTest, []realTask{
			{id: "TASK-001", category: "backend", agent: "builder", testCommand: "go test ./cart", exempt: true},
			{id: "TASK-002", category: "backend", agent: "second", testCommand: "go test ./money", deps: "TASK-001", exempt: true},
		}, map[string][]string{"builder": builder, "second": slowAgent("implementer", 200*time.Millisecond, 0, "")}, "")
		ids = []string{"TASK-001", "TASK-002"}
	default:
		t.Fatalf("unknown point %q", p)
	}
	w := r.start(args...)
	switch p {
	case "agent":
		r.waitLog("TASK-001", 1, "working: step 2")
	case "gate", "baseline":
		if p == "gate" {
			r.waitLog("TASK-001", 1, "```tdd-result")
			// Only a run after TASK-001's attempt counts, not the baseline's at start.
			os.Remove(flag)
		}
		r.waitFor("the "+p+" command never started\n"+w.out.String(), func() bool {
			_, err := os.Stat(flag)
			return err == nil
		})
		// The command sleeps 3 s after its flag: let whatever the loop does beside it (a
		// launch of the next task) settle, so that the moment is well inside the command.
		time.Sleep(200 * time.Millisecond)
	}
	return r, w, ids
}

// TestRealKill9 kills watch with SIGKILL at an agent, a gate and a baseline refresh, and
// runs `watch --once` again. The restarted run finishes the work (an honest agent's task
// ends completed), no attempt ever has two agents, attempt folders are consecutive, and no
// process that is not an agent is signalled: where the agent is gone, a decoy process holds
// the PID its attempt recorded (with another start time, as after PID reuse) and must
// survive.
func TestRealKill9(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, point string
		killAgent   bool // the agent dies too, and a decoy takes its PID
		attempts    int  // TASK-001's attempts in the end
	}{
		// The agent outlives watch and is adopted: one attempt.
		{name: "agent adopted", point: "agent", attempts: 1},
		// The agent dies with watch: its attempt is lost (agent_lost) and retried.
		{name: "agent lost", point: "agent", killAgent: true, attempts: 2},
		// The agent had finished: its claim is judged after the restart, no retry.
		{name: "gate", point: "gate", killAgent: true, attempts: 1},
		// Killed while the baseline is made at the start: nothing had started.
		{name: "baseline", point: "baseline", attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, w, ids := atPoint(t, tt.point, "watch", "--once")
			w.kill9(t)
			var d *decoy
			if tt.killAgent {
				r.killAgents("TASK-001")
				d = startDecoy(t)
				r.pointAt("TASK-001", 1, d)
			}
			t.Logf("after kill -9: %v", r.statuses())
			stop := r.sampleTwins()
			w2 := r.start("watch", "--once")
			code := w2.wait(t, 30*time.Second)
			twins := stop()
			if code != 0 {
				t.Errorf("restarted watch: exit %d, want 0\n%s", code, w2.out.String())
			}
			st := r.statuses()
			for _, id := range ids {
				if st[id] != "completed" {
					t.Errorf("%s is %q after the restart, want completed (an honest agent's task)%s\n%s", id, st[id], r.describeAttempts(id), w2.out.String())
				}
				r.oneAgentPerAttempt(id)
			}
			if dirs := r.attemptDirs("TASK-001"); len(dirs) != tt.attempts {
				t.Errorf("TASK-001: attempts %v, want %d%s", dirs, tt.attempts, r.describeAttempts("TASK-001"))
			}
			if len(twins) > 0 {
				t.Errorf("tasks with two live agents: %v", twins)
			}
			if d != nil {
				d.alive(t)
			}
			r.noneLeft()
		})
	}
}

// TestRealOnceAfterHandSkip: with --once, a person sets the running task to skipped while
// another task waits. The running agent is stopped, and the other task still runs before
// watch exits.
func TestRealOnceAfterHandSkip(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "long", testCommand: "go test ./cart", exempt: true},
		{id: "TASK-002", category: "backend", agent: "quick", testCommand: "go test ./money", exempt: true},
	}, map[string][]string{
		"long":  slowAgent("implementer", 10*time.Second, 0, files(t, goGreenFiles)),
		"quick": slowAgent("implementer", 300*time.Millisecond, 0, ""),
	}, "")
	w := r.start("watch", "--once", "--debounce", "20ms")
	r.waitLog("TASK-001", 1, "working: step 1")
	if code, out := r.run("set", "TASK-001", "Status=skipped"); code != 0 {
		t.Fatalf("set: exit %d\n%s", code, out)
	}
	code := w.wait(t, 20*time.Second)
	st := r.statuses()
	if st["TASK-002"] != "completed" {
		t.Errorf("TASK-002 is %q, want completed: --once must not exit while a task is ready (exit %d)\n%s", st["TASK-002"], code, w.out.String())
	}
	if st["TASK-001"] != "skipped" {
		t.Errorf("TASK-001 is %q, want the person's skipped", st["TASK-001"])
	}
	if code != 0 {
		t.Errorf("exit %d, want 0 (one task skipped, one completed)\n%s", code, w.out.String())
	}
	r.noneLeft()
}

// TestRealTDDOrderingRefused: watch refuses to launch a task that breaks the rules of
// SPEC §6.1 items 1-3. It becomes blocked with the finding as its reason, and no attempt is
// used.
func TestRealTDDOrderingRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tasks []realTask
		want  map[string]string // task: what its reason must name
	}{
		{"BUILD task with no TEST task before it", []realTask{
			{id: "TASK-001", category: "backend", agent: "a", testCommand: "go test ./money"},
		}, map[string]string{"TASK-001": "TEST"}},
		{"dependency cycle", []realTask{
			{id: "TASK-001", category: "backend", agent: "a", testCommand: "go test ./money", deps: "TASK-002", exempt: true},
			{id: "TASK-002", category: "backend", agent: "a", testCommand: "go test ./money", deps: "TASK-001", exempt: true},
		}, map[string]string{"TASK-001": "cycle", "TASK-002": "cycle"}},
		{"missing dependency", []realTask{
			{id: "TASK-001", category: "backend", agent: "a", testCommand: "go test ./money", deps: "TASK-999", exempt: true},
		}, map[string]string{"TASK-001": "TASK-999"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, "gomod", goTest, tt.tasks, map[string][]string{"a": slowAgent("implementer", 0, 0, "")}, "")
			code, out := r.run("watch", "--once")
			if code != 1 {
				t.Errorf("exit %d, want 1 (a task is blocked)\n%s", code, out)
			}
			for id, finding := range tt.want {
				if got := r.statuses()[id]; got != "blocked" {
					t.Errorf("%s is %q, want blocked%s", id, got, r.describeAttempts(id))
				}
				if reason := r.reasonFields(id); !strings.Contains(strings.ToLower(reason), strings.ToLower(finding)) {
					t.Errorf("%s: reason fields %q do not name the finding (%s)", id, reason, finding)
				}
				if dirs := r.attemptDirs(id); len(dirs) != 0 {
					t.Errorf("%s: attempts %v, want none used", id, dirs)
				}
				r.noRetryUsed(id)
			}
			if b, _ := os.ReadFile(r.starts); len(b) != 0 {
				t.Errorf("agents started:\n%s", b)
			}
		})
	}
}
