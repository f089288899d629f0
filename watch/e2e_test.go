package watch_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/internal/racebuild"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/watch"
)

// The real binaries under test: the orchestrator and the scripted test agent.
var orchestratorBin, agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "watch-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	isolateHome(dir)
	orchestratorBin = filepath.Join(dir, "orchestrator")
	agentBin = filepath.Join(dir, "testagent")
	// The orchestrator is built as this test binary was: with the race detector under
	// `go test -race`, so that the loop itself is checked, and what it finds fails the run.
	racebuild.LogTo(dir)
	builds := map[string][]string{
		orchestratorBin: append(racebuild.Flags(), "../cmd/orchestrator"),
		agentBin:        {"../internal/testagent"},
	}
	if bin := os.Getenv("ORCHESTRATOR_UNDER_TEST"); bin != "" {
		// A build made elsewhere (another commit's, to compare two in one sitting).
		delete(builds, orchestratorBin)
		orchestratorBin = bin
	}
	for bin, build := range builds {
		args := append([]string{"build", "-o", bin}, build...)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	if racebuild.Failed(dir) {
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// isolateHome gives the tests, and every orchestrator they run (the binary inherits the
// environment), a home and a configuration folder of their own under dir: the key that
// seals the orchestrator's evidence is made there, never in the person's. Go's caches and
// settings stay where they were, so that builds are as fast as before.
func isolateHome(dir string) {
	names := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	if out, err := exec.Command("go", append([]string{"env"}, names...)...).Output(); err == nil {
		for i, v := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if i < len(names) && os.Getenv(names[i]) == "" && v != "" {
				os.Setenv(names[i], v)
			}
		}
	}
	// The user's cache folder stays too: the gate's build cache lives there, warm from run
	// to run. The slots, parked there when a run ends, go with the test's folder.
	if cache, err := os.UserCacheDir(); err == nil && os.Getenv("XDG_CACHE_HOME") == "" {
		os.Setenv("XDG_CACHE_HOME", cache)
	}
	os.Setenv("ORCHESTRATOR_WORKTREES", filepath.Join(dir, "worktrees"))
	// The gates of these tests run go test without its vet step (GOFLAGS is pinned into
	// the gate's environment as a person would set it): vet is the Go toolchain's check,
	// not the orchestrator's, and it is a tenth of this package's CPU. The gate package's
	// tests keep it, the canaries' vet among them. And with -trimpath: a package's compile
	// is then the same wherever its checkout is, so that the fixtures' packages, the same
	// in every test, are compiled once, not in every test's folders and gate slots
	// (none of the fixtures' tests reads its own source's path).
	if os.Getenv("GOFLAGS") == "" {
		os.Setenv("GOFLAGS", "-vet=off -trimpath")
	}
	home := filepath.Join(dir, "home")
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
}

// repo is a test repository with a task queue and a config whose agents are the test agent
// in various modes.
type repo struct {
	t    testing.TB
	root string
	tag  string // in every agent's environment, to find leftover processes
	// uncommitted keeps the test's edits out of git once the repository has a commit (a
	// test of a person's uncommitted changes).
	uncommitted bool
	// env is added to the environment of every orchestrator command the test runs.
	env []string
}

// ownImpact gives the repository's runs a folder of sealed package results of their own
// (ORCHESTRATOR_IMPACT), for a test that looks at what its gates run: with the user's,
// which every test shares, a gate whose packages another test already ran with the same
// inputs would reuse their results and run nothing.
func (r *repo) ownImpact() {
	r.env = append(r.env, "ORCHESTRATOR_IMPACT="+privateImpact(r.t))
}

// task is one task of a generated queue.
type task struct {
	id, category, mode, agent, testCommand, deps string
	// tdd leaves a task under TDD ordering (SPEC §6.1 item 3); without it a task that
	// does not write tests is marked `| TDD | exempt |`.
	tdd bool
}

func newRepo(t *testing.T, tasks []task, agents map[string][]string, extraConfig string) *repo {
	t.Helper()
	r := &repo{t: t, root: t.TempDir(), tag: fmt.Sprintf("watch-test-%d-%s", os.Getpid(), t.Name())}
	r.tag = strings.NewReplacer("/", "-", " ", "-").Replace(r.tag)
	var q strings.Builder
	q.WriteString("# Task Queue\n\n")
	for _, tk := range tasks {
		fmt.Fprintf(&q, "### %s\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | %s |\n", tk.id, tk.category)
		if tk.mode != "" {
			fmt.Fprintf(&q, "| Mode | %s |\n", tk.mode)
		}
		if tk.agent != "" {
			fmt.Fprintf(&q, "| Agent | %s |\n", tk.agent)
		}
		if tk.mode != "write" && !tk.tdd {
			// Most of these tests exercise the loop with a lone task; TDD ordering, which
			// would refuse a BUILD task with no TEST task before it, has tests of its own.
			q.WriteString("| TDD | exempt |\n")
		}
		fmt.Fprintf(&q, "| Test Command | %s |\n| Depends On | %s |\n\n**Objective:** test task %s.\n\n", tk.testCommand, orDash(tk.deps), tk.id)
	}
	r.write(".orchestrator/task_queue.md", q.String())
	var c strings.Builder
	c.WriteString("agent: honest\ngrace: 300ms\n" + sandboxOff(extraConfig) + extraConfig + "agents:\n")
	for name, env := range agents {
		argv := append([]string{"env", "TESTAGENT_TAG=" + r.tag}, env...)
		argv = append(argv, agentBin)
		fmt.Fprintf(&c, "  %s: {command: [%s]}\n", name, quoteAll(argv))
	}
	r.write(".orchestrator/config.yaml", c.String())
	// One attempt per task unless a test turns auto-retry on: most tests look at one attempt.
	r.write(".orchestrator/no_auto_retry", "")
	return r
}

// sandboxOff turns the sandbox off in a test repository's config unless the test's own
// config says otherwise: most tests' agents keep files in /tmp, which is private in the
// sandbox. Tests of the sandbox turn it on with repo.sandboxed.
func sandboxOff(config string) string {
	if strings.Contains(config, "sandbox:") {
		return ""
	}
	return "sandbox: off\n"
}

// sandboxed runs the repository's agents in the bubblewrap sandbox (sandbox: bwrap), with
// the folders dirs writable (the test's own side channels), or fails the test under
// CI=true, or skips it, where bubblewrap does not run.
func (r *repo) sandboxed(dirs ...string) {
	r.t.Helper()
	if err := agents.BwrapAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			r.t.Fatalf("bubblewrap does not run here (CI=true): %v", err)
		}
		r.t.Skipf("bubblewrap does not run here: %v", err)
	}
	cfg := r.read(".orchestrator/config.yaml")
	if !strings.Contains(cfg, "sandbox: off\n") {
		r.t.Fatal("the config does not turn the sandbox off")
	}
	r.write(".orchestrator/config.yaml", strings.Replace(cfg, "sandbox: off\n", "sandbox: bwrap\nsandbox_writable: ["+quoteAll(dirs)+"]\n", 1))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, ", ")
}

