package watch_test

// End-to-end tests of the isolation between the agent and the judge (SPEC §1 principle 7,
// §7.1, §7.5–7.7, §15; issue 12). Each test runs the real binary with a cheating agent (the
// test agent's script mode: a shell snippet run in its worktree with the ORCHESTRATOR_*
// variables, the orchestrator binary on its PATH) and checks that the cheat fails, or has no
// effect, with evidence that says why; and runs the same project with an honest agent, which
// completes.
//
// Some cheats can only be stopped by the sandbox (SPEC §15.2 item 2): the agent writes where
// the orchestrator keeps what it trusts. Their subtests run the agents in the sandbox
// (repo.sandboxed).

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// sandboxReady: the sandbox is wired in; the subtests of cheats only it stops run in it.
const sandboxReady = true

// agentPath is a PATH on which the agent finds the orchestrator binary, as it would on a
// person's machine.
func agentPath() string {
	return "PATH=" + filepath.Dir(orchestratorBin) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// scriptAgent is the environment of an agent that runs the shell snippet sh in its
// worktree, then claims done (its result block and marker).
func scriptAgent(sh string, env ...string) []string {
	return append([]string{"TESTAGENT_MODE=script", "TESTAGENT_SH=" + sh, agentPath()}, env...)
}

// fieldOf returns a task's field as the queue holds it now.
func fieldOf(r *repo, id, name string) string {
	r.t.Helper()
	d, err := queue.Load(filepath.Join(r.root, ".orchestrator", "task_queue.md"))
	if err != nil {
		r.t.Fatalf("queue does not parse: %v", err)
	}
	rec, ok := d.Record(id)
	if !ok {
		r.t.Fatalf("no task %s", id)
	}
	return d.Get(rec, name)
}

// head returns the commit the integration branch (main) points at.
func head(r *repo) string {
	r.t.Helper()
	return r.git("rev-parse", "refs/heads/main")
}

// commitsSince returns the commits of main after base, oldest first.
func commitsSince(r *repo, base string) []string {
	r.t.Helper()
	out := r.git("rev-list", "--reverse", base+"..refs/heads/main")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// filesOf returns the paths a commit changed against its parent.
func filesOf(r *repo, commit string) []string {
	r.t.Helper()
	out := r.git("diff-tree", "--no-commit-id", "--name-only", "-r", commit+"^", commit)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// onlyPersonsTree fails the test unless `git worktree list` shows the person's tree alone:
// no slot of an agent or of the gate is left behind (SPEC §7.1).
func onlyPersonsTree(r *repo) {
	r.t.Helper()
	var trees []string
	for _, line := range strings.Split(r.git("worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			trees = append(trees, p)
		}
	}
	root, _ := filepath.EvalSymlinks(r.root)
	if len(trees) != 1 || trees[0] != root && trees[0] != r.root {
		r.t.Errorf("git worktree list shows %v, want only the person's tree %s", trees, r.root)
	}
}

// attemptEnvAlive returns the live processes that carry an attempt folder of task id in
// their ORCHESTRATOR_ATTEMPT_DIR, as "pid: dir".
func attemptEnvAlive(r *repo, id string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	// This repository's attempts only: other tests run beside this one.
	want := []byte(r.root + "/.git/orchestrator/runs/" + id + "/")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue
			}
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("ORCHESTRATOR_ATTEMPT_DIR=")); ok && bytes.Contains(append(v, '/'), want) {
				out = append(out, fmt.Sprintf("%d: %s", pid, v))
			}
		}
	}
	return out
}

// statusLine returns the line of `orchestrator status` about task id.
func statusLine(r *repo, id string) string {
	r.t.Helper()
	code, out := r.run("status")
	if code != 0 {
		r.t.Fatalf("status: exit %d\n%s", code, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), id+" ") {
			return sc.Text()
		}
	}
	r.t.Fatalf("status does not list %s:\n%s", id, out)
	return ""
}

// evidence returns attempt n's gate.log and result.json (their readable copies), for
// failure messages and for the reason a cheat was refused.
func evidence(r *repo, id string, n int) string {
	dir := filepath.Join(r.root, ".orchestrator", "runs", id, strconv.Itoa(n))
	g, _ := os.ReadFile(filepath.Join(dir, "gate.log"))
	res, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	return string(g) + string(res)
}

