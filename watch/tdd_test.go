package watch_test

// End-to-end tests of `orchestrator tdd FR-ID` (SPEC §9): the real binary, a Go module of
// three packages and a pytest project that already have passing tests, one requirement
// with three acceptance criteria, and slow scripted agents (internal/testagent), one per
// task of the cycle, some honest and some cheating.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/rogpeppe/go-internal/txtar"
)

// A cycleRepo is a project with a requirement file, run through `orchestrator tdd`.
type cycleRepo struct {
	*realRepo
	fr     string
	files  map[string]string // the cycle fixture's files, by path
	byTask string            // TESTAGENT_BYTASK: <task ID>.env per task
	// shared, when set, is where the agents' folders go (seenByWorkers): outside /tmp.
	shared  string
	stem    string
	project string // the project's test command
}

// newCycleRepo copies the project fixture (testdata/real/<project>.txtar) and the
// requirement of testdata/tdd/<cycle>.txtar into a git repository, with an empty task queue
// whose Project Commands say test, and one agent command that plays each task as its
// <task ID>.env in byTask says.
func newCycleRepo(t *testing.T, project, cycle, test string) *cycleRepo {
	t.Helper()
	r := &cycleRepo{
		realRepo: &realRepo{repo: &repo{t: t, root: t.TempDir()}, starts: filepath.Join(t.TempDir(), "starts.log")},
		fr:       "STE-001", stem: "TASK-STE-001", byTask: t.TempDir(), files: map[string]string{}, project: test,
	}
	r.tag = strings.NewReplacer("/", "-", " ", "-").Replace(fmt.Sprintf("tdd-%d-%s", os.Getpid(), t.Name()))
	for _, name := range []string{filepath.Join("testdata", "real", project+".txtar"), filepath.Join("testdata", "tdd", cycle+".txtar")} {
		ar, err := txtar.ParseFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasPrefix(f.Name, "specs/") || strings.HasSuffix(name, project+".txtar") {
				r.write(f.Name, string(f.Data))
			} else {
				r.files[f.Name] = string(f.Data)
			}
		}
	}
	git(t, r.root, "init", "-q", "-b", "main")
	r.write(".git/info/exclude", ".orchestrator/\n")
	git(t, r.root, "add", "-A")
	git(t, r.root, "commit", "-q", "-m", "fixture")
	r.write(".orchestrator/task_queue.md", "# Task Queue\n\nWritten by hand: this prose stays as it is.\n\n## Project Commands\n\n| Command | Value |\n|---------|-------|\n| Build | - |\n| Test | "+test+" |\n")
	r.writeConfig("")
	return r
}

// writeConfig writes the cycle's config: its one agent command, then more.
func (r *cycleRepo) writeConfig(more string) {
	argv := []string{"env", "TESTAGENT_TAG=" + r.tag, "TESTAGENT_STARTLOG=" + r.starts, "TESTAGENT_BYTASK=" + r.byTask, agentBin}
	r.write(".orchestrator/config.yaml", "agent: scripted\nsandbox: off\ngrace: 5s\nagents:\n  scripted: {command: ["+quoteAll(argv)+"]}\n"+more)
}

