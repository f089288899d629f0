package watch_test

// End-to-end tests of attempts whose agents run on workers (SPEC §18): `orchestrator watch
// --serve-workers` with `orchestrator worker` processes, each with a cache of its own, on
// the Go module of the real tests, with slow scripted agents. The verdict stays with the
// watch: a worker's candidate is judged and landed as a local one, and a cheat is refused
// as it is here.
//
// The workers run their agents in the bubblewrap sandbox, where /tmp is private: the
// agents' files are given in TESTAGENT_WRITE (one line each), not in folders of /tmp.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/workers"
)

// remoteToken is the workers' token of the tests' servers, from the config.
const remoteToken = "remote-test-token"

// remoteConfig turns the workers on with a short ack wait, so that a killed worker's job
// goes to another within seconds.
const remoteConfig = "workers:\n  token: " + remoteToken + "\n  ack_wait: 2s\n"

// remoteAgent is a slow agent's environment on a worker, writing the files of
// TESTAGENT_WRITE: the start log of newRealRepo, in /tmp, is out of the sandbox's reach,
// and is turned off.
func remoteAgent(work, after time.Duration, write string) []string {
	return append(slowAgent("implementer", work, after, ""), "TESTAGENT_WRITE="+write, "TESTAGENT_STARTLOG=")
}

// The agents' files, each on one line (Go takes semicolons for line ends).
const (
	goRedLine   = `cart/discount_test.go=package cart; import ("testing"; "example.com/shop/money"); func TestDiscount_UNIT_001(t *testing.T) { if got := Discount(money.Cents(1000), 10); got != 900 { t.Errorf("Discount = %v, want 900", got) } }`
	goGreenLine = `cart/discount.go=package cart; import "example.com/shop/money"; func Discount(c money.Cents, p int64) money.Cents { return c - c.Percent(p) }`
	// An independent task's work: a new function of its own package.
	goHalfLine = `tax/half.go=package tax; func Half(x int64) int64 { return x / 2 }`
	// The cheat: an implementer that rewrites an existing test so that it passes whatever
	// the code does.
	goCheatLine = `money/money_test.go=package money; import "testing"; func TestNothing(t *testing.T) {}`
)

// needWorkerSandbox skips where bubblewrap does not run (the workers' agents run in it),
// and fails under CI=true.
func needWorkerSandbox(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "true").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap does not run here (CI=true): %v\n%s", err, out)
		}
		t.Skipf("bubblewrap does not run here: %v", err)
	}
}

// A workerProc is an `orchestrator worker` started in the background.
type workerProc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startWorker starts a worker called name, with a cache of its own, connected to url.
func startWorker(t testing.TB, url, name string) *workerProc {
	t.Helper()
	w := &workerProc{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(orchestratorBin, "worker", "--connect", url, "--token", remoteToken, "--name", name, "--cache", t.TempDir())
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.cmd.Process.Signal(os.Interrupt)
		select {
		case <-w.done:
		case <-time.After(scaled(5 * time.Second)):
			w.cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() || os.Getenv("ORCHESTRATOR_BENCH_TRACE") != "" {
			t.Logf("worker %s:\n%s", name, w.out.String())
		}
	})
	return w
}

// kill9 ends the worker with SIGKILL: what it ran is left as it was.
func (w *workerProc) kill9() {
	w.cmd.Process.Kill()
	<-w.done
}

// servedURL waits for the watch's line that says where it serves workers, and returns
// the URL.
func servedURL(t testing.TB, r *realRepo, w *watchRun) string {
	t.Helper()
	re := regexp.MustCompile(`serving on (nats://\S+);`)
	var url string
	r.waitFor("the watch never said where it serves workers:\n"+w.out.String(), func() bool {
		if m := re.FindStringSubmatch(w.out.String()); m != nil {
			url = m[1]
		}
		return url != "" || w.exited()
	})
	if url == "" {
		t.Fatalf("the watch ended before it served workers:\n%s", w.out.String())
	}
	return url
}