// TestIsolationAgentCompletesItself (cheat 1): the agent marks its own task completed, with
// `orchestrator set` (on its PATH) or with sed on the queue it finds beside its marker
// folder. `completed` is the gate's word (SPEC §7.1 item 7): the task is shown as completed
// by hand, with no Commit, watch --once exits 1, and nothing lands. (Under the sandbox the
// queue is out of the agent's reach: its write fails and the task is not completed at all.)
func TestIsolationAgentCompletesItself(t *testing.T) {
	t.Parallel()
	const set = `orchestrator --dir "$ORCHESTRATOR_MARKER_DIR/../.." set "$ORCHESTRATOR_TASK_ID" Status=completed`
	const sed = `sed -i 's/| in_progress |/| completed |/' "$ORCHESTRATOR_MARKER_DIR/../task_queue.md"`
	tests := []struct {
		name   string
		env    []string
		honest bool
		// forged: the agent also fills in the Commit field.
		forged bool
		// worked: the agent also did the work, so its candidate passes the gate.
		worked bool
	}{
		{name: "honest", env: []string{"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=package calc"}, honest: true},
		{name: "orchestrator set, then exit at once", env: scriptAgent(set, "TESTAGENT_MARKER=none")},
		{name: "orchestrator set, then linger", env: scriptAgent(set+"; sleep 1", "TESTAGENT_MARKER=none")},
		{name: "sed on the queue, then exit at once", env: scriptAgent(sed, "TESTAGENT_MARKER=none")},
		{name: "sed on the queue, then linger", env: scriptAgent(sed+"; sleep 1", "TESTAGENT_MARKER=none")},
		{name: "orchestrator set with a forged Commit", env: scriptAgent(set+` Commit="$(git rev-parse HEAD)"; sleep 1`, "TESTAGENT_MARKER=none"), forged: true},
		// "; true": where the sandbox refuses the set, the agent goes on and claims done.
		{name: "work done, orchestrator set, marker", env: scriptAgent(set+"; true", "TESTAGENT_WRITE=calc.go=package calc"), worked: true},
	}
	for _, tt := range tests {
		for _, sandboxed := range []bool{false, true} {
			name := tt.name
			if sandboxed {
				name += " (sandbox)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "test -f calc.go"}},
					map[string][]string{"honest": tt.env}, "")
				if sandboxed {
					r.sandboxed()
				}
				r.commitAll()
				base := head(r)
				code, out := r.run("watch", "--once")
				line := statusLine(r, "TASK-001")
				commit := fieldOf(r, "TASK-001", "Commit")
				verified := code == 0 && r.statuses()["TASK-001"] == "completed" && !queue.IsEmpty(commit) && !strings.Contains(line, "by hand")
				switch {
				case tt.honest, sandboxed && tt.worked:
					// Honest, or a cheat the sandbox refused beside honest work: verified.
					if !verified {
						t.Errorf("exit %d, status line %q, Commit %q; want exit 0, completed with its commit\n%s\n%s", code, line, commit, out, evidence(r, "TASK-001", 1))
					}
					if commit != head(r) {
						t.Errorf("Commit %q, want the landed head %s", commit, head(r))
					}
					onlyPersonsTree(r)
					r.noneLeft()
					return
				case sandboxed:
					// The queue is out of the sandboxed agent's reach: its write fails, and
					// so does its attempt.
					if st := r.statuses()["TASK-001"]; st == "completed" || code != 1 {
						t.Errorf("TASK-001 is %s (%q), exit %d: the sandboxed agent wrote the queue", st, line, code)
					}
				default:
					if code != 1 {
						t.Errorf("watch --once exited %d, want 1: a task was completed by hand while its attempt ran\n%s", code, out)
					}
					if !strings.Contains(line, "completed by hand") {
						t.Errorf("status shows %q, want \"completed by hand\" (Commit %q)", line, commit)
					}
				}
				if !tt.forged && !queue.IsEmpty(commit) {
					t.Errorf("Commit is %q, want empty: no verified commit", commit)
				}
				if got := head(r); got != base {
					t.Errorf("the integration branch moved from %s to %s: nothing was verified", base, got)
				}
				onlyPersonsTree(r)
				r.noneLeft()
			})
		}
	}
}