// seenByWorkers has the cycle's agents run on workers: their folders (the agents' plans
// by task, the fixture folders of from) go outside /tmp, which a worker's agent sandbox
// makes private, the agents keep no start log (the sandbox writes only their checkout),
// and the config gets more (its workers section).
func (r *cycleRepo) seenByWorkers(more string) {
	t := r.t.(*testing.T)
	dir, err := os.MkdirTemp("/var/tmp", "orchestrator-tdd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r.shared, r.byTask, r.starts = dir, filepath.Join(dir, "bytask"), ""
	if err := os.Mkdir(r.byTask, 0o755); err != nil {
		t.Fatal(err)
	}
	r.writeConfig(more)
}

// from returns a folder holding the fixture's files under the given folders, merged in
// order (a later one's file wins), with the folder name taken off their paths.
func (r *cycleRepo) from(dirs ...string) string {
	r.t.Helper()
	m := map[string]string{}
	for _, d := range dirs {
		n := 0
		for name, text := range r.files {
			if rel, ok := strings.CutPrefix(name, d+"/"); ok {
				m[rel] = text
				n++
			}
		}
		if n == 0 {
			r.t.Fatalf("the cycle fixture has no folder %s", d)
		}
	}
	if r.shared == "" {
		return files(r.t.(*testing.T), m)
	}
	dir, err := os.MkdirTemp(r.shared, "from-")
	if err != nil {
		r.t.Fatal(err)
	}
	return filesIn(r.t, dir, m)
}

// agent says how the agent of task (RED, AC1, …, REFACTOR: the part after the stem)
// behaves: env lines KEY=VALUE (TESTAGENT_MODE, TESTAGENT_PLAN, …).
func (r *cycleRepo) agent(task string, env ...string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.byTask, r.stem+"-"+task+".env"), []byte(strings.Join(env, "\n")+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// slow returns the environment of a slow, honest agent of role that writes the files of
// the fixture folders dirs.
func (r *cycleRepo) slow(role string, dirs ...string) []string {
	return []string{"TESTAGENT_MODE=slow", "TESTAGENT_ROLE=" + role, "TESTAGENT_WORK=1s", "TESTAGENT_AFTER=200ms", "TESTAGENT_FROM=" + r.from(dirs...)}
}

// tdd runs `orchestrator tdd STE-001` (with args) to its end and returns its exit code and
// output.
func (r *cycleRepo) tdd(args ...string) (int, string) {
	r.t.Helper()
	w := r.start(append([]string{"tdd", r.fr}, args...)...)
	code := w.wait(r.t.(*testing.T), 3*time.Minute)
	return code, w.out.String()
}

// id returns the ID of a task of the cycle: RED, AC1, …, REFACTOR.
func (r *cycleRepo) id(task string) string { return r.stem + "-" + task }

// log returns the integration branch's log: subjects, oldest last.
func (r *cycleRepo) log() string {
	return git(r.t.(*testing.T), r.root, "log", "--format=%s")
}

// prompt returns the prompt of attempt n of task.
func (r *cycleRepo) prompt(task string, n int) string {
	b, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", r.id(task), fmt.Sprint(n), "prompt.md"))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// halt returns the JSON twin of the only halt report.
func (r *cycleRepo) halt() map[string]any {
	r.t.Helper()
	ms, _ := filepath.Glob(filepath.Join(r.root, ".orchestrator", "reports", "halt-*.json"))
	if len(ms) != 1 {
		r.t.Fatalf("halt reports %v, want one", ms)
	}
	b, err := os.ReadFile(ms[0])
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// status returns the status of a task of the cycle.
func (r *cycleRepo) status(task string) string { return r.statuses()[r.id(task)] }

// tasksOnce checks that the queue holds each task of the cycle exactly once.
func (r *cycleRepo) tasksOnce(n int) {
	r.t.Helper()
	q := r.read(".orchestrator/task_queue.md")
	if _, err := queue.Parse("task_queue.md", []byte(q), queue.Tasks); err != nil {
		r.t.Fatalf("the queue does not parse: %v", err)
	}
	want := []string{"RED"}
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("AC%d", i))
	}
	want = append(want, "REFACTOR")
	for _, w := range want {
		if c := strings.Count(q, "### "+r.id(w)+":"); c != 1 {
			r.t.Errorf("%s is in the queue %d times, want once", r.id(w), c)
		}
	}
	if !strings.HasPrefix(q, "# Task Queue\n\nWritten by hand: this prose stays as it is.\n\n## Project Commands\n") {
		r.t.Errorf("what the person wrote changed:\n%s", q)
	}
}

// A cycleProject is a project the cycle tests run on.
type cycleProject struct {
	name, fixture, cycle, test string
	// prompt* are what the prompts hold of AC-STE.2's test and of the others'.
	ownTest, otherTest string
}

var cycleProjects = []cycleProject{
	{name: "go", fixture: "gomod", cycle: "go", test: goTest, ownTest: "func TestAC_STE_2_Coupon", otherTest: "TestAC_STE_1_Discount"},
	{name: "pytest", fixture: "pyproj", cycle: "pytest", test: pyTest, ownTest: "def test_ac_ste_2_coupon", otherTest: "test_ac_ste_1_discount"},
}

// eachProject runs test on the Go module and on the pytest project, in parallel.
func eachProject(t *testing.T, test func(t *testing.T, p cycleProject, r *cycleRepo)) {
	for _, p := range cycleProjects {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			if p.name == "pytest" {
				needPytest(t)
			}
			test(t, p, newCycleRepo(t, p.fixture, p.cycle, p.test))
		})
	}
}