// waitOutput waits until the watch's output matches re, and returns the match.
func waitOutput(t *testing.T, r *realRepo, w *watchRun, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var m []string
	r.waitFor(fmt.Sprintf("the watch never said %q:\n%s", re, w.out.String()), func() bool {
		m = rx.FindStringSubmatch(w.out.String())
		return m != nil
	})
	return m
}

// landings counts the commits of main whose message names task id in its
// Orchestrator-Task trailer.
func landings(r *realRepo, id string) int {
	r.t.Helper()
	return strings.Count(r.git("log", "--format=%B", "refs/heads/main"), "Orchestrator-Task: "+id+"\n")
}

// TestRemoteWorkersLandOnceAndRefuseTheCheat runs a queue on three workers, each with a cache of its own: an honest TEST →
// BUILD pair, an independent honest task and a cheat (an implementer that rewrites an
// existing test), retries on. Each honest task lands exactly once, its record naming the
// worker it ran on; the cheat never lands and is refused, attempt after attempt, as the
// same cheat is refused when its agent runs here (its honest twin, below).
func TestRemoteWorkersLandOnceAndRefuseTheCheat(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	tasks := []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
		{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
		{id: "TASK-002", category: "backend", agent: "halver", exempt: true},
		{id: "TASK-003", category: "backend", agent: "cheat", exempt: true},
	}
	agentsOf := map[string][]string{
		"writer":  append(remoteAgent(2*time.Second, 200*time.Millisecond, goRedLine), "TESTAGENT_ROLE=test-writer"),
		"builder": remoteAgent(2*time.Second, 200*time.Millisecond, goGreenLine),
		"halver":  remoteAgent(2*time.Second, 200*time.Millisecond, goHalfLine),
		"cheat":   remoteAgent(time.Second, 0, goCheatLine),
	}
	r := newRealRepo(t, "gomod", goTest, tasks, agentsOf, remoteConfig)
	w := r.start("watch", "--once", "--jobs", "3", "--serve-workers", "127.0.0.1:0")
	url := servedURL(t, r, w)
	for _, name := range []string{"w1", "w2", "w3"} {
		startWorker(t, url, name)
	}
	code := w.wait(t, 4*time.Minute)
	out := w.out.String()
	r.nothingOwnReaped(t, out, "TASK-T01", "TASK-001", "TASK-002")

	st := r.statuses()
	for _, id := range []string{"TASK-T01", "TASK-001", "TASK-002"} {
		if st[id] != "completed" {
			t.Errorf("%s is %q, want completed%s\n%s", id, st[id], r.describeAttempts(id), out)
		}
		if n := landings(r, id); n != 1 {
			t.Errorf("%s landed %d times, want exactly once", id, n)
		}
		// An attempt may be retried (a gate on a head that moved meanwhile); the one that
		// landed is the last, and it ran on a worker.
		dirs := r.attemptDirs(id)
		if len(dirs) == 0 {
			continue
		}
		last := dirs[len(dirs)-1]
		res := r.result(id, last)
		worker, _ := res["worker"].(string)
		if res["outcome"] != "completed" || res["remote"] != true || !regexp.MustCompile(`^w[123]$`).MatchString(worker) {
			t.Errorf("%s attempt %d: %v, remote %v, worker %q; want completed on the worker it ran on", id, last, res["outcome"], res["remote"], worker)
		}
		if !regexp.MustCompile(id + ` started: attempt \d+, \S+ task, agent \S+ on worker w[123]`).MatchString(out) {
			t.Errorf("no line says on which worker %s started:\n%s", id, out)
		}
	}
	for _, f := range []string{"cart/discount_test.go", "cart/discount.go", "tax/half.go"} {
		if _, err := os.Stat(filepath.Join(r.root, f)); err != nil {
			t.Errorf("the verified work is not in the person's tree: %v", err)
		}
	}
	if st["TASK-003"] == "completed" || landings(r, "TASK-003") != 0 {
		t.Errorf("the cheat TASK-003 is %q with %d landings, want refused and never landed%s", st["TASK-003"], landings(r, "TASK-003"), r.describeAttempts("TASK-003"))
	}
	if code == 0 {
		t.Errorf("exit 0 with the cheat refused, want a failure\n%s", out)
	}
	remote := r.result("TASK-003", 1)
	if remote["failure_type"] == nil || remote["worker"] == nil {
		t.Fatalf("the cheat's attempt 1 has no failure type or worker: %v", remote)
	}
	if b, err := os.ReadFile(filepath.Join(r.root, "money", "money_test.go")); err != nil || strings.Contains(string(b), "TestNothing") {
		t.Errorf("the rewritten test reached the person's tree: %v\n%s", err, b)
	}

	// The honest twin of the comparison: the same cheat whose agent runs here.
	local := newRealRepo(t, "gomod", goTest, tasks[3:], map[string][]string{"cheat": agentsOf["cheat"]}, "")
	local.write(".orchestrator/no_auto_retry", "")
	if code, out := local.run("watch", "--once"); code == 0 {
		t.Fatalf("the cheat passed here: exit 0\n%s", out)
	}
	here := local.result("TASK-003", 1)
	// The remote run's gate may judge on a head that moved meanwhile, and says so.
	same := func(reason any) string {
		return strings.Replace(fmt.Sprint(reason), " on the new integration head", "", 1)
	}
	if here["failure_type"] != remote["failure_type"] || same(here["reason"]) != same(remote["reason"]) {
		t.Errorf("the cheat on a worker was refused as %v: %v;\nhere as %v: %v", remote["failure_type"], remote["reason"], here["failure_type"], here["reason"])
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestRemoteWorkerKilled: the worker that runs an attempt is killed (kill -9) mid-attempt.
// Its job goes to the other worker once the ack wait has passed; the attempt runs there
// and its task lands exactly once, its record naming the second worker. While it runs
// on the first, status says so.
func TestRemoteWorkerKilled(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-002", category: "backend", agent: "halver", exempt: true},
	}, map[string][]string{
		"halver": remoteAgent(3*time.Second, 200*time.Millisecond, goHalfLine),
	}, remoteConfig)
	w := r.start("watch", "--once", "--serve-workers", "127.0.0.1:0")
	url := servedURL(t, r, w)
	first := startWorker(t, url, "w1")
	waitOutput(t, r, w, `TASK-002 started: attempt 1, \S+ task, agent halver on worker w1`)
	// status says where the running attempt runs, from the attempt's record.
	if code, out := r.run("status"); code != 0 || !strings.Contains(out, "running: TASK-002 (on worker w1)\n") {
		t.Errorf("status: exit %d, want TASK-002 running on worker w1:\n%s", code, out)
	} else {
		t.Logf("status while attempt 1 runs on w1:\n%s", out)
	}
	if _, out := r.run("status", "--json"); !strings.Contains(out, `"runs_on": "worker w1"`) {
		t.Errorf("status --json names no worker:\n%s", out)
	}
	startWorker(t, url, "w2")
	first.kill9()
	code := w.wait(t, 3*time.Minute)
	out := w.out.String()
	if code != 0 || r.statuses()["TASK-002"] != "completed" {
		t.Fatalf("exit %d, TASK-002 %q; want 0, completed%s\n%s\nagent.log of attempt 1:\n%s", code, r.statuses()["TASK-002"], r.describeAttempts("TASK-002"), out, agentLog(r, "TASK-002", 1))
	}
	if n := landings(r, "TASK-002"); n != 1 {
		t.Errorf("TASK-002 landed %d times, want exactly once", n)
	}
	if dirs := r.attemptDirs("TASK-002"); len(dirs) != 1 {
		t.Errorf("attempts %v, want one: the killed worker's job is the same attempt%s", dirs, r.describeAttempts("TASK-002"))
	}
	if res := r.result("TASK-002", 1); res["worker"] != "w2" {
		t.Errorf("attempt 1 ran on %v, want w2, which took the killed worker's job", res["worker"])
	}
	if !strings.Contains(out, "agent halver on worker w2") {
		t.Errorf("no line says the attempt moved to worker w2:\n%s", out)
	}
	r.noneLeft()
}