// write writes a file of the repository, making its folder if needed.
func (r *repo) write(rel, text string) {
	r.t.Helper()
	p := filepath.Join(r.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) read(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// cmd returns the orchestrator command with args, run in the repository. Before `watch`
// and `run`, whatever the test wrote is committed (agents start from the integration
// branch's head), unless the test keeps its edits uncommitted (r.uncommitted).
func (r *repo) cmd(args ...string) *exec.Cmd {
	if len(args) > 0 && (args[0] == "watch" || args[0] == "run") {
		r.commitAll()
	}
	c := exec.Command(orchestratorBin, append([]string{"--dir", r.root}, args...)...)
	c.Dir = r.root
	if len(r.env) > 0 {
		c.Env = append(os.Environ(), r.env...)
	}
	return c
}

// commitAll makes the test repository a git repository on branch main (the queue files
// and test counters outside git), and commits what changed, unless r.uncommitted.
func (r *repo) commitAll() {
	r.t.Helper()
	if _, err := os.Stat(filepath.Join(r.root, ".git")); err != nil {
		r.git("init", "-q", "-b", "main")
		r.write(".git/info/exclude", ".orchestrator/\n*.count\n")
	}
	if r.uncommitted && r.git("rev-parse", "-q", "--verify", "HEAD") != "" {
		return
	}
	r.git("add", "-A")
	if r.git("status", "--porcelain") != "" || r.git("rev-parse", "-q", "--verify", "HEAD") == "" {
		r.git("commit", "-q", "--allow-empty", "-m", "test setup")
	}
}

// git runs git in the repository and returns its output ("" on failure for rev-parse).
func (r *repo) git(args ...string) string {
	r.t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
	c.Dir = r.root
	out, err := c.CombinedOutput()
	if err != nil {
		if args[0] == "rev-parse" {
			return ""
		}
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// run runs the orchestrator and returns its exit code and output.
func (r *repo) run(args ...string) (int, string) {
	r.t.Helper()
	out, err := r.cmd(args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return 0, string(out)
}

// statuses returns every task's status; the queue must parse.
func (r *repo) statuses() map[string]string {
	r.t.Helper()
	d, err := queue.Load(filepath.Join(r.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		r.t.Fatalf("queue does not parse: %v", err)
	}
	out := map[string]string{}
	for _, tk := range d.Tasks() {
		out[tk.ID] = tk.Status
	}
	return out
}

// agentsAlive returns the PIDs of live (non-zombie) processes carrying this repo's tag, by
// the task they work on.
func (r *repo) agentsAlive() map[string][]int {
	out := map[string][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, []byte("TESTAGENT_TAG="+r.tag+"\x00")) {
			continue
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue // a zombie is dead; its parent reaps it
			}
		}
		id := ""
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("ORCHESTRATOR_TASK_ID=")); ok {
				id = string(v)
			}
		}
		out[id] = append(out[id], pid)
	}
	return out
}

// noneLeft fails the test if a process of this repo's agents is still alive.
func (r *repo) noneLeft() {
	r.t.Helper()
	deadline := time.Now().Add(scaled(3 * time.Second))
	for {
		alive := r.agentsAlive()
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pids := range alive {
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			r.t.Fatalf("processes left behind: %v", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchOnceBehaviours runs `watch --once` over one task whose agent behaves as each
// case says, and checks the exit code, the final queue, the attempt folder and that no
// process is left behind.
func TestWatchOnceBehaviours(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		env        []string
		category   string
		mode       string
		testCmd    string
		extra      string
		wantExit   int
		wantStatus string
		wantInGate string
		wantFiles  []string
	}{
		{name: "honest build", env: []string{"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=package calc"}, testCmd: "test -f calc.go",
			wantExit: 0, wantStatus: "completed", wantInGate: "claim verified", wantFiles: []string{"calc.go"}},
		{name: "honest test writer", env: []string{"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer", "TESTAGENT_WRITE=calc_test.go=x"}, category: "testing", mode: "write", testCmd: "false",
			wantExit: 0, wantStatus: "completed", wantInGate: "claim verified"},
		{name: "test writer whose tests pass", env: []string{"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer"}, category: "testing", mode: "write", testCmd: "true",
			wantExit: 1, wantStatus: "failed", wantInGate: "the tests already pass"},
		{name: "lie", env: []string{"TESTAGENT_MODE=lie", "TESTAGENT_WRITE=calc.go=package calc"}, testCmd: "test -f calc.go",
			wantExit: 1, wantStatus: "failed", wantInGate: "claim rejected: test -f calc.go exited 1"},
		{name: "failed marker", env: []string{"TESTAGENT_MODE=honest", "TESTAGENT_MARKER=failed"}, testCmd: "true",
			wantExit: 1, wantStatus: "failed", wantInGate: "the agent reported failure"},
		{name: "no marker", env: []string{"TESTAGENT_MODE=nomarker"}, testCmd: "true",
			wantExit: 1, wantStatus: "failed", wantInGate: "no_marker"},
		{name: "exits non-zero", env: []string{"TESTAGENT_MODE=exit1"}, testCmd: "true",
			wantExit: 1, wantStatus: "failed", wantInGate: "agent exit code: 1"},
		{name: "hangs past the timeout", env: []string{"TESTAGENT_MODE=hang"}, testCmd: "true", extra: "task_timeout: 700ms\n",
			wantExit: 1, wantStatus: "failed", wantInGate: "timeout"},
		{name: "ignores SIGTERM", env: []string{"TESTAGENT_MODE=stubborn"}, testCmd: "true", extra: "task_timeout: 700ms\n",
			wantExit: 1, wantStatus: "failed", wantInGate: "timeout"},
		{name: "grandchild outlives it", env: []string{"TESTAGENT_MODE=grandchild"}, testCmd: "true",
			wantExit: 0, wantStatus: "completed", wantInGate: "claim verified"},
		{name: "malformed block", env: []string{"TESTAGENT_MODE=malformed"}, testCmd: "true",
			wantExit: 1, wantStatus: "failed", wantInGate: "format_violation"},
		{name: "two blocks", env: []string{"TESTAGENT_MODE=double"}, testCmd: "true",
			wantExit: 1, wantStatus: "failed", wantInGate: "exactly one"},
		{name: "keeps running after its marker", env: []string{"TESTAGENT_MODE=linger"}, testCmd: "true",
			wantExit: 0, wantStatus: "completed", wantInGate: "claim verified"},
		{name: "no test command", env: []string{"TESTAGENT_MODE=honest"}, testCmd: "-",
			wantExit: 1, wantStatus: "failed", wantInGate: "cannot be verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cat := tt.category
			if cat == "" {
				cat = "backend"
			}
			r := newRepo(t, []task{{id: "TASK-001", category: cat, mode: tt.mode, testCommand: tt.testCmd}},
				map[string][]string{"honest": append(tt.env, "TESTAGENT_PIDFILE="+filepath.Join(t.TempDir(), "child.pid"))}, tt.extra)
			code, out := r.run("watch", "--once")
			if code != tt.wantExit {
				t.Errorf("exit code %d, want %d\n%s", code, tt.wantExit, out)
			}
			if got := r.statuses()["TASK-001"]; got != tt.wantStatus {
				t.Errorf("status %q, want %q\n%s", got, tt.wantStatus, out)
			}
			for _, f := range []string{"prompt.md", "agent.log", "gate.log", "result.json"} {
				if _, err := os.Stat(filepath.Join(r.root, ".orchestrator/runs/TASK-001/1", f)); err != nil {
					t.Errorf("attempt folder: %v", err)
				}
			}
			if gate := r.read(".orchestrator/runs/TASK-001/1/gate.log"); !strings.Contains(gate, tt.wantInGate) {
				t.Errorf("gate.log does not say %q:\n%s", tt.wantInGate, gate)
			}
			for _, f := range tt.wantFiles {
				if _, err := os.Stat(filepath.Join(r.root, f)); err != nil {
					t.Errorf("agent's file: %v", err)
				}
			}
			if entries, _ := os.ReadDir(filepath.Join(r.root, ".orchestrator/complete")); len(entries) != 0 {
				t.Errorf("markers left in complete/: %v", entries)
			}
			r.noneLeft()
		})
	}
}

// TestWatchOrderAndJobs runs a small queue with dependencies at --jobs 2: everything ends
// completed, and a task never starts before its dependencies completed.
func TestWatchOrderAndJobs(t *testing.T) {
	t.Parallel()
	// Each TEST task's tests fail until its BUILD task writes the file they look for.
	tasks := []task{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer1", testCommand: "test -f one.go"},
		{id: "TASK-T02", category: "testing", mode: "write", agent: "writer2", testCommand: "test -f two.go"},
		{id: "TASK-001", category: "backend", agent: "builder1", testCommand: "test -f one.go", deps: "TASK-T01"},
		{id: "TASK-002", category: "backend", agent: "builder2", testCommand: "test -f two.go", deps: "TASK-T02, TASK-001"},
		{id: "TASK-V01", category: "test_verification", agent: "verifier", testCommand: "true", deps: "TASK-001, TASK-002"},
	}
	writer := []string{"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer", "TESTAGENT_DELAY=50ms"}
	builder := []string{"TESTAGENT_MODE=honest", "TESTAGENT_DELAY=50ms"}
	r := newRepo(t, tasks, map[string][]string{
		"writer1":  append(writer, "TESTAGENT_WRITE=one_test.go=package x"),
		"writer2":  append(writer, "TESTAGENT_WRITE=two_test.go=package x"),
		"builder1": append(builder, "TESTAGENT_WRITE=one.go=package x"),
		"builder2": append(builder, "TESTAGENT_WRITE=two.go=package x"),
		"verifier": {"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=verifier"},
	}, "")
	code, out := r.run("watch", "--once", "--jobs", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for id, s := range r.statuses() {
		if s != "completed" {
			t.Errorf("%s is %s", id, s)
		}
	}
	// Completion order from the JSON events: a task starts only after its dependencies.
	done := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		for _, tk := range tasks {
			if strings.Contains(line, `"task":"`+tk.id+`"`) && strings.Contains(line, `"event":"started"`) {
				for _, dep := range queue.List(tk.deps) {
					if !done[dep] {
						t.Errorf("%s started before %s completed", tk.id, dep)
					}
				}
			}
			if strings.Contains(line, `"task":"`+tk.id+`"`) && strings.Contains(line, `"event":"completed"`) {
				done[tk.id] = true
			}
		}
	}
	r.noneLeft()
}

// watchHanging starts the orchestrator with args on a repository of one task whose agent
// hangs, and returns once the task is in_progress, with the command and its output.
func watchHanging(t *testing.T, args ...string) (*repo, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "true"}}, map[string][]string{"honest": {"TESTAGENT_MODE=hang"}}, "")
	w := r.cmd(args...)
	var out bytes.Buffer
	w.Stdout, w.Stderr = &out, &out
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	r.waitStatus("TASK-001", "in_progress")
	return r, w, &out
}

// TestWatchPersonStopsTask: a person sets a running task to blocked; its agent is stopped,
// the person's status stays, and watch --once ends.
func TestWatchPersonStopsTask(t *testing.T) {
	t.Parallel()
	r, w, out := watchHanging(t, "watch", "--once", "--debounce", "20ms")
	if code, out := r.run("set", "TASK-001", "Status=blocked"); code != 0 {
		t.Fatalf("set: %s", out)
	}
	// The task is neither completed nor skipped, so --once exits 1.
	err := waitCmd(t, w, 10*time.Second)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("watch: %v, want exit 1\n%s", err, out.String())
	}
	if got := r.statuses()["TASK-001"]; got != "blocked" {
		t.Errorf("status %q, want the person's blocked", got)
	}
	if res := r.read(".orchestrator/runs/TASK-001/1/result.json"); !strings.Contains(res, `"stopped"`) {
		t.Errorf("result.json: %s", res)
	}
	r.noneLeft()
}

