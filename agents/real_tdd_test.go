package agents_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/queue"
)

// calFR is a requirement of two acceptance criteria.
const calFR = `# CAL-1: Arithmetic

## Acceptance Criteria

- AC-CAL.1: Add returns the sum of two integers.
- AC-CAL.2: Sub returns the difference of two integers.
`

// TestRealTDD runs `orchestrator tdd CAL-1` with the real claude or codex as every agent
// of the cycle, the scripted model playing an honest test writer, two implementers and a
// refactorer (testdata/scenarios/tdd-cycle.yaml): each step is verified and lands, and
// the implementer of AC-CAL.2 is sent nothing of AC-CAL.1's text.
func TestRealTDD(t *testing.T) {
	for _, name := range []string{agents.Claude, agents.Codex, "claude re-emits"} {
		t.Run(name, func(t *testing.T) {
			scenario := "tdd-cycle.yaml"
			if name == "claude re-emits" {
				// The test writer's first answer has no block: its re-emit attempt resumes
				// its session (tdd-reemit.yaml checks the request).
				name, scenario = agents.Claude, "tdd-reemit.yaml"
			}
			bin := realAgent(t, name)
			orch, err := orchestratorBin()
			if err != nil {
				t.Fatal(err)
			}
			sb := newSandboxIn(t, scenario, func(project, base string) string {
				sum := sha256.Sum256([]byte(filepath.Join(project, ".git")))
				return filepath.Join(base, "worktrees", fmt.Sprintf("project-%x", sum[:6]), "job-1")
			})
			sb.env = append(sb.env, "ORCHESTRATOR_WORKTREES="+filepath.Join(sb.base, "worktrees"))
			sb.setPath(filepath.Dir(bin))
			sb.write(t, "go.mod", goMod)
			sb.write(t, "calc/doc.go", calcDoc)
			sb.write(t, "specs/frs/CAL-1.md", calFR)
			sb.write(t, ".orchestrator/task_queue.md", "# Task Queue\n\n## Project Commands\n\n| Command | Value |\n|---------|-------|\n| Test | go test ./... |\n")
			cfg := "agent: " + name + "\ngrace: 10s\ntask_timeout: 3m\nsandbox: off\n"
			if name == agents.Codex {
				cfg += "models: {easy: " + codexModel + ", normal: " + codexModel + ", complex: " + codexModel + "}\n"
				sb.codexWritable(t) // sandbox: off, as above
			}
			sb.write(t, ".orchestrator/config.yaml", cfg)
			sb.git(t, "init", "-q", "-b", "main")
			sb.write(t, ".git/info/exclude", ".orchestrator/\n")
			sb.git(t, "add", "-A")
			sb.git(t, "commit", "-q", "-m", "calc")

			cmd := exec.Command(orch, "--dir", sb.root, "tdd", "CAL-1")
			cmd.Dir, cmd.Env = sb.root, sb.env
			out, err := cmd.CombinedOutput()
			t.Logf("orchestrator tdd CAL-1:\n%s", out)
			if err != nil {
				t.Fatalf("orchestrator tdd CAL-1: %v", err)
			}
			doc, err := queue.Load(filepath.Join(sb.root, ".orchestrator", "task_queue.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range doc.Tasks() {
				if tk.Status != queue.StatusCompleted {
					t.Errorf("%s is %s, want completed", tk.ID, tk.Status)
				}
			}
			log, _ := exec.Command("git", "-C", sb.root, "log", "--format=%s").Output()
			want := "TASK-CAL-1-AC2: Make the tests of AC-CAL.2 pass\nTASK-CAL-1-AC1: Make the tests of AC-CAL.1 pass\nTASK-CAL-1-RED: Failing tests for every acceptance criterion of CAL-1\ncalc\n"
			if string(log) != want {
				t.Errorf("the branch's log:\n%s\nwant (the refactor changed nothing, so it lands no commit):\n%s", log, want)
			}
			if got := sb.read(t, "calc/calc.go"); !strings.Contains(got, "return a - b") {
				t.Errorf("calc/calc.go:\n%s", got)
			}
			// What the model was sent for AC-CAL.2: its own text and test, not AC-CAL.1's.
			prompt, _ := os.ReadFile(filepath.Join(sb.root, ".orchestrator", "runs", "TASK-CAL-1-AC2", "1", "prompt.md"))
			found := false
			for _, r := range sb.srv.Requests() {
				if !strings.Contains(r.UserText, "## Task TASK-CAL-1-AC2") {
					continue
				}
				found = found || strings.Contains(r.UserText, strings.TrimSpace(string(prompt)))
				for _, other := range []string{"Add returns the sum", "AC-CAL.1", "TestAC_CAL_1"} {
					if strings.Contains(r.UserText, other) {
						t.Errorf("the request for AC-CAL.2 holds %q", other)
					}
				}
			}
			if !found {
				t.Errorf("no request holds AC2's prompt.md")
			}
		})
	}
}