// TestRemoteWatchKilled: the watch itself is killed (kill -9) while its attempt runs on a
// worker, and with it its embedded server. A new watch on the same address takes the
// attempt up from the server's stream and its own records: the worker reconnects and
// returns its outcome, which is judged and lands exactly once, no attempt lost or added.
func TestRemoteWatchKilled(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-002", category: "backend", agent: "halver", exempt: true},
	}, map[string][]string{
		"halver": remoteAgent(4*time.Second, 200*time.Millisecond, goHalfLine),
	}, remoteConfig)
	addr := freeAddr(t)
	first := r.start("watch", "--once", "--serve-workers", addr)
	url := servedURL(t, r, first)
	startWorker(t, url, "w1")
	waitOutput(t, r, first, `TASK-002 started: attempt 1, \S+ task, agent halver on worker w1`)
	first.kill9(t)
	second := r.start("watch", "--once", "--serve-workers", addr)
	code := second.wait(t, 3*time.Minute)
	out := second.out.String()
	if code != 0 || r.statuses()["TASK-002"] != "completed" {
		t.Fatalf("exit %d, TASK-002 %q; want 0, completed%s\n%s\nagent.log of attempt 1:\n%s", code, r.statuses()["TASK-002"], r.describeAttempts("TASK-002"), out, agentLog(r, "TASK-002", 1))
	}
	if n := landings(r, "TASK-002"); n != 1 {
		t.Errorf("TASK-002 landed %d times, want exactly once", n)
	}
	if dirs := r.attemptDirs("TASK-002"); len(dirs) != 1 {
		t.Errorf("attempts %v, want one: the restarted watch takes up the same attempt%s", dirs, r.describeAttempts("TASK-002"))
	}
	if !regexp.MustCompile(`TASK-002 (adopted: attempt 1 runs on worker w1; waiting for its outcome|recovered: attempt 1's outcome came from worker w1)`).MatchString(out) {
		t.Errorf("the restarted watch did not take attempt 1 up from the workers:\n%s", out)
	}
	r.noneLeft()
}