// TestIsolationRedEvidence (cheat 2): the implementer rewrites its TEST dependency's test so
// that it passes trivially, and rewrites or deletes the RED hand-off that records the test's
// hash. The GREEN gate trusts only its own record, in the orchestrator's state: it refuses
// (test_tampered). The state copy is within the agent's reach until the sandbox makes it
// read-only; rewritten without the sandbox, its seal fails and it is not evidence; deleting
// it fails closed.
func TestIsolationRedEvidence(t *testing.T) {
	t.Parallel()
	// A test that passes whatever Discount does, and a Discount that is wrong.
	const tamper = `cat > cart/discount_test.go <<'EOF'
package cart

import "testing"

func TestDiscount_UNIT_001(t *testing.T) {}
EOF
cat > cart/discount.go <<'EOF'
package cart

import "example.com/shop/money"

func Discount(c money.Cents, p int64) money.Cents { return 0 }
EOF
old=$(git show HEAD:cart/discount_test.go | sha256sum | cut -c1-64)
new=$(sha256sum < cart/discount_test.go | cut -c1-64)
`
	// The same on the pytest project.
	const pyTamper = `cat > tests/test_discount.py <<'EOF'
def test_unit_001_discount():
    pass
EOF
cat > shop/discount.py <<'EOF'
def discount(cents, p):
    return 0
EOF
old=$(git show HEAD:tests/test_discount.py | sha256sum | cut -c1-64)
new=$(sha256sum < tests/test_discount.py | cut -c1-64)
`
	const readable = `"$ORCHESTRATOR_MARKER_DIR/../runs/TASK-T01/1/handoff-red.json"`
	const state = `"$ORCHESTRATOR_ATTEMPT_DIR/../../TASK-T01/1/handoff-red.json"`
	// rewrite puts the tampered test's hash in a hand-off. Where the hand-off is out of
	// reach (the sandbox) the agent says so and claims done all the same: its gate decides.
	rewrite := func(path string) string {
		return `sed -i "s/$old/$new/" ` + path + `; grep -q "$new" ` + path + ` || echo "could not rewrite ` + path + `"`
	}
	tests := []struct {
		name, sh string
		honest   bool
		sandbox  string // why only the sandbox stops it ("" if the gate does)
		want     string // in the reason
		py       bool   // on the pytest project, else the Go module
		earlier  bool   // `orchestrator run TASK-T01` before watch
	}{
		{name: "honest", honest: true},
		{name: "test edited", sh: tamper, want: "cart/discount_test.go"},
		{name: "readable copy rewritten", sh: tamper + rewrite(readable), want: "cart/discount_test.go"},
		{name: "readable copy deleted", sh: tamper + `rm ` + readable + `; true`, want: "cart/discount_test.go"},
		{name: "state copy deleted", sh: tamper + `rm ` + state + `; true`, want: "TASK-T01"},
		// The same, with the TEST task completed by an earlier run: the BUILD task starts
		// in a write of its own, not in the one that completed its dependency.
		{name: "state copy deleted, RED from an earlier run", sh: tamper + `rm ` + state + `; true`, want: "TASK-T01", earlier: true},
		{name: "state copy rewritten", sh: tamper + rewrite(state) + "\n" + rewrite(readable),
			want: "cart/discount_test.go", sandbox: "the RED record in .git/orchestrator/runs is writable by the agent without it"},
		// Without the sandbox the agent can rewrite the record, but not seal it: the record
		// is not evidence, and GREEN fails closed on the TEST task.
		{name: "state copy rewritten, without the sandbox", sh: tamper + rewrite(state) + "\n" + rewrite(readable), want: "TASK-T01"},
		{name: "pytest honest", honest: true, py: true},
		{name: "pytest readable copy rewritten", sh: pyTamper + rewrite(readable), want: "tests/test_discount.py", py: true},
		{name: "pytest state copy deleted", sh: pyTamper + `rm ` + state + `; true`, want: "TASK-T01", py: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fixture, command, redFiles, greenFiles, impl := "gomod", goTest, goRedFiles, goGreenFiles, "cart/discount.go"
			if tt.py {
				needPytest(t)
				fixture, command, redFiles, greenFiles, impl = "pyproj", pyTest, pyRedFiles, pyGreenFiles, "shop/discount.py"
			}
			builder := slowAgent("implementer", 0, 0, files(t, greenFiles))
			if !tt.honest {
				builder = scriptAgent(tt.sh)
			}
			redDir := files(t, redFiles)
			r := newRealRepo(t, fixture, command, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
				{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
			}, map[string][]string{"writer": slowAgent("test-writer", 0, 0, redDir), "builder": builder}, "")
			r.write(".orchestrator/no_auto_retry", "")
			if tt.sandbox != "" {
				// Only the sandbox stops this one: run the agents in it (with the test's
				// side channels in /tmp reachable).
				r.sandboxed(filepath.Dir(r.starts), redDir)
			}
			if tt.earlier {
				if code, out := r.run("run", "TASK-T01"); code != 0 {
					t.Fatalf("run TASK-T01: exit %d\n%s", code, out)
				}
			}
			code, out := r.run("watch", "--once")
			st := r.statuses()
			if st["TASK-T01"] != "completed" {
				t.Fatalf("TASK-T01 is %q, want completed (its writer is honest)%s\n%s", st["TASK-T01"], r.describeAttempts("TASK-T01"), out)
			}
			redHead := fieldOf(r.repo, "TASK-T01", "Commit")
			if log, _ := os.ReadFile(filepath.Join(r.root, ".orchestrator/runs/TASK-001/1/agent.log")); !sandboxReady && bytes.Contains(log, []byte("could not rewrite")) {
				t.Fatalf("the cheat did not happen: the agent could not rewrite a hand-off:\n%s", log)
			}
			if tt.honest {
				if code != 0 || st["TASK-001"] != "completed" {
					t.Errorf("honest implementer: exit %d, TASK-001 %q; want 0, completed%s\n%s", code, st["TASK-001"], r.describeAttempts("TASK-001"), out)
				}
				onlyPersonsTree(r.repo)
				r.noneLeft()
				return
			}
			if st["TASK-001"] == "completed" || code == 0 {
				t.Errorf("TASK-001 is %q (exit %d) after tampering with its RED test, want not completed%s", st["TASK-001"], code, r.describeAttempts("TASK-001"))
			}
			res := r.result("TASK-001", 1)
			if res["failure_type"] != "test_tampered" || !strings.Contains(fmt.Sprint(res["reason"]), tt.want) {
				t.Errorf("attempt 1: %v: %v; want test_tampered naming %s\n%s", res["failure_type"], res["reason"], tt.want, evidence(r.repo, "TASK-001", 1))
			}
			if got := head(r.repo); got != redHead {
				t.Errorf("the integration branch moved past the RED commit %s to %s", redHead, got)
			}
			if b, _ := os.ReadFile(filepath.Join(r.root, impl)); len(b) > 0 {
				t.Errorf("the tampered implementation reached the person's tree:\n%s", b)
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}

// TestIsolationRejectedAttemptDoesNotPoison (cheat 3): a test writer's first attempt also
// writes the implementation (and an ignored file, and a stray one) and is refused as
// scope_violation; its second attempt writes only the test. The second attempt's worktree
// holds nothing of the first: its RED passes because the implementation is missing.
func TestIsolationRejectedAttemptDoesNotPoison(t *testing.T) {
	t.Parallel()
	red, green := files(t, goRedFiles), files(t, goGreenFiles)
	sh := `n=$(basename "$ORCHESTRATOR_ATTEMPT_DIR")
for f in cart/discount.go cart/discount_test.go leftover.out cart/scratch.txt; do
	if [ -e "$f" ]; then echo "attempt $n finds $f, left by an earlier attempt"; exit 3; fi
done
cp -R "$RED/." .
if [ "$n" = 1 ]; then
	cp -R "$GREEN/." .
	echo junk > leftover.out
	echo junk > cart/scratch.txt
fi`
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
	}, map[string][]string{"writer": scriptAgent(sh, "TESTAGENT_ROLE=test-writer", "RED="+red, "GREEN="+green)}, "retries: {max_retries: 1}\n")
	code, out := r.run("watch", "--once")
	if code != 0 || r.statuses()["TASK-T01"] != "completed" {
		t.Errorf("exit %d, TASK-T01 %q; want 0, completed at attempt 2%s\n%s", code, r.statuses()["TASK-T01"], r.describeAttempts("TASK-T01"), out)
	}
	res := r.result("TASK-T01", 1)
	if res["failure_type"] != "scope_violation" || !strings.Contains(fmt.Sprint(res["reason"]), "cart/discount.go") {
		t.Errorf("attempt 1: %v: %v; want scope_violation naming cart/discount.go", res["failure_type"], res["reason"])
	}
	if res := r.result("TASK-T01", 2); res["outcome"] != "completed" {
		t.Errorf("attempt 2: %v: %v; want completed (RED, the implementation missing)\n%s", res["outcome"], res["reason"], evidence(r.repo, "TASK-T01", 2))
	}
	if b, err := os.ReadFile(filepath.Join(r.root, ".orchestrator/runs/TASK-T01/2/agent.log")); err == nil && bytes.Contains(b, []byte("left by an earlier attempt")) {
		t.Errorf("attempt 2's worktree held attempt 1's files:\n%s", b)
	}
	for _, f := range []string{"cart/discount.go", "leftover.out", "cart/scratch.txt"} {
		if _, err := os.Stat(filepath.Join(r.root, f)); err == nil {
			t.Errorf("%s, from the rejected attempt, is in the person's tree", f)
		}
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestIsolationParallelTestWriters (cheat 4): at --jobs 2, two test writers work at once,
// each on its own test file. Neither is blamed for the other's file, both complete, and the
// history is linear: one commit per task, each holding only its own file.
func TestIsolationParallelTestWriters(t *testing.T) {
	t.Parallel()
	taxRed := map[string]string{"tax/reduced_test.go": `package tax

import (
	"testing"

	"example.com/shop/money"
)

func TestReduced_UNIT_002(t *testing.T) {
	if got := Reduced.On(money.Cents(1000)); got != 50 {
		t.Errorf("reduced tax = %v, want 0.50", got)
	}
}
`}
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer1", testIDs: "UNIT-001"},
		{id: "TASK-T02", category: "testing", mode: "write", agent: "writer2", testIDs: "UNIT-002"},
	}, map[string][]string{
		"writer1": slowAgent("test-writer", time.Second, 0, files(t, goRedFiles)),
		"writer2": slowAgent("test-writer", time.Second, 0, files(t, taxRed)),
	}, "")
	r.write(".orchestrator/no_auto_retry", "")
	base := head(r.repo)
	code, out := r.run("watch", "--once", "--jobs", "2")
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out)
	}
	for _, id := range []string{"TASK-T01", "TASK-T02"} {
		if st := r.statuses()[id]; st != "completed" {
			t.Errorf("%s is %q, want completed%s\n%s", id, st, r.describeAttempts(id), evidence(r.repo, id, 1))
		}
		if dirs := r.attemptDirs(id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want one", id, dirs)
		}
	}
	if merges := r.git("rev-list", "--merges", base+"..refs/heads/main"); merges != "" {
		t.Errorf("merge commits on the integration branch: %s", merges)
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 2 {
		t.Fatalf("commits since the fixture: %v, want 2 (one per task)", commits)
	}
	want := map[string]string{"TASK-T01": "cart/discount_test.go", "TASK-T02": "tax/reduced_test.go"}
	for _, c := range commits {
		msg := r.git("log", "-1", "--format=%B", c)
		for id, f := range want {
			if strings.Contains(msg, "Orchestrator-Task: "+id) {
				if got := filesOf(r.repo, c); !slices.Equal(got, []string{f}) {
					t.Errorf("%s's commit %.12s holds %v, want only %s", id, c, got, f)
				}
				delete(want, id)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("no commit for %v", want)
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestIsolationPersonsFileDuringAttempt (cheat 5's setting): while a test writer works, the
// person writes watch.log in the repository root and edits a tracked file, uncommitted.
// Neither is the agent's change: the test writer completes, and both are there, untouched,
// after the landing.
func TestIsolationPersonsFileDuringAttempt(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
	}, map[string][]string{"writer": slowAgent("test-writer", 1500*time.Millisecond, 0, files(t, goRedFiles))}, "")
	r.write(".orchestrator/no_auto_retry", "")
	w := r.start("watch", "--once")
	r.waitLog("TASK-T01", 1, "working: step 1")
	const log = "12:00 started watch\n"
	r.write("watch.log", log)
	goMod := r.read("go.mod") + "// edited by the person, uncommitted\n"
	r.write("go.mod", goMod)
	code := w.wait(t, 60*time.Second)
	if code != 0 || r.statuses()["TASK-T01"] != "completed" {
		t.Errorf("exit %d, TASK-T01 %q; want 0, completed%s\n%s\n%s", code, r.statuses()["TASK-T01"], r.describeAttempts("TASK-T01"), w.out.String(), evidence(r.repo, "TASK-T01", 1))
	}
	if got := r.read("watch.log"); got != log {
		t.Errorf("watch.log is %q, want the person's %q", got, log)
	}
	if got := r.read("go.mod"); got != goMod {
		t.Errorf("go.mod is %q, want the person's uncommitted edit %q", got, goMod)
	}
	if _, err := os.Stat(filepath.Join(r.root, "cart/discount_test.go")); err != nil {
		t.Errorf("the landed test is not in the person's tree: %v", err)
	}
	if st := r.git("status", "--porcelain"); !strings.Contains(st, "?? watch.log") || !strings.Contains(st, "M go.mod") {
		t.Errorf("git status %q, want watch.log untracked and go.mod modified", st)
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestIsolationChangeList (cheat 6): the change list is git's, whatever a file's kind, size
// or time and wherever it lies. A test writer that adds a symbolic link, edits a file
// keeping its size and putting its modification time back, changes a mode, deletes or
// renames a file, or adds one under vendor/ or a target/ folder at any depth, is refused as
// scope_violation naming the file.
func TestIsolationChangeList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sh string
		want     []string // named in the reason; none for the honest writer
	}{
		{name: "honest"},
		{name: "symlink", sh: `ln -s ../money/money.go cart/link`, want: []string{"cart/link"}},
		{name: "same size, time put back", sh: `ref=$(mktemp) && touch -r money/money.go "$ref" && sed -i 's/(v + 50)/(v + 49)/' money/money.go && touch -r "$ref" money/money.go && grep -q 'v + 49' money/money.go`,
			want: []string{"money/money.go"}},
		{name: "mode", sh: `chmod +x money/money.go`, want: []string{"money/money.go"}},
		{name: "deleted", sh: `rm tax/tax.go`, want: []string{"tax/tax.go"}},
		{name: "renamed", sh: `mv money/money.go money/cents.go`, want: []string{"money/cents.go"}},
		{name: "vendor", sh: `mkdir -p vendor/example.com/evil && echo 'package evil' > vendor/example.com/evil/evil.go`, want: []string{"vendor/example.com/evil/evil.go"}},
		{name: "target", sh: `mkdir -p a/target && echo 'package target' > a/target/gen.go`, want: []string{"a/target/gen.go"}},
		{name: "deep target", sh: `mkdir -p x/y/target/z && echo data > x/y/target/z/out.bin`, want: []string{"x/y/target/z/out.bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := scriptAgent(tt.sh, "TESTAGENT_ROLE=test-writer", "TESTAGENT_FROM="+files(t, goRedFiles))
			if tt.sh == "" {
				env = slowAgent("test-writer", 0, 0, files(t, goRedFiles))
			}
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
			}, map[string][]string{"writer": env}, "")
			r.write(".orchestrator/no_auto_retry", "")
			base := head(r.repo)
			code, out := r.run("watch", "--once")
			st := r.statuses()["TASK-T01"]
			if tt.want == nil {
				if code != 0 || st != "completed" {
					t.Errorf("honest test writer: exit %d, %q; want 0, completed%s\n%s", code, st, r.describeAttempts("TASK-T01"), out)
				}
				onlyPersonsTree(r.repo)
				return
			}
			if st == "completed" || code == 0 {
				t.Errorf("TASK-T01 is %q (exit %d), want not completed%s", st, code, r.describeAttempts("TASK-T01"))
			}
			res := r.result("TASK-T01", 1)
			for _, f := range tt.want {
				if res["failure_type"] != "scope_violation" || !strings.Contains(fmt.Sprint(res["reason"]), f) {
					t.Errorf("attempt 1: %v: %v; want scope_violation naming %s\n%s", res["failure_type"], res["reason"], f, evidence(r.repo, "TASK-T01", 1))
				}
			}
			if got := head(r.repo); got != base {
				t.Errorf("the integration branch moved from %s to %s", base, got)
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}

// TestIsolationSetsidChild (cheat 7): the agent does honest work, starts a child in a
// session of its own (setsid) and exits. The child would overwrite the file in the gate's
// checkout and in the agent's worktree while the gate runs (the test command takes a
// second). The gate's result must not be affected, and once the run is over no process of
// the attempt is alive. A child that also drops the attempt's variable from its environment
// is not found by it: SPEC §15.2 item 3 (child subreaper) must end it without a sandbox.
func TestIsolationSetsidChild(t *testing.T) {
	t.Parallel()
	// The child rewrites calc.go in the gate's checkout (beside the agent's worktree) until
	// it is ended, and keeps a diary so that the test can tell whether it ever acted.
	child := `echo started >> "$DIARY"; while :; do d="$ROOT/../gate"; if [ -f "$d/calc.go" ] && ! grep -q broken "$d/calc.go"; then echo broken > "$d/calc.go" && echo "wrote $d/calc.go" >> "$DIARY"; fi; sleep 0.02; done`
	// The agent exits only once its child has left its process group, so that the end of
	// the agent's group cannot take the child with it.
	const waitChild = "\n" + `until grep -q started "$DIARY" 2>/dev/null; do sleep 0.01; done`
	tests := []struct {
		name, sh string
	}{
		{name: "honest", sh: `echo honest > calc.go`},
		{name: "setsid child", sh: `echo honest > calc.go; ROOT=$ORCHESTRATOR_ROOT setsid sh -c '` + child + `' </dev/null >/dev/null 2>&1 &` + waitChild},
		{name: "setsid child without the attempt's variable", sh: `echo honest > calc.go; ROOT=$ORCHESTRATOR_ROOT setsid env -u ORCHESTRATOR_ATTEMPT_DIR sh -c '` + child + `' </dev/null >/dev/null 2>&1 &` + waitChild},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			diary := filepath.Join(t.TempDir(), "diary")
			r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "sleep 1; grep -q honest calc.go"}},
				map[string][]string{"honest": scriptAgent(tt.sh, "DIARY="+diary)}, "")
			code, out := r.run("watch", "--once")
			if code != 0 || r.statuses()["TASK-001"] != "completed" {
				d, _ := os.ReadFile(diary)
				t.Errorf("exit %d, TASK-001 %q; want 0, completed: the gate's checkout is its own\nthe child wrote to:\n%s\n%s\n%s", code, r.statuses()["TASK-001"], d, out, evidence(r, "TASK-001", 1))
			}
			if got, err := os.ReadFile(filepath.Join(r.root, "calc.go")); err != nil || string(got) != "honest\n" {
				t.Errorf("the person's calc.go is %q (%v), want the judged \"honest\"", got, err)
			}
			if left := attemptEnvAlive(r, "TASK-001"); len(left) > 0 {
				t.Errorf("processes of the attempt still alive after the run: %v", left)
			}
			if alive := r.agentsAlive(); len(alive) > 0 {
				t.Errorf("processes the agent started still alive after the run: %v", alive)
			}
			onlyPersonsTree(r)
			r.noneLeft()
		})
	}
}

