package agents_test

// Tests against the real agent programs, Claude Code and the Codex CLI, installed from npm by
// testdata/install-agents.sh (make test-deps), each driven by the scripted model server of
// internal/modelserver: no network, no model. They skip when the programs are missing,
// except with CI=true, where they fail.
//
// With -record they write the agents' output to testdata/recorded, which the adapters' unit
// tests read: go test ./agents -run TestRealAdapters -record.

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/internal/modelserver"
	"github.com/orchestrator/orchestrator/internal/racebuild"
	"github.com/orchestrator/orchestrator/queue"
)

var record = flag.Bool("record", false, "write the real agents' output to testdata/recorded")

// codexModel is a model that Codex 0.169 knows (for another it warns that it has no
// metadata for it).
const codexModel = "gpt-5.5"

// agentCache returns the folder that install-agents.sh installs into.
func agentCache() string {
	if d := os.Getenv("ORCHESTRATOR_AGENT_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "orchestrator-test", "npm")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "orchestrator-test", "npm")
}

// realAgent returns the path of the real program name (claude or codex): in the cache of
// install-agents.sh, else on PATH. It skips the test when there is none, or fails it with
// CI=true.
func realAgent(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(agentCache(), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("the real %s program is not installed (not in %s nor on PATH): run agents/testdata/install-agents.sh or make test-deps", name, agentCache())
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// requireBwrap skips the test where bubblewrap does not run, or fails it with CI=true.
func requireBwrap(t *testing.T) {
	t.Helper()
	if err := agents.BwrapAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// goEnv holds the Go settings of the tests' own environment, which the agents and the gates
// keep although each run gets its own HOME: a shared build cache keeps `go test` fast.
var goEnv = sync.OnceValue(func() []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 3 {
		return nil
	}
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2], "GOTOOLCHAIN=local", "GOFLAGS="}
})

// codexWritable appends to the run's Codex configuration the setting that lets the
// commands of its workspace-write sandbox write the tests' shared Go build cache (goEnv),
// as Claude's commands can, for a run outside the orchestrator's sandbox (there, the cache
// is not writable at all, and Codex's own bubblewrap fails on a writable root it cannot
// write: "Can't mkdir …/go-build/.git: Read-only file system"). A go command that must
// write an index it did not find there fails when it cannot: a clean-clone run failed so
// in TestRealTDD/codex ("pattern ./...: open …/go-build/32/…-d: read-only file system"),
// although it passes with a cold cache as with a warm one, so whether Codex's `go test`
// ran depended on what the tests running beside it had left in the cache.
func (sb *sandbox) codexWritable(t *testing.T) {
	t.Helper()
	for _, kv := range goEnv() {
		if dir, ok := strings.CutPrefix(kv, "GOCACHE="); ok && dir != "" {
			f, err := os.OpenFile(filepath.Join(sb.home, ".codex", "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := fmt.Fprintf(f, "\n[sandbox_workspace_write]\nwritable_roots = [%q]\n", dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A sandbox is one run's world: a project folder, a HOME, a folder outside the project, the
// scripted model server, and the environment that points the agents at it.
type sandbox struct {
	base    string // holds the rest
	root    string // the project: the agents' working folder
	home    string
	outside string // a folder the agents must not write to
	srv     *modelserver.Server
	env     []string
}

// newSandbox loads the scenario testdata/scenarios/<name> (with {{.Root}}, {{.Outside}}, and {{.Go}}
// for the go program's full path) and starts its server.
func newSandbox(t *testing.T, scenario string) *sandbox {
	return newSandboxIn(t, scenario, nil)
}

// newSandboxIn is newSandbox for an agent that works in the folder workDir returns for the
// project and the test's base folder (nil: the project itself): the scenario's {{.Root}}
// is that folder.
func newSandboxIn(t *testing.T, scenario string, workDir func(project, base string) string) *sandbox {
	t.Helper()
	base := t.TempDir()
	sb := &sandbox{base: base, root: filepath.Join(base, "project")}
	// Not under the temporary folder: Codex's workspace-write sandbox lets commands write
	// there (compilers need it), so only a folder elsewhere shows its confinement.
	parent := filepath.Dir(agentCache())
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	outside, err := os.MkdirTemp(parent, "outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	sb.outside = outside
	// HOME is not under the temporary folder either: Codex refuses to create its helper
	// programs (codex-linux-sandbox, which its sandbox runs through bubblewrap where
	// /usr/bin/bwrap is installed) under a CODEX_HOME there, and its sandboxed commands
	// then fail with "bwrap: execvp codex-linux-sandbox: No such file or directory".
	home, err := os.MkdirTemp(parent, "home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	sb.home = home
	for _, d := range []string{sb.root, filepath.Join(sb.home, ".codex")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := sb.root
	if workDir != nil {
		work = workDir(sb.root, sb.base)
	}
	// The scripted tool calls run go by its full path: Claude Code's Bash tool takes its
	// PATH from a snapshot of a login shell, which on Debian sets root's PATH anew, without
	// the test's (go was sometimes "command not found" there).
	goPath, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := modelserver.Load(filepath.Join("testdata", "scenarios", scenario), map[string]string{"Root": work, "Outside": sb.outside, "Name": filepath.Base(sb.outside), "Go": goPath})
	if err != nil {
		t.Fatal(err)
	}
	sb.srv = modelserver.New(t, sc)
	// Codex reads its model provider from $CODEX_HOME/config.toml: the scripted server,
	// by the Responses API, with no retries (a refused request ends the run at once), and
	// nothing else contacted.
	codexConfig := fmt.Sprintf(`model_provider = "scripted"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.scripted]
name = "scripted model server"
base_url = "%s/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, sb.srv.URL())
	if err := os.WriteFile(filepath.Join(sb.home, ".codex", "config.toml"), []byte(codexConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "XDG_CONFIG_HOME", name == "XDG_CACHE_HOME", name == "XDG_DATA_HOME", name == "XDG_STATE_HOME",
			strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "CLAUDE_"), strings.HasPrefix(name, "CODEX_"),
			strings.HasPrefix(name, "OPENAI_"), strings.HasPrefix(name, "ORCHESTRATOR_"), strings.HasPrefix(name, "GO"):
			continue
		}
		sb.env = append(sb.env, kv)
	}
	sb.env = append(sb.env, goEnv()...)
	sb.env = append(sb.env,
		"HOME="+sb.home,
		"CODEX_HOME="+filepath.Join(sb.home, ".codex"),
		"SCRIPTED_API_KEY=sk-scripted",
		"ANTHROPIC_BASE_URL="+sb.srv.URL(),
		"ANTHROPIC_API_KEY=sk-ant-scripted",
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
	)
	return sb
}

// jail returns the Sandbox of a run of program: the home hidden (an empty one inside),
// its state in a private folder (outside the temporary folder, where Codex does not
// install its helpers), seeded from HOME, and Claude Code's sessions kept beside it.
func (sb *sandbox) jail(t *testing.T, program string) *agents.Sandbox {
	t.Helper()
	state, err := os.MkdirTemp(filepath.Dir(agentCache()), "state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	return &agents.Sandbox{Home: sb.home, Program: program, Config: filepath.Join(state, "config"), Sessions: filepath.Join(state, "sessions")}
}

// countFiles counts the files under dir whose names end in ext.
func countFiles(dir, ext string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
			n++
		}
		return nil
	})
	return n
}

func (sb *sandbox) write(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(sb.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// git runs git in the project.
func (sb *sandbox) git(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
	cmd.Dir = sb.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (sb *sandbox) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sb.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setPath puts dirs before the PATH of the sandbox's environment.
func (sb *sandbox) setPath(dirs ...string) {
	for i, kv := range sb.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			sb.env[i] = "PATH=" + strings.Join(append(dirs, v), string(os.PathListSeparator))
			return
		}
	}
	sb.env = append(sb.env, "PATH="+strings.Join(dirs, string(os.PathListSeparator)))
}

// TestRealAdapters runs each real agent, as its adapter's command line says, on a
// scenario, and checks what the adapter reads from its output: the final text, or the
// failure (mode E for a run out of turns). Each runs twice: as it is, and in a Sandbox
// with the agent's state folders in HOME writable (SPEC §15.2), where it must work the
// same.
func TestRealAdapters(t *testing.T) {
	tests := []realAdapterCase{
		{name: "claude success", agent: agents.Claude, scenario: "adapter.yaml", opts: agents.ModelOptions{Model: "sonnet", MaxTurns: 10},
			record: "claude-success.json", wantText: "```tdd-result\nrole: implementer"},
		{name: "claude out of turns", agent: agents.Claude, scenario: "max-turns.yaml", opts: agents.ModelOptions{Model: "sonnet", MaxTurns: 2},
			record: "claude-max-turns.json", wantExit: 1, wantErr: "agent claude: ran out of turns after 3 (Reached maximum number of turns (2))", wantMode: agents.ModeOutOfTurns},
		{name: "claude API error", agent: agents.Claude, scenario: "api-error.yaml", opts: agents.ModelOptions{Model: "sonnet", MaxTurns: 10},
			record: "claude-api-error.json", wantExit: 1, wantErr: "agent claude: reported an error (API status 400): API Error: 400 scripted bad request"},
		{name: "codex success", agent: agents.Codex, scenario: "adapter.yaml", opts: agents.ModelOptions{Model: codexModel, MaxTurns: 10},
			record: "codex-success.jsonl", wantText: "```tdd-result\nrole: implementer"},
		{name: "codex API error", agent: agents.Codex, scenario: "api-error.yaml", opts: agents.ModelOptions{Model: codexModel},
			record: "codex-api-error.jsonl", wantExit: 1, wantErr: "agent codex: turn failed: scripted bad request (invalid_request_error)"},
	}
	for _, tt := range tests {
		for _, jailed := range []bool{false, true} {
			name := tt.name
			if jailed {
				name += " in sandbox"
			}
			t.Run(name, func(t *testing.T) { runRealAdapter(t, tt, jailed) })
		}
	}
}

// A realAdapterCase is one run of TestRealAdapters.
type realAdapterCase struct {
	name     string
	agent    string
	scenario string
	opts     agents.ModelOptions
	record   string // file in testdata/recorded
	wantExit int
	wantText string // in the final text
	wantErr  string // in the AgentError
	wantMode string
}

func runRealAdapter(t *testing.T, tt realAdapterCase, jailed bool) {
	const prompt = "Write notes.txt with two lines, then change the second.\n"
	bin := realAgent(t, tt.agent)
	if jailed {
		requireBwrap(t)
	}
	sb := newSandbox(t, tt.scenario)
	a, err := agents.Lookup(tt.agent, nil)
	if err != nil {
		t.Fatal(err)
	}
	argv := a.Command(tt.opts)
	argv[0] = bin
	log := filepath.Join(sb.base, "agent.log")
	so := agents.StartOptions{Command: argv, Dir: sb.root, Prompt: prompt, Env: sb.env, LogPath: log}
	if jailed {
		so.Sandbox = sb.jail(t, tt.agent)
	}
	p, err := agents.Start(so)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(2 * time.Minute):
		p.Stop(time.Second)
		t.Fatalf("%s did not finish in 2 minutes:\n%s", tt.agent, p.Stdout())
	}
	p.Stop(time.Second)
	out := p.Stdout()
	if *record && !jailed {
		if err := os.WriteFile(filepath.Join("testdata", "recorded", tt.record), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := p.ExitCode(); code != tt.wantExit {
		t.Errorf("exit code %d, want %d; output:\n%s", code, tt.wantExit, out)
	}
	text, err := a.FinalText([]byte(out))
	if tt.wantErr == "" {
		if err != nil || !strings.Contains(text, tt.wantText) {
			t.Fatalf("FinalText = %q, %v; want text containing %q\noutput:\n%s", text, err, tt.wantText, out)
		}
	} else {
		var ae *agents.AgentError
		if !errors.As(err, &ae) || ae.Mode != tt.wantMode || !strings.Contains(err.Error(), tt.wantErr) {
			t.Fatalf("FinalText error = %v (mode %q), want an AgentError of mode %q containing %q\noutput:\n%s", err, modeOf(err), tt.wantMode, tt.wantErr, out)
		}
	}
	reqs := sb.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the server got no request")
	}
	wantAPI, wantModel, wantTools := modelserver.APIAnthropic, "sonnet", []string{"Write", "Edit", "Read", "Bash"}
	if tt.agent == agents.Codex {
		wantAPI, wantModel, wantTools = modelserver.APIResponses, codexModel, []string{"exec_command"}
	}
	first := reqs[0]
	if first.API != wantAPI || !strings.Contains(first.Model, wantModel) || !strings.Contains(first.UserText, strings.TrimSpace(prompt)) {
		t.Errorf("first request: API %s, model %q, user text %q; want %s, a %s model, and the prompt", first.API, first.Model, clip(first.UserText), wantAPI, wantModel)
	}
	for _, tool := range wantTools {
		if !slices.Contains(first.Tools, tool) {
			t.Errorf("the agent did not offer the tool %s; it offered %v", tool, first.Tools)
		}
	}
	if tt.scenario != "adapter.yaml" {
		return
	}
	if jailed {
		// The agent kept its state in its private folder, seeded from the person's,
		// which it did not change: Claude Code's sessions are kept, the folder is gone.
		js := so.Sandbox
		if _, err := os.Stat(js.Config); err == nil {
			t.Errorf("the private state folder %s outlived the run", js.Config)
		}
		if tt.agent == agents.Claude {
			if n := countFiles(js.Sessions, ".jsonl"); n == 0 {
				t.Errorf("claude kept no session in its private folder (%s)", js.Sessions)
			}
		}
		entries, _ := os.ReadDir(sb.home)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != ".codex" {
			t.Errorf("the person's home holds %q after the run, want only .codex", names)
		}
		if entries, _ := os.ReadDir(filepath.Join(sb.home, ".codex")); len(entries) != 1 {
			t.Errorf("the person's ~/.codex holds %d files after the run, want its config.toml alone", len(entries))
		}
	}
	if got := sb.read(t, "notes.txt"); got != "first line\nedited line\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(sb.outside, "escaped.txt")); err == nil {
		t.Errorf("the agent wrote outside its folder, to %s", filepath.Join(sb.outside, "escaped.txt"))
	}
	// The denied write comes back to the model as a failed tool call.
	last := reqs[len(reqs)-1]
	if len(last.ToolResults) != 2 {
		t.Fatalf("last request has %d tool results, want 2: %+v", len(last.ToolResults), last.ToolResults)
	}
	denied := last.ToolResults[1]
	if tt.agent == agents.Claude && (!denied.IsError || !strings.Contains(denied.Output, "permission")) {
		t.Errorf("claude's write outside its folder came back as %+v, want a permission error", denied)
	}
	if tt.agent == agents.Claude && !strings.Contains(out, `"permission_denials":[{"tool_name":"Write"`) {
		t.Errorf("claude's result does not list the denied Write:\n%s", out)
	}
}

func modeOf(err error) string {
	var ae *agents.AgentError
	if errors.As(err, &ae) {
		return ae.Mode
	}
	return ""
}

func clip(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

// orchestratorBin builds the orchestrator once for the test binary.
var orchestratorBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(agents.TestTempDir, "orchestrator")
	args := append(append([]string{"build", "-o", bin}, racebuild.Flags()...), "../cmd/orchestrator")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ../cmd/orchestrator: %v\n%s", err, out)
	}
	return bin, nil
})

// The small Go project of the end-to-end runs: a package with no code yet, a test writer's
// task and an implementer's task that depends on it.
const (
	goMod     = "module example.com/calc\n\ngo 1.22\n"
	calcDoc   = "// Package calc does arithmetic.\npackage calc\n"
	taskQueue = `# Task Queue

## Project Commands

| Command | Value |
|---------|-------|
| Test | go test ./... |

### TASK-T01: Tests for Add

| Field | Value |
|-------|-------|
| Status | pending |
| Category | testing |
| Mode | write |
| Test IDs | UNIT-001 |
| Test File | calc/calc_test.go |
| Test Command | go test ./... |
| Depends On | - |

**Objective:** Write a failing test for ` + "`calc.Add(a, b int) int`" + `, which returns a + b.

### TASK-001: Add

| Field | Value |
|-------|-------|
| Status | pending |
| Category | backend |
| Test Command | go test ./... |
| Depends On | TASK-T01 |

**Objective:** Implement ` + "`calc.Add`" + ` so that the tests of TASK-T01 pass.
`
	wantTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd_UNIT_001(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"
	wantCode = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a + b }\n"
)

// attemptTiming is how one attempt's time splits between the agent and the orchestrator.
type attemptTiming struct {
	run, task                        string
	elapsed, agentLife, before, gate time.Duration
}

var (
	timingsMu sync.Mutex
	timings   []attemptTiming
)

// TestRealWatch runs `orchestrator watch --once` on the small Go project with the real
// claude or codex as the agent, which the scripted model makes write the failing test
// (TASK-T01, RED) and then the code (TASK-001, GREEN), or lie, or tamper with the test.
func TestRealWatch(t *testing.T) {
	tests := []struct {
		name, agent, scenario string
		wantExit              int
		want001               string   // TASK-001's final status
		wantGate              []string // in TASK-001's gate.log
		wantCode              string   // calc/calc.go, "" for none
	}{
		{name: "claude tdd", agent: agents.Claude, scenario: "tdd.yaml", want001: queue.StatusCompleted,
			wantGate: []string{"decision: completed: claim verified"}, wantCode: wantCode},
		{name: "codex tdd", agent: agents.Codex, scenario: "tdd.yaml", want001: queue.StatusCompleted,
			wantGate: []string{"decision: completed: claim verified"}, wantCode: wantCode},
		{name: "claude false success", agent: agents.Claude, scenario: "false-success.yaml", wantExit: 1, want001: queue.StatusFailed,
			wantGate: []string{"claim: done", "undefined: Add", "decision: failed: claim rejected"}},
		{name: "codex false success", agent: agents.Codex, scenario: "false-success.yaml", wantExit: 1, want001: queue.StatusFailed,
			wantGate: []string{"claim: done", "undefined: Add", "decision: failed: claim rejected"}},
		{name: "claude test tampered", agent: agents.Claude, scenario: "tampered.yaml", wantExit: 1, want001: queue.StatusFailed,
			wantGate: []string{"decision: failed: claim rejected: test_tampered: calc/calc_test.go"}, wantCode: "package calc\n\n// Add returns 0.\nfunc Add(a, b int) int { return 0 }\n"},
		{name: "codex test tampered", agent: agents.Codex, scenario: "tampered.yaml", wantExit: 1, want001: queue.StatusFailed,
			wantGate: []string{"decision: failed: claim rejected: test_tampered: calc/calc_test.go"}, wantCode: "package calc\n\n// Add returns 0.\nfunc Add(a, b int) int { return 0 }\n"},
	}
	t.Cleanup(func() { logTimings(t) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := realAgent(t, tt.agent)
			orch, err := orchestratorBin()
			if err != nil {
				t.Fatal(err)
			}
			// The agents work in the orchestrator's worktree of the project (one job, so
			// always the first slot), as the scripted model's paths must say: under
			// $ORCHESTRATOR_WORKTREES, in the project's folder (named and hashed as package
			// worktree does), job-1.
			sb := newSandboxIn(t, tt.scenario, func(project, base string) string {
				sum := sha256.Sum256([]byte(filepath.Join(project, ".git")))
				return filepath.Join(base, "worktrees", fmt.Sprintf("project-%x", sum[:6]), "job-1")
			})
			sb.env = append(sb.env, "ORCHESTRATOR_WORKTREES="+filepath.Join(sb.base, "worktrees"))
			// A shim of the agent's name, first on PATH, runs the real program and records
			// when it started and ended, to split each attempt's time between the agent
			// and the orchestrator.
			shims := filepath.Join(sb.base, "shims")
			times := filepath.Join(sb.base, "agent-times")
			os.MkdirAll(shims, 0o755)
			shim := fmt.Sprintf("#!/bin/sh\nstart=$(date +%%s%%N)\n%s \"$@\"\ncode=$?\necho \"$ORCHESTRATOR_TASK_ID ${ORCHESTRATOR_ATTEMPT_DIR##*/} $start $(date +%%s%%N)\" >> %s\nexit $code\n",
				shellQuote(bin), shellQuote(times))
			if err := os.WriteFile(filepath.Join(shims, tt.agent), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			// Likewise for the gate's `go test` (run by the orchestrator, whose environment
			// has no ORCHESTRATOR_TASK_ID; the agents' own go commands pass straight on).
			goBin, err := exec.LookPath("go")
			if err != nil {
				t.Fatal(err)
			}
			goShim := fmt.Sprintf("#!/bin/sh\n[ -n \"$ORCHESTRATOR_TASK_ID\" ] && exec %s \"$@\"\nstart=$(date +%%s%%N)\n%s \"$@\"\ncode=$?\necho \"gate $start $(date +%%s%%N)\" >> %s\nexit $code\n",
				shellQuote(goBin), shellQuote(goBin), shellQuote(times))
			if err := os.WriteFile(filepath.Join(shims, "go"), []byte(goShim), 0o755); err != nil {
				t.Fatal(err)
			}
			sb.setPath(shims)

			sb.write(t, "go.mod", goMod)
			sb.write(t, "calc/doc.go", calcDoc)
			sb.write(t, ".orchestrator/task_queue.md", taskQueue)
			// The agent writes its marker a model turn before its final message: give it time to
			// finish on a loaded machine before the orchestrator ends it.
			// The agent runs through a shim in the test's temporary folder, which is private
			// in the sandbox: the sandboxed programs have TestRealSandbox.
			cfg := "agent: " + tt.agent + "\ngrace: 10s\ntask_timeout: 3m\nsandbox: off\n"
			if tt.agent == agents.Codex {
				cfg += "models: {easy: " + codexModel + ", normal: " + codexModel + ", complex: " + codexModel + "}\n"
			}
			sb.write(t, ".orchestrator/config.yaml", cfg)
			// One attempt each: a rejected claim is not retried (SPEC §8.3).
			sb.write(t, ".orchestrator/no_auto_retry", "")
			// Verified work lands as commits on the project's branch.
			sb.git(t, "init", "-q", "-b", "main")
			sb.write(t, ".git/info/exclude", ".orchestrator/\n")
			sb.git(t, "add", "-A")
			sb.git(t, "commit", "-q", "-m", "calc")

			cmd := exec.Command(orch, "--dir", sb.root, "watch", "--once")
			cmd.Dir, cmd.Env = sb.root, sb.env
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("orchestrator watch --once (exit %d):\n%s", code, out)
			gate, _ := os.ReadFile(filepath.Join(sb.root, ".orchestrator", "runs", "TASK-001", "1", "gate.log"))
			if tt.scenario == "tampered.yaml" && !strings.Contains(string(gate), "test_tampered") {
				// Everything else follows from this one decision: report it alone.
				t.Fatalf("the implementer edited calc/calc_test.go after RED and the gate did not fail the attempt as test_tampered (SPEC §7.3); TASK-001 gate.log:\n%s", gate)
			}
			t.Logf("TASK-001 gate.log:\n%s", gate)
			if code != tt.wantExit {
				t.Errorf("exit code %d, want %d", code, tt.wantExit)
			}

			// The queue, the files the agent wrote, the attempt folders.
			doc, err := queue.Load(filepath.Join(sb.root, ".orchestrator", "task_queue.md"))
			if err != nil {
				t.Fatal(err)
			}
			status := map[string]string{}
			for _, task := range doc.Tasks() {
				status[task.ID] = task.Status
			}
			if status["TASK-T01"] != queue.StatusCompleted || status["TASK-001"] != tt.want001 {
				t.Errorf("statuses %v, want TASK-T01 completed and TASK-001 %s", status, tt.want001)
			}
			if tt.scenario == "tampered.yaml" {
				// The implementer's edit of the test is in its rejected candidate only.
				diff, _ := os.ReadFile(filepath.Join(sb.root, ".orchestrator", "runs", "TASK-001", "1", "changes.diff"))
				if !strings.Contains(string(diff), "+\tif got := Add(2, 3); got != 0 {") {
					t.Errorf("changes.diff lacks the implementer's edit of the test:\n%s", diff)
				}
			}
			// The person's tree holds what landed: the RED test, and the code when it was
			// verified. A rejected attempt's changes are only in its changes.diff.
			if got := sb.read(t, "calc/calc_test.go"); got != wantTest {
				t.Errorf("calc/calc_test.go =\n%s\nwant\n%s", got, wantTest)
			}
			landed := tt.want001 == queue.StatusCompleted
			if got, err := os.ReadFile(filepath.Join(sb.root, "calc", "calc.go")); landed && string(got) != tt.wantCode || !landed && err == nil {
				t.Errorf("calc/calc.go = %q (%v), want %q", got, err, map[bool]string{true: tt.wantCode, false: "nothing (rejected)"}[landed])
			}
			if !landed && tt.wantCode != "" {
				diff, _ := os.ReadFile(filepath.Join(sb.root, ".orchestrator", "runs", "TASK-001", "1", "changes.diff"))
				for _, line := range strings.Split(strings.TrimSpace(tt.wantCode), "\n") {
					if !strings.Contains(string(diff), "+"+line) {
						t.Errorf("changes.diff lacks +%s:\n%s", line, diff)
					}
				}
			}
			a, _ := agents.Lookup(tt.agent, nil)
			for _, id := range []string{"TASK-T01", "TASK-001"} {
				dir := filepath.Join(sb.root, ".orchestrator", "runs", id, "1")
				for _, f := range []string{"prompt.md", "agent.log", "result.json", "gate.log", id + ".done"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						t.Errorf("attempt folder of %s: %v", id, err)
					}
				}
				var res struct {
					Agent   string    `json:"agent"`
					Command []string  `json:"command"`
					Outcome string    `json:"outcome"`
					Started time.Time `json:"started"`
					Elapsed string    `json:"elapsed"`
				}
				b, _ := os.ReadFile(filepath.Join(dir, "result.json"))
				if err := json.Unmarshal(b, &res); err != nil {
					t.Fatalf("%s result.json: %v", id, err)
				}
				if res.Agent != tt.agent || len(res.Command) == 0 || res.Command[0] != tt.agent {
					t.Errorf("%s result.json: agent %q, command %q; want the built-in %s", id, res.Agent, res.Command, tt.agent)
				}
				// The agent's log holds output that its adapter reads: the final message
				// with the result block.
				log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
				if text, err := a.FinalText(log); err != nil || !strings.Contains(text, "```tdd-result") {
					t.Errorf("%s agent.log: FinalText = %q, %v", id, clip(text), err)
				}
				recordTiming(t, tt.name, id, times, res.Started, res.Elapsed)
			}
			for _, want := range tt.wantGate {
				if !strings.Contains(string(gate), want) {
					t.Errorf("TASK-001 gate.log does not say %q:\n%s", want, gate)
				}
			}
			t01Gate, _ := os.ReadFile(filepath.Join(sb.root, ".orchestrator", "runs", "TASK-T01", "1", "gate.log"))
			if !strings.Contains(string(t01Gate), "claim verified") || !strings.Contains(string(t01Gate), "undefined: Add") {
				t.Errorf("TASK-T01 gate.log:\n%s", t01Gate)
			}

			// What the model server got: each agent's prompt (prompt.md) as its user
			// message, by the agent's API, for the configured model.
			wantAPI, wantModel := modelserver.APIAnthropic, "sonnet"
			if tt.agent == agents.Codex {
				wantAPI, wantModel = modelserver.APIResponses, codexModel
			}
			reqs := sb.srv.Requests()
			for _, id := range []string{"TASK-T01", "TASK-001"} {
				prompt, _ := os.ReadFile(filepath.Join(sb.root, ".orchestrator", "runs", id, "1", "prompt.md"))
				found := false
				for _, r := range reqs {
					if strings.Contains(r.UserText, strings.TrimSpace(string(prompt))) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no request holds %s's prompt.md as its user message", id)
				}
			}
			for i, r := range reqs {
				if r.API != wantAPI || !strings.Contains(r.Model, wantModel) {
					t.Errorf("request %d: API %s, model %q; want %s and a %s model", i+1, r.API, r.Model, wantAPI, wantModel)
				}
			}
		})
	}
}

// recordTiming reads the agent's start and end from the shims' file, and the gate's go
// commands (those that ran between the agent's end and the attempt's end), and keeps the
// split of the attempt's time.
func recordTiming(t *testing.T, run, task string, times string, started time.Time, elapsed string) {
	t.Helper()
	total, err := time.ParseDuration(elapsed)
	if err != nil {
		t.Errorf("%s: result.json elapsed %q: %v", task, elapsed, err)
		return
	}
	b, _ := os.ReadFile(times)
	x := attemptTiming{run: run, task: task, elapsed: total}
	var agentEnd int64
	var gates [][2]int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		nums := make([]int64, len(f))
		for i := range f {
			nums[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		switch {
		case len(f) == 4 && f[0] == task && f[1] == "1":
			agentEnd = nums[3]
			x.agentLife = time.Duration(nums[3] - nums[2])
			x.before = time.Unix(0, nums[2]).Sub(started)
		case len(f) == 3 && f[0] == "gate":
			gates = append(gates, [2]int64{nums[1], nums[2]})
		}
	}
	if agentEnd == 0 {
		t.Errorf("%s: the shim recorded no agent times", task)
		return
	}
	end := started.Add(total).UnixNano()
	for _, g := range gates {
		if g[0] >= agentEnd && g[1] <= end {
			x.gate += time.Duration(g[1] - g[0])
		}
	}
	timingsMu.Lock()
	timings = append(timings, x)
	timingsMu.Unlock()
}

// logTimings prints the split of each attempt's time (result.json's elapsed: from the
// attempt's start to its recorded decision) between the agent process's lifetime and the
// orchestrator's own time, the rest. The orchestrator's time is split further: "before" the
// agent (attempt folder, prompt, process start), the gate's test command, and the rest
// (waiting for the agent's process group to end, reading its output, hashing and comparing
// files, recording). "gate" is the time of the go commands the gate ran.
func logTimings(t *testing.T) {
	timingsMu.Lock()
	defer timingsMu.Unlock()
	if len(timings) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %-9s %8s %8s %13s %8s %8s %8s\n", "run", "task", "attempt", "agent", "orchestrator", "before", "gate", "rest")
	for _, x := range timings {
		own := x.elapsed - x.agentLife
		fmt.Fprintf(&b, "%-22s %-9s %8s %8s %13s %8s %8s %8s\n", x.run, x.task, ms(x.elapsed), ms(x.agentLife), ms(own), ms(x.before), ms(x.gate), ms(own-x.before-x.gate))
	}
	t.Logf("time per attempt (ms):\n%s", b.String())
	timings = nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestRealSandbox runs each real agent in a Sandbox, on a scenario where, after its work,
// it tries to get out with a shell command: to write outside its folder, to leave a file
// in /tmp, and to start a process that leaves its group and session and acts after the
// agent's end. Codex runs with its own sandbox (workspace-write, bubblewrap inside
// bubblewrap) and with it relaxed (danger-full-access), where nesting fails.
func TestRealSandbox(t *testing.T) {
	tests := []struct {
		name, agent string
		opts        agents.ModelOptions
		relax       bool // codex: --sandbox danger-full-access
	}{
		{name: "claude", agent: agents.Claude, opts: agents.ModelOptions{Model: "sonnet", MaxTurns: 10}},
		{name: "codex", agent: agents.Codex, opts: agents.ModelOptions{Model: codexModel}},
		{name: "codex relaxed", agent: agents.Codex, opts: agents.ModelOptions{Model: codexModel}, relax: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := realAgent(t, tt.agent)
			requireBwrap(t)
			sb := newSandbox(t, "sandbox.yaml")
			a, err := agents.Lookup(tt.agent, nil)
			if err != nil {
				t.Fatal(err)
			}
			argv := a.Command(tt.opts)
			argv[0] = bin
			if tt.relax {
				i := slices.Index(argv, "workspace-write")
				if i < 0 {
					t.Fatalf("no workspace-write in %q", argv)
				}
				argv[i] = "danger-full-access"
			}
			p, err := agents.Start(agents.StartOptions{Command: argv, Dir: sb.root, Prompt: "Write notes.txt.\n", Env: sb.env,
				LogPath: filepath.Join(sb.base, "agent.log"), Sandbox: sb.jail(t, tt.agent)})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(2 * time.Minute):
				p.Stop(time.Second)
				t.Fatalf("%s did not finish in 2 minutes:\n%s", tt.agent, p.Stdout())
			}
			if err := os.WriteFile(filepath.Join(sb.root, "agent-ended"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			out := p.Stdout()
			if text, err := a.FinalText([]byte(out)); p.ExitCode() != 0 || err != nil || !strings.Contains(text, "```tdd-result") {
				t.Fatalf("exit code %d, FinalText = %q, %v; want 0 and the result block\noutput:\n%s", p.ExitCode(), clip(text), err, out)
			}
			if got := sb.read(t, "notes.txt"); got != "first line\n" {
				t.Errorf("notes.txt = %q", got)
			}
			if _, err := os.Stat(filepath.Join(sb.outside, "escaped.txt")); err == nil {
				t.Error("the agent's shell wrote outside its folder")
			}
			if _, err := os.Stat(filepath.Join("/tmp", "private-"+filepath.Base(sb.outside))); err == nil {
				t.Error("the agent's file in /tmp is visible outside its sandbox")
			}
			// The escapee would write late.txt within 0.1 s of agent-ended; a second is
			// plenty, and it was ended with the agent anyway.
			time.Sleep(time.Second)
			if _, err := os.Stat(filepath.Join(sb.root, "late.txt")); err == nil {
				t.Error("a process the agent started outlived it and wrote late.txt")
			}
		})
	}
}
