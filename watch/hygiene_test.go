package watch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Git hygiene of the landing (SPEC §7.7, issue 27 item 5), through the real binary with
// scripted agents: a verified candidate that waited for the person's uncommitted changes
// lands without a new agent run, and a BUILD task whose agent changed nothing is never
// recorded as having landed another task's commit.

// countingAgent is the environment of a test agent that appends a line to the file starts
// each time it starts, so that a test counts the agent's runs.
func countingAgent(starts string, env ...string) []string {
	return append([]string{"TESTAGENT_STARTLOG=" + starts}, env...)
}

// agentRuns returns how many times the agents whose start log is starts ran for task id.
func agentRuns(t *testing.T, starts, id string) int {
	t.Helper()
	b, err := os.ReadFile(starts)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, id+" ") {
			n++
		}
	}
	return n
}

// trailer returns the value of a trailer of commit ("" when it has none).
func (r *repo) trailer(commit, key string) string {
	r.t.Helper()
	return r.git("log", "-1", "--format=%(trailers:key="+key+",valueonly)", commit)
}

// landingRepo is a repository whose one BUILD task's agent appends "agent" to the last
// line of f.txt, and whose test checks that it did (and, when it exists, that g.txt does
// not say "broken"). The person has an uncommitted edit of f.txt's first line, so that
// the first landing is refused; starts counts the agent's runs.
func landingRepo(t *testing.T) (r *repo, starts string) {
	t.Helper()
	starts = filepath.Join(t.TempDir(), "starts.log")
	r = newRepo(t, []task{{id: "TASK-001", category: "backend", agent: "editor",
		testCommand: "grep -q 5agent f.txt && ! grep -qs broken g.txt"}},
		map[string][]string{"editor": countingAgent(starts, "TESTAGENT_MODE=script", "TESTAGENT_SH=sed -i s/^5$/5agent/ f.txt")}, "")
	r.write("f.txt", "1\n2\n3\n4\n5\n")
	r.commitAll()
	r.uncommitted = true
	r.write("f.txt", "1person\n2\n3\n4\n5\n")
	code, out := r.run("watch", "--once")
	if code != 1 || r.statuses()["TASK-001"] != "blocked" {
		t.Fatalf("exit %d, TASK-001 %s; want exit 1 and blocked by the person's edit\n%s", code, r.statuses()["TASK-001"], out)
	}
	rr := &realRepo{repo: r}
	if why := rr.field("TASK-001", "Blocked-Reason"); !strings.Contains(why, "f.txt") || !strings.Contains(why, "refs/orchestrator/attempts/TASK-001/1") {
		t.Errorf("Blocked-Reason %q, want it to name f.txt and the candidate's ref", why)
	}
	if got := r.read("f.txt"); got != "1person\n2\n3\n4\n5\n" {
		t.Errorf("the person's edit was not kept: f.txt is %q", got)
	}
	if n := agentRuns(t, starts, "TASK-001"); n != 1 {
		t.Fatalf("the agent ran %d times, want 1", n)
	}
	return r, starts
}