// agentLog returns the agent.log of attempt n of task id, for a failure's message.
func agentLog(r *realRepo, id string, n int) string {
	b, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", id, strconv.Itoa(n), "agent.log"))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// freeAddr returns a loopback address with a port free now, for a server that must be
// found at the same address after a restart.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestRemoteTimeout: an agent on a worker that works past the task timeout. The timeout
// ends the wait here: the attempt fails as a timeout, as a local agent's would, and an
// outcome the worker sends after it is not judged.
func TestRemoteTimeout(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-002", category: "backend", agent: "halver", exempt: true},
	}, map[string][]string{"halver": remoteAgent(time.Minute, 0, goHalfLine)}, remoteConfig)
	r.write(".orchestrator/no_auto_retry", "")
	w := r.start("watch", "--once", "--timeout", "4s", "--serve-workers", "127.0.0.1:0")
	startWorker(t, servedURL(t, r, w), "w1")
	code := w.wait(t, 2*time.Minute)
	res := r.result("TASK-002", 1)
	if code == 0 || res["failure_type"] != "timeout" {
		t.Errorf("exit %d, attempt 1 %v: %v; want a timeout\n%s", code, res["failure_type"], res["reason"], w.out.String())
	}
	if n := landings(r, "TASK-002"); n != 0 {
		t.Errorf("TASK-002 landed %d times after its timeout, want never", n)
	}
	if dirs := r.attemptDirs("TASK-002"); len(dirs) != 1 {
		t.Errorf("attempts %v, want one", dirs)
	}
}