// honest sets every agent of the cycle honest.
func (r *cycleRepo) honest() {
	r.agent("RED", r.slow("test-writer", "red")...)
	r.agent("AC1", r.slow("implementer", "ac1")...)
	r.agent("AC2", r.slow("implementer", "ac2")...)
	r.agent("AC3", r.slow("implementer", "ac3")...)
	r.agent("REFACTOR", r.slow("refactorer", "refactor")...)
}

// plan returns the environment of an agent that behaves per attempt: entries "N=dirs" (a
// slow honest agent writing those fixture folders, joined by +) or "N=noblock:dirs".
func (r *cycleRepo) plan(role string, entries ...string) []string {
	var parts []string
	for _, e := range entries {
		n, what, _ := strings.Cut(e, "=")
		mode := "slow"
		if m, rest, ok := strings.Cut(what, ":"); ok {
			mode, what = m, rest
		}
		entry := n + "=" + mode + " TESTAGENT_WORK=1s TESTAGENT_AFTER=200ms"
		if what != "" {
			entry += " TESTAGENT_FROM=" + r.from(strings.Split(what, "+")...)
		}
		parts = append(parts, entry)
	}
	return []string{"TESTAGENT_MODE=plan", "TESTAGENT_ROLE=" + role, "TESTAGENT_PLAN=" + strings.Join(parts, "; ")}
}

// wantStatuses checks the statuses of the cycle's tasks.
func (r *cycleRepo) wantStatuses(out string, want map[string]string) {
	r.t.Helper()
	for task, st := range want {
		if got := r.status(task); got != st {
			r.t.Errorf("%s is %q, want %q%s\n%s", task, got, st, r.describeAttempts(r.id(task)), out)
		}
	}
}

// branchFile returns a file as the integration branch holds it.
func (r *cycleRepo) branchFile(path string) string {
	return git(r.t.(*testing.T), r.root, "show", "main:"+path)
}