// TestBlockedCandidateLands: a task blocked because its landing would overwrite the
// person's uncommitted edit, set back to pending, lands the candidate that was verified,
// judged again, with no new agent run; its record is the attempt that made it.
func TestBlockedCandidateLands(t *testing.T) {
	t.Parallel()

	// The person's edit still in the way: blocked again, and still no new agent run.
	t.Run("edit still there", func(t *testing.T) {
		t.Parallel()
		r, starts := landingRepo(t)
		head := r.git("rev-parse", "main")
		r.run("set", "TASK-001", "Status=pending")
		code, out := r.run("watch", "--once")
		if code != 1 || r.statuses()["TASK-001"] != "blocked" {
			t.Errorf("exit %d, TASK-001 %s; want exit 1 and blocked again\n%s", code, r.statuses()["TASK-001"], out)
		}
		if n := agentRuns(t, starts, "TASK-001"); n != 1 {
			t.Errorf("the agent ran %d times, want 1: a waiting candidate needs no new run\n%s", n, out)
		}
		if got := r.git("rev-parse", "main"); got != head {
			t.Errorf("main moved from %s to %s with the person's edit in the way", head, got)
		}
		r.noneLeft()
	})

	// The person committed their edit (the head moved): the candidate is rebased onto it,
	// judged again there, and lands as attempt 1, the agent's only run.
	t.Run("edit committed", func(t *testing.T) {
		t.Parallel()
		r, starts := landingRepo(t)
		r.git("commit", "-q", "-am", "the person's edit")
		r.run("set", "TASK-001", "Status=pending")
		code, out := r.run("watch", "--once")
		if code != 0 || r.statuses()["TASK-001"] != "completed" {
			t.Fatalf("exit %d, TASK-001 %s; want exit 0 and completed\n%s", code, r.statuses()["TASK-001"], out)
		}
		if n := agentRuns(t, starts, "TASK-001"); n != 1 {
			t.Errorf("the agent ran %d times, want 1: the verified candidate lands without a new run\n%s", n, out)
		}
		head := r.git("rev-parse", "main")
		if commit := (&realRepo{repo: r}).field("TASK-001", "Commit"); commit != head {
			t.Errorf("Commit %q, want the landed head %s", commit, head)
		}
		if task, n := r.trailer(head, "Orchestrator-Task"), r.trailer(head, "Orchestrator-Attempt"); task != "TASK-001" || n != "1" {
			t.Errorf("the head's trailers name %q attempt %q, want TASK-001 attempt 1", task, n)
		}
		if got := r.read("f.txt"); got != "1person\n2\n3\n4\n5agent\n" {
			t.Errorf("f.txt is %q, want the person's edit and the agent's", got)
		}
		if dirs := (&realRepo{repo: r}).attemptDirs("TASK-001"); len(dirs) != 1 {
			t.Errorf("attempt folders %v, want one", dirs)
		}
		if log := r.read(".orchestrator/runs/TASK-001/1/gate.log"); !strings.Contains(log, "with no new agent run") || !strings.Contains(log, "rebased onto") {
			t.Errorf("gate.log does not say the candidate was rebased and judged again without an agent:\n%s", log)
		}
		r.noneLeft()
	})

	// The person undid their edit: the head did not move, and the candidate lands as it is.
	t.Run("edit undone", func(t *testing.T) {
		t.Parallel()
		r, starts := landingRepo(t)
		r.git("checkout", "--", "f.txt")
		r.run("set", "TASK-001", "Status=pending")
		code, out := r.run("watch", "--once")
		if code != 0 || r.statuses()["TASK-001"] != "completed" {
			t.Fatalf("exit %d, TASK-001 %s; want exit 0 and completed\n%s", code, r.statuses()["TASK-001"], out)
		}
		if n := agentRuns(t, starts, "TASK-001"); n != 1 {
			t.Errorf("the agent ran %d times, want 1\n%s", n, out)
		}
		if got := r.read("f.txt"); got != "1\n2\n3\n4\n5agent\n" {
			t.Errorf("f.txt is %q, want the agent's edit", got)
		}
		r.noneLeft()
	})

	// What the person committed meanwhile breaks the candidate's test: judged again on the
	// new head, it no longer passes, and nothing of it lands. Verified once is not verified
	// forever.
	t.Run("no longer passes", func(t *testing.T) {
		t.Parallel()
		r, starts := landingRepo(t)
		r.git("checkout", "--", "f.txt")
		r.write("g.txt", "broken\n")
		r.git("add", "g.txt")
		r.git("commit", "-q", "-m", "the person breaks the test")
		head := r.git("rev-parse", "main")
		r.run("set", "TASK-001", "Status=pending")
		code, out := r.run("watch", "--once")
		if code != 1 || r.statuses()["TASK-001"] != "failed" {
			t.Errorf("exit %d, TASK-001 %s; want exit 1 and failed (auto-retry is off)\n%s", code, r.statuses()["TASK-001"], out)
		}
		if got := r.git("rev-parse", "main"); got != head {
			t.Errorf("main moved from %s to %s: a candidate that no longer passes landed", head, got)
		}
		if n := agentRuns(t, starts, "TASK-001"); n != 1 {
			t.Errorf("the agent ran %d times, want 1\n%s", n, out)
		}
		r.noneLeft()
	})
}