// TestWatchSignal: SIGTERM stops the agents, puts their tasks back to pending, exits 130.
func TestWatchSignal(t *testing.T) {
	t.Parallel()
	r, w, _ := watchHanging(t, "watch")
	r.waitFile(".orchestrator/runs/TASK-001/1/result.json")
	w.Process.Signal(syscall.SIGTERM)
	err := waitCmd(t, w, 10*time.Second)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("watch ended with %v, want exit 130", err)
	}
	if got := r.statuses()["TASK-001"]; got != "pending" {
		t.Errorf("status %q, want pending", got)
	}
	r.noneLeft()
}

// TestWatchRefusesSecond: a second watch on the same repository refuses to start and names
// the first one's PID.
func TestWatchRefusesSecond(t *testing.T) {
	t.Parallel()
	r, w, _ := watchHanging(t, "watch")
	code, out := r.run("watch", "--once")
	if code != 2 || !strings.Contains(out, "PID "+strconv.Itoa(w.Process.Pid)) {
		t.Errorf("second watch: exit %d, %q; want exit 2 naming PID %d", code, out, w.Process.Pid)
	}
	w.Process.Signal(syscall.SIGINT)
	waitCmd(t, w, 10*time.Second)
	r.noneLeft()
}

func (r *repo) waitStatus(id, status string) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%s never became %s", id, status), func() bool {
		d, err := queue.Load(filepath.Join(r.root, ".orchestrator", "task_queue.md"))
		if err != nil {
			return false
		}
		rec, ok := d.Record(id)
		return ok && d.Task(rec).Status == status
	})
}