// TestTDDHonest (a): RED, three GREENs and REFACTOR, each verified and landed as one
// commit, in order; running tdd again changes nothing and duplicates nothing.
func TestTDDHonest(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		code, out := r.tdd()
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"RED": "completed", "AC1": "completed", "AC2": "completed", "AC3": "completed", "REFACTOR": "completed"})
		want := "TASK-STE-001-REFACTOR: Refactor what the implementers of STE-001 wrote\n" +
			"TASK-STE-001-AC3: Make the tests of AC-STE.3 pass\n" +
			"TASK-STE-001-AC2: Make the tests of AC-STE.2 pass\n" +
			"TASK-STE-001-AC1: Make the tests of AC-STE.1 pass\n" +
			"TASK-STE-001-RED: Failing tests for every acceptance criterion of STE-001\n" +
			"fixture\n"
		if got := r.log(); got != want {
			t.Errorf("the branch's log:\n%s\nwant:\n%s", got, want)
		}
		for _, task := range []string{"RED", "AC1", "AC2", "AC3", "REFACTOR"} {
			if d := r.attemptDirs(r.id(task)); len(d) != 1 {
				t.Errorf("%s: attempts %v, want one", task, d)
			}
		}
		// Each GREEN gate ran its AC's tests and the earlier ones by name.
		gl := r.read(".orchestrator/runs/TASK-STE-001-AC2/1/gate.log")
		byName := map[string]string{"go": "-run '^(TestAC_STE_1_Discount|TestAC_STE_2_Coupon)$'", "pytest": "tests/test_promo.py::test_ac_ste_1_discount tests/test_promo.py::test_ac_ste_2_coupon"}[p.name]
		if !strings.Contains(gl, byName) {
			t.Errorf("AC2's gate did not run AC-1's and AC-2's tests by name (%s):\n%s", byName, gl)
		}
		r.tasksOnce(3)
		code, out = r.tdd("--json")
		if code != 0 {
			t.Fatalf("again: exit %d, want 0\n%s", code, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var sum map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum["event"] != "tdd" || sum["outcome"] != "green" {
			t.Errorf("the last JSON line is not the summary of a green cycle (%v):\n%s", err, out)
		}
		r.tasksOnce(3)
		if got := r.log(); got != want {
			t.Errorf("running again changed the branch:\n%s", got)
		}
		r.noneLeft()
	})
}

// TestTDDIsolation: the implementer of AC-2 is shown its own AC's text and test and
// nothing of AC-1's or AC-3's (SPEC §9, §10.2), in the prompt it got and in `orchestrator
// prompt`.
func TestTDDIsolation(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("AC2", "TESTAGENT_MODE=hang")
		w := r.start("tdd", r.fr)
		r.waitFor("AC2 never started", func() bool { return r.status("AC2") == "in_progress" && len(r.attemptDirs(r.id("AC2"))) == 1 })
		r.waitFor("AC2's prompt never written", func() bool {
			_, err := os.Stat(filepath.Join(r.root, ".orchestrator", "runs", r.id("AC2"), "1", "prompt.md"))
			return err == nil
		})
		got := r.prompt("AC2", 1)
		// While it runs, `orchestrator prompt` shows what the next attempt would get: the
		// same, but for the attempt's number and the task's status.
		shown, err := r.cmd("prompt", r.id("AC2")).Output()
		if err != nil {
			t.Fatalf("orchestrator prompt: %v", err)
		}
		norm := strings.NewReplacer("This is attempt 2.", "This is attempt 1.", "| Status | in_progress |", "| Status | pending |")
		if norm.Replace(string(shown)) != got {
			t.Errorf("orchestrator prompt differs from what the agent got:\n%s\n---- prompt.md:\n%s", shown, got)
		}
		w.cmd.Process.Signal(os.Interrupt)
		w.wait(t, time.Minute)
		for name, prompt := range map[string]string{"prompt.md": got, "orchestrator prompt": string(shown)} {
			for _, own := range []string{"Coupon codes map to percentages", p.ownTest} {
				if !strings.Contains(prompt, own) {
					t.Errorf("%s lacks %q:\n%s", name, own, prompt)
				}
			}
			for _, other := range []string{"AC-STE.1", "AC-STE.3", "takes a percentage off", "net sum of the cart", p.otherTest, "test_ac_ste_3", "TestAC_STE_3"} {
				if strings.Contains(prompt, other) {
					t.Errorf("%s holds %q, of another AC:\n%s", name, other, prompt)
				}
			}
		}
		r.noneLeft()
	})
}

