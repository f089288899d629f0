package workers

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orchestrator/orchestrator/agents"
)

const testToken = "worker-token"

// testKey is the dispatcher's key in the tests.
var testKey = []byte("the authority's key")

// agentScript is a scripted agent: it writes its prompt to prompt.txt and a new file,
// prints its final message, and writes its done marker.
const agentScript = `#!/bin/sh
cat > prompt.txt
echo "new work of $ORCHESTRATOR_TASK_ID" > "new-$ORCHESTRATOR_TASK_ID.txt"
echo "scratch" > ignored.tmp
echo "working on $ORCHESTRATOR_TASK_ID"
echo "final message of $ORCHESTRATOR_TASK_ID"
printf 'all done' > "$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done"
`

// git runs git in dir and returns its trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes the authority's repository with files files (name → content) committed.
func newRepo(t testing.TB, files map[string]string) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	files[".gitignore"] = "*.tmp\n"
	return dir, commitFiles(t, dir, files)
}

// commitFiles writes files and commits them.
func commitFiles(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	writeAll(t, dir, files)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "files")
	return git(t, dir, "rev-parse", "HEAD")
}

// writeAll writes files under dir.
func writeAll(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// serve starts the embedded server for a test.
func serve(t testing.TB) *Server {
	t.Helper()
	srv, err := Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", StoreDir: t.TempDir(), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// events collects what a dispatcher refused and dropped.
type events struct {
	refused chan error
	dropped chan string
}

func dispatch(t testing.TB, srv *Server, repo string, ackWait time.Duration) (*Dispatcher, events) {
	t.Helper()
	ev := events{refused: make(chan error, 16), dropped: make(chan string, 16)}
	d, err := NewDispatcher(context.Background(), DispatcherOptions{
		URL: srv.URL(), Credentials: srv.Authority(), Repo: repo, Key: testKey, AckWait: ackWait,
		Refused: func(a AttemptID, w string, err error) { ev.refused <- err },
		Dropped: func(a AttemptID, w string) { ev.dropped <- w },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d, ev
}

// startWorker runs a worker of one job at a time until the test ends, and returns it.
func startWorker(t testing.TB, url, name string, run RunFunc) *Worker {
	t.Helper()
	w := &Worker{Name: name, URL: url, Token: testToken, CacheDir: filepath.Join(t.TempDir(), "cache"), Jobs: 1, Run: run}
	serveUntilEnd(t, w)
	return w
}

// serveUntilEnd runs w until the test ends. Serve sets w's fields: the test reads none of
// them meanwhile.
func serveUntilEnd(t testing.TB, w *Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker %s: %v", w.Name, err)
		}
	})
}

// scriptJob is a job of attempt n of task whose agent is agentScript.
func scriptJob(t testing.TB, task string, n int, base string) Job {
	t.Helper()
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return Job{Attempt: AttemptID{Task: task, N: n}, Base: base, Prompt: "do " + task, Agent: "exec", Argv: []string{"/bin/sh", script}, Timeout: time.Minute}
}

// sandboxed says whether agents run in bubblewrap here; under CI it must.
func sandboxed(t testing.TB) bool {
	t.Helper()
	if err := agents.BwrapAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap: %v", err)
		}
		t.Logf("agents run without a sandbox: %v", err)
		return false
	}
	return true
}

// next waits for the next outcome.
func next(t testing.TB, d *Dispatcher) Outcome {
	t.Helper()
	select {
	case o := <-d.Outcomes():
		return o
	case <-time.After(2 * time.Minute):
		t.Fatal("no outcome")
	}
	return Outcome{}
}

