package plan_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/internal/modelserver"
)

// realClaude returns the folder of the real claude program installed by
// agents/testdata/install-agents.sh (make test-deps). It skips the test when there is none,
// or fails it with CI=true.
func realClaude(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("ORCHESTRATOR_AGENT_CACHE")
	if cache == "" {
		if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
			cache = filepath.Join(d, "orchestrator-test", "npm")
		} else {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "orchestrator-test", "npm")
		}
	}
	bin := filepath.Join(cache, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "claude")); err == nil {
		return bin
	}
	msg := "the real claude program is not installed in " + bin + ": run agents/testdata/install-agents.sh or make test-deps"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestRealClaudePlans runs `orchestrator plan` with the real claude as the planner, in the
// sandbox. In its first round the scripted model makes it write tasks that leave out
// UNIT-002 and try to append a completed task to the queue itself: the write to the queue
// fails (read-only), and the output is rejected. The second round's prompt holds the
// finding; claude edits its scratch file, the tasks pass the gate, and the queue gets
// them, with the matrix.
func TestRealClaudePlans(t *testing.T) {
	bin := realClaude(t)
	requireBwrap(t)
	r := newRepo(t, `{"tests": {"unit": [{"id": "UNIT-001", "name": "adds two numbers", "priority": "high"}, {"id": "UNIT-002", "name": "adds negative numbers"}]}}`+"\n",
		"sandbox: bwrap", "task_timeout: 3m")
	r.write(t, ".orchestrator/config.yaml", "agent: claude\nsandbox: bwrap\ntask_timeout: 3m\n")
	// HOME outside the temporary folder (private in the sandbox); claude keeps its state in
	// HOME/.claude, which the sandbox leaves writable.
	home, err := os.MkdirTemp(filepath.Dir(filepath.Dir(bin)), "home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	sc, err := modelserver.Load(filepath.Join("testdata", "scenarios", "planner.yaml"),
		map[string]string{"Root": r.root, "PlanFile": filepath.Join(r.root, ".orchestrator", "runs", "plan", "1", "scratch", "plan.md")})
	if err != nil {
		t.Fatal(err)
	}
	srv := modelserver.New(t, sc)
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "PATH", strings.HasPrefix(name, "XDG_"), strings.HasPrefix(name, "ANTHROPIC_"),
			strings.HasPrefix(name, "CLAUDE_"), strings.HasPrefix(name, "ORCHESTRATOR_"), strings.HasPrefix(name, "TESTAGENT_"):
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-scripted",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1")
	before := r.read(t, ".orchestrator/task_queue.md")
	cmd := exec.Command(orchestratorBin, "plan", "--prd", "docs/requirements.md")
	cmd.Dir, cmd.Env = r.root, env
	out, err := cmd.CombinedOutput()
	t.Logf("orchestrator plan:\n%s", out)
	if err != nil {
		for i, req := range srv.Requests() {
			t.Logf("request %d: tool results %+v", i+1, req.ToolResults)
		}
		t.Fatalf("orchestrator plan: %v\nagent.log:\n%s", err, r.read(t, ".orchestrator/runs/plan/1/1/agent.log"))
	}
	if !strings.Contains(string(out), "plan round 1 rejected: 1 error") || !strings.Contains(string(out), "2 tasks appended to") || !strings.Contains(string(out), "coverage: 100% (2/2)") {
		t.Errorf("output:\n%s", out)
	}
	after := r.read(t, ".orchestrator/task_queue.md")
	if !strings.HasPrefix(after, before) || strings.Contains(after, "TASK-999") ||
		!strings.Contains(after, "| Test IDs | UNIT-001, UNIT-002 |") || !strings.HasSuffix(after, "**Coverage: 100% (2/2)**\n") {
		t.Errorf("queue:\n%s", after)
	}
	for i, req := range srv.Requests() {
		t.Logf("request %d: tool results %+v", i+1, req.ToolResults)
	}
	if f := srv.Failures(); len(f) > 0 {
		t.Errorf("model server: %v", f)
	}
	if u := srv.Unused(); len(u) > 0 {
		t.Errorf("%d turns of the scenario were not used", len(u))
	}
	for _, n := range []string{"1", "2"} {
		prompt := r.read(t, ".orchestrator/runs/plan/1/"+n+"/prompt.md")
		found := false
		for _, req := range srv.Requests() {
			if strings.Contains(req.UserText, strings.TrimSpace(prompt)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no request holds round %s's prompt.md as its user message", n)
		}
	}
}