// TestTDDImplementerBreaksEarlierAC (b): the implementer of AC-2 breaks AC-1: rejected,
// retried with the raw output, and halted after its budget of two, the report naming mode
// B, the implementer and AC-2. Nothing of it lands; AC-3 and the refactor never start.
func TestTDDImplementerBreaksEarlierAC(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("AC2", r.slow("implementer", "ac2-breaks-ac1")...)
		code, out := r.tdd()
		if code != 3 {
			t.Fatalf("exit %d, want 3\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"RED": "completed", "AC1": "completed", "AC2": "halted", "AC3": "pending", "REFACTOR": "pending"})
		if d := r.attemptDirs(r.id("AC2")); len(d) != 2 {
			t.Errorf("AC2: attempts %v, want 2 (the budget)", d)
		}
		h := r.halt()
		if h["tdd_mode"] != "B" || h["role"] != "implementer" || h["ac"] != "AC-STE.2" || h["task"] != r.id("AC2") {
			t.Errorf("halt report: mode %v, role %v, ac %v, task %v; want B, implementer, AC-STE.2", h["tdd_mode"], h["role"], h["ac"], h["task"])
		}
		if !strings.Contains(fmt.Sprint(h["last_output"]), map[string]string{"go": "TestAC_STE_1_Discount", "pytest": "test_ac_ste_1_discount"}[p.name]) {
			t.Errorf("the halt report's output does not show AC-1's test failing:\n%v", h["last_output"])
		}
		if !strings.Contains(fmt.Sprint(h["last_block"]), "role: implementer") {
			t.Errorf("the halt report lacks the last tdd-result block: %v", h["last_block"])
		}
		retry := r.prompt("AC2", 2)
		if !strings.Contains(retry, "## Output of the last failed check") {
			t.Errorf("the retry's prompt lacks the raw output:\n%s", retry)
		}
		if strings.Contains(r.log(), "AC2") {
			t.Errorf("AC2 landed:\n%s", r.log())
		}
		// A person lifts the halt, as the report says, from the task and its issue: the
		// task gets a new budget of two attempts (its third tampers with a test and is
		// retried, its fourth is honest), and the cycle goes on.
		r.agent("AC2", r.plan("implementer", "1=ac2-breaks-ac1", "3=ac2+tamper-ac2-test", "4=ac2")...)
		if out, err := r.cmd("set", r.id("AC2"), "Halted=false", "Status=pending").CombinedOutput(); err != nil {
			t.Fatalf("orchestrator set: %v\n%s", err, out)
		}
		if out, err := r.cmd("set", fmt.Sprint(h["issue"]), "Halted=false", "Auto-Retry=true").CombinedOutput(); err != nil {
			t.Fatalf("orchestrator set: %v\n%s", err, out)
		}
		code, out = r.tdd()
		if code != 0 {
			t.Fatalf("after the halt was lifted: exit %d, want 0\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"AC2": "completed", "AC3": "completed", "REFACTOR": "completed"})
		if d := r.attemptDirs(r.id("AC2")); len(d) != 4 {
			t.Errorf("AC2: attempts %v, want 4%s", d, r.describeAttempts(r.id("AC2")))
		}
		r.tasksOnce(3)
		r.noneLeft()
	})
}

// TestTDDRefactorBreaksGreen (c): the refactor breaks the suite, twice: it is dropped, the
// task records failed, the cycle ends green (exit 0), and nothing of it is on the branch.
func TestTDDRefactorBreaksGreen(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("REFACTOR", r.slow("refactorer", "refactor-broken")...)
		code, out := r.tdd()
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"AC3": "completed", "REFACTOR": "failed"})
		if d := r.attemptDirs(r.id("REFACTOR")); len(d) != 2 {
			t.Errorf("REFACTOR: attempts %v, want 2 (the budget)", d)
		}
		if strings.Contains(r.log(), "REFACTOR") {
			t.Errorf("the refactor landed:\n%s", r.log())
		}
		impl := map[string]string{"go": "cart/promo.go", "pytest": "shop/promo.py"}[p.name]
		if got, want := r.branchFile(impl), r.files["ac3/"+impl]; got != want {
			t.Errorf("%s on the branch is not AC-3's:\n%s", impl, got)
		}
		if got, want := r.read(impl), r.files["ac3/"+impl]; got != want {
			t.Errorf("%s in the person's tree is not AC-3's:\n%s", impl, got)
		}
		if !strings.Contains(out, "dropped") {
			t.Errorf("the summary does not say the refactor was dropped:\n%s", out)
		}
		r.noneLeft()
	})
}

