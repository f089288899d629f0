package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/workers"
)

// slowAgentScript hangs on worker w1 once it has said so in its checkout, and works
// honestly anywhere else.
const slowAgentScript = `#!/bin/sh
cat > /dev/null
if [ "$ORCHESTRATOR_WORKER" = w1 ]; then
	echo started > started.flag
	exec sleep 600
fi
echo "done on $ORCHESTRATOR_WORKER" > result.txt
echo "final message"
printf ok > "$ORCHESTRATOR_MARKER_DIR/$ORCHESTRATOR_TASK_ID.done"
`

// syncBuffer is a bytes.Buffer safe for a process's output and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorkerProcess starts `orchestrator worker` as a real process: the test binary,
// under the name orchestrator (TestMain runs it as the command).
func startWorkerProcess(t *testing.T, url, name, cache string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "orchestrator")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "worker", "--connect", url, "--name", name, "--cache", cache)
	cmd.Env = append(os.Environ(), tokenEnv+"=worker-token", "GORACE=atexit_sleep_ms=0")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return cmd, out
}

// waitFor calls cond until it holds, or fails the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pause)
	}
}

// TestWorkerKilledMidAttempt: a real `orchestrator worker` is killed with SIGKILL while
// its agent runs; JetStream redelivers the job after its ack wait to a second worker
// process, which finishes it, and the authority accepts exactly one outcome.
func TestWorkerKilledMidAttempt(t *testing.T) {
	if err := agents.BwrapAvailable(); err != nil && os.Getenv("CI") == "true" {
		t.Fatalf("bubblewrap: %v", err)
	}
	ctx := context.Background()
	srv, err := workers.Serve(ctx, workers.ServeOptions{Addr: "127.0.0.1:0", StoreDir: t.TempDir(), Token: "worker-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "base")
	base := gitIn(t, repo, "rev-parse", "HEAD")
	d, err := workers.NewDispatcher(ctx, workers.DispatcherOptions{URL: srv.URL(), Credentials: srv.Authority(), Repo: repo,
		Key: []byte("key"), AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(slowAgentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	a := workers.AttemptID{Task: "TASK-001", N: 1}
	cache1 := filepath.Join(t.TempDir(), "cache1")
	w1, out1 := startWorkerProcess(t, srv.URL(), "w1", cache1)
	// The hung agent outlives its worker (agents do, for adoption): end it at the end.
	jobDir := filepath.Join(cache1, "jobs", "TASK-001", "1")
	t.Cleanup(func() { agents.StopAdopted(0, 0, "ORCHESTRATOR_ATTEMPT_DIR", jobDir, time.Second) })
	if err := d.Submit(ctx, workers.Job{Attempt: a, Base: base, Prompt: "work", Agent: "exec", Argv: []string{"/bin/sh", script}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent on w1", func() bool {
		_, err := os.Stat(filepath.Join(cache1, "lanes", "0", "work", "started.flag"))
		return err == nil
	})
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w1.Wait()
	_, out2 := startWorkerProcess(t, srv.URL(), "w2", filepath.Join(t.TempDir(), "cache2"))
	var o workers.Outcome
	select {
	case o = <-d.Outcomes():
	case <-time.After(2 * time.Minute):
		t.Fatalf("no outcome; w1 said:\n%s\nw2 said:\n%s", out1, out2)
	}
	if o.Worker != "w2" || o.Delivery != 2 || o.Marker == nil || o.Marker.Kind != "done" {
		t.Fatalf("outcome %+v", o)
	}
	if got := gitIn(t, repo, "show", a.Ref()+":result.txt"); got != "done on w2" {
		t.Errorf("candidate's result.txt: %q", got)
	}
	// Exactly once: the job is gone from the work queue, one outcome is accepted and
	// nothing is pending.
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(srv.Authority().User, srv.Authority().Password))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	waitFor(t, "the job acknowledged", func() bool {
		s, err := js.Stream(ctx, "ORCH_JOBS")
		return err == nil && s.CachedInfo().State.Msgs == 0
	})
	kv, err := js.KeyValue(ctx, "ORCH_ACCEPTED")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil || !slices.Equal(keys, []string{"TASK-001.1"}) {
		t.Errorf("accepted: %v, %v", keys, err)
	}
	if pending, err := d.Pending(ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending: %v, %v", pending, err)
	}
	select {
	case o2 := <-d.Outcomes():
		t.Errorf("a second outcome: %+v", o2)
	default:
	}
	// `orchestrator workers` lists w2, and not w1, whose heartbeat stopped with it... once
	// its TTL passes; w2 is there now.
	var list bytes.Buffer
	code := Main([]string{"workers", "--connect", srv.URL(), "--token", "worker-token", "--json"}, nil, &list, os.Stderr)
	var hbs []workers.Heartbeat
	if code != 0 || json.Unmarshal(list.Bytes(), &hbs) != nil || !slices.ContainsFunc(hbs, func(h workers.Heartbeat) bool { return h.Name == "w2" }) {
		t.Errorf("workers: exit %d, %s", code, list.String())
	}
}

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	b, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, b)
	}
	return strings.TrimSpace(string(b))
}

// TestWorkersNATSConfig: `workers --nats-config` prints the users an existing server needs,
// the workers' token given, the authority's password a placeholder when not given, and the
// workers' permissions that forbid publishing jobs.
func TestWorkersNATSConfig(t *testing.T) {
	t.Setenv("ORCHESTRATOR_AUTHORITY_PASSWORD", "")
	var out bytes.Buffer
	if code := Main([]string{"workers", "--nats-config", "--token", "tok123"}, nil, &out, os.Stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{`{user: "worker", password: "tok123"`, `{user: "authority", password: "<the authority's password`, `publish: {deny: ["orch.jobs"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
