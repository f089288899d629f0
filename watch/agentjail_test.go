package watch_test

// End-to-end tests of the agents' sandbox (SPEC §15.2 item 2, issue 25): least privilege. A
// probing agent, run as the program claude (the test agent under that name), reports what
// it can reach — a key under the home folder, secrets of the orchestrator's environment,
// the person's uncommitted file, the repository's git folder and the orchestrator's state,
// a host UNIX socket, the person's Claude Code settings, the canary kept in the gate's
// cache folder and the gate.log of its task's earlier attempt — writes hooks into
// ~/.claude/settings.json and its own configuration folder, and writes another task's
// marker. In the sandbox it reaches none of them, nothing it wrote reaches the person's
// home or the task's next attempt, the other task's marker is no claim, and its honest
// work still lands. The same probe with the sandbox off reaches them all, which shows that
// the probe itself works.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentProbe is the probing agent's shell snippet. It prints what it reached after
// "PROBE:", and on its second attempt only does the work (the first fails the gate, so
// that the task has a next attempt to look at).
const agentProbe = `seen=""
try() { if eval "$2" >/dev/null 2>&1; then seen="$seen $1"; fi; }
try ssh-key 'cat "$PROBE_KEY"'
try env-token 'test -n "$PROBE_SECRET_TOKEN"'
try env-aws 'test -n "$AWS_SECRET_ACCESS_KEY"'
try persons-file 'cat "$PROBE_ROOT/uncommitted.txt"'
try git-config 'cat "$PROBE_ROOT/.git/config"'
try state 'ls "$PROBE_ROOT/.git/orchestrator/index" | grep -q .'
try host-socket 'test -S "$PROBE_SOCK"'
try persons-settings 'grep -q person "$HOME/.claude/settings.json"'
try earlier-hooks 'grep -q evil "$HOME/.claude/settings.json" || grep -q evil "${CLAUDE_CONFIG_DIR:-$HOME/.claude}/settings.json"'
try seeded-login 'grep -q person-login "${CLAUDE_CONFIG_DIR:-$HOME/.claude}/.credentials.json"'
try other-marker 'echo done > "$ORCHESTRATOR_MARKER_DIR/TASK-002.done"'
try gate-canary 'grep -q token "$PROBE_GATE_CACHE/canary.json"'
try earlier-gate-log 'grep -q . "$PROBE_ROOT/.orchestrator/runs/TASK-001/1/gate.log"'
echo "PROBE:${seen:- nothing} :END"
mkdir -p "$HOME/.claude" && echo '{"hooks": "evil"}' > "$HOME/.claude/settings.json"
if [ -n "$CLAUDE_CONFIG_DIR" ]; then echo '{"hooks": "evil"}' > "$CLAUDE_CONFIG_DIR/settings.json"; fi
case "$ORCHESTRATOR_ATTEMPT_DIR" in */1) ;; *) echo honest > calc.go ;; esac
if [ -n "$CLAUDE_CONFIG_DIR" ] && git add -A && git commit -qm "the agent's own commit" && git log --format=%s -1 | grep -q "own commit"; then echo AGENT-COMMITTED; fi
`