// TestIsolationOrchestratorFolder (cheat 8): the agent writes under .orchestrator/ in its
// worktree, beside honest work: a copy of the queue where the folder is the person's alone
// (excluded from git), an edit of the queue where the person keeps it in git. Either is out
// of scope (SPEC §7.1 item 5), and nothing of it lands.
func TestIsolationOrchestratorFolder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sh string
		tracked  bool // the person commits the queue
		honest   bool
	}{
		{name: "honest", sh: `echo honest > calc.go`, honest: true},
		{name: "honest, queue tracked", sh: `echo honest > calc.go`, tracked: true, honest: true},
		{name: "copy of the queue", sh: `echo honest > calc.go; mkdir -p .orchestrator && cp "$ORCHESTRATOR_MARKER_DIR/../task_queue.md" .orchestrator/ && sed -i 's/| pending |/| completed |/' .orchestrator/task_queue.md`},
		{name: "tracked queue edited", sh: `echo honest > calc.go; sed -i 's/| pending |/| completed |/' .orchestrator/task_queue.md && grep -q completed .orchestrator/task_queue.md`, tracked: true},
		{name: "new file beside a tracked queue", sh: `echo honest > calc.go; echo '{}' > .orchestrator/baseline.json`, tracked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "grep -q honest calc.go"}},
				map[string][]string{"honest": scriptAgent(tt.sh)}, "")
			r.commitAll()
			if tt.tracked {
				r.git("add", "-f", ".orchestrator/task_queue.md", ".orchestrator/config.yaml")
				r.git("commit", "-q", "-m", "track the queue")
			}
			base := head(r)
			code, out := r.run("watch", "--once")
			st := r.statuses()["TASK-001"]
			landed := r.git("ls-tree", "-r", "--name-only", "refs/heads/main", "--", ".orchestrator")
			if tt.honest {
				if code != 0 || st != "completed" {
					t.Errorf("honest agent: exit %d, %q; want 0, completed\n%s\n%s", code, st, out, evidence(r, "TASK-001", 1))
				}
			} else {
				if st == "completed" || code == 0 {
					t.Errorf("TASK-001 is %q (exit %d), want not completed: the agent wrote under .orchestrator/\n%s", st, code, evidence(r, "TASK-001", 1))
				}
				res := evidence(r, "TASK-001", 1)
				if !strings.Contains(res, "scope_violation") || !strings.Contains(res, ".orchestrator/") {
					t.Errorf("the evidence does not name a scope_violation under .orchestrator/:\n%s", res)
				}
				if got := head(r); got != base {
					t.Errorf("the integration branch moved from %s to %s: %v", base, got, filesOf(r, got))
				}
			}
			wantLanded := ""
			if tt.tracked {
				wantLanded = ".orchestrator/config.yaml\n.orchestrator/task_queue.md"
			}
			if landed != wantLanded {
				t.Errorf(".orchestrator/ on the integration branch: %q, want %q", landed, wantLanded)
			}
			if tt.tracked {
				if diff := r.git("diff", base, "refs/heads/main", "--", ".orchestrator"); diff != "" {
					t.Errorf("the queue changed on the integration branch:\n%s", diff)
				}
			}
			onlyPersonsTree(r)
			r.noneLeft()
		})
	}
}

