package plan_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/plan"
	"github.com/orchestrator/orchestrator/queue"
)

// orchestratorBin and agentBin are the orchestrator and internal/testagent programs, built
// once for the test run: the tests run `orchestrator plan` as a person does, with the
// scripted planner as its agent.
var orchestratorBin, agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plan-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	orchestratorBin = filepath.Join(dir, "orchestrator")
	agentBin = filepath.Join(dir, "testagent")
	for bin, pkg := range map[string]string{orchestratorBin: "../cmd/orchestrator", agentBin: "../internal/testagent"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
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

// A repo is a project set up for planning: `orchestrator init`, a requirements file, a test
// plan, and the scripted planner as the configured agent.
type repo struct {
	root string
}

// newRepo makes the project with the given test plan (JSON) and config lines added to the
// planner's agent entry (e.g. "sandbox: off").
func newRepo(t *testing.T, planJSON string, config ...string) *repo {
	t.Helper()
	r := &repo{root: t.TempDir()}
	git := exec.Command("git", "init", "-q", r.root)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, code := r.orch(t, nil, "init"); code != 0 {
		t.Fatalf("orchestrator init: exit %d\n%s", code, out)
	}
	r.write(t, "projectspec/test-plan-output.json", planJSON)
	r.write(t, "docs/requirements.md", "# Calculator\n\nIt adds, multiplies and divides integers. Division by zero is an error.\n")
	r.write(t, "README.md", "# calc\n")
	// The scripted planner's settings come from the orchestrator's environment: they pass
	// into the sandbox, whose environment is otherwise cleared, as config agent_env.
	cfg := "agent: planner\nagents:\n  planner: {command: [" + agentBin + "]}\n" +
		"agent_env: [TESTAGENT_MODE, TESTAGENT_FROMFILE, TESTAGENT_SH, TESTAGENT_WORK, TESTAGENT_PLAN, TESTAGENT_ROLE, TESTAGENT_MARKER, TESTAGENT_STATE, TESTAGENT_MESSAGE, TESTAGENT_STARTLOG]\n" +
		strings.Join(config, "\n") + "\n"
	r.write(t, ".orchestrator/config.yaml", cfg)
	return r
}

func (r *repo) write(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(r.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *repo) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// orch runs the orchestrator in the project with env added, and returns its standard output
// and exit code (standard error is logged).
func (r *repo) orch(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(orchestratorBin, args...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if stderr.Len() > 0 {
		t.Logf("orchestrator %s: stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), code
}

// planner is the environment of the scripted planner: per round, the file of tasks it
// writes to its scratch file (relative to the project), each round taking a second.
func planner(rounds ...string) []string {
	var entries []string
	for i, f := range rounds {
		entries = append(entries, fmt.Sprintf("%d=planner TESTAGENT_FROMFILE=%s TESTAGENT_WORK=1s", i+1, f))
	}
	return []string{"TESTAGENT_MODE=plan", "TESTAGENT_PLAN=" + strings.Join(entries, "; ")}
}

// planOutput is the output of `plan --json`.
type planOutput struct {
	Outcome  string       `json:"outcome"`
	Reason   string       `json:"reason"`
	Rounds   []plan.Round `json:"rounds"`
	New      []string     `json:"new_tasks"`
	Report   string       `json:"report"`
	Coverage *struct {
		Percent   int `json:"percent"`
		PlanCount int `json:"plan_count"`
		Mapped    int `json:"mapped_count"`
	} `json:"coverage"`
	Text string `json:"queue_text"`
}

func decode(t *testing.T, out string) planOutput {
	t.Helper()
	var p planOutput
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan --json output: %v\n%s", err, out)
	}
	return p
}

// lineOf returns the line of the first occurrence of s in text (1-based), failing the test
// when there is none.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	i := strings.Index(text, s)
	if i < 0 {
		t.Fatalf("%q not found", s)
	}
	return strings.Count(text[:i], "\n") + 1
}

// findingTexts returns findings as validate prints them, one a string.
func findingTexts(fs []queue.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// promptOf returns the prompt of round n of the first run, and checks that the planner read
// exactly it: the scripted planner prints the SHA-256 of what it read.
func (r *repo) promptOf(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(".orchestrator", "runs", "plan", "1", fmt.Sprint(n))
	prompt := r.read(t, filepath.Join(dir, "prompt.md"))
	log := r.read(t, filepath.Join(dir, "agent.log"))
	if want := fmt.Sprintf("prompt sha256 %x", sha256.Sum256([]byte(prompt))); !strings.Contains(log, want) {
		t.Errorf("round %d: the planner did not read prompt.md (want %q in its log):\n%s", n, want, log)
	}
	return prompt
}

// withFindings is the prompt of a first round with the rejected output's findings added, and
// nothing else: what a retry's prompt must be.
func withFindings(first, findings string) string {
	section := "\n\n## The check rejected your last tasks\n\nThe scratch file still holds them. These are the findings of `orchestrator validate`,\nunedited:\n\n```\n" + findings + "```"
	return strings.Replace(first, "\n\n## Finishing", section+"\n\n## Finishing", 1)
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }
