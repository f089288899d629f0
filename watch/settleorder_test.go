package watch_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestNextGateStartsBeforeNewAgents: when a landing frees a job, the merge queue starts the
// gate of the candidate behind it before the agent of the task the landing made ready. The
// gates are the queue's narrow part; an agent's start (its slot, a worker's job and its
// base's bundle) must not hold the next one up.
//
// With --jobs 2, TASK-001 and TASK-002 run at once and TASK-003 waits for a job. TASK-001's
// test command waits until TASK-002's candidate exists, so TASK-002 is in the merge queue,
// behind it, when TASK-001 lands: then TASK-002's gate starts on the new head (its
// "rebased" event) and TASK-003's agent after it ("started").
func TestNextGateStartsBeforeNewAgents(t *testing.T) {
	t.Parallel()
	r := &repo{t: t, root: t.TempDir(), tag: fmt.Sprintf("watch-settle-%d", os.Getpid())}
	var q strings.Builder
	q.WriteString("# Task Queue\n\n")
	waitFor := "until git show-ref -q refs/orchestrator/attempts/TASK-002/1; do sleep 0.05; done"
	for i, test := range []string{waitFor, "true", "true"} {
		fmt.Fprintf(&q, "### TASK-%03d\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| TDD | exempt |\n| Agent | a%d |\n| Depends On | - |\n| Test IDs | - |\n| Test Command | %s |\n| Max-Retries | 1 |\n\n**Objective:** Write file %d.\n\n", i+1, i+1, test, i+1)
	}
	r.write(".orchestrator/task_queue.md", q.String())
	var cfg strings.Builder
	cfg.WriteString("agent: a1\ngrace: 1s\nsandbox: off\ngate_jobs: 1\nagents:\n")
	for i := 1; i <= 3; i++ {
		argv := []string{"env", "TESTAGENT_TAG=" + r.tag, "TESTAGENT_MODE=honest", fmt.Sprintf("TESTAGENT_WRITE=file%d.txt=work %d", i, i), agentBin}
		fmt.Fprintf(&cfg, "  a%d: {command: [%s]}\n", i, quoteAll(argv))
	}
	r.write(".orchestrator/config.yaml", cfg.String())
	r.write("README.md", "a project\n")
	r.commitAll()
	code, out := r.run("watch", "--once", "--json", "--jobs", "2")
	if code != 0 {
		t.Fatalf("watch: exit %d\n%s", code, out)
	}
	var seen []string
	for _, line := range strings.Split(out, "\n") {
		var ev struct{ Event, Task string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event != "" {
			seen = append(seen, ev.Event+" "+ev.Task)
		}
	}
	for _, want := range []string{"completed TASK-001", "completed TASK-002", "completed TASK-003"} {
		if !slices.Contains(seen, want) {
			t.Fatalf("no %q among the events:\n%s", want, out)
		}
	}
	gate, agent := slices.Index(seen, "rebased TASK-002"), slices.Index(seen, "started TASK-003")
	if gate < 0 || agent < 0 || gate > agent {
		t.Fatalf("TASK-002's gate (event %d) did not start before TASK-003's agent (event %d):\n%s", gate, agent, strings.Join(seen, "\n"))
	}
}
