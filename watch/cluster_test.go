package watch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orchestrator/orchestrator/workers"
)

// natsServerBin is the nats-server program built from the module the orchestrator embeds
// (built once per test binary).
var natsServerBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "nats-server-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "nats-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build nats-server: %v\n%s", err, out)
	}
	return bin, nil
})

// A natsNode is one server of a cluster, a process of its own.
type natsNode struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

// kill9 ends the server with SIGKILL.
func (n *natsNode) kill9() {
	n.cmd.Process.Kill()
	<-n.done
}

// natsCluster starts three nats-server processes on loopback as one JetStream cluster,
// with the protocol's users (workers.ClusterAuthorization), and returns them once the
// cluster answers JetStream requests. Each node's URL is in its natsNode.
func natsCluster(t *testing.T, authority string) []*natsNode {
	t.Helper()
	bin, err := natsServerBin()
	if err != nil {
		t.Fatal(err)
	}
	var client, route []string
	for range 3 {
		client = append(client, freeAddr(t))
		route = append(route, freeAddr(t))
	}
	routes := make([]string, len(route))
	for i, a := range route {
		routes[i] = "nats://" + a
	}
	dir := t.TempDir()
	var nodes []*natsNode
	for i := range 3 {
		conf := fmt.Sprintf(`server_name: n%d
listen: %s
jetstream { store_dir: %q }
cluster {
  name: orchestrator-test
  listen: %s
  routes: [%s]
}
%s`, i+1, client[i], filepath.Join(dir, fmt.Sprintf("n%d", i+1)), route[i], strings.Join(routes, ", "),
			workers.ClusterAuthorization(authority, remoteToken))
		path := filepath.Join(dir, fmt.Sprintf("n%d.conf", i+1))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		n := &natsNode{url: "nats://" + client[i], done: make(chan struct{}), log: &syncBuffer{}}
		n.cmd = exec.Command(bin, "-c", path)
		n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = n.cmd.Wait()
			close(n.done)
		}()
		t.Cleanup(func() {
			n.cmd.Process.Kill()
			<-n.done
			if t.Failed() {
				t.Logf("nats-server n%d:\n%s", i+1, n.log.String())
			}
		})
		nodes = append(nodes, n)
	}
	// The cluster is up when it has a JetStream meta leader: account info answers.
	deadline := time.Now().Add(scaled(time.Minute))
	for {
		err := func() error {
			nc, err := nats.Connect(urls(nodes), nats.UserInfo(workers.AuthorityUser, authority), nats.Timeout(2*time.Second))
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err = js.AccountInfo(ctx)
			return err
		}()
		if err == nil {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster never answered JetStream requests: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// urls returns the nodes' URLs as one comma-separated list, as NATS clients take them.
func urls(nodes []*natsNode) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.url)
	}
	return strings.Join(out, ",")
}

// TestRemoteClusterNodeKilled (SPEC §18): the workers' streams and buckets on a cluster of
// three nats-server processes (the server built from the module), JetStream replicas 3,
// with the users ClusterAuthorization gives. `watch --workers` and three workers reach the
// cluster by its three URLs; once the first attempt has started on a worker, one node is
// killed with SIGKILL. Work goes on: every task lands exactly once, at its first attempt.
func TestRemoteClusterNodeKilled(t *testing.T) {
	t.Parallel()
	needWorkerSandbox(t)
	const authority = "cluster-authority-password"
	nodes := natsCluster(t, authority)
	tasks := []realTask{
		{id: "TASK-001", category: "backend", agent: "halver", exempt: true},
		{id: "TASK-002", category: "backend", agent: "thirder", exempt: true},
		{id: "TASK-003", category: "backend", agent: "quarterer", exempt: true},
	}
	agentsOf := map[string][]string{
		"halver":    remoteAgent(3*time.Second, 200*time.Millisecond, goHalfLine),
		"thirder":   remoteAgent(3*time.Second, 200*time.Millisecond, `tax/third.go=package tax; func Third(x int64) int64 { return x / 3 }`),
		"quarterer": remoteAgent(3*time.Second, 200*time.Millisecond, `tax/quarter.go=package tax; func Quarter(x int64) int64 { return x / 4 }`),
	}
	config := fmt.Sprintf("workers:\n  url: %s\n  credentials: %s:%s\n  token: %s\n  ack_wait: 2s\n  replicas: 3\n",
		urls(nodes), workers.AuthorityUser, authority, remoteToken)
	r := newRealRepo(t, "gomod", goTest, tasks, agentsOf, config)
	w := r.start("watch", "--once", "--jobs", "3")
	for _, name := range []string{"w1", "w2", "w3"} {
		startWorker(t, urls(nodes), name)
	}
	waitOutput(t, r, w, `TASK-00\d started: attempt 1, \S+ task, agent \S+ on worker w[123]`)
	// The node that leads the jobs' stream is the one killed; every stream and bucket has
	// its three replicas.
	leader := streamsOf(t, nodes, authority)
	nodes[leader].kill9()
	code := w.wait(t, 4*time.Minute)
	out := w.out.String()
	if code != 0 {
		t.Fatalf("exit %d, want 0 with a node of three killed\n%s", code, out)
	}
	for _, tk := range tasks {
		if st := r.statuses()[tk.id]; st != "completed" {
			t.Errorf("%s is %q, want completed%s", tk.id, st, r.describeAttempts(tk.id))
		}
		if n := landings(r, tk.id); n != 1 {
			t.Errorf("%s landed %d times, want exactly once", tk.id, n)
		}
		if dirs := r.attemptDirs(tk.id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want one%s", tk.id, dirs, r.describeAttempts(tk.id))
		}
	}
	r.noneLeft()
}

// streamsOf checks that every stream of the workers' protocol on the cluster (jobs,
// outcomes, the buckets' streams) has three replicas, and returns the index in nodes of
// the server that leads the jobs' stream.
func streamsOf(t *testing.T, nodes []*natsNode, authority string) int {
	t.Helper()
	nc, err := nats.Connect(urls(nodes), nats.UserInfo(workers.AuthorityUser, authority))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	leader, n := -1, 0
	for info := range js.ListStreams(ctx).Info() {
		n++
		if info.Config.Replicas != 3 {
			t.Errorf("stream %s has %d replicas, want 3", info.Config.Name, info.Config.Replicas)
		}
		if info.Config.Name == "ORCH_JOBS" && info.Cluster != nil {
			fmt.Sscanf(info.Cluster.Leader, "n%d", &leader)
			leader--
		}
	}
	if n < 5 || leader < 0 || leader >= len(nodes) {
		t.Fatalf("%d streams, the jobs' stream led by node %d: want the protocol's streams and a leader", n, leader+1)
	}
	return leader
}