// TestSubmitRunsOnWorker is the honest path: a job submitted runs its agent on a worker, in
// a checkout of the base and in the sandbox, and its outcome comes back with the candidate
// fetched into the authority's repository: the new file in it, the ignored one not, the
// marker, the exit code and the agent's output.
func TestSubmitRunsOnWorker(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	startWorker(t, srv.URL(), "w1", AgentRunner(AgentOptions{Sandbox: sandboxed(t)}))
	if err := d.Submit(context.Background(), scriptJob(t, "TASK-001", 1, base)); err != nil {
		t.Fatal(err)
	}
	o := next(t, d)
	if o.Attempt != (AttemptID{"TASK-001", 1}) || o.Worker != "w1" || o.Base != base || o.ExitCode != 0 {
		t.Fatalf("outcome %+v", o)
	}
	if got := git(t, repo, "rev-parse", "refs/orchestrator/attempts/TASK-001/1"); got != o.Candidate || got == base {
		t.Fatalf("attempt ref %s, candidate %s, base %s", got, o.Candidate, base)
	}
	if parent := git(t, repo, "rev-parse", o.Candidate+"^"); parent != base {
		t.Errorf("candidate's parent %s, want the base %s", parent, base)
	}
	files := git(t, repo, "ls-tree", "--name-only", o.Candidate)
	for _, want := range []string{"README.md", "new-TASK-001.txt", "prompt.txt"} {
		if !strings.Contains(files, want) {
			t.Errorf("candidate lacks %s: %s", want, files)
		}
	}
	if strings.Contains(files, "ignored.tmp") {
		t.Errorf("candidate holds a file .gitignore ignores: %s", files)
	}
	if got := git(t, repo, "show", o.Candidate+":prompt.txt"); got != "do TASK-001" {
		t.Errorf("the agent's prompt: %q", got)
	}
	if o.Marker == nil || o.Marker.Kind != "done" || o.Marker.Text != "all done" {
		t.Errorf("marker %+v", o.Marker)
	}
	if !strings.Contains(o.Stdout, "final message of TASK-001") || !strings.Contains(string(o.Log), "working on TASK-001") {
		t.Errorf("stdout %q, log %q", o.Stdout, o.Log)
	}
	if pending, err := d.Pending(context.Background()); err != nil || len(pending) != 0 {
		t.Errorf("pending after the outcome: %v, %v", pending, err)
	}
	if got, ok, err := d.Accepted(context.Background(), o.Attempt); err != nil || !ok || got.Candidate != o.Candidate {
		t.Errorf("accepted: %+v, %v, %v", got, ok, err)
	}
	select {
	case err := <-ev.refused:
		t.Errorf("refused: %v", err)
	default:
	}
}

// TestIncrementalBundles: the second base's bundle holds only what the first lacks, so the
// worker that has the first fetches just that; a worker with an empty cache fetches the
// chain.
func TestIncrementalBundles(t *testing.T) {
	srv := serve(t)
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("src/f%03d.txt", i)] = strings.Repeat(fmt.Sprintf("line %d of file %d\n", i*7, i), 50)
	}
	repo, base1 := newRepo(t, files)
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	w1 := startWorker(t, srv.URL(), "w1", AgentRunner(AgentOptions{}))
	ctx := context.Background()
	if err := d.Submit(ctx, scriptJob(t, "TASK-001", 1, base1)); err != nil {
		t.Fatal(err)
	}
	next(t, d)
	first := w1.fetched.Load()
	base2 := commitFiles(t, repo, map[string]string{"src/f000.txt": "changed\n"})
	if err := d.Submit(ctx, scriptJob(t, "TASK-002", 1, base2)); err != nil {
		t.Fatal(err)
	}
	next(t, d)
	second := w1.fetched.Load() - first
	info1, err := d.bases.GetInfo(ctx, base1)
	if err != nil {
		t.Fatal(err)
	}
	info2, err := d.bases.GetInfo(ctx, base2)
	if err != nil {
		t.Fatal(err)
	}
	if info2.Metadata[prerequisiteKey] != base1 || info1.Metadata[prerequisiteKey] != "" {
		t.Errorf("prerequisites: first %q, second %q (want %s)", info1.Metadata[prerequisiteKey], info2.Metadata[prerequisiteKey], base1)
	}
	if first != int64(info1.Size) || second != int64(info2.Size) {
		t.Errorf("worker fetched %d then %d bytes; bundles are %d and %d", first, second, info1.Size, info2.Size)
	}
	if second*20 > first {
		t.Errorf("the incremental bundle is %d bytes, the first %d: not incremental", second, first)
	}
	// A new worker has neither base: it fetches the chain.
	w2 := startWorker(t, srv.URL(), "w2", AgentRunner(AgentOptions{}))
	w1stop := w1.fetched.Load()
	if err := d.Submit(ctx, scriptJob(t, "TASK-003", 1, base2)); err != nil {
		t.Fatal(err)
	}
	o := next(t, d)
	if o.Worker == "w2" && w2.fetched.Load() != int64(info1.Size+info2.Size) {
		t.Errorf("new worker fetched %d bytes, want the chain's %d", w2.fetched.Load(), info1.Size+info2.Size)
	}
	if o.Worker == "w1" && w1.fetched.Load() != w1stop {
		t.Errorf("w1 fetched again a base it has")
	}
}