// TestIsolationAgentGit (cheat 9): the agent uses git in its worktree: it commits, moves its
// HEAD to a branch of its own or back a commit, spoils its index, or breaks the slot's .git
// file. The candidate is what differs in the files, on top of the attempt's base, whatever
// the agent's HEAD; the integration branch gets exactly one commit, the one the gate judged.
func TestIsolationAgentGit(t *testing.T) {
	t.Parallel()
	const commit = `git add -A && git -c user.name=agent -c user.email=agent@example.com commit -q -m 'agent commit'`
	tests := []struct {
		name, sh string
		// want are the files of the landed tree.
		want    []string
		sandbox string
	}{
		{name: "honest", sh: `echo honest > calc.go`, want: []string{"base.txt", "calc.go", "extra.txt"}},
		{name: "commits", sh: `echo honest > calc.go && ` + commit, want: []string{"base.txt", "calc.go", "extra.txt"}},
		{name: "own branch", sh: `git checkout -q -b agent-branch && echo honest > calc.go && ` + commit, want: []string{"base.txt", "calc.go", "extra.txt"}},
		{name: "reset back a commit", sh: `git reset -q --hard HEAD~1 && echo honest > calc.go`, want: []string{"base.txt", "calc.go"}},
		{name: "index spoiled", sh: `echo honest > calc.go && git update-index --assume-unchanged base.txt && echo spoiled > base.txt`,
			want: []string{"base.txt", "calc.go", "extra.txt"}},
		{name: ".git file broken", sh: `echo honest > calc.go && echo 'gitdir: /nonexistent' > .git`, want: []string{"base.txt", "calc.go", "extra.txt"}},
		{name: ".git file removed", sh: `echo honest > calc.go && rm .git`, want: []string{"base.txt", "calc.go", "extra.txt"}},
		// Under the sandbox the agent's git commands outside its worktree fail; it claims done
		// all the same.
		{name: ".git file pointed at the person's repository", sh: `printf 'gitdir: %s\n' "$ORCHESTRATOR_MARKER_DIR/../../.git" > .git; echo honest > calc.go; ` + commit + `; true`,
			want: []string{"base.txt", "calc.go", "extra.txt"}, sandbox: "the person's .git is writable by the agent without it"},
		{name: "integration branch moved by hand", sh: `echo honest > calc.go; git add -A; git update-ref refs/heads/main "$(git commit-tree -p HEAD -m 'agent commit' "$(git write-tree)")"; true`,
			want: []string{"base.txt", "calc.go", "extra.txt"}, sandbox: "the repository's refs are writable by the agent without it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "grep -q honest calc.go"}},
				map[string][]string{"honest": scriptAgent(tt.sh)}, "")
			if tt.sandbox != "" {
				r.sandboxed()
			}
			r.write("base.txt", "base\n")
			r.commitAll()
			r.write("extra.txt", "extra\n")
			r.commitAll()
			base := head(r)
			code, out := r.run("watch", "--once")
			if code != 0 || r.statuses()["TASK-001"] != "completed" {
				t.Fatalf("exit %d, TASK-001 %q; want 0, completed\n%s\n%s", code, r.statuses()["TASK-001"], out, evidence(r, "TASK-001", 1))
			}
			commits := commitsSince(r, base)
			if len(commits) != 1 {
				t.Fatalf("commits since the base: %v, want exactly the landed one\n%s", commits, r.git("log", "--format=%h %s", "-5", "refs/heads/main"))
			}
			c := commits[0]
			if msg := r.git("log", "-1", "--format=%B", c); !strings.Contains(msg, "Orchestrator-Task: TASK-001") || strings.Contains(msg, "agent commit") {
				t.Errorf("the landed commit is not the orchestrator's:\n%s", msg)
			}
			if p := r.git("rev-parse", c+"^"); p != base {
				t.Errorf("the landed commit's parent is %s, want the attempt's base %s", p, base)
			}
			if got := strings.Split(r.git("ls-tree", "-r", "--name-only", c), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("the landed tree holds %v, want %v", got, tt.want)
			}
			// What landed is what the gate judged: the candidate's tree.
			cand := r.git("rev-parse", "-q", "--verify", "refs/orchestrator/attempts/TASK-001/1^{tree}")
			if tree := r.git("rev-parse", c+"^{tree}"); cand != "" && tree != cand {
				t.Errorf("the landed tree %s is not the candidate's %s", tree, cand)
			}
			if tt.name == "index spoiled" {
				if got := r.git("show", c+":base.txt"); got != "spoiled" {
					t.Errorf("base.txt landed as %q: the edit the agent hid from its index is part of the change and must be what the gate judged", got)
				}
			}
			if log := r.git("log", "--format=%s", "refs/heads/main"); strings.Contains(log, "agent commit") {
				t.Errorf("the agent's own commit is on the integration branch:\n%s", log)
			}
			onlyPersonsTree(r)
			r.noneLeft()
		})
	}
}

