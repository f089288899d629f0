package watch_test

// End-to-end tests of the gate's sandbox (SPEC §7.6, issue 23): the tests the gate runs are
// the candidate's code, so they run with no more power than the agent had. A test writer's
// test probes what it can reach from inside the RED gate's run — a key under the home
// folder, a token of the orchestrator's environment, the person's uncommitted file, the
// repository's git folder and the orchestrator's state in it, a host UNIX socket, the
// network — tries to write the baseline, and starts a daemon that leaves its process
// group. In the sandbox it reaches none of them and the daemon is gone when the gate
// returns; the same probe with the sandbox off reaches them all, which shows that the
// probe itself works.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// probeTest is the test writer's probe: a failing test (so RED passes and gate.log keeps
// its output) that lists what it could reach after "PROBE:".
const probeTest = `package cart

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProbe_UNIT_001(t *testing.T) {
	var seen []string
	try := func(what string, ok bool) {
		if ok {
			seen = append(seen, what)
		}
	}
	_, err := os.ReadFile(%[1]q)
	try("ssh-key", err == nil)
	try("env-token", os.Getenv("PROBE_SECRET_TOKEN") != "")
	try("env-aws", os.Getenv("AWS_SECRET_ACCESS_KEY") != "")
	_, err = os.ReadFile(%[2]q)
	try("persons-file", err == nil)
	_, err = os.ReadFile(%[3]q)
	try("git-config", err == nil)
	_, err = os.Stat(%[4]q)
	try("state", err == nil)
	try("wrote-state", os.WriteFile(filepath.Join(%[4]q, "baseline.json"), []byte("{}"), 0o644) == nil)
	c, err := net.DialTimeout("unix", %[5]q, time.Second)
	try("host-socket", err == nil)
	if c != nil {
		c.Close()
	}
	c, err = net.DialTimeout("tcp", %[6]q, time.Second)
	try("network", err == nil)
	if c != nil {
		c.Close()
	}
	d := exec.Command("/bin/sh", "-c", "while :; do sleep 1; done", %[7]q)
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	try("daemon-started", d.Start() == nil)
	if len(seen) == 0 {
		seen = []string{"nothing"}
	}
	t.Fatalf("PROBE: %%s :END", strings.Join(seen, " "))
}
`

func TestGateSandboxProbe(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{true, false} {
		name := "sandbox off"
		if sandboxed {
			name = "sandbox"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			key := filepath.Join(home, ".ssh", "id_ed25519")
			writeFile(t, key, "PRIVATE KEY")
			// A host socket where services keep theirs, and a port on loopback.
			sock, addr := hostSocket(t), listen(t, "tcp", "127.0.0.1:0")

			from := t.TempDir()
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
			}, map[string][]string{"writer": slowAgent("test-writer", 0, 0, from)}, "")
			tag := "probe-daemon-" + strings.ReplaceAll(t.Name(), "/", "-")
			test := fmt.Sprintf(probeTest, key, filepath.Join(r.root, "uncommitted.txt"), filepath.Join(r.root, ".git", "config"),
				filepath.Join(r.root, ".git", "orchestrator"), sock, addr, tag)
			writeFile(t, filepath.Join(from, "cart", "probe_test.go"), test)
			r.commitAll()
			if sandboxed {
				r.sandboxed(from, filepath.Dir(r.starts))
			}
			r.uncommitted = true
			r.write("uncommitted.txt", "the person's work in progress")
			t.Cleanup(func() { killTagged(tag) })

			code, out := r.runWith([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
				"ORCHESTRATOR_GATE_CACHE=" + sharedGateCache(t), "GOCACHE=" + goCache(t), "PROBE_SECRET_TOKEN=s3cret", "AWS_SECRET_ACCESS_KEY=s3cret"}, "watch", "--once")
			if code != 0 || r.statuses()["TASK-T01"] != "completed" {
				t.Fatalf("exit %d, TASK-T01 %q; want 0, completed%s\n%s", code, r.statuses()["TASK-T01"], r.describeAttempts("TASK-T01"), out)
			}
			log := r.read(".orchestrator/runs/TASK-T01/1/gate.log")
			_, seen, ok := strings.Cut(log, "PROBE: ")
			seen, _, _ = strings.Cut(seen, " :END")
			if !ok {
				t.Fatalf("gate.log holds no probe result:\n%s", log)
			}
			t.Logf("the probe reached: %s", seen)
			all := []string{"ssh-key", "env-token", "env-aws", "persons-file", "git-config", "state", "wrote-state", "host-socket", "network"}
			if sandboxed {
				if seen != "daemon-started" {
					t.Errorf("in the sandbox the probe reached %q, want nothing but its own daemon", seen)
				}
				if pids := tagged(tag); len(pids) > 0 {
					t.Errorf("the daemon the probe started outlived the gate: %v", pids)
				}
				if _, err := os.Stat(filepath.Join(r.root, ".git", "orchestrator", "baseline.json")); err == nil {
					if b := r.read(".git/orchestrator/baseline.json"); strings.TrimSpace(b) == "{}" {
						t.Error("the probe wrote the baseline")
					}
				}
				return
			}
			for _, w := range all {
				if !strings.Contains(" "+seen+" ", " "+w+" ") {
					t.Errorf("without the sandbox the probe did not reach %s (%q): the probe does not probe", w, seen)
				}
			}
			if pids := tagged(tag); len(pids) == 0 {
				t.Error("without the sandbox the daemon is gone: the probe does not probe")
			}
		})
	}
}

// hostSocket listens on a UNIX socket under /run, where the host's services keep theirs,
// and returns its path.
func hostSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/run", "orchestrator-probe-")
	if err != nil {
		t.Fatalf("a host socket under /run: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return listen(t, "unix", filepath.Join(dir, "s.sock"))
}

// listen accepts (and closes) connections at address until the test ends, and returns the
// address it listens on.
func listen(t *testing.T, network, address string) string {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// writeFile writes a file, making its folder.
func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sharedGateCache is the gate's cache folder of the tests that give the orchestrator a home
// of their own: the one the other tests' orchestrators use (gate.CacheDir), so that Go's
// build cache stays warm from test to test.
func sharedGateCache(t testing.TB) string {
	t.Helper()
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "orchestrator", "gate")
}

// goCache is the Go build cache of the tests, for an orchestrator given a home of its own.
func goCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// tagged returns the PIDs of live processes one of whose arguments is tag.
func tagged(tag string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), tag) {
			continue // the tag is a whole argument: "…-sandbox" is not "…-sandbox off"
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// killTagged kills the processes tagged returns, and waits until they are gone.
func killTagged(tag string) {
	for range 50 {
		pids := tagged(tag)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if proc, err := os.FindProcess(p); err == nil {
				_ = proc.Kill()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