// TestRemoteJobExhausted: with workers.max_deliver 1, the worker that took attempt 1 is
// killed with SIGKILL; JetStream does not hand the job out again, and says so. The watch
// ends attempt 1 with a line that says no worker finished it, and the retry, attempt 2,
// runs on the other worker and lands, once.
func TestRemoteJobExhausted(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-002", category: "backend", agent: "halver", exempt: true},
	}, map[string][]string{
		"halver": remoteAgent(3*time.Second, 200*time.Millisecond, goHalfLine),
	}, remoteConfig+"  max_deliver: 1\n")
	w := r.start("watch", "--once", "--serve-workers", "127.0.0.1:0")
	url := servedURL(t, r, w)
	first := startWorker(t, url, "w1")
	waitOutput(t, r, w, `TASK-002 started: attempt 1, \S+ task, agent halver on worker w1`)
	first.kill9()
	startWorker(t, url, "w2")
	code := w.wait(t, 3*time.Minute)
	out := w.out.String()
	if code != 0 || r.statuses()["TASK-002"] != "completed" {
		t.Fatalf("exit %d, TASK-002 %q; want 0, completed%s\n%s", code, r.statuses()["TASK-002"], r.describeAttempts("TASK-002"), out)
	}
	if !strings.Contains(out, "no worker finished attempt 1: its job was handed out 1 time(s)") {
		t.Errorf("no line says that no worker finished attempt 1:\n%s", out)
	}
	if dirs := r.attemptDirs("TASK-002"); len(dirs) != 2 {
		t.Errorf("attempts %v, want two: the exhausted one and its retry%s", dirs, r.describeAttempts("TASK-002"))
	}
	if res := r.result("TASK-002", 2); res["worker"] != "w2" || res["outcome"] != "completed" {
		t.Errorf("attempt 2: %v on %v, want completed on w2", res["outcome"], res["worker"])
	}
	if n := landings(r, "TASK-002"); n != 1 {
		t.Errorf("TASK-002 landed %d times, want exactly once", n)
	}
	r.noneLeft()
}

// TestTDDReemitOnAWorker is TestTDDReemitKeepsWork with the cycle's agents on a worker: the
// re-emit attempt's job names the first attempt's candidate as its seed, the worker's
// checkout starts from it, and that work lands, as it does here. Without the seed the
// re-emitted claim meets the base alone and AC1's test fails.
func TestTDDReemitOnAWorker(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	const authority = "tdd-authority-password"
	srv, err := workers.Serve(context.Background(), workers.ServeOptions{Addr: "127.0.0.1:0", StoreDir: t.TempDir(), Token: remoteToken, AuthorityToken: authority})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r := newCycleRepo(t, "gomod", "go", goTest)
	r.seenByWorkers(fmt.Sprintf("workers:\n  url: %s\n  credentials: %s:%s\n  token: %s\n  ack_wait: 2s\n", srv.URL(), workers.AuthorityUser, authority, remoteToken))
	startWorker(t, srv.URL(), "w1")
	r.honest()
	r.agent("AC1", r.plan("implementer", "1=noblock:ac1", "2=slow:")...)
	code, out := r.tdd()
	if code != 0 {
		t.Fatalf("exit %d, want 0%s\n%s", code, r.describeAttempts(r.id("AC1")), out)
	}
	r.wantStatuses(out, map[string]string{"AC1": "completed", "REFACTOR": "completed"})
	if d := r.attemptDirs(r.id("AC1")); len(d) != 2 {
		t.Errorf("AC1: attempts %v, want 2", d)
	}
	for _, n := range []int{1, 2} {
		if w := r.result(r.id("AC1"), n)["worker"]; w != "w1" {
			t.Errorf("AC1 attempt %d ran on %v, want worker w1", n, w)
		}
	}
}
