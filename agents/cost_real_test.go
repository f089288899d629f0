package agents_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/queue"
)

// realLoop is one `orchestrator watch --once` of the real claude or codex on the small Go
// project, against a scenario of the scripted model.
type realLoop struct {
	sb   *sandbox
	orch string
}

// newRealLoop sets the project up as TestRealWatch does, with cfg added to its config.
func newRealLoop(t *testing.T, agent, scenario, cfg string) *realLoop {
	t.Helper()
	bin := realAgent(t, agent)
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
	sb.write(t, ".orchestrator/task_queue.md", taskQueue)
	config := "agent: " + agent + "\ngrace: 10s\ntask_timeout: 3m\nsandbox: off\n" + cfg
	if agent == agents.Codex {
		config += "models: {easy: " + codexModel + ", normal: " + codexModel + ", complex: " + codexModel + "}\n"
		sb.codexWritable(t) // sandbox: off, as TestRealTDD's
	}
	sb.write(t, ".orchestrator/config.yaml", config)
	sb.git(t, "init", "-q", "-b", "main")
	sb.write(t, ".git/info/exclude", ".orchestrator/\n")
	sb.git(t, "add", "-A")
	sb.git(t, "commit", "-q", "-m", "calc")
	return &realLoop{sb: sb, orch: orch}
}

// run runs the orchestrator with args in the project and returns its exit code and output.
func (l *realLoop) run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(l.orch, append([]string{"--dir", l.sb.root}, args...)...)
	cmd.Dir, cmd.Env = l.sb.root, l.sb.env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// attemptRecord is the part of result.json these tests read.
type attemptRecord struct {
	Outcome string    `json:"outcome"`
	Started time.Time `json:"started"`
	Elapsed string    `json:"elapsed"`
	Usage   []struct {
		Role  string       `json:"role"`
		Agent string       `json:"agent"`
		Usage agents.Usage `json:"usage"`
	} `json:"usage"`
	Spent *agents.Usage `json:"spent"`
}

func (l *realLoop) record(t *testing.T, id string, n int) attemptRecord {
	t.Helper()
	var res attemptRecord
	b, err := os.ReadFile(filepath.Join(l.sb.root, ".orchestrator", "runs", id, strconv.Itoa(n), "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s/%d result.json: %v", id, n, err)
	}
	return res
}