// TestTDDFormatViolation (d): an implementer that ends without a tdd-result block twice:
// one re-prompt whose whole text is the re-emit sentence, then a halt, mode D.
func TestTDDFormatViolation(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("AC1", r.plan("implementer", "1=noblock:ac1")...)
		code, out := r.tdd()
		if code != 3 {
			t.Fatalf("exit %d, want 3\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"AC1": "halted", "AC2": "pending"})
		if d := r.attemptDirs(r.id("AC1")); len(d) != 2 {
			t.Errorf("AC1: attempts %v, want 2 (one re-prompt)", d)
		}
		if got := r.prompt("AC1", 2); got != "re-emit your last message with one valid tdd-result block" {
			t.Errorf("the re-prompt is %q", got)
		}
		h := r.halt()
		if h["tdd_mode"] != "D" || h["role"] != "implementer" || h["ac"] != "AC-STE.1" {
			t.Errorf("halt report: mode %v, role %v, ac %v; want D, implementer, AC-STE.1", h["tdd_mode"], h["role"], h["ac"])
		}
		if !strings.Contains(fmt.Sprint(h["last_output"]), "the tests pass") {
			t.Errorf("the halt report lacks the agent's raw message: %v", h["last_output"])
		}
		r.noneLeft()
	})
}

// TestTDDReemitKeepsWork: a format violation and then a valid block re-emitted: the
// re-emit attempt's worktree holds the first attempt's work, which lands; the semantic
// budget is untouched.
func TestTDDReemitKeepsWork(t *testing.T) {
	t.Parallel()
	r := newCycleRepo(t, "gomod", "go", goTest)
	r.honest()
	r.agent("AC1", r.plan("implementer", "1=noblock:ac1", "2=slow:")...)
	code, out := r.tdd()
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	r.wantStatuses(out, map[string]string{"AC1": "completed", "REFACTOR": "completed"})
	if d := r.attemptDirs(r.id("AC1")); len(d) != 2 {
		t.Errorf("AC1: attempts %v, want 2", d)
	}
	if got := r.prompt("AC1", 2); got != "re-emit your last message with one valid tdd-result block" {
		t.Errorf("the re-prompt is %q", got)
	}
}

// TestTDDRedMissesAnAC (e): a test writer whose tests leave AC-3 without a failing test:
// a false RED (mode A), twice, then a halt naming the test writer and AC-3.
func TestTDDRedMissesAnAC(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("RED", r.slow("test-writer", "red-no-ac3")...)
		code, out := r.tdd()
		if code != 3 {
			t.Fatalf("exit %d, want 3\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"RED": "halted", "AC1": "pending"})
		h := r.halt()
		if h["tdd_mode"] != "A" || h["role"] != "test-writer" || h["ac"] != "AC-STE.3" {
			t.Errorf("halt report: mode %v, role %v, ac %v; want A, test-writer, AC-STE.3", h["tdd_mode"], h["role"], h["ac"])
		}
		if got := r.log(); got != "fixture\n" {
			t.Errorf("something landed:\n%s", got)
		}
		r.noneLeft()
	})
}

