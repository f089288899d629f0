package watch_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// TestJobs4Land: four honest agents on independent tasks of one repository, in parallel,
// each in its own worktree. All land, one at a time: the history is linear, one commit per
// task on top of the start, and each commit holds only its own task's file. No worktree is
// left behind.
func TestJobs4Land(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		name := "no sandbox"
		if sandboxed {
			name = "sandbox"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			jobs4Land(t, sandboxed)
		})
	}
}

func jobs4Land(t *testing.T, sandboxed bool) {
	agents := map[string][]string{}
	var tasks []task
	for i := 1; i <= 4; i++ {
		name := "agent" + strconv.Itoa(i)
		agents[name] = []string{"TESTAGENT_MODE=honest", "TESTAGENT_DELAY=500ms", "TESTAGENT_WRITE=f" + strconv.Itoa(i) + ".txt=task " + strconv.Itoa(i)}
		tasks = append(tasks, task{id: "TASK-00" + strconv.Itoa(i), category: "backend", agent: name, testCommand: "true"})
	}
	r := newRepo(t, tasks, agents, "")
	if sandboxed {
		r.sandboxed()
	}
	r.write("base.txt", "base\n")
	if code, out := r.run("watch", "--once", "--jobs", "4"); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for id, st := range r.statuses() {
		if st != "completed" {
			t.Errorf("%s is %s", id, st)
		}
	}
	log := r.git("log", "--format=%H %P|%s", "main")
	lines := strings.Split(log, "\n")
	if len(lines) != 5 {
		t.Fatalf("log has %d commits, want 4 landings on the start:\n%s", len(lines), log)
	}
	seen := map[string]bool{}
	for _, line := range lines[:4] {
		hashes, subject, _ := strings.Cut(line, "|")
		if n := len(strings.Fields(hashes)); n != 2 {
			t.Errorf("commit %q has %d parents, want 1 (a linear history)", line, n-1)
		}
		commit := strings.Fields(hashes)[0]
		files := r.git("diff-tree", "--no-commit-id", "--name-only", "-r", commit)
		id := strings.Fields(subject)[0]
		want := "f" + strings.TrimPrefix(id, "TASK-00") + ".txt"
		if files != want {
			t.Errorf("%s's commit holds %q, want only %s", id, files, want)
		}
		if body := r.git("log", "-1", "--format=%b", commit); !strings.Contains(body, "Orchestrator-Task: "+id) || !strings.Contains(body, "Orchestrator-Gate: ") {
			t.Errorf("%s's commit lacks its trailers:\n%s", id, body)
		}
		if got := fieldOf(r, id, "Commit"); got != commit {
			t.Errorf("%s: Commit field %q, want %s", id, got, commit)
		}
		seen[id] = true
	}
	if len(seen) != 4 {
		t.Errorf("landed %v, want the 4 tasks", seen)
	}
	for i := 1; i <= 4; i++ {
		if got := r.read("f" + strconv.Itoa(i) + ".txt"); got != "task "+strconv.Itoa(i) {
			t.Errorf("f%d.txt in the person's tree: %q", i, got)
		}
	}
	if list := r.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
}