func (r *repo) waitFile(rel string) {
	r.t.Helper()
	r.waitFor(rel+" never appeared", func() bool {
		_, err := os.Stat(filepath.Join(r.root, rel))
		return err == nil
	})
}

// waitFor polls cond for up to 10 seconds and fails the test with failure if it never holds.
func (r *repo) waitFor(failure string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(scaled(10 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatal(failure)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scaled returns a test's deadline d times ORCHESTRATOR_TEST_TIMESCALE (watch.Scaled).
func scaled(d time.Duration) time.Duration { return watch.Scaled(d) }

func waitCmd(t *testing.T, c *exec.Cmd, limit time.Duration) error {
	t.Helper()
	limit = scaled(limit)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		c.Process.Kill()
		t.Fatalf("%v did not end within %v", c.Args, limit)
		return nil
	}
}

// TestRunOneTask: `orchestrator run ID` runs one attempt of one task in the foreground,
// whatever its dependencies, and refuses a task that is not pending, failed or blocked.
func TestRunOneTask(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-T01", category: "testing", mode: "write", testCommand: "false"},
		{id: "TASK-001", category: "backend", testCommand: "true", deps: "TASK-T01"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, "")
	code, out := r.run("run", "TASK-001")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	st := r.statuses()
	if st["TASK-001"] != "completed" || st["TASK-T01"] != "pending" {
		t.Errorf("statuses %v, want only TASK-001 run", st)
	}
	if code, out := r.run("run", "TASK-001"); code != 2 || !strings.Contains(out, "TASK-001 is completed") {
		t.Errorf("run of a completed task: exit %d\n%s", code, out)
	}
	r.noneLeft()
}

// TestPromptCommand: `orchestrator prompt ID` prints what the agent would get: the task's
// record and the files on its allowlist (the tests it must make pass), and no other file.
func TestPromptCommand(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-T01", category: "testing", mode: "write", testCommand: "false"},
		{id: "TASK-001", category: "backend", testCommand: "true", deps: "TASK-T01"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, "")
	q := strings.Replace(r.read(".orchestrator/task_queue.md"), "| Mode | write |", "| Mode | write |\n| Test File | calc_test.go |", 1)
	r.write(".orchestrator/task_queue.md", q)
	r.write("calc_test.go", "func TestAdd_SECRET_TEST(t *testing.T) {}\n")
	r.write("calc.go", "package calc // IMPLEMENTATION DETAIL\n")
	code, out := r.run("prompt", "TASK-001")
	if code != 0 {
		t.Fatalf("prompt: exit %d\n%s", code, out)
	}
	for _, want := range []string{"TASK-001", "implementer", "TestAdd_SECRET_TEST", "true"} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "IMPLEMENTATION DETAIL") {
		t.Errorf("prompt includes a file not on its allowlist:\n%s", out)
	}
	// The test writer's prompt never holds implementation files either.
	if _, out := r.run("prompt", "TASK-T01"); strings.Contains(out, "IMPLEMENTATION DETAIL") || !strings.Contains(out, "test-writer") {
		t.Errorf("test writer's prompt:\n%s", out)
	}
}