func TestAgentSandboxProbe(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{true, false} {
		name := "sandbox off"
		if sandboxed {
			name = "sandbox"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A fake home, never the real one: a key, and the person's Claude Code login
			// and settings.
			home := t.TempDir()
			key := filepath.Join(home, ".ssh", "id_ed25519")
			writeFile(t, key, "PRIVATE KEY")
			settings := filepath.Join(home, ".claude", "settings.json")
			writeFile(t, settings, `{"person": true}`)
			writeFile(t, filepath.Join(home, ".claude", ".credentials.json"), `{"token": "person-login"}`)
			sock := hostSocket(t)

			r := newRepo(t, []task{
				{id: "TASK-001", category: "backend", testCommand: "grep -q honest calc.go"},
				{id: "TASK-002", category: "backend", testCommand: "grep -q honest calc.go", deps: "TASK-001"},
			}, map[string][]string{"honest": scriptAgent(agentProbe)}, "")
			// The test agent runs as the program claude: its sandbox is Claude Code's.
			claude := filepath.Join(t.TempDir(), "claude")
			if err := os.Symlink(agentBin, claude); err != nil {
				t.Fatal(err)
			}
			r.write(".orchestrator/config.yaml", strings.Replace(r.read(".orchestrator/config.yaml"), strconv.Quote(agentBin), strconv.Quote(claude), 1))
			os.Remove(filepath.Join(r.root, ".orchestrator", "no_auto_retry"))
			if sandboxed {
				r.sandboxed()
				// The probe's paths reach it (the sandbox clears every other variable, and
				// would else leave it probing "" for each); the secrets stay cleared.
				r.write(".orchestrator/config.yaml", r.read(".orchestrator/config.yaml")+"agent_env: [PROBE_KEY, PROBE_ROOT, PROBE_SOCK, PROBE_GATE_CACHE]\n")
			}
			r.commitAll()
			// The gate's cache folder, with a canary kept there as a sandboxed run keeps one
			// for a day: no agent may read it, nor an earlier attempt's gate.log, which names
			// the canary its gate planted.
			gateCache := t.TempDir()
			writeFile(t, filepath.Join(gateCache, "canary.json"), fmt.Sprintf(`{"token":"brolvatun","message":"brolvatun(7) = 60, want 400","drawn":%q}`, time.Now().UTC().Format(time.RFC3339)))
			r.uncommitted = true
			r.write("uncommitted.txt", "the person's work in progress")

			// Two runs of the task: its first attempt fails the gate, its second lands.
			var out string
			for range 2 {
				c := r.cmd("run", "TASK-001")
				c.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
					"ORCHESTRATOR_GATE_CACHE="+gateCache, "PROBE_GATE_CACHE="+gateCache, "GOCACHE="+goCache(t),
					"PROBE_SECRET_TOKEN=s3cret", "AWS_SECRET_ACCESS_KEY=s3cret",
					"PROBE_KEY="+key, "PROBE_ROOT="+r.root, "PROBE_SOCK="+sock)
				b, _ := c.CombinedOutput()
				out += string(b)
			}
			if st := r.statuses()["TASK-001"]; st != "completed" {
				t.Fatalf("TASK-001 %q, want completed: the probe's honest work must land%s\n%s", st, evidence(r, "TASK-001", 2), out)
			}
			if got := r.read("calc.go"); strings.TrimSpace(got) != "honest" {
				t.Errorf("calc.go = %q in the person's tree, want the agent's work", got)
			}
			probe := func(n string) string {
				log := r.read(filepath.Join(".orchestrator", "runs", "TASK-001", n, "agent.log"))
				_, seen, ok := strings.Cut(log, "PROBE: ")
				seen, _, _ = strings.Cut(seen, " :END")
				if !ok {
					t.Fatalf("attempt %s's agent.log holds no probe result:\n%s", n, log)
				}
				t.Logf("attempt %s's probe reached: %s", n, seen)
				return " " + seen + " "
			}
			first, second := probe("1"), probe("2")
			b, _ := os.ReadFile(settings)
			personsSettings := string(b)
			_, otherErr := os.Stat(filepath.Join(r.root, ".orchestrator", "complete", "TASK-002.done"))
			if sandboxed {
				// The private state folder was seeded with the person's login, and nothing
				// else of the person's reached the agent.
				if first != " seeded-login other-marker " {
					t.Errorf("in the sandbox the first attempt's probe reached %q, want only its seeded login and its own marker folder", first)
				}
				if second != first {
					t.Errorf("the second attempt's probe reached %q, want what the first did: what the first wrote did not reach it", second)
				}
				if personsSettings != `{"person": true}` {
					t.Errorf("the person's ~/.claude/settings.json = %q: the agent's hooks reached it", personsSettings)
				}
				if otherErr == nil {
					t.Error("the marker the agent wrote for TASK-002 reached the marker folder")
				}
				if st := r.statuses()["TASK-002"]; st != "pending" {
					t.Errorf("TASK-002 is %q, want pending: another task's marker changes nothing", st)
				}
				// Its own git folder: the agent's git add and commit worked, its work landed
				// (above), and its commit is not in the repository.
				if log := r.read(filepath.Join(".orchestrator", "runs", "TASK-001", "2", "agent.log")); !strings.Contains(log, "AGENT-COMMITTED") {
					t.Errorf("the agent's git commit did not work in the sandbox:\n%s", log)
				}
				if all := r.git("log", "--all", "--format=%s"); strings.Contains(all, "the agent's own commit") {
					t.Errorf("the agent's own commit reached the repository:\n%s", all)
				}
				return
			}
			for _, w := range []string{"ssh-key", "env-token", "env-aws", "persons-file", "git-config", "state", "host-socket", "persons-settings", "seeded-login", "other-marker", "gate-canary"} {
				if !strings.Contains(first, " "+w+" ") {
					t.Errorf("without the sandbox the probe did not reach %s (%q): the probe does not probe", w, first)
				}
			}
			if !strings.Contains(second, " earlier-gate-log ") {
				t.Errorf("without the sandbox the second attempt did not read the first's gate.log (%q): the probe does not probe", second)
			}
			if !strings.Contains(second, " earlier-hooks ") || !strings.Contains(personsSettings, "evil") {
				t.Errorf("without the sandbox the first attempt's hooks did not reach the person's settings (%q) or the second attempt (%q): the probe does not probe", personsSettings, second)
			}
			if otherErr != nil {
				t.Error("without the sandbox the probe's marker for TASK-002 is not in the marker folder: the probe does not probe")
			}
		})
	}
}