// publishAs publishes an outcome as a worker would.
func publishAs(t testing.TB, srv *Server, w wireOutcome) {
	t.Helper()
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(WorkerUser, testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	b, _ := json.Marshal(w)
	if _, err := js.Publish(context.Background(), outcomeSubject+"."+w.Attempt.key(), b); err != nil {
		t.Fatal(err)
	}
}

// accepted returns the wire form of the outcome accepted for a.
func acceptedWire(t testing.TB, d *Dispatcher, a AttemptID) wireOutcome {
	t.Helper()
	e, err := d.accepted.Get(context.Background(), a.key())
	if err != nil {
		t.Fatal(err)
	}
	var w wireOutcome
	if err := json.Unmarshal(e.Value(), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestDuplicateOutcomeDropped: a second outcome for an attempt whose outcome was accepted
// (a late worker after a redelivery, with a proof as good as the first) is dropped, and
// the accepted candidate stays.
func TestDuplicateOutcomeDropped(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	startWorker(t, srv.URL(), "w1", AgentRunner(AgentOptions{}))
	a := AttemptID{"TASK-001", 1}
	if err := d.Submit(context.Background(), scriptJob(t, a.Task, a.N, base)); err != nil {
		t.Fatal(err)
	}
	o := next(t, d)
	late := acceptedWire(t, d, a)
	late.Worker, late.Delivery, late.Candidate, late.Bundle = "late", 2, base, ""
	late.sign(jobSecret(testKey, a))
	publishAs(t, srv, late)
	select {
	case w := <-ev.dropped:
		if w != "late" {
			t.Errorf("dropped the outcome of %q", w)
		}
	case err := <-ev.refused:
		t.Fatalf("refused instead of dropped: %v", err)
	case o2 := <-d.Outcomes():
		t.Fatalf("a second outcome delivered: %+v", o2)
	case <-time.After(time.Minute):
		t.Fatal("the duplicate was neither dropped nor refused")
	}
	if got := git(t, repo, "rev-parse", a.Ref()); got != o.Candidate {
		t.Errorf("attempt ref moved to %s, accepted %s", got, o.Candidate)
	}
}

// TestForgedOutcomeRefused: an outcome whose proof is not its job's (a worker that was not
// given the attempt signs with a guess), or for an attempt never submitted, is refused
// with ErrForged and moves no ref; the honest twin is TestSubmitRunsOnWorker.
func TestForgedOutcomeRefused(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	a := AttemptID{"TASK-001", 1}
	if err := d.Submit(context.Background(), scriptJob(t, a.Task, a.N, base)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		w      wireOutcome
		secret string
	}{
		{"wrong proof", wireOutcome{Attempt: a, Worker: "thief", Base: base, Candidate: base}, "a guessed secret"},
		{"never given", wireOutcome{Attempt: AttemptID{"TASK-999", 1}, Worker: "thief", Base: base, Candidate: base}, "a guessed secret"},
		// The worker that was given the job, saying that no worker finished it: only the
		// authority says that.
		{"says exhausted", wireOutcome{Attempt: a, Worker: "w1", Base: base, Candidate: base, Exhausted: 5}, jobSecret(d.o.Key, a)},
		{"says refused", wireOutcome{Attempt: a, Worker: "w1", Base: base, Candidate: base, Refused: "by the authority"}, jobSecret(d.o.Key, a)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.sign(tt.secret)
			publishAs(t, srv, tt.w)
			select {
			case err := <-ev.refused:
				if !errors.Is(err, ErrForged) {
					t.Errorf("refused with %v, want ErrForged", err)
				}
			case o := <-d.Outcomes():
				t.Fatalf("forged outcome accepted: %+v", o)
			case <-time.After(time.Minute):
				t.Fatal("forged outcome not refused")
			}
			if ref := git(t, repo, "for-each-ref", "refs/orchestrator/"); ref != "" {
				t.Errorf("a ref was set: %s", ref)
			}
		})
	}
}

// TestWrongTokenRefused: a worker with the wrong token cannot connect; the honest twin is
// every other test's worker.
func TestWrongTokenRefused(t *testing.T) {
	srv := serve(t)
	w := &Worker{Name: "intruder", URL: srv.URL(), Token: "guess", CacheDir: t.TempDir(), Run: AgentRunner(AgentOptions{})}
	err := w.Serve(context.Background())
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("worker with a wrong token: %v, want an authorization error", err)
	}
	if _, err := Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", StoreDir: t.TempDir()}); !errors.Is(err, ErrNoToken) {
		t.Errorf("server without a token: %v", err)
	}
}