func (l *realLoop) field(t *testing.T, id, name string) string {
	t.Helper()
	d, err := queue.Load(filepath.Join(l.sb.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := d.Record(id)
	if !ok {
		t.Fatalf("no task %s", id)
	}
	return d.Get(rec, name)
}

// claudeReportedCost reads total_cost_usd from the result object in Claude Code's log, by
// hand: the figure the program computed itself.
func claudeReportedCost(t *testing.T, log []byte) float64 {
	t.Helper()
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		var r struct {
			Type string   `json:"type"`
			Cost *float64 `json:"total_cost_usd"`
		}
		if json.Unmarshal(line, &r) == nil && r.Type == "result" && r.Cost != nil {
			return *r.Cost
		}
	}
	t.Fatalf("no total_cost_usd in Claude Code's output:\n%s", log)
	return 0
}

// TestRealCost: the scripted model reports usage on every answer (cost.yaml); the real
// claude and codex, through watch, record per attempt the sums of their turns — Claude Code
// with the cost it computed itself, Codex priced with the config's prices — and per task
// the Cost and Tokens fields; `orchestrator cost` and `status` agree. The implementer's
// claims of a usage limit (in a file and its chat) and its usage line of almost nothing
// are not believed.
func TestRealCost(t *testing.T) {
	// The answers' usage of cost.yaml, turns 1-4 for the test writer, 5-8 for the
	// implementer: input 1000+100i, output 200+10i, cache read 300i, cache write 40+i.
	sums := func(from, to int) (in, out, read, write int64) {
		for i := int64(from); i <= int64(to); i++ {
			in, out, read, write = in+1000+100*i, out+200+10*i, read+300*i, write+40+i
		}
		return
	}
	for _, agent := range []string{agents.Claude, agents.Codex} {
		t.Run(agent, func(t *testing.T) {
			l := newRealLoop(t, agent, "cost.yaml", "prices: {"+codexModel+": {input_per_mtok: 1.25, output_per_mtok: 10, cached_per_mtok: 0.125}}\n")
			code, out := l.run(t, "watch", "--once")
			t.Logf("watch --once (exit %d):\n%s", code, out)
			if code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			var runTotal float64
			var runTokens int64
			for _, tc := range []struct {
				id       string
				from, to int
				role     string
			}{{"TASK-T01", 1, 4, agents.RoleTestWriter}, {"TASK-001", 5, 8, agents.RoleImplementer}} {
				res := l.record(t, tc.id, 1)
				if res.Outcome != "completed" || len(res.Usage) != 1 || res.Usage[0].Role != tc.role || res.Usage[0].Agent != agent || res.Spent == nil {
					t.Fatalf("%s result.json: %+v", tc.id, res)
				}
				u := *res.Spent
				in, outT, read, write := sums(tc.from, tc.to)
				var wantCost float64
				if agent == agents.Claude {
					// Claude Code counts cache reads and writes apart from the input, and
					// prices them itself: its figure is the one recorded.
					log, _ := os.ReadFile(filepath.Join(l.sb.root, ".orchestrator", "runs", tc.id, "1", "agent.log"))
					wantCost = claudeReportedCost(t, log)
					if wantCost <= 0 || u.CostSource != agents.CostFromAgent {
						t.Errorf("%s: Claude Code's cost %v, source %q", tc.id, wantCost, u.CostSource)
					}
					// It computes it from the tokens, at Sonnet's prices per million: $3
					// input, $15 output, $0.30 cache read, $3.75 cache write.
					if priced := (float64(in)*3 + float64(outT)*15 + float64(read)*0.3 + float64(write)*3.75) / 1e6; math.Abs(priced-wantCost) > 1e-9 {
						t.Errorf("%s: Claude Code's total_cost_usd %v is not its tokens at Sonnet's prices (%v)", tc.id, wantCost, priced)
					}
				} else {
					// Codex sees the cached tokens inside its input, and no cache writes;
					// it reports no money: the config's price of gpt-5.5 makes the cost.
					write = 0
					wantCost = (float64(in)*1.25 + float64(read)*0.125 + float64(outT)*10) / 1e6
					if u.CostSource != agents.CostFromPrices {
						t.Errorf("%s: cost source %q, want prices", tc.id, u.CostSource)
					}
				}
				got := func(p *int64) int64 {
					if p == nil {
						return -1
					}
					return *p
				}
				if got(u.InputTokens) != in || got(u.OutputTokens) != outT || got(u.CacheReadTokens) != read || got(u.CacheWriteTokens) != write {
					t.Errorf("%s: tokens in %d out %d cache read %d write %d; want %d %d %d %d", tc.id,
						got(u.InputTokens), got(u.OutputTokens), got(u.CacheReadTokens), got(u.CacheWriteTokens), in, outT, read, write)
				}
				if u.CostUSD == nil || math.Abs(*u.CostUSD-wantCost) > 1e-9 {
					t.Errorf("%s: cost %v, want %v", tc.id, u.CostUSD, wantCost)
				}
				if u.Turns == nil || *u.Turns < 1 {
					t.Errorf("%s: num_turns %v", tc.id, u.Turns)
				}
				tokens := in + outT + read + write
				if c, tok := l.field(t, tc.id, "Cost"), l.field(t, tc.id, "Tokens"); c != fmt.Sprintf("$%.4f", wantCost) || tok != strconv.FormatInt(tokens, 10) {
					t.Errorf("%s: Cost %q, Tokens %q; want $%.4f and %d", tc.id, c, tok, wantCost, tokens)
				}
				runTotal += wantCost
				runTokens += tokens
			}
			// The implementer's claims of a limit were not believed: one attempt, completed.
			if st := l.field(t, "TASK-001", "Status"); st != queue.StatusCompleted || strings.Contains(out, "rate_limited") {
				t.Errorf("TASK-001 %s; output:\n%s", st, out)
			}

			code, js := l.run(t, "cost", "--json")
			if code != 0 {
				t.Fatalf("cost --json: exit %d\n%s", code, js)
			}
			var rep struct {
				Tasks []struct {
					Task     string   `json:"task"`
					Verified *float64 `json:"verified_usd"`
					Rejected *float64 `json:"rejected_usd"`
					Tokens   *int64   `json:"tokens"`
				} `json:"tasks"`
				Agents []struct {
					Agent string   `json:"agent"`
					Total *float64 `json:"total_usd"`
				} `json:"agents"`
				Run struct {
					Total  *float64 `json:"total_usd"`
					Tokens *int64   `json:"tokens"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatalf("cost --json: %v\n%s", err, js)
			}
			if rep.Run.Total == nil || math.Abs(*rep.Run.Total-runTotal) > 1e-9 || rep.Run.Tokens == nil || *rep.Run.Tokens != runTokens ||
				len(rep.Agents) != 1 || rep.Agents[0].Agent != agent || len(rep.Tasks) != 2 || *rep.Tasks[1].Rejected != 0 {
				t.Errorf("cost --json disagrees (want $%v, %d tokens):\n%s", runTotal, runTokens, js)
			}
			_, text := l.run(t, "cost")
			t.Logf("orchestrator cost:\n%s", text)
			_, status := l.run(t, "status")
			t.Logf("orchestrator status:\n%s", status)
			if !strings.Contains(status, fmt.Sprintf("cost: $%.4f", runTotal)) {
				t.Errorf("status does not show the total $%.4f:\n%s", runTotal, status)
			}
		})
	}
}

// TestRealRateLimit: the model API answers the implementer's first request with HTTP 429
// rate_limit_error. The real program reports it in its structured output (Claude Code's
// error result with api_error_status 429; Codex's error event "exceeded retry limit, last
// status: 429"); neither gives a reset time, so watch waits rate_limit_wait (2s here)
// before that agent starts again. The attempt is not a failure and uses no retry (auto
// retry is off: a failure would end the task failed), and the task then completes.
func TestRealRateLimit(t *testing.T) {
	for _, agent := range []string{agents.Claude, agents.Codex} {
		t.Run(agent, func(t *testing.T) {
			l := newRealLoop(t, agent, "rate-limit.yaml", "rate_limit_wait: 2s\n")
			// Claude Code retries a 429 ten times over minutes before it reports it; the
			// test asks it to report the first (Codex's config already has no retries).
			l.sb.env = append(l.sb.env, "CLAUDE_CODE_MAX_RETRIES=0")
			l.sb.write(t, ".orchestrator/no_auto_retry", "")
			code, out := l.run(t, "watch", "--once")
			t.Logf("watch --once (exit %d):\n%s", code, out)
			if code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			first, second := l.record(t, "TASK-001", 1), l.record(t, "TASK-001", 2)
			if first.Outcome != "rate_limited" || second.Outcome != "completed" {
				t.Fatalf("TASK-001 attempts: %s then %s; want rate_limited then completed", first.Outcome, second.Outcome)
			}
			elapsed, _ := time.ParseDuration(first.Elapsed)
			if gap := second.Started.Sub(first.Started.Add(elapsed)); gap < 2*time.Second-100*time.Millisecond {
				t.Errorf("the next attempt started %v after the limit, want at least rate_limit_wait 2s", gap)
			}
			if rc := l.field(t, "TASK-001", "Retry-Count"); !queue.IsEmpty(rc) && rc != "0" {
				t.Errorf("Retry-Count %q: a rate limit used a retry", rc)
			}
			if !strings.Contains(out, "rate_limited: "+agent+" reported a rate or usage limit") || !strings.Contains(out, "no "+agent+" agent starts before") {
				t.Errorf("watch did not say it waits:\n%s", out)
			}
			issues, _ := os.ReadFile(filepath.Join(l.sb.root, ".orchestrator", "issue_queue.md"))
			if strings.Contains(string(issues), "TASK-001") {
				t.Errorf("a rate limit opened an issue:\n%s", issues)
			}
		})
	}
}

// TestRealCostRejected: the real claude's implementer claims done without code first
// (cost-retry.yaml); the gate rejects it and the retry does the work. `orchestrator cost`
// puts the first attempt's cost, as Claude Code reported it, under rejected attempts and
// the second's under verified work; the task's Cost is both.
func TestRealCostRejected(t *testing.T) {
	l := newRealLoop(t, agents.Claude, "cost-retry.yaml", "")
	code, out := l.run(t, "watch", "--once")
	t.Logf("watch --once (exit %d):\n%s", code, out)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	reported := func(id string, n int) float64 {
		log, _ := os.ReadFile(filepath.Join(l.sb.root, ".orchestrator", "runs", id, strconv.Itoa(n), "agent.log"))
		return claudeReportedCost(t, log)
	}
	rejected, verified, red := reported("TASK-001", 1), reported("TASK-001", 2), reported("TASK-T01", 1)
	if first := l.record(t, "TASK-001", 1); first.Outcome != "failed" || first.Spent == nil || first.Spent.Tokens() == nil || *first.Spent.Tokens() != 5350 {
		t.Errorf("TASK-001 attempt 1: %+v", first)
	}
	if c := l.field(t, "TASK-001", "Cost"); c != fmt.Sprintf("$%.4f", rejected+verified) {
		t.Errorf("TASK-001 Cost %q, want $%.4f", c, rejected+verified)
	}
	code, js := l.run(t, "cost", "--json")
	if code != 0 {
		t.Fatalf("cost --json: exit %d\n%s", code, js)
	}
	var rep struct {
		Tasks []struct {
			Task     string   `json:"task"`
			Verified *float64 `json:"verified_usd"`
			Rejected *float64 `json:"rejected_usd"`
			Attempts int      `json:"attempts"`
		} `json:"tasks"`
		Run struct {
			Verified *float64 `json:"verified_usd"`
			Rejected *float64 `json:"rejected_usd"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }
	if len(rep.Tasks) != 2 || rep.Tasks[1].Attempts != 2 || !near(rep.Tasks[1].Rejected, rejected) || !near(rep.Tasks[1].Verified, verified) ||
		!near(rep.Run.Verified, verified+red) || !near(rep.Run.Rejected, rejected) {
		t.Errorf("cost --json (want TASK-001 rejected %v, verified %v; TASK-T01 %v):\n%s", rejected, verified, red, js)
	}
	_, text := l.run(t, "cost")
	t.Logf("orchestrator cost:\n%s", text)
	_, status := l.run(t, "status")
	t.Logf("orchestrator status:\n%s", status)
}
