package workers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLaneStartsClean: a worker keeps one checkout per job lane and resets it for the next
// job. What the last job's agent left there — a new file, an ignored one, a new
// folder, an edit of a tracked file, a deleted one, and its .git file replaced by a
// link into another repository — is gone when the next job's agent starts, its checkout
// is its base and nothing else, and the candidate it makes holds its own work only. The
// other repository the link named is untouched.
func TestLaneStartsClean(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n", "keep.txt": "kept\n", ".gitignore": "*.tmp\n"})
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	other, otherHead := newRepo(t, map[string]string{"theirs.txt": "theirs\n"})
	seen := make(chan string, 8)
	run := func(ctx context.Context, job Job, ws Workspace) (RunResult, error) {
		var found []string
		filepath.WalkDir(ws.Dir, func(p string, e os.DirEntry, err error) error {
			rel, _ := filepath.Rel(ws.Dir, p)
			if err == nil && rel != "." {
				found = append(found, rel)
			}
			if e != nil && e.IsDir() && e.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		})
		b, _ := os.ReadFile(filepath.Join(ws.Dir, "README.md"))
		fi, err := os.Lstat(filepath.Join(ws.Dir, ".git"))
		gitFile := "missing"
		if err == nil {
			gitFile = "not a file"
			if fi.Mode().IsRegular() {
				gitFile = "file"
			}
		}
		seen <- strings.Join(found, " ") + " | README.md=" + strings.TrimSpace(string(b)) + " | .git " + gitFile
		if job.Attempt.Task == "TASK-001" {
			writeAll(t, ws.Dir, map[string]string{"left.txt": "left\n", "build.tmp": "ignored\n", "nested/inner.txt": "inner\n", "README.md": "changed\n"})
			os.Remove(filepath.Join(ws.Dir, "keep.txt"))
			os.Remove(filepath.Join(ws.Dir, ".git"))
			if err := os.Symlink(filepath.Join(other, ".git"), filepath.Join(ws.Dir, ".git")); err != nil {
				t.Error(err)
			}
			return RunResult{}, nil
		}
		writeAll(t, ws.Dir, map[string]string{"second.txt": "second\n"})
		return RunResult{}, nil
	}
	startWorker(t, srv.URL(), "w1", run)
	for i, task := range []string{"TASK-001", "TASK-002"} {
		if err := d.Submit(context.Background(), Job{Attempt: AttemptID{Task: task, N: 1}, Base: base, Agent: "exec", Argv: []string{"true"}, Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		o := next(t, d)
		want := ".git .gitignore README.md keep.txt | README.md=hello | .git file"
		if got := <-seen; got != want {
			t.Fatalf("job %d's agent found: %s\nwant: %s", i+1, got, want)
		}
		if task == "TASK-002" {
			files := git(t, repo, "ls-tree", "-r", "--name-only", o.Candidate)
			if files != ".gitignore\nREADME.md\nkeep.txt\nsecond.txt" {
				t.Fatalf("TASK-002's candidate holds:\n%s", files)
			}
		}
	}
	if got := git(t, other, "rev-parse", "HEAD"); got != otherHead || git(t, other, "status", "--porcelain") != "" {
		t.Fatalf("the other repository changed: head %s (was %s), status %q", got, otherHead, git(t, other, "status", "--porcelain"))
	}
}

// litterScript is an agent that leaves its lane littered: a new file, an ignored one, a
// new folder, an edit and a deletion of tracked files, a background process that writes
// on after it, and, where its sandbox lets it, its .git file replaced by a link.
const litterScript = `#!/bin/sh
echo left > left.txt
echo ignored > build.tmp
mkdir nested && echo inner > nested/inner.txt
echo changed > README.md
rm keep.txt
(rm -f .git && ln -s /tmp .git) 2>/dev/null
printf 'done' > "$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done"
`

// lookScript is an honest agent that writes what its checkout held when it started, and its
// own work.
const lookScript = `#!/bin/sh
found=$(ls -A | sort)
{ printf '%s\n' "$found"; cat README.md; } > seen.txt
echo mine > mine.txt
printf 'done' > "$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done"
`

// TestLaneStartsCleanForARealAgent is TestLaneStartsClean through the real agent runner,
// in the sandbox where bubblewrap works: a littering agent's process, then an honest
// one's in the same lane, which finds its base and nothing else and whose candidate is
// its own work.
func TestLaneStartsCleanForARealAgent(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n", "keep.txt": "kept\n", ".gitignore": "*.tmp\n"})
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	startWorker(t, srv.URL(), "w1", AgentRunner(AgentOptions{Sandbox: sandboxed(t)}))
	var last Outcome
	for _, c := range []struct{ task, script string }{{"TASK-001", litterScript}, {"TASK-002", lookScript}} {
		script := filepath.Join(t.TempDir(), "agent.sh")
		if err := os.WriteFile(script, []byte(c.script), 0o755); err != nil {
			t.Fatal(err)
		}
		job := Job{Attempt: AttemptID{Task: c.task, N: 1}, Base: base, Agent: "exec", Argv: []string{"/bin/sh", script}, Timeout: time.Minute}
		if err := d.Submit(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		if last = next(t, d); last.ExitCode != 0 || last.Marker == nil {
			t.Fatalf("%s: outcome %+v", c.task, last)
		}
	}
	if got, want := git(t, repo, "show", last.Candidate+":seen.txt"), ".git\n.gitignore\nREADME.md\nkeep.txt\nhello"; got != want {
		t.Errorf("the second agent found:\n%s\nwant:\n%s", got, want)
	}
	if files := git(t, repo, "ls-tree", "-r", "--name-only", last.Candidate); files != ".gitignore\nREADME.md\nkeep.txt\nmine.txt\nseen.txt" {
		t.Errorf("the second agent's candidate holds:\n%s", files)
	}
}

// TestLanesReadyBeforeTheFirstJob: a worker that finds a base bundled when it starts makes
// each lane's checkout of it before any job comes, so that its first jobs reset a
// checkout rather than make one; the first job's agent then finds its base there.
func TestLanesReadyBeforeTheFirstJob(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	if err := d.BundleBase(context.Background(), base); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	cache := filepath.Join(t.TempDir(), "cache") // Serve sets w.CacheDir: not read from here
	w := &Worker{Name: "w1", URL: srv.URL(), Token: testToken, CacheDir: cache, Jobs: 2,
		Run: func(ctx context.Context, job Job, ws Workspace) (RunResult, error) {
			b, _ := os.ReadFile(filepath.Join(ws.Dir, "README.md"))
			seen <- string(b)
			return RunResult{}, nil
		}}
	serveUntilEnd(t, w)
	for i := range 2 {
		readme := filepath.Join(cache, "lanes", strconv.Itoa(i), "work", "README.md")
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(readme); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lane %d has no checkout of the base before its first job", i)
			}
		}
	}
	if err := d.Submit(context.Background(), Job{Attempt: AttemptID{Task: "TASK-001", N: 1}, Base: base, Agent: "exec", Argv: []string{"true"}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if o := next(t, d); o.Candidate != base {
		t.Errorf("candidate %s, want the base %s (the agent changed nothing)", o.Candidate, base)
	}
	if got := <-seen; got != "hello\n" {
		t.Errorf("the first job's agent found README.md %q, want its base's", got)
	}
}

// TestSeedStartsTheCheckout: a re-emit attempt's job names a seed, the work of the attempt
// it re-emits (one commit on its base): the agent's checkout holds it when the agent
// starts, and the candidate is one commit on the base with the seed's work and the agent's.
// A seed that is not one commit on the job's base is refused at submission.
func TestSeedStartsTheCheckout(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	seed := commitFiles(t, repo, map[string]string{"work.go": "package work\n"})
	later := commitFiles(t, repo, map[string]string{"later.go": "package later\n"})
	git(t, repo, "reset", "-q", "--hard", base)
	seen := make(chan string, 1)
	startWorker(t, srv.URL(), "w1", func(ctx context.Context, job Job, ws Workspace) (RunResult, error) {
		b, err := os.ReadFile(filepath.Join(ws.Dir, "work.go"))
		seen <- fmt.Sprintf("%q %v", b, err)
		writeAll(t, ws.Dir, map[string]string{"more.go": "package work\n"})
		return RunResult{}, nil
	})
	job := Job{Attempt: AttemptID{Task: "TASK-001", N: 2}, Base: base, Seed: seed, Agent: "exec", Argv: []string{"true"}, Timeout: time.Minute}
	if err := d.Submit(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	o := next(t, d)
	if got := <-seen; got != `"package work\n" <nil>` {
		t.Errorf("the agent found work.go: %s, want the seed's", got)
	}
	if parent := git(t, repo, "rev-parse", o.Candidate+"^"); parent != base {
		t.Errorf("the candidate's parent is %s, want the base %s", parent, base)
	}
	if files := git(t, repo, "ls-tree", "-r", "--name-only", o.Candidate); files != ".gitignore\nREADME.md\nmore.go\nwork.go" {
		t.Errorf("the candidate holds:\n%s", files)
	}
	for name, bad := range map[string]string{"two commits on the base": later, "the base itself": base} {
		job := Job{Attempt: AttemptID{Task: "TASK-002", N: 1}, Base: base, Seed: bad, Agent: "exec", Argv: []string{"true"}, Timeout: time.Minute}
		if err := d.Submit(context.Background(), job); err == nil || !strings.Contains(err.Error(), "not one commit on the base") {
			t.Errorf("a seed that is %s: Submit says %v", name, err)
		}
	}
}