// TestKill9AtGitSteps kills watch with SIGKILL while git stages the candidate (in a project
// whose attributes leave staging to git; the orchestrator's own staging writes nothing but
// objects) and while the landing brings the person's tree along (a git on PATH that pauses
// at that command), then runs `watch --once` again. The restart finishes: the task is completed
// with exactly one landing commit, no worktree is left, and the person's uncommitted edit
// of another file is intact.
func TestKill9AtGitSteps(t *testing.T) {
	t.Parallel()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"add -A", "merge --ff-only"} {
		t.Run(strings.Fields(step)[0], func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "true"}},
				map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=impl.txt=done"}}, "")
			r.write("notes.txt", "committed\n")
			if step == "add -A" {
				// Attributes that convert line endings: the candidate is staged by git.
				r.write(".gitattributes", "*.txt text\n")
			}
			r.commitAll()
			r.uncommitted = true
			r.write("notes.txt", "the person's edit, not committed\n")
			shims := t.TempDir()
			flag := filepath.Join(shims, "reached")
			done := filepath.Join(shims, "done")
			// At the step, the shim pauses (watch is killed meanwhile), then runs git, which
			// outlives the watch it was started by, and says when that git is done.
			shim := "#!/bin/sh\ncase \" $* \" in *\" " + step + " \"*) touch " + flag + "; sleep 5; " + realGit + " \"$@\"; rc=$?; touch " + done + "; exit $rc;; esac\nexec " + realGit + " \"$@\"\n"
			if err := os.WriteFile(filepath.Join(shims, "git"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			w := r.cmd("watch", "--once")
			w.Env = append(os.Environ(), "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"))
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			r.waitFor("watch never reached git "+step, func() bool { _, err := os.Stat(flag); return err == nil })
			w.Process.Signal(syscall.SIGKILL)
			w.Wait()
			code, out := r.run("watch", "--once")
			if code != 0 {
				t.Fatalf("restart: exit %d\n%s", code, out)
			}
			if st := r.statuses()["TASK-001"]; st != "completed" {
				t.Fatalf("TASK-001 is %s\n%s", st, out)
			}
			if n := strings.Count(r.git("log", "--format=%s", "main"), "TASK-001"); n != 1 {
				t.Errorf("TASK-001 landed %d times, want once:\n%s", n, r.git("log", "--format=%h %s", "main"))
			}
			if got := fieldOf(r, "TASK-001", "Commit"); got == "" || r.git("rev-parse", got) == "" {
				t.Errorf("Commit field %q is not a commit", got)
			}
			if got := r.read("notes.txt"); got != "the person's edit, not committed\n" {
				t.Errorf("the person's edit: %q", got)
			}
			if got := r.read("impl.txt"); got != "done" {
				t.Errorf("impl.txt in the person's tree: %q", got)
			}
			r.waitFor("the paused git never ended", func() bool { _, err := os.Stat(done); return err == nil })
			if list := r.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
				t.Errorf("worktrees left:\n%s", list)
			}
		})
	}
}

// TestRebaseConflictRequeues: two tasks in parallel write the same file. One lands; the
// other's candidate no longer applies to the new head, so the task goes back to pending
// with no retry used, and its fresh attempt on the new head lands.
func TestRebaseConflictRequeues(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{
		{id: "TASK-001", category: "backend", agent: "a1", testCommand: "true"},
		{id: "TASK-002", category: "backend", agent: "a2", testCommand: "true"},
	}, map[string][]string{
		"a1": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=shared.txt=one"},
		"a2": {"TESTAGENT_MODE=honest", "TESTAGENT_DELAY=300ms", "TESTAGENT_WRITE=shared.txt=two"},
	}, "")
	r.write("shared.txt", "zero")
	code, out := r.run("watch", "--once", "--jobs", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "TASK-002 retry") && !strings.Contains(out, "rebase") {
		t.Errorf("no rebase conflict reported:\n%s", out)
	}
	if n := attempts(r, "TASK-002"); n != 2 {
		t.Errorf("TASK-002: %d attempts, want 2 (a conflict, then a fresh one)\n%s", n, out)
	}
	for _, id := range []string{"TASK-001", "TASK-002"} {
		if rc := fieldOf(r, id, "Retry-Count"); rc != "" && rc != "0" {
			t.Errorf("%s: Retry-Count %s, want no retry used", id, rc)
		}
	}
	if got := r.read("shared.txt"); got != "two" {
		t.Log(r.attemptLogs("TASK-002"))
		d, _ := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", "TASK-002", "2", "changes.diff"))
		t.Logf("changes.diff of attempt 2:\n%s", d)
		t.Errorf("shared.txt %q, want the later landing's", got)
	}
	if n := len(strings.Split(r.git("log", "--format=%s", "main"), "\n")); n != 3 {
		t.Errorf("%d commits, want 2 landings on the start", n)
	}
}
