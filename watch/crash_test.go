package watch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCrashRecovery kills `watch` with SIGKILL at several points of a run and starts it
// again each time. The agents are honest, so in the end every task is completed: a kill
// costs no task its verdict. The queue always parses, and no task ever has two live agents
// (sampled all along).
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	var tasks []task
	for i := 1; i <= 6; i++ {
		tasks = append(tasks, task{id: fmt.Sprintf("TASK-%03d", i), category: "backend", testCommand: "true"})
	}
	tasks[4].deps = "TASK-001"
	tasks[5].deps = "TASK-002, TASK-005"
	r := newRepo(t, tasks, map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_DELAY=120ms"}}, "")

	var mu sync.Mutex
	var twice []string
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			for id, pids := range r.agentsAlive() {
				if len(pids) > 1 {
					mu.Lock()
					twice = append(twice, fmt.Sprintf("%s: %v", id, pids))
					mu.Unlock()
				}
			}
		}
	}()

	// Kill points: before anything started, while agents run, around markers and gates.
	kills := []time.Duration{5 * time.Millisecond, 40 * time.Millisecond, 90 * time.Millisecond, 130 * time.Millisecond,
		170 * time.Millisecond, 60 * time.Millisecond, 250 * time.Millisecond, 140 * time.Millisecond}
	finished := false
	for round, after := range kills {
		w := r.cmd("watch", "--once", "--jobs", "2", "--grace", "100ms")
		var out strings.Builder
		w.Stdout, w.Stderr = &out, &out
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Wait() }()
		select {
		case <-done:
			finished = true
		case <-time.After(after):
			w.Process.Signal(syscall.SIGKILL)
			<-done
		}
		// statuses fails the test unless the queue parses after every kill.
		t.Logf("round %d (kill after %v): %v", round, after, r.statuses())
		if finished {
			break
		}
	}
	// Let the last run finish.
	if code, out := r.run("watch", "--once", "--jobs", "2", "--grace", "100ms"); code != 0 {
		t.Errorf("final watch: exit %d\n%s", code, out)
	}
	close(stop)
	<-sampled
	for id, s := range r.statuses() {
		if s != "completed" {
			t.Errorf("%s ended %q, want completed; its attempts:\n%s", id, s, r.attemptLogs(id))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(twice) > 0 {
		t.Errorf("tasks with two live agents: %v", twice)
	}
	r.noneLeft()
}

// attemptLogs returns the result.json and gate.log of every attempt of task id.
func (r *repo) attemptLogs(id string) string {
	var b strings.Builder
	runs := filepath.Join(r.root, ".orchestrator", "runs", id)
	entries, _ := os.ReadDir(runs)
	for _, e := range entries {
		for _, name := range []string{"result.json", "gate.log", "agent.log"} {
			text, _ := os.ReadFile(filepath.Join(runs, e.Name(), name))
			fmt.Fprintf(&b, "--- %s/%s\n%s\n", e.Name(), name, text)
		}
	}
	return b.String()
}