// TestIsolationLandingConflict (cheat 10's setting): the person has uncommitted changes to a
// file the task changes, or an untracked file where it adds one. Landing would overwrite
// them: the task is blocked naming the path, the person's file is intact, and the branch did
// not move.
func TestIsolationLandingConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		person map[string]string // the person's uncommitted files
		want   string            // the path the reason names ("" for a clean landing)
	}{
		{name: "no edit", want: ""},
		{name: "edit of a file the task changes", person: map[string]string{"calc.go": "the person's edit\n"}, want: "calc.go"},
		{name: "untracked file where the task adds one", person: map[string]string{"new.go": "the person's new file\n"}, want: "new.go"},
		{name: "edit of another file", person: map[string]string{"other.go": "the person's edit\n"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "grep -q agent calc.go && test -f new.go"}},
				map[string][]string{"honest": scriptAgent(`echo agent > calc.go && echo agent > new.go`)}, "")
			r.write("calc.go", "v1\n")
			r.write("other.go", "v1\n")
			r.commitAll()
			r.uncommitted = true
			for f, text := range tt.person {
				r.write(f, text)
			}
			base := head(r)
			code, out := r.run("watch", "--once")
			for f, text := range tt.person {
				if got := r.read(f); got != text {
					t.Errorf("the person's %s is %q, want %q intact", f, got, text)
				}
			}
			if tt.want == "" {
				if code != 0 || r.statuses()["TASK-001"] != "completed" || head(r) == base {
					t.Errorf("exit %d, TASK-001 %q, head moved %v; want 0, completed, landed\n%s\n%s", code, r.statuses()["TASK-001"], head(r) != base, out, evidence(r, "TASK-001", 1))
				}
				if got := r.read("calc.go"); got != "agent\n" {
					t.Errorf("calc.go is %q after the landing, want the agent's", got)
				}
				onlyPersonsTree(r)
				return
			}
			if st := r.statuses()["TASK-001"]; st != "blocked" || code != 1 {
				t.Errorf("TASK-001 is %q (exit %d), want blocked, exit 1\n%s\n%s", st, code, out, evidence(r, "TASK-001", 1))
			}
			if why := fieldOf(r, "TASK-001", "Blocked-Reason"); !strings.Contains(why, tt.want) {
				t.Errorf("Blocked-Reason %q does not name %s", why, tt.want)
			}
			if got := head(r); got != base {
				t.Errorf("the integration branch moved from %s to %s", base, got)
			}
			if cand := r.git("rev-parse", "-q", "--verify", "refs/orchestrator/attempts/TASK-001/1"); cand == "" {
				t.Errorf("the candidate does not wait under its ref")
			}
			onlyPersonsTree(r)
			r.noneLeft()
		})
	}
}