// TestTDDKill9Resumes (f): the orchestrator is killed with SIGKILL while AC-2's agent
// works; tdd again adopts that agent, judges it and finishes the cycle, with no task
// written twice and no attempt lost.
func TestTDDKill9Resumes(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("AC2", "TESTAGENT_MODE=slow", "TESTAGENT_ROLE=implementer", "TESTAGENT_WORK=3s", "TESTAGENT_FROM="+r.from("ac2"))
		w := r.start("tdd", r.fr)
		r.waitLog(r.id("AC2"), 1, "working: step 2")
		w.kill9(t)
		r.tasksOnce(3)
		code, out := r.tdd()
		if code != 0 {
			t.Fatalf("after kill -9, exit %d, want 0\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"AC2": "completed", "AC3": "completed", "REFACTOR": "completed"})
		if d := r.attemptDirs(r.id("AC2")); len(d) != 1 {
			t.Errorf("AC2: attempts %v, want the one, adopted%s", d, r.describeAttempts(r.id("AC2")))
		}
		r.oneAgentPerAttempt(r.id("AC2"))
		r.tasksOnce(3)
		if c := strings.Count(r.log(), "\n"); c != 6 {
			t.Errorf("the branch has %d commits, want 6:\n%s", c, r.log())
		}
		r.noneLeft()
	})
}

// TestTDDCheatsAcrossACs: the implementer of AC-1 implements AC-2 and AC-3 too
// (scope_violation), then does its own; the implementer of AC-2 first empties AC-3's
// test (test_tampered); the refactorer edits the tests, twice (test_tampered, dropped).
// Every cheat is refused and lands nothing; the honest attempts land.
func TestTDDCheatsAcrossACs(t *testing.T) {
	t.Parallel()
	eachProject(t, func(t *testing.T, p cycleProject, r *cycleRepo) {
		r.honest()
		r.agent("AC1", r.plan("implementer", "1=ac3", "2=ac1")...)
		r.agent("AC2", r.plan("implementer", "1=ac2+tamper-ac2-test", "2=ac2")...)
		r.agent("REFACTOR", r.slow("refactorer", "refactor", "tamper-ac2-test")...)
		code, out := r.tdd()
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s", code, out)
		}
		r.wantStatuses(out, map[string]string{"AC1": "completed", "AC2": "completed", "AC3": "completed", "REFACTOR": "failed"})
		for task, typ := range map[string]string{"AC1": "scope_violation", "AC2": "test_tampered"} {
			if res := r.result(r.id(task), 1); res["failure_type"] != typ {
				t.Errorf("%s attempt 1: %v (%v), want %s", task, res["failure_type"], res["reason"], typ)
			}
		}
		if res := r.result(r.id("REFACTOR"), 2); res["failure_type"] != "test_tampered" {
			t.Errorf("REFACTOR attempt 2: %v (%v), want test_tampered", res["failure_type"], res["reason"])
		}
		tests := map[string]string{"go": "cart/promo_test.go", "pytest": "tests/test_promo.py"}[p.name]
		if got := r.branchFile(tests); got != r.files["red/"+tests] {
			t.Errorf("the tests on the branch are not the test writer's:\n%s", got)
		}
		r.noneLeft()
	})
}

// TestTDDOutOfTime: an implementer that runs past the task timeout, twice: mode E, which
// spends the semantic budget, then a halt naming it.
func TestTDDOutOfTime(t *testing.T) {
	t.Parallel()
	r := newCycleRepo(t, "gomod", "go", goTest)
	r.honest()
	r.agent("AC1", "TESTAGENT_MODE=hang")
	code, out := r.tdd("--timeout", "4s")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	r.wantStatuses(out, map[string]string{"RED": "completed", "AC1": "halted"})
	if d := r.attemptDirs(r.id("AC1")); len(d) != 2 {
		t.Errorf("AC1: attempts %v, want 2", d)
	}
	if h := r.halt(); h["tdd_mode"] != "E" || h["role"] != "implementer" || h["ac"] != "AC-STE.1" {
		t.Errorf("halt report: mode %v, role %v, ac %v; want E, implementer, AC-STE.1", h["tdd_mode"], h["role"], h["ac"])
	}
	r.noneLeft()
}
