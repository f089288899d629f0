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
	fr      string
	files   map[string]string // the cycle fixture's files, by path
	byTask  string            // TESTAGENT_BYTASK: <task ID>.env per task
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
	argv := []string{"env", "TESTAGENT_TAG=" + r.tag, "TESTAGENT_STARTLOG=" + r.starts, "TESTAGENT_BYTASK=" + r.byTask, agentBin}
	r.write(".orchestrator/config.yaml", "agent: scripted\nsandbox: off\ngrace: 5s\nagents:\n  scripted: {command: ["+quoteAll(argv)+"]}\n")
	return r
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
	return files(r.t.(*testing.T), m)
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

// honestGo sets every agent of the Go cycle honest.
func (r *cycleRepo) honestGo() {
	r.agent("RED", r.slow("test-writer", "red")...)
	r.agent("AC1", r.slow("implementer", "ac1")...)
	r.agent("AC2", r.slow("implementer", "ac2")...)
	r.agent("AC3", r.slow("implementer", "ac3")...)
	r.agent("REFACTOR", r.slow("refactorer", "refactor")...)
}

// TestTDDGoHonest: RED, three GREENs and REFACTOR, each verified and landed as one commit;
// running tdd again changes nothing and duplicates nothing.
func TestTDDGoHonest(t *testing.T) {
	t.Parallel()
	r := newCycleRepo(t, "gomod", "go", goTest)
	r.honestGo()
	code, out := r.tdd()
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	for _, task := range []string{"RED", "AC1", "AC2", "AC3", "REFACTOR"} {
		if st := r.status(task); st != "completed" {
			t.Errorf("%s is %s, want completed%s", task, st, r.describeAttempts(r.id(task)))
		}
	}
	want := "TASK-STE-001-REFACTOR: Refactor what the implementers of STE-001 wrote\n" +
		"TASK-STE-001-AC3: Make the tests of AC-STE.3 pass\n" +
		"TASK-STE-001-AC2: Make the tests of AC-STE.2 pass\n" +
		"TASK-STE-001-AC1: Make the tests of AC-STE.1 pass\n" +
		"TASK-STE-001-RED: Failing tests for every acceptance criterion of STE-001\n" +
		"fixture\n"
	if got := r.log(); got != want {
		t.Errorf("the branch's log:\n%s\nwant:\n%s", got, want)
	}
	r.tasksOnce(3)
	t.Log(out)
	for _, task := range []string{"AC2", "REFACTOR"} {
		b, _ := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", r.id(task), "1", "gate.log"))
		t.Log(string(b))
		t.Log(r.prompt(task, 1))
	}
	code, out = r.tdd()
	if code != 0 {
		t.Fatalf("again: exit %d, want 0\n%s", code, out)
	}
	r.tasksOnce(3)
	r.noneLeft()
}
