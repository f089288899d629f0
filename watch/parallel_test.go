package watch_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/gate"
)

// TestParallelHonestPairsLand (issue 26 item 1): eight independent honest TEST→BUILD pairs at
// --jobs 2, and sixteen at --jobs 8, on the Go module, each in a package of its own, with
// retries on (--jobs 4 is TestParallelSandboxedCheats's, with its honest pairs). A BUILD
// candidate whose base is older than the integration head is judged on the head it would
// land on, never on its older base against a baseline that grew meanwhile with the tests of
// another pair: a test that a task which landed meanwhile added is no regression of a
// candidate that could not know it. Every task lands at its first attempt, one commit each,
// in a linear history, and none is retried or halted.
func TestParallelHonestPairsLand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ jobs, pairs int }{{2, 8}, {8, 16}} {
		t.Run(fmt.Sprintf("jobs %d", c.jobs), func(t *testing.T) {
			t.Parallel()
			parallelPairs(t, c.jobs, c.pairs)
		})
	}
}

// parallelPairs runs pairs honest TEST→BUILD pairs at --jobs jobs and checks that each task
// landed once, at its first attempt.
func parallelPairs(t *testing.T, jobs, pairs int) {
	var tasks []realTask
	agents := map[string][]string{}
	pkgs := map[string]string{}
	for i := 1; i <= pairs; i++ {
		pkg := fmt.Sprintf("part%02d", i)
		id := fmt.Sprintf("UNIT-1%02d", i)
		test, build := fmt.Sprintf("TASK-T%02d", i), fmt.Sprintf("TASK-%03d", i)
		pkgs[pkg+"/doc.go"] = fmt.Sprintf("// Package %s is part %d of the shop.\npackage %s\n", pkg, i, pkg)
		red := map[string]string{pkg + "/value_test.go": fmt.Sprintf(`package %s

import "testing"

func TestValue_%s(t *testing.T) {
	if got := Value(); got != %d {
		t.Errorf("Value() = %%d, want %d", got)
	}
}
`, pkg, strings.ReplaceAll(id, "-", "_"), i, i)}
		green := map[string]string{pkg + "/value.go": fmt.Sprintf("package %s\n\n// Value is the part's number.\nfunc Value() int { return %d }\n", pkg, i)}
		// Work times that differ from pair to pair, so that landings interleave with
		// agents that started on older heads.
		work := time.Duration(200+100*(i%4)) * time.Millisecond
		agents["w"+pkg] = slowAgent("test-writer", work, 0, files(t, red))
		agents["b"+pkg] = slowAgent("implementer", work, 0, files(t, green))
		tasks = append(tasks,
			realTask{id: test, category: "testing", mode: "write", agent: "w" + pkg, testIDs: id},
			realTask{id: build, category: "backend", agent: "b" + pkg, deps: test})
	}
	r := newRealRepo(t, "gomod", goTest, tasks, agents, "")
	for p, text := range pkgs {
		r.write(p, text)
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "the parts' packages")
	base := head(r.repo)

	code, out := r.run("watch", "--once", "--jobs", fmt.Sprint(jobs))
	var why strings.Builder
	for _, tk := range tasks {
		why.WriteString(r.describeAttempts(tk.id))
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0%s\n%s", code, why.String(), out)
	}
	ids := make([]string, len(tasks))
	for i, tk := range tasks {
		ids[i] = tk.id
	}
	r.nothingOwnReaped(t, out, ids...)
	st := r.statuses()
	for _, tk := range tasks {
		if st[tk.id] != "completed" {
			t.Errorf("%s is %s, want completed%s", tk.id, st[tk.id], r.describeAttempts(tk.id))
		}
		if dirs := r.attemptDirs(tk.id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want one (an honest task is never refused)%s", tk.id, dirs, r.describeAttempts(tk.id))
		}
		r.oneAgentPerAttempt(tk.id)
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 2*pairs {
		t.Fatalf("commits since the fixture: %d, want %d (one a task)", len(commits), 2*pairs)
	}
	landed := map[string]string{}
	for _, c := range commits {
		line := r.git("log", "-1", "--format=%P|%s", c)
		parents, subject, _ := strings.Cut(line, "|")
		if n := len(strings.Fields(parents)); n != 1 {
			t.Errorf("commit %.12s (%s) has %d parents, want 1 (a linear history)", c, subject, n)
		}
		task, _, _ := strings.Cut(subject, ":")
		if prev, ok := landed[task]; ok {
			t.Errorf("%s landed twice: %.12s and %.12s", task, prev, c)
		}
		landed[task] = c
		if got := r.field(task, "Commit"); got != c {
			t.Errorf("%s: Commit field %q, want %s", task, got, c)
		}
		if fs := filesOf(r.repo, c); len(fs) != 1 {
			t.Errorf("%s's commit holds %v, want its one file", task, fs)
		}
	}
	b := r.read(".orchestrator/baseline.json")
	for i := 1; i <= pairs; i++ {
		if want := fmt.Sprintf("TestValue_UNIT_1%02d", i); !strings.Contains(b, want) {
			t.Errorf("the baseline lacks %s", want)
		}
	}
	// Each part's package is run by the BUILD tasks' GREEN gates at most twice: once with
	// its RED test waiting for its BUILD (a failure sealed then, and reused by every later
	// gate, since it decides nothing for them), once with its own BUILD's code. The fixture's
	// packages, sealed by the start's baseline, not at all.
	runs := 0
	for i := 1; i <= pairs; i++ {
		for _, c := range gate.RanCommands(r.read(fmt.Sprintf(".orchestrator/runs/TASK-%03d/1/gate.log", i))) {
			runs += len(strings.Fields(c)) - 2 // go test PKG...
		}
	}
	if runs > 2*pairs {
		t.Errorf("the GREEN gates ran %d packages in all, want at most %d", runs, 2*pairs)
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestParallelNoChangeOnMovedHead: a BUILD task whose agent changes nothing (the work is
// already there) runs while a TEST→BUILD pair lands its RED and then its GREEN, which grows
// the baseline with the pair's test. Its candidate is its base, which never had that test:
// it is judged at the integration head instead, where the test is and passes, so it is no
// regression of this task; it completes at its first attempt with the head it was verified
// at as its Commit, and lands nothing of its own.
func TestParallelNoChangeOnMovedHead(t *testing.T) {
	t.Parallel()
	red := map[string]string{"part01/value_test.go": `package part01

import "testing"

func TestValue_UNIT_101(t *testing.T) {
	if got := Value(); got != 1 {
		t.Errorf("Value() = %d, want 1", got)
	}
}
`}
	green := map[string]string{"part01/value.go": "package part01\n\n// Value is the part's number.\nfunc Value() int { return 1 }\n"}
	// The idle agent changes nothing, and ends once TASK-001 has landed: it reads the
	// repository through a link made once the repository exists.
	link := filepath.Join(t.TempDir(), "repo")
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-101"},
		{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
		{id: "TASK-002", category: "backend", agent: "idle", exempt: true},
	}, map[string][]string{
		"writer":  slowAgent("test-writer", 100*time.Millisecond, 0, files(t, red)),
		"builder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, green)),
		"idle": {"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer",
			"TESTAGENT_SH=until git -C " + link + " log --format=%s main | grep -q '^TASK-001'; do sleep 0.05; done"},
	}, "")
	if err := os.Symlink(r.root, link); err != nil {
		t.Fatal(err)
	}
	r.write("part01/doc.go", "// Package part01 is part 1 of the shop.\npackage part01\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "the part's package")
	base := head(r.repo)

	code, out := r.run("watch", "--once", "--jobs", "2")
	if code != 0 {
		t.Fatalf("exit %d, want 0%s%s%s\n%s", code, r.describeAttempts("TASK-T01"), r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
	}
	if dirs := r.attemptDirs("TASK-002"); len(dirs) != 1 {
		t.Errorf("TASK-002: attempts %v, want one (a test another task added is not its regression)%s", dirs, r.describeAttempts("TASK-002"))
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 2 {
		t.Fatalf("commits since the fixture: %v, want the pair's two", commits)
	}
	if got := r.field("TASK-002", "Commit"); got != commits[1] {
		t.Errorf("TASK-002's Commit is %q, want the head it was verified at, %s", got, commits[1])
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestReaperSparesThePatch: TASK-001's candidate holds a large file, so that the git that
// makes its patch beside the loop runs a while (two seconds here); TASK-001's gate (the
// project's test command) waits until TASK-002's agent has ended, and TASK-002's agent
// ends once it sees that git run.
// Whichever the loop hears first, the end of TASK-002's agent or of TASK-001's gate, the
// reaper of agents' orphans looks while that git runs, and must leave it alone: the patch
// is written whole and the run says it ended nothing. It ended that git as an agent's
// orphan before (internal/ownproc).
func TestReaperSparesThePatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flag := filepath.Join(dir, "waiter-ended")
	bound := int(scaled(time.Minute) / (10 * time.Millisecond))
	gateWait := filepath.Join(dir, "gate-waits.sh")
	// The project's test command: on TASK-001's candidate (big.bin there), it waits for the
	// waiter's end; anywhere else (the start's baseline, TASK-002's rebased candidate) it
	// passes at once.
	writeFile(t, gateWait, fmt.Sprintf("i=0\nwhile [ -e big.bin ] && [ ! -e %q ] && [ $i -lt %d ]; do i=$((i+1)); sleep 0.01; done\n", flag, bound))
	tasks := []realTask{
		{id: "TASK-001", category: "backend", agent: "big", exempt: true},
		{id: "TASK-002", category: "backend", agent: "waiter", exempt: true},
	}
	r := newRealRepo(t, "gomod", "sh "+gateWait, tasks, map[string][]string{"big": nil}, "")
	root, err := filepath.EvalSymlinks(r.root)
	if err != nil {
		t.Fatal(err)
	}
	const marker = `printf done > "$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done"`
	big := `head -c 33554432 /dev/urandom > big.bin && ` + marker
	// The patch's git runs in the repository's folder: the waiter ends once it sees it.
	waiter := fmt.Sprintf(`i=0
while [ $i -lt %d ]; do
  for p in $(pgrep -f -- 'diff-tree -r -z --raw -p --binary'); do
    if [ "$(readlink /proc/$p/cwd)" = %q ]; then touch %q; %s; exit 0; fi
  done
  i=$((i+1)); sleep 0.01
done
exit 1`, bound, root, flag, marker)
	r.write(".orchestrator/config.yaml", "agent: big\nsandbox: off\ngrace: 1s\nagents:\n  big: {command: [sh, -c, "+quoteAll([]string{big})+"]}\n  waiter: {command: [sh, -c, "+quoteAll([]string{waiter})+"]}\n")
	code, out := r.run("watch", "--once", "--jobs", "2")
	if code != 0 {
		t.Fatalf("exit %d, want 0%s%s\n%s", code, r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
	}
	r.nothingOwnReaped(t, out, "TASK-001", "TASK-002")
	patch, err := os.ReadFile(filepath.Join(r.root, ".orchestrator", "runs", "TASK-001", "1", "changes.diff"))
	if err != nil || !bytes.Contains(patch, []byte("GIT binary patch")) {
		t.Errorf("TASK-001's patch (%d bytes, %v) is not the large file's binary patch", len(patch), err)
	}
}