// TestIsolationBreakTogether (cheat 11): at --jobs 2, two BUILD tasks edit different files;
// each passes alone, together the package does not build (both declare the same constant).
// One lands; the other is judged again on the new head, fails, and does not land. Two
// tasks that go together both land.
func TestIsolationBreakTogether(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b string
		together   bool
	}{
		{name: "compatible", a: "const Scale = 100\n", b: "const Half = 50\n", together: true},
		{name: "break together", a: "const Scale = 100\n", b: "const Scale = 100\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-001", category: "backend", agent: "a", testCommand: "go test ./money", exempt: true},
				{id: "TASK-002", category: "backend", agent: "b", testCommand: "go test ./money", exempt: true},
			}, map[string][]string{
				"a": slowAgent("implementer", 700*time.Millisecond, 0, files(t, map[string]string{"money/a.go": "package money\n\n" + tt.a})),
				"b": slowAgent("implementer", 700*time.Millisecond, 0, files(t, map[string]string{"money/b.go": "package money\n\n" + tt.b})),
			}, "")
			r.write(".orchestrator/no_auto_retry", "")
			base := head(r.repo)
			code, out := r.run("watch", "--once", "--jobs", "2")
			st := r.statuses()
			commits := commitsSince(r.repo, base)
			if tt.together {
				if code != 0 || st["TASK-001"] != "completed" || st["TASK-002"] != "completed" || len(commits) != 2 {
					t.Errorf("exit %d, %v, commits %v; want 0, both completed, two commits%s%s\n%s", code, st, commits, r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
				}
				onlyPersonsTree(r.repo)
				return
			}
			var done, failed []string
			for _, id := range []string{"TASK-001", "TASK-002"} {
				switch st[id] {
				case "completed":
					done = append(done, id)
				case "failed":
					failed = append(failed, id)
				}
			}
			if len(done) != 1 || len(failed) != 1 || code != 1 {
				t.Fatalf("exit %d, %v; want one completed and one failed, exit 1%s%s\n%s", code, st, r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
			}
			if res := r.result(failed[0], 1); !strings.Contains(fmt.Sprint(res["reason"]), "new integration head") {
				t.Errorf("%s: %v; want it rejected on the new integration head\n%s", failed[0], res["reason"], evidence(r.repo, failed[0], 1))
			}
			if len(commits) != 1 {
				t.Errorf("commits since the fixture: %v, want one (the task that landed first)", commits)
			}
			if out := git(t, r.root, "status", "--porcelain", "--", "money"); out != "" {
				t.Errorf("the person's money/ differs from the branch: %s", out)
			}
			if _, err := os.Stat(filepath.Join(r.root, "money/a.go")); err == nil {
				if _, err := os.Stat(filepath.Join(r.root, "money/b.go")); err == nil {
					t.Errorf("both money/a.go and money/b.go are in the person's tree: the package does not build")
				}
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}

// TestIsolationWorktreesAfterKill9 (cheat 12): after a kill -9 of watch while an agent works,
// and a restart that finishes the work, `git worktree list` shows only the person's tree.
// (Every other test here checks the same after its `watch --once`.)
func TestIsolationWorktreesAfterKill9(t *testing.T) {
	t.Parallel()
	for _, killAgent := range []bool{false, true} {
		t.Run(fmt.Sprintf("agent killed %v", killAgent), func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-001", category: "backend", agent: "builder", testCommand: "test -f cart/discount.go", exempt: true},
			}, map[string][]string{"builder": slowAgent("implementer", 1500*time.Millisecond, 0, files(t, goGreenFiles))}, "")
			w := r.start("watch", "--once")
			r.waitLog("TASK-001", 1, "working: step 1")
			w.kill9(t)
			if killAgent {
				r.killAgents("TASK-001")
			}
			w2 := r.start("watch", "--once")
			if code := w2.wait(t, 60*time.Second); code != 0 || r.statuses()["TASK-001"] != "completed" {
				t.Errorf("restarted watch: exit %d, TASK-001 %q; want 0, completed%s\n%s", code, r.statuses()["TASK-001"], r.describeAttempts("TASK-001"), w2.out.String())
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}
