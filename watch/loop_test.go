package watch_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRequiredServices: a task whose Required Services cannot be reached is blocked before
// its agent starts, with the service named and no attempt used; one whose services answer
// runs.
func TestRequiredServices(t *testing.T) {
	t.Parallel()
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	downL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := downL.Addr().String()
	downL.Close() // nothing listens there now

	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", testCommand: "true"},
		{id: "TASK-002", category: "backend", testCommand: "true"},
		{id: "TASK-003", category: "backend", testCommand: "true"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, "services: {cache: "+up.Addr().String()+"}\n")
	q := r.read(".orchestrator/task_queue.md")
	q = strings.Replace(q, "| Test Command | true |\n| Depends On | - |\n\n**Objective:** test task TASK-001.",
		"| Test Command | true |\n| Depends On | - |\n| Required Services | cache |\n\n**Objective:** test task TASK-001.", 1)
	q = strings.Replace(q, "| Test Command | true |\n| Depends On | - |\n\n**Objective:** test task TASK-002.",
		"| Test Command | true |\n| Depends On | - |\n| Required Services | cache, "+down+" |\n\n**Objective:** test task TASK-002.", 1)
	q = strings.Replace(q, "| Test Command | true |\n| Depends On | - |\n\n**Objective:** test task TASK-003.",
		"| Test Command | true |\n| Depends On | - |\n| Required Services | nosuchdb |\n\n**Objective:** test task TASK-003.", 1)
	r.write(".orchestrator/task_queue.md", q)

	code, out := r.run("watch", "--once")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (two tasks blocked)\n%s", code, out)
	}
	st := r.statuses()
	if st["TASK-001"] != "completed" || st["TASK-002"] != "blocked" || st["TASK-003"] != "blocked" {
		t.Fatalf("statuses %v, want TASK-001 completed, TASK-002 and TASK-003 blocked\n%s", st, out)
	}
	q = r.read(".orchestrator/task_queue.md")
	for _, want := range []string{
		"| Blocked-Reason | required service unavailable: " + down + " is not reachable at " + down + " |",
		"| Blocked-Reason | required service unavailable: nosuchdb is not a known service: give its address in config.yaml (services: {nosuchdb: host:port}) |",
	} {
		if !strings.Contains(q, want) {
			t.Errorf("queue lacks %q:\n%s", want, q)
		}
	}
	for _, id := range []string{"TASK-002", "TASK-003"} {
		if n := attempts(r, id); n != 0 {
			t.Errorf("%s: %d attempt folders, want none", id, n)
		}
	}
}

// TestGlobalCapNextRun: the global cap stops auto-retries for this run only. The tasks it
// held back are failed, not halted, and the next run retries them.
func TestGlobalCapNextRun(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", testCommand: "P1"},
		{id: "TASK-002", category: "backend", testCommand: "P2"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=honest"}}, "retries: {global_cap: 1}\n")
	q := r.read(".orchestrator/task_queue.md")
	q = strings.Replace(q, "P1", failScript(r, "t1", 2, true), 1)
	q = strings.Replace(q, "P2", failScript(r, "t2", 2, true), 1)
	r.write(".orchestrator/task_queue.md", q)
	autoRetry(r)
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("first run: exit %d, want 3 (the cap held retries back)\n%s", code, out)
	}
	q = r.read(".orchestrator/task_queue.md")
	if strings.Contains(q, "| Halted | true |") || strings.Contains(q, "| Status | halted |") {
		t.Fatalf("the cap halted a task; it must only hold its retry back:\n%s", q)
	}
	if !strings.Contains(q, "| Retry-Deferred | Global auto-retry cap reached (1) |") {
		t.Fatalf("no Retry-Deferred reason:\n%s", q)
	}
	// Each test command fails twice, then passes: the second run retries both (one
	// within its own cap of 1) and a third completes what is left.
	r.run("watch", "--once")
	code, out = r.run("watch", "--once")
	if code != 0 {
		t.Fatalf("third run: exit %d, want 0\n%s\n%s", code, out, r.read(".orchestrator/task_queue.md"))
	}
	if st := r.statuses(); st["TASK-001"] != "completed" || st["TASK-002"] != "completed" {
		t.Errorf("statuses %v", st)
	}
}

// TestWatchWritesMatrix: with a test plan, watch keeps the coverage matrix of the task
// queue current, as `coverage --write` does.
func TestWatchWritesMatrix(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-T01", category: "testing", mode: "write", testCommand: "false"},
	}, map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer", "TESTAGENT_WRITE=x_test.go=package x"}}, "")
	r.write(".orchestrator/task_queue.md", strings.Replace(r.read(".orchestrator/task_queue.md"), "| Mode | write |", "| Mode | write |\n| Test IDs | UNIT-001 |", 1))
	r.write("projectspec/test-plan-output.json", `{"tests": {"unit": [{"id": "UNIT-001"}, {"id": "UNIT-002"}]}}`)
	r.run("watch", "--once")
	q := r.read(".orchestrator/task_queue.md")
	for _, want := range []string{"## Test Coverage Matrix", "| unit | 2 | 1 | UNIT-002 |", "**Coverage: 50% (1/2)**"} {
		if !strings.Contains(q, want) {
			t.Errorf("queue lacks %q:\n%s", want, q)
		}
	}
}

// TestTimeoutHaltsOnThird: a hung agent times out the same way each time; the third
// identical timeout halts the task instead of running to Max-Retries.
func TestTimeoutHaltsOnThird(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "true"}},
		map[string][]string{"honest": {"TESTAGENT_MODE=hang"}}, "task_timeout: 700ms\nstop_grace: 100ms\n")
	autoRetry(r)
	code, out := r.run("watch", "--once")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	if n := attempts(r, "TASK-001"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	if q := r.read(".orchestrator/task_queue.md"); !strings.Contains(q, "| Halt-Reason | Repeated identical failure (3x) |") {
		t.Errorf("queue:\n%s", q)
	}
	r.noneLeft()
}

// TestEventsInOrder: an agent that writes its marker at once is reported started before
// its marker is, and `run` does not promise a retry it will not make.
func TestEventsInOrder(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "false"}},
		map[string][]string{"honest": {"TESTAGENT_MODE=linger"}}, "stop_grace: 100ms\n")
	autoRetry(r)
	_, out := r.run("run", "TASK-001", "--grace", "200ms")
	started, marker := strings.Index(out, "TASK-001 started"), strings.Index(out, "TASK-001 marker")
	if started < 0 || marker < 0 || marker < started {
		t.Errorf("want started before marker:\n%s", out)
	}
	if strings.Contains(out, "trying again") {
		t.Errorf("run says it is trying again:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(r.root, ".orchestrator", "runs", "TASK-001", "2")); err == nil {
		t.Errorf("run made a second attempt")
	}
}
