package watch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A gateBarrier holds the gates' test runs until n of them have begun, so that a test can
// make gates overlap on any machine, however slow: each run of the project's test command
// first runs its script, which, once armed, registers the run and waits for n runs (or two
// minutes times the tests' time scale, so that a broken test fails on its assertions
// instead of hanging).
type gateBarrier struct {
	dir string
}

func newGateBarrier(t *testing.T, n int) *gateBarrier {
	t.Helper()
	b := &gateBarrier{dir: t.TempDir()}
	script := fmt.Sprintf(`#!/bin/sh
[ -e %[1]s/arm ] || exit 0
mkdir -p %[1]s/runs
: > %[1]s/runs/$$
i=0
while [ "$(ls %[1]s/runs | wc -l)" -lt %[2]d ] && [ $i -lt %[3]d ]; do sleep 0.05; i=$((i+1)); done
exit 0
`, b.dir, n, int(scaled(2*time.Minute)/(50*time.Millisecond)))
	if err := os.WriteFile(b.script(), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *gateBarrier) script() string { return filepath.Join(b.dir, "barrier.sh") }

// command is the project's test command behind the barrier.
func (b *gateBarrier) command() string { return b.script() + " && " + goTest }

// arm makes the barrier count from now on; armCmd is the shell command that does it.
func (b *gateBarrier) arm(t *testing.T) {
	if err := os.WriteFile(filepath.Join(b.dir, "arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
func (b *gateBarrier) armCmd() string { return "touch " + filepath.Join(b.dir, "arm") }

// waitCmd is a shell command that waits until a gate's run has begun at the barrier.
func (b *gateBarrier) waitCmd() string {
	return fmt.Sprintf(`until [ -n "$(ls %s/runs 2>/dev/null)" ]; do sleep 0.05; done`, b.dir)
}

// partFiles are the files of part i, a package of its own.
func partFiles(i int) map[string]string {
	pkg := fmt.Sprintf("part%02d", i)
	return map[string]string{
		pkg + "/value.go": fmt.Sprintf("// Package %s is part %d of the shop.\npackage %s\n\n// Value is the part's number.\nfunc Value() int { return %d }\n", pkg, i, pkg, i),
	}
}

// TestMergeQueueSpeculates (issue 26 item 2): three honest tasks at --jobs 3 whose gates
// are held until all three run at once. The first candidate is judged on the head, each
// one behind it on the head as it will be once those ahead of it land; all three land at
// their first attempt, in the order they were queued, each once, in a linear history, and
// none is judged twice: what each was judged on is what it landed on.
func TestMergeQueueSpeculates(t *testing.T) {
	t.Parallel()
	b := newGateBarrier(t, 3)
	var tasks []realTask
	agents := map[string][]string{}
	for i := 1; i <= 3; i++ {
		id, name := fmt.Sprintf("TASK-%03d", i), fmt.Sprintf("a%d", i)
		tasks = append(tasks, realTask{id: id, category: "backend", agent: name, testCommand: fmt.Sprintf("go test ./part%02d", i), exempt: true})
		agents[name] = slowAgent("implementer", time.Duration(i)*300*time.Millisecond, 0, files(t, partFiles(i)))
	}
	r := newRealRepo(t, "gomod", b.command(), tasks, agents, "gate_jobs: 3\n")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	b.arm(t)
	base := head(r.repo)

	code, out := r.run("watch", "--once", "--jobs", "3")
	var why strings.Builder
	for _, tk := range tasks {
		why.WriteString(r.describeAttempts(tk.id))
	}
	if code != 0 {
		t.Fatalf("exit %d, want 0%s\n%s", code, why.String(), out)
	}
	behind := 0
	for _, tk := range tasks {
		if st := r.field(tk.id, "Status"); st != "completed" {
			t.Errorf("%s is %s, want completed%s", tk.id, st, r.describeAttempts(tk.id))
		}
		if dirs := r.attemptDirs(tk.id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want one%s", tk.id, dirs, r.describeAttempts(tk.id))
		}
		log := r.read(".orchestrator/runs/" + tk.id + "/1/gate.log")
		if strings.Contains(log, "judged behind TASK-") {
			behind++
		}
		if strings.Contains(log, "judged again") {
			t.Errorf("%s was judged more than once:\n%s", tk.id, log)
		}
	}
	if behind != 2 {
		t.Errorf("%d candidates were judged behind another, want 2 (the gates overlapped)%s", behind, why.String())
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 3 {
		t.Fatalf("commits since the fixture: %d, want 3", len(commits))
	}
	landed := map[string]bool{}
	for _, c := range commits {
		line := r.git("log", "-1", "--format=%P|%s", c)
		parents, subject, _ := strings.Cut(line, "|")
		if n := len(strings.Fields(parents)); n != 1 {
			t.Errorf("commit %.12s has %d parents, want 1 (a linear history)", c, n)
		}
		task, _, _ := strings.Cut(subject, ":")
		if landed[task] {
			t.Errorf("%s landed twice", task)
		}
		landed[task] = true
		if got := r.field(task, "Commit"); got != c {
			t.Errorf("%s: Commit %q, want %s", task, got, c)
		}
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestMergeQueueBehindRefused: the candidate ahead breaks a test of the baseline and is
// refused; the honest one behind it, judged on top of it, is judged again without it and
// lands at its first attempt, and nothing of the refused candidate reaches the branch.
func TestMergeQueueBehindRefused(t *testing.T) {
	t.Parallel()
	b := newGateBarrier(t, 2)
	broken := map[string]string{"money/money.go": "// Package money holds amounts of money in cents.\npackage money\n\n// Cents is an amount of money in cents.\ntype Cents int64\n\nfunc (c Cents) String() string { return \"?\" }\n\n// Percent returns p percent of c.\nfunc (c Cents) Percent(p int64) Cents { return c * Cents(p) / 100 }\n"}
	r := newRealRepo(t, "gomod", b.command(), []realTask{
		{id: "TASK-001", category: "backend", agent: "breaker", testCommand: "go test ./money", exempt: true},
		{id: "TASK-002", category: "backend", agent: "honest", testCommand: "go test ./part01", exempt: true},
	}, map[string][]string{
		// The cheat claims done over a change that breaks money's tests.
		"breaker": slowAgent("implementer", 100*time.Millisecond, 0, files(t, broken)),
		// The honest agent ends once the cheat's gate runs, so that it is queued behind it.
		"honest": {"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer", "TESTAGENT_FROM=" + files(t, partFiles(1)), "TESTAGENT_SH=" + b.waitCmd()},
	}, "gate_jobs: 2\n")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	b.arm(t)
	base := head(r.repo)

	code, out := r.run("watch", "--once", "--jobs", "2")
	if st := r.field("TASK-002", "Status"); st != "completed" {
		t.Fatalf("TASK-002 is %s, want completed (exit %d)%s%s\n%s", st, code, r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
	}
	if dirs := r.attemptDirs("TASK-002"); len(dirs) != 1 {
		t.Errorf("TASK-002: attempts %v, want one%s", dirs, r.describeAttempts("TASK-002"))
	}
	log := r.read(".orchestrator/runs/TASK-002/1/gate.log")
	if !strings.Contains(log, "judged behind TASK-001") || !strings.Contains(log, "judged again: TASK-001, judged ahead of it, did not land") {
		t.Errorf("TASK-002 was not judged behind TASK-001 and then again without it:\n%s", log)
	}
	if st := r.field("TASK-001", "Status"); st == "completed" {
		t.Errorf("TASK-001, which breaks money's tests, is completed")
	}
	first := r.read(".orchestrator/runs/TASK-001/1/gate.log")
	if !strings.Contains(first, "regression") {
		t.Errorf("TASK-001's first attempt was not refused for its regression:\n%s", first)
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 1 {
		t.Fatalf("commits since the fixture: %v, want TASK-002's alone", commits)
	}
	if fs := filesOf(r.repo, commits[0]); strings.Join(fs, " ") != "part01/value.go" {
		t.Errorf("TASK-002's commit holds %v", fs)
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestMergeQueueBreaksWhatAheadFixed: the candidate ahead makes a test pass that a TEST
// task landed failing; the one behind it, judged on top of it, breaks that test. At its
// speculative gate the test was no baseline test yet; once the candidate ahead lands, the
// baseline has it, and the one behind is judged again on the head and refused for the
// regression. The branch's suite passes at the end.
func TestMergeQueueBreaksWhatAheadFixed(t *testing.T) {
	t.Parallel()
	b := newGateBarrier(t, 2)
	red := map[string]string{"cart/total_test.go": "package cart\n\nimport \"testing\"\n\nfunc TestTotal_UNIT_301(t *testing.T) {\n\tif got := Total(); got != 4 {\n\t\tt.Errorf(\"Total() = %d, want 4\", got)\n\t}\n}\n"}
	green := map[string]string{"cart/total.go": "package cart\n\nimport \"example.com/shop/rate\"\n\n// Total is twice the rate.\nfunc Total() int { return 2 * rate.Rate() }\n"}
	rate := map[string]string{"rate/rate.go": "// Package rate holds the rate.\npackage rate\n\n// Rate is the rate.\nfunc Rate() int { return 3 }\n"}
	r := newRealRepo(t, "gomod", b.command(), []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-301"},
		{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
		{id: "TASK-002", category: "backend", agent: "rater", testCommand: "go test ./rate", exempt: true},
	}, map[string][]string{
		"writer": slowAgent("test-writer", 100*time.Millisecond, 0, files(t, red)),
		// The implementer arms the barrier as it ends: its GREEN is the first gate held.
		"builder": {"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer", "TESTAGENT_FROM=" + files(t, green), "TESTAGENT_SH=" + b.armCmd()},
		// The one behind ends once that gate runs.
		"rater": {"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer", "TESTAGENT_FROM=" + files(t, rate), "TESTAGENT_SH=" + b.waitCmd()},
	}, "gate_jobs: 2\nretries:\n  max_retries: 1\n")
	r.write("rate/rate.go", "// Package rate holds the rate.\npackage rate\n\n// Rate is the rate.\nfunc Rate() int { return 2 }\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "the rate")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}

	code, out := r.run("watch", "--once", "--jobs", "2")
	for _, id := range []string{"TASK-T01", "TASK-001"} {
		if st := r.field(id, "Status"); st != "completed" {
			t.Fatalf("%s is %s, want completed (exit %d)%s\n%s", id, st, code, r.describeAttempts(id), out)
		}
	}
	if st := r.field("TASK-002", "Status"); st == "completed" {
		t.Fatalf("TASK-002, which breaks TASK-001's test, landed%s", r.describeAttempts("TASK-002"))
	}
	log := r.read(".orchestrator/runs/TASK-002/1/gate.log")
	for _, want := range []string{"judged behind TASK-001", "judged again: the baseline gained", "TestTotal_UNIT_301"} {
		if !strings.Contains(log, want) {
			t.Errorf("TASK-002's gate.log lacks %q:\n%s", want, log)
		}
	}
	if res := r.read(".orchestrator/runs/TASK-002/1/result.json"); !strings.Contains(res, "regression") {
		t.Errorf("TASK-002's first attempt was not refused as a regression:\n%s", res)
	}
	suite := exec.Command("go", "test", "./...")
	suite.Dir = r.root
	if out, err := suite.CombinedOutput(); err != nil {
		t.Errorf("the branch's suite fails at the end:\n%s", out)
	}
	r.noneLeft()
}

// BenchmarkMergeQueue weighs the merge queue (issue 26 item 2): eight independent honest
// tasks on the Go module, each adding a package, with agents of agent work each and the
// real gate (`go test ./...`, test impact on, sandbox off). It runs them at --jobs 1, 2, 4
// and 8 with the default gates (one on 2 cores), and at --jobs 4 and 8 with two gates at
// once, and reports each one's wall time, its candidates judged again, and its throughput
// against --jobs 1 in the same run.
//
//	go test ./watch -run '^$' -bench BenchmarkMergeQueue -benchtime 1x
func BenchmarkMergeQueue(b *testing.B) {
	work := 5 * time.Second
	if s := os.Getenv("ORCHESTRATOR_BENCH_WORK"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			work = d
		}
	}
	cases := []struct {
		name   string
		jobs   int
		config string
	}{
		{"jobs=1", 1, ""},
		{"jobs=2", 2, ""},
		{"jobs=4", 4, ""},
		{"jobs=8", 8, ""},
		{"jobs=4/gate_jobs=2", 4, "gate_jobs: 2\n"},
		{"jobs=8/gate_jobs=2", 8, "gate_jobs: 2\n"},
	}
	walls := make([]time.Duration, len(cases))
	again := make([]int, len(cases))
	for b.Loop() {
		for i, c := range cases {
			var tasks []realTask
			agents := map[string][]string{}
			for k := 1; k <= 8; k++ {
				id, name := fmt.Sprintf("TASK-%03d", k), fmt.Sprintf("a%d", k)
				tasks = append(tasks, realTask{id: id, category: "backend", agent: name, testCommand: fmt.Sprintf("go test ./part%02d", k), exempt: true})
				agents[name] = slowAgent("implementer", work, 0, files(b, partFiles(k)))
			}
			r := newRealRepo(b, "gomod", goTest, tasks, agents, c.config)
			if code, out := r.run("baseline"); code != 0 {
				b.Fatalf("baseline: exit %d\n%s", code, out)
			}
			start := time.Now()
			code, out := r.run("watch", "--once", "--jobs", fmt.Sprint(c.jobs))
			walls[i] += time.Since(start)
			if code != 0 {
				b.Fatalf("%s: exit %d\n%s", c.name, code, out)
			}
			for _, tk := range tasks {
				if st := r.field(tk.id, "Status"); st != "completed" {
					b.Fatalf("%s: %s is %s", c.name, tk.id, st)
				}
				again[i] += strings.Count(r.read(".orchestrator/runs/"+tk.id+"/1/gate.log"), "judged again")
			}
		}
	}
	for i, c := range cases {
		b.ReportMetric(walls[i].Seconds()/float64(b.N), c.name+"-s")
		b.ReportMetric(float64(again[i])/float64(b.N), c.name+"-judged-again")
		if i > 0 {
			b.ReportMetric(float64(walls[0])/float64(walls[i]), c.name+"-throughput-x")
		}
	}
}

// TestMergeQueueKill9: watch is killed with SIGKILL while two gates run, the second
// candidate judged behind the first. The next `watch --once` judges what the agents left
// and lands both tasks, each once and at its first attempt, in a linear history.
func TestMergeQueueKill9(t *testing.T) {
	t.Parallel()
	b := newGateBarrier(t, 3) // never reached by the killed run's two gates
	r := newRealRepo(t, "gomod", b.command(), []realTask{
		{id: "TASK-001", category: "backend", agent: "first", testCommand: "go test ./part01", exempt: true},
		{id: "TASK-002", category: "backend", agent: "second", testCommand: "go test ./part02", exempt: true},
	}, map[string][]string{
		"first":  slowAgent("implementer", 100*time.Millisecond, 0, files(t, partFiles(1))),
		"second": {"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer", "TESTAGENT_FROM=" + files(t, partFiles(2)), "TESTAGENT_SH=" + b.waitCmd()},
	}, "gate_jobs: 2\n")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	b.arm(t)
	base := head(r.repo)

	w := r.start("watch", "--once", "--jobs", "2", "--json")
	runs := filepath.Join(b.dir, "runs")
	deadline := time.Now().Add(scaled(3 * time.Minute))
	for {
		entries, _ := os.ReadDir(runs)
		if len(entries) == 2 && strings.Contains(w.out.String(), "judging it behind TASK-001") {
			break
		}
		if w.exited() || time.Now().After(deadline) {
			t.Fatalf("the two gates never ran at once, the second behind the first\n%s", w.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.kill9(t)
	// The gates of the next run pass the barrier.
	if err := os.WriteFile(filepath.Join(runs, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	code, out := r.run("watch", "--once", "--jobs", "2")
	if code != 0 {
		t.Fatalf("the run after the kill: exit %d%s%s\n%s", code, r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
	}
	for _, id := range []string{"TASK-001", "TASK-002"} {
		if st := r.field(id, "Status"); st != "completed" {
			t.Errorf("%s is %s, want completed%s", id, st, r.describeAttempts(id))
		}
		if dirs := r.attemptDirs(id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want the one the kill interrupted%s", id, dirs, r.describeAttempts(id))
		}
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 2 {
		t.Fatalf("commits since the fixture: %v, want one a task", commits)
	}
	seen := map[string]bool{}
	for _, c := range commits {
		line := r.git("log", "-1", "--format=%P|%s", c)
		parents, subject, _ := strings.Cut(line, "|")
		task, _, _ := strings.Cut(subject, ":")
		if len(strings.Fields(parents)) != 1 || seen[task] {
			t.Errorf("commit %.12s (%s): parents %q; a task lands once, in a linear history", c, subject, parents)
		}
		seen[task] = true
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}

// TestMergeQueueBehindRed: an independent BUILD task's candidate is judged behind a TEST
// task's RED, which has not landed: the RED's test does not compile yet, and breaks its
// package's baseline tests in the tree the BUILD candidate is judged in. Those are owed to
// the TEST task, as they are once its RED lands: the BUILD task lands at its first attempt.
func TestMergeQueueBehindRed(t *testing.T) {
	t.Parallel()
	b := newGateBarrier(t, 2)
	r := newRealRepo(t, "gomod", b.command(), []realTask{
		{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001", testCommand: b.script() + " && go test ./cart"},
		{id: "TASK-001", category: "backend", agent: "builder", testCommand: "go test ./part01", exempt: true},
		{id: "TASK-002", category: "backend", agent: "discount", deps: "TASK-T01"},
	}, map[string][]string{
		"writer":   slowAgent("test-writer", 100*time.Millisecond, 0, files(t, goRedFiles)),
		"discount": slowAgent("implementer", 100*time.Millisecond, 0, files(t, goGreenFiles)),
		// It ends once the RED's gate runs, so that it is queued behind it.
		"builder": {"TESTAGENT_MODE=script", "TESTAGENT_ROLE=implementer", "TESTAGENT_FROM=" + files(t, partFiles(1)), "TESTAGENT_SH=" + b.waitCmd()},
	}, "gate_jobs: 2\n")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	b.arm(t)

	code, out := r.run("watch", "--once", "--jobs", "2")
	if code != 0 {
		t.Fatalf("exit %d, want 0%s%s%s\n%s", code, r.describeAttempts("TASK-T01"), r.describeAttempts("TASK-001"), r.describeAttempts("TASK-002"), out)
	}
	for _, id := range []string{"TASK-T01", "TASK-001", "TASK-002"} {
		if dirs := r.attemptDirs(id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want one%s", id, dirs, r.describeAttempts(id))
		}
	}
	if log := r.read(".orchestrator/runs/TASK-001/1/gate.log"); !strings.Contains(log, "judged behind TASK-T01") {
		t.Errorf("TASK-001 was not judged behind TASK-T01's RED:\n%s", log)
	}
	r.noneLeft()
}

// TestMergeQueuePersonMovesQueuedTask: while a task's candidate waits in the merge queue
// (its gate held), a person sets the task back to pending. Its candidate leaves the queue
// and nothing of that attempt lands; the task runs again and its next attempt lands.
func TestMergeQueuePersonMovesQueuedTask(t *testing.T) {
	t.Parallel()
	b := newGateBarrier(t, 2) // the first gate waits until the test opens it
	r := newRealRepo(t, "gomod", b.command(), []realTask{
		{id: "TASK-001", category: "backend", agent: "a1", testCommand: "go test ./part01", exempt: true},
	}, map[string][]string{
		"a1": slowAgent("implementer", 100*time.Millisecond, 0, files(t, partFiles(1))),
	}, "")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	b.arm(t)
	base := head(r.repo)
	w := r.start("watch", "--once")
	runs := filepath.Join(b.dir, "runs")
	deadline := time.Now().Add(scaled(2 * time.Minute))
	for entries, _ := os.ReadDir(runs); len(entries) == 0; entries, _ = os.ReadDir(runs) {
		if w.exited() || time.Now().After(deadline) {
			t.Fatalf("the gate never ran\n%s", w.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, out := r.run("set", "TASK-001", "Status=pending"); code != 0 {
		t.Fatalf("set: exit %d\n%s", code, out)
	}
	for !strings.Contains(w.out.String(), "leaves the merge queue") {
		if w.exited() || time.Now().After(deadline) {
			t.Fatalf("the queued candidate never left the queue\n%s", w.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(runs, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, w.out.String())
	}
	if res := r.read(".orchestrator/runs/TASK-001/1/result.json"); !strings.Contains(res, `"outcome": "stopped"`) {
		t.Errorf("attempt 1 is not recorded as stopped:\n%s", res)
	}
	commits := commitsSince(r.repo, base)
	if len(commits) != 1 || r.field("TASK-001", "Status") != "completed" {
		t.Fatalf("commits %v, status %s: want the second attempt's one landing%s", commits, r.field("TASK-001", "Status"), r.describeAttempts("TASK-001"))
	}
	if got := r.git("log", "-1", "--format=%B", commits[0]); !strings.Contains(got, "Orchestrator-Attempt: 2") {
		t.Errorf("the landing is not attempt 2's:\n%s", got)
	}
	r.noneLeft()
}