// TestNoChangeBuildSkipped: a BUILD task whose agent changed nothing, while the tests of
// its TEST task's landed RED pass already (the BUILD task before it did the work), is not
// completed with that task's commit: it is skipped, with no Commit, and says why. Its
// honest twin lands a commit of its own.
func TestNoChangeBuildSkipped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		second []string // TASK-002's agent
		want   string
	}{
		{"changes nothing", []string{"TESTAGENT_MODE=lie"}, "skipped"},
		{"honest", []string{"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=b.txt=more"}, "completed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Both BUILD tasks must make TASK-T01's test pass; the first does.
			r := newRepo(t, []task{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testCommand: "test -f a.txt"},
				{id: "TASK-001", category: "backend", agent: "first", testCommand: "test -f a.txt", deps: "TASK-T01", tdd: true},
				{id: "TASK-002", category: "backend", agent: "second", testCommand: "test -f a.txt", deps: "TASK-T01, TASK-001", tdd: true},
			}, map[string][]string{
				"writer": {"TESTAGENT_MODE=honest", "TESTAGENT_ROLE=test-writer", "TESTAGENT_WRITE=a_test.go=package a"},
				"first":  {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=a.txt=done"},
				"second": tt.second,
			}, "")
			code, out := r.run("watch", "--once")
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, out)
			}
			st := r.statuses()
			if st["TASK-T01"] != "completed" || st["TASK-001"] != "completed" || st["TASK-002"] != tt.want {
				t.Fatalf("statuses %v, want TASK-T01 and TASK-001 completed, TASK-002 %s\n%s", st, tt.want, out)
			}
			rr := &realRepo{repo: r}
			first, second := rr.field("TASK-001", "Commit"), rr.field("TASK-002", "Commit")
			head := r.git("rev-parse", "main")
			switch tt.want {
			case "skipped":
				if second != "" {
					t.Errorf("TASK-002 Commit %q, want none: %s is TASK-001's landing", second, first)
				}
				if head != first {
					t.Errorf("main is %s, want TASK-001's landing %s: nothing of TASK-002 lands", head, first)
				}
				res := rr.result("TASK-002", 1)
				if res["outcome"] != "skipped" || res["failure_type"] != "no_change" || !strings.Contains(res["reason"].(string), "changed nothing") {
					t.Errorf("TASK-002's record: %v %v: %v; want skipped, no_change, and why", res["outcome"], res["failure_type"], res["reason"])
				}
				if !strings.Contains(out, "TASK-002 skipped") {
					t.Errorf("the run does not say TASK-002 was skipped:\n%s", out)
				}
			default:
				if second == "" || second == first || second != head || r.trailer(second, "Orchestrator-Task") != "TASK-002" {
					t.Errorf("TASK-002 Commit %q (TASK-001's %q, head %s), want its own landing", second, first, head)
				}
			}
			r.noneLeft()
		})
	}
}

// TestInitGitignoreKeepsStateOut: after `orchestrator init` and a commit of what it says
// to commit, a run that measures a baseline, retries and halts a task leaves git nothing
// untracked under .orchestrator/: what stays on the machine (attempt folders, markers,
// reports, the baseline's copy, session counters) is ignored, so `git add -A` and
// `git stash -u` leave it alone, and only the queues the run edited are modified. The
// .gitignore of the earlier init (runs/ and complete/ only) lets the baseline and the
// halt report through.
func TestInitGitignoreKeepsStateOut(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		gitignore string // "" for init's own
		untracked []string
	}{
		{name: "init's", untracked: nil},
		{name: "earlier init's", gitignore: ".lock\nwatch.lock\nwatch.pid\ncomplete/\nruns/\n",
			untracked: []string{".orchestrator/baseline.json", ".orchestrator/reports/"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-001", category: "backend", agent: "quiet", testCommand: "go test ./money", exempt: true},
			}, map[string][]string{"quiet": {"TESTAGENT_MODE=nomarker"}}, "")
			r.write(".git/info/exclude", "") // the person's repository: nothing excluded
			if tt.gitignore != "" {
				r.write(".orchestrator/.gitignore", tt.gitignore)
			}
			if code, out := r.run("init"); code != 0 || !strings.Contains(out, "add .orchestrator") {
				t.Fatalf("init: exit %d, and it does not say what to commit:\n%s", code, out)
			}
			git(t, r.root, "add", ".orchestrator")
			git(t, r.root, "commit", "-q", "-m", "orchestrator: queues and config")
			if code, out := r.run("watch", "--once"); code != 3 {
				t.Fatalf("exit %d, want 3 (halted)\n%s", code, out)
			}
			var untracked, modified []string
			for _, line := range strings.Split(git(t, r.root, "status", "--porcelain", "--untracked-files=normal"), "\n") {
				switch {
				case strings.HasPrefix(line, "?? "):
					untracked = append(untracked, strings.TrimPrefix(line, "?? "))
				case line != "":
					modified = append(modified, strings.TrimSpace(line))
				}
			}
			if strings.Join(untracked, " ") != strings.Join(tt.untracked, " ") {
				t.Errorf("untracked after the run: %q, want %q", untracked, tt.untracked)
			}
			for _, m := range modified {
				if tt.gitignore != "" && m == "M .orchestrator/session_state.md" {
					continue // committed with the rest: the run's counters then show as an edit
				}
				if m != "M .orchestrator/task_queue.md" && m != "M .orchestrator/issue_queue.md" {
					t.Errorf("after the run git says %q; want only the queues modified", m)
				}
			}
			if tt.gitignore != "" {
				return
			}
			ignored := git(t, r.root, "status", "--porcelain", "--ignored")
			for _, want := range []string{".orchestrator/baseline.json", ".orchestrator/reports/", ".orchestrator/runs/", ".orchestrator/session_state.md"} {
				if !strings.Contains(ignored, "!! "+want) {
					t.Errorf("%s is not ignored:\n%s", want, ignored)
				}
			}
			r.noneLeft()
		})
	}
}