// TestWorkerCannotReadJobs: a worker cannot read jobs (and their secrets) from the stream
// except through the shared consumer, nor write a base bundle or the accepted record.
func TestWorkerCannotReadJobs(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	if err := d.Submit(context.Background(), scriptJob(t, "TASK-001", 1, base)); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(WorkerUser, testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if s, err := d.js.Stream(ctx, jobStream); err != nil {
		t.Fatal(err)
	} else if _, err := s.GetMsg(ctx, 1); err != nil {
		t.Fatalf("the authority cannot read its job: %v", err) // the honest twin
	}
	// A denied request is never answered: each has its own deadline.
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		t.Cleanup(cancel)
		return c
	}
	if _, err := js.CreateConsumer(short(), jobStream, jetstream.ConsumerConfig{}); err == nil {
		t.Error("a worker made its own consumer of the job stream")
	}
	kv, err := js.KeyValue(ctx, acceptedBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(short(), "TASK-001.1", []byte("{}")); err == nil {
		t.Error("a worker wrote the accepted record")
	}
	obs, err := js.ObjectStore(ctx, basesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutString(short(), base, "forged"); err == nil {
		t.Error("a worker wrote a base bundle")
	}
}

// TestCandidateNotFetched: an outcome of the job's own worker whose bundle git cannot take
// is tried again, since the fault may be the authority repository's of the moment (here
// its pack folder is not a folder, so that git cannot write the candidate's pack): taken
// once the repository is whole again. When it never is, the outcome is refused and the
// attempt still ends, with an outcome of the authority's that says why (before, it waited
// for an outcome that could never come).
//
// A worktree being made, whose HEAD git writes as the null object first, was such a
// fault while the candidate was taken with `git bundle unbundle`, which reads every HEAD;
// `git index-pack` reads none (TestCandidateFetchedBesideHalfMadeWorktree).
func TestCandidateNotFetched(t *testing.T) {
	for _, mended := range []bool{true, false} {
		t.Run(fmt.Sprintf("mended=%v", mended), func(t *testing.T) {
			srv := serve(t)
			repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
			d, ev := dispatch(t, srv, repo, 5*time.Second)
			startWorker(t, srv.URL(), "w1", AgentRunner(AgentOptions{}))
			a := AttemptID{"TASK-001", 1}
			if err := d.Submit(context.Background(), scriptJob(t, a.Task, a.N, base)); err != nil {
				t.Fatal(err)
			}
			// The repository's objects are loose (commits made one by one): its pack
			// folder, put aside and replaced by a file, holds none of them.
			packs := filepath.Join(repo, ".git", "objects", "pack")
			if err := os.Rename(packs, packs+".aside"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(packs, []byte("in the way\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if mended {
				// Once the outcome was tried and put back, the worktree is whole.
				cons, err := d.js.Consumer(context.Background(), outcomeStream, outcomeConsumer)
				if err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(2 * time.Minute)
				for {
					info, err := cons.Info(context.Background())
					if err == nil && info.NumRedelivered > 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the outcome was never tried")
					}
					time.Sleep(20 * time.Millisecond)
				}
				if err := os.Remove(packs); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(packs+".aside", packs); err != nil {
					t.Fatal(err)
				}
			}
			o := next(t, d)
			if mended {
				if o.Refused != "" || o.Candidate == base {
					t.Fatalf("outcome %+v, want the worker's candidate", o)
				}
				if got := git(t, repo, "rev-parse", a.Ref()); got != o.Candidate {
					t.Errorf("attempt ref %s, candidate %s", got, o.Candidate)
				}
				select {
				case err := <-ev.refused:
					t.Errorf("refused: %v", err)
				default:
				}
				return
			}
			if !strings.Contains(o.Refused, "index-pack") || o.Candidate != base || o.Worker != "w1" {
				t.Fatalf("outcome %+v, want one refused for the bundle, on the base", o)
			}
			select {
			case err := <-ev.refused:
				if !strings.Contains(err.Error(), "index-pack") {
					t.Errorf("refused with %v", err)
				}
			default:
				t.Error("the refusal was not reported")
			}
			if ref := git(t, repo, "for-each-ref", "refs/orchestrator/"); ref != "" {
				t.Errorf("a ref was set: %s", ref)
			}
			if got, ok, err := d.Accepted(context.Background(), a); err != nil || !ok || got.Refused == "" {
				t.Errorf("accepted record: %+v, %v, %v; want the refusal, for a restarted authority", got, ok, err)
			}
		})
	}
}

// TestCandidateFetchedBesideHalfMadeWorktree: a worktree being made in the authority's
// repository (git writes its HEAD as the null object first) does not stop a candidate from
// being fetched: git index-pack, unlike git bundle unbundle, reads no HEAD.
func TestCandidateFetchedBesideHalfMadeWorktree(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	fake := filepath.Join(repo, ".git", "worktrees", "half-made")
	for name, text := range map[string]string{"HEAD": strings.Repeat("0", 40), "gitdir": filepath.Join(t.TempDir(), ".git"), "commondir": "../.."} {
		if err := os.MkdirAll(fake, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fake, name), []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	startWorker(t, srv.URL(), "w1", AgentRunner(AgentOptions{}))
	if err := d.Submit(context.Background(), scriptJob(t, "TASK-001", 1, base)); err != nil {
		t.Fatal(err)
	}
	if o := next(t, d); o.Refused != "" || o.Candidate == base {
		t.Fatalf("outcome %+v, want the worker's candidate", o)
	}
	select {
	case err := <-ev.refused:
		t.Errorf("refused: %v", err)
	default:
	}
}

// A treeEntry is one entry of a tree object written byte by byte (rawTree), as no git
// command that writes trees would write a malformed one.
type treeEntry struct {
	mode, name, id string
}

// rawTree writes a tree object of entries, in their order, to the repository at dir.
func rawTree(t *testing.T, dir string, entries ...treeEntry) string {
	t.Helper()
	var body []byte
	for _, e := range entries {
		id, err := hex.DecodeString(e.id)
		if err != nil {
			t.Fatal(err)
		}
		body = append(append(body, e.mode+" "+e.name+"\x00"...), id...)
	}
	c := exec.Command("git", "hash-object", "-w", "-t", "tree", "--literally", "--stdin")
	c.Dir, c.Stdin = dir, bytes.NewReader(body)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestMalformedCandidateRefused: the job's own worker (its proof holds) returns a candidate
// whose tree is not one git writes: an entry .git (a checkout would write the repository's
// own folder), an entry .. (a path out of the tree), or two entries of one name (the
// gate's checkout would read one, a landing the other). The authority takes a worker's
// candidate as it is, never checked out and committed again, so git's strict checks refuse
// it: the attempt ends as refused, on its base, and no ref points at it. The honest twin,
// made the same way byte by byte, is a tree git writes, and is accepted.
func TestMalformedCandidateRefused(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, repo, "clone", "-q", repo, clone)
	blob := git(t, clone, "rev-parse", base+":README.md")
	ignore := git(t, clone, "rev-parse", base+":.gitignore")
	hook := rawTree(t, clone, treeEntry{"100644", "post-checkout", blob})
	honest := []treeEntry{{"100644", ".gitignore", ignore}, {"100644", "README.md", blob}}
	results := resultsOf(t, srv)
	for i, tt := range []struct {
		name    string
		entries []treeEntry
		refused bool
	}{
		{"a tree git writes", append(slices.Clone(honest), treeEntry{"100644", "work.txt", blob}), false},
		{"an entry .git", append(slices.Clone(honest), treeEntry{"40000", ".git", hook}), true},
		{"an entry ..", append([]treeEntry{{"40000", "..", hook}}, honest...), true},
		{"two entries of one name", append(slices.Clone(honest), treeEntry{"100644", "work.txt", blob}, treeEntry{"100644", "work.txt", ignore}), true},
		// Modes git never writes, which fsck only notes: git reads each as its canonical
		// mode (a folder, a symbolic link, a plain file, a submodule), the gate's listing
		// of the tree by its bytes as a file, and its checkout's check then stops the run.
		{"a folder of mode 40755", append(slices.Clone(honest), treeEntry{"40755", "work", hook}), true},
		{"a symbolic link of mode 120755", append(slices.Clone(honest), treeEntry{"120755", "work.txt", blob}), true},
		{"a file of mode 100664", append(slices.Clone(honest), treeEntry{"100664", "work.txt", blob}), true},
		{"a file of mode 644", append(slices.Clone(honest), treeEntry{"644", "work.txt", blob}), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := AttemptID{fmt.Sprintf("TASK-%03d", i+1), 1}
			tree := rawTree(t, clone, tt.entries...)
			cand := git(t, clone, "commit-tree", tree, "-p", base, "-m", "work")
			o := sendCandidate(t, srv, d, results, a, base, cand, func(wr io.Writer) error {
				return gitRepo{dir: clone}.writeBundle(context.Background(), wr, cand, base)
			})
			checkTaken(t, repo, ev, a, o, base, cand, tt.refused, "index-pack")
		})
	}
}

// resultsOf opens the results' object store as a worker does.
func resultsOf(t *testing.T, srv *Server) jetstream.ObjectStore {
	t.Helper()
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(WorkerUser, testToken))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	results, err := js.ObjectStore(context.Background(), resultsBucket)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// sendCandidate submits attempt a's job on base, publishes as its worker w1, with the job's
// proof, an outcome whose candidate is cand and whose bundle bundle writes, and returns
// what the dispatcher made of it.
func sendCandidate(t *testing.T, srv *Server, d *Dispatcher, results jetstream.ObjectStore, a AttemptID, base, cand string, bundle func(io.Writer) error) Outcome {
	t.Helper()
	ctx := context.Background()
	if err := d.Submit(ctx, scriptJob(t, a.Task, a.N, base)); err != nil {
		t.Fatal(err)
	}
	w := wireOutcome{Attempt: a, Worker: "w1", Base: base, Candidate: cand, Delivery: 1}
	put := func(name string, write func(io.Writer) error) (string, string) {
		info, err := putObject(ctx, results, jetstream.ObjectMeta{Name: a.key() + "/" + name}, write)
		if err != nil {
			t.Fatal(err)
		}
		return info.Name, info.Digest
	}
	w.Bundle, w.BundleDigest = put("candidate.bundle", bundle)
	w.LogObject, w.LogDigest = put("agent.log", func(wr io.Writer) error { return nil })
	w.StdoutObject, w.StdoutDigest = put("stdout", func(wr io.Writer) error { return nil })
	w.sign(jobSecret(testKey, a))
	publishAs(t, srv, w)
	return next(t, d)
}

// checkTaken checks outcome o of attempt a, whose worker sent candidate cand on base: with
// refused false, the candidate taken and the attempt's ref on it; else refused on the
// base, the refusal reported holding every one of want, and no ref set.
func checkTaken(t *testing.T, repo string, ev events, a AttemptID, o Outcome, base, cand string, refused bool, want ...string) {
	t.Helper()
	if !refused {
		if o.Refused != "" || o.Candidate != cand {
			t.Fatalf("outcome %+v, want candidate %s accepted", o, cand)
		}
		if got := git(t, repo, "rev-parse", a.Ref()); got != cand {
			t.Errorf("attempt ref %s, want %s", got, cand)
		}
		return
	}
	if o.Refused == "" || o.Candidate != base {
		t.Fatalf("outcome %+v, want one refused, on the base", o)
	}
	select {
	case err := <-ev.refused:
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refused with %v, want %q in it", err, w)
			}
		}
	default:
		t.Error("the refusal was not reported")
	}
	if ref := git(t, repo, "for-each-ref", "refs/orchestrator/attempts/"+a.Task); ref != "" {
		t.Errorf("a ref was set: %s", ref)
	}
}

// TestAnchoredBundles: each base is bundled against the anchor, not the base before it,
// so that a worker some landings behind fetches one bundle, not one for each landing; the
// anchor moves every anchorEvery bases, so that no bundle grows without end, and a worker
// with an empty cache fetches the anchors' chain.
func TestAnchoredBundles(t *testing.T) {
	ctx := context.Background()
	srv := serve(t)
	repo, base0 := newRepo(t, map[string]string{"a.txt": "a\n"})
	d, _ := dispatch(t, srv, repo, 5*time.Second)
	bases := []string{base0}
	for i := 1; i <= anchorEvery+1; i++ {
		bases = append(bases, commitFiles(t, repo, map[string]string{fmt.Sprintf("f%02d.txt", i): fmt.Sprintf("landing %d\n", i)}))
	}
	size := map[string]int64{}
	for i, b := range bases {
		if err := d.bundleBase(ctx, b); err != nil {
			t.Fatal(err)
		}
		info, err := d.bases.GetInfo(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		size[b] = int64(info.Size)
		want := base0
		switch {
		case i == 0:
			want = ""
		case i > anchorEvery:
			want = bases[anchorEvery]
		}
		if got := info.Metadata[prerequisiteKey]; got != want {
			t.Errorf("base %d's bundle names prerequisite %q, want %q", i, got, want)
		}
	}
	worker := func() *Worker {
		nc, err := nats.Connect(srv.URL(), nats.UserInfo(WorkerUser, testToken))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		w := &Worker{Name: "w", CacheDir: t.TempDir()}
		if _, err := w.attach(ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := w.prepareCache(ctx); err != nil {
			t.Fatal(err)
		}
		return w
	}
	fetch := func(w *Worker, base string) int64 {
		t.Helper()
		before := w.fetched.Load()
		if err := w.ensureBase(ctx, base); err != nil {
			t.Fatal(err)
		}
		if c := w.repo.commit(ctx, base); c != base {
			t.Fatalf("the worker's cache lacks base %s after fetching it", base)
		}
		return w.fetched.Load() - before
	}
	behind := worker()
	fetch(behind, bases[3])
	if got := fetch(behind, bases[10]); got != size[bases[10]] {
		t.Errorf("a worker seven landings behind fetched %d bytes, want the one bundle of %d", got, size[bases[10]])
	}
	if got := fetch(behind, bases[10]); got != 0 {
		t.Errorf("a worker fetched %d bytes of a base it has", got)
	}
	last := bases[anchorEvery+1]
	want := size[last] + size[bases[anchorEvery]] + size[base0]
	if got := fetch(worker(), last); got != want {
		t.Errorf("a new worker fetched %d bytes, want the three bundles of the anchors' chain, %d", got, want)
	}
}
