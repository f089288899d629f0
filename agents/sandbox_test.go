package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireBwrap skips the test where bubblewrap does not run, or fails it with CI=true.
func requireBwrap(t *testing.T) {
	t.Helper()
	if err := BwrapAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// startSandboxed starts command in a sandbox of the attempt e, with the marker folder
// writable, and makes sure it is gone when the test ends.
func startSandboxed(t *testing.T, e env, sb Sandbox, command []string, extra ...string) *Process {
	t.Helper()
	sb.Writable = append(sb.Writable, e.markerDir)
	// The test agent's settings pass, as config agent_env would pass them.
	for _, kv := range extra {
		name, _, _ := strings.Cut(kv, "=")
		sb.Pass = append(sb.Pass, name)
	}
	p, err := Start(StartOptions{Command: command, Dir: e.root, Env: e.vars(extra...), LogPath: e.log(), Sandbox: &sb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Millisecond) })
	return p
}

func TestSandboxWrap(t *testing.T) {
	sb := Sandbox{Dir: "/tmp/wt", Writable: []string{"/repo/.orchestrator/complete"}, Home: "/home/me", Hide: []string{"/repo", "/repo/.git"},
		Config: "/home/me/.cache/s/cfg", ReadOnly: []string{"/home/me/go"}, Env: []string{"GOCACHE=/tmp/go-build", "A=b=c"}}
	// (Hide and Home, which do not exist here, are left out: TestSandboxFiles hides real
	// ones.) A program or argument in /tmp (private inside) or a hidden folder is bound
	// read-only; /usr is visible anyway. The environment is the one given, and no other.
	got := strings.Join(sb.Wrap([]string{"env", "X=1", "/tmp/bin/agent", "/home/me/bin/tool", "/usr/bin/claude", "-p"}, []string{"PATH=/usr/bin", "TMPDIR=/elsewhere"}), " ")
	for _, want := range []string{
		"--ro-bind-try /tmp/bin/agent /tmp/bin/agent --ro-bind-try /home/me/bin/tool /home/me/bin/tool",
		"--ro-bind-try /home/me/go /home/me/go",
		"--bind /tmp/wt /tmp/wt --bind /home/me/.cache/s/cfg /home/me/.cache/s/cfg --bind /repo/.orchestrator/complete /repo/.orchestrator/complete",
		"--unshare-pid", "--as-pid-1 --chdir /tmp/wt --clearenv",
		"--setenv TMPDIR /tmp --setenv PATH /usr/bin --setenv GOCACHE /tmp/go-build --setenv A b=c --",
		" sh env X=1 /tmp/bin/agent /home/me/bin/tool /usr/bin/claude -p",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Wrap =\n%s\nwant it to hold %q", got, want)
		}
	}
	for _, not := range []string{"--die-with-parent", "--unshare-net", "/usr/bin/claude /usr/bin/claude", "--tmpfs /repo/.git", "/elsewhere"} {
		if strings.Contains(got, not) {
			t.Errorf("Wrap =\n%s\nwant no %q", got, not)
		}
	}
	// A read-only working folder is bound read-only (under /tmp it would be hidden), and
	// only what Writable names is writable, on top of it.
	got = strings.Join(Sandbox{Dir: "/tmp/repo", ReadOnlyDir: true, ReadOnly: []string{"/tmp/specs"}, Writable: []string{"/tmp/repo/.orchestrator/runs/plan/1/scratch"}}.Wrap([]string{"claude"}, nil), " ")
	if want := "--ro-bind-try /tmp/specs /tmp/specs --ro-bind-try /tmp/repo /tmp/repo --bind /tmp/repo/.orchestrator/runs/plan/1/scratch /tmp/repo/.orchestrator/runs/plan/1/scratch "; !strings.Contains(got, want) {
		t.Errorf("Wrap =\n%s\nwant it to hold %q", got, want)
	}
}

func TestCheckBwrap(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if err := checkBwrap(); err == nil || !strings.Contains(err.Error(), "bubblewrap is not installed") {
		t.Errorf("checkBwrap with no bwrap = %v", err)
	}
	// A bwrap that cannot create namespaces, as in a container without the privilege.
	fake := "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	err := checkBwrap()
	if want := "bubblewrap does not work here: bwrap: No permissions to create new namespace"; err == nil || err.Error() != want {
		t.Errorf("checkBwrap = %v, want %q", err, want)
	}
}

// TestSandboxFiles: inside, only the worktree and the marker folder can be written for
// good; the person's tree (its .git and .orchestrator included) is hidden; the home
// folder is an empty one, writable, whose files vanish with the sandbox; /usr cannot be
// written; /tmp is private.
func TestSandboxFiles(t *testing.T) {
	requireBwrap(t)
	// The person's tree (e.root, with .orchestrator in it) and the home folder are not in
	// /tmp, which is private inside: the agent would not see them at all.
	base := outsideTmp(t)
	e := env{
		root:       filepath.Join(base, "tree"),
		markerDir:  filepath.Join(base, "tree", ".orchestrator", "complete"),
		attemptDir: filepath.Join(base, "tree", ".orchestrator", "runs", "TASK-1", "1"),
	}
	home := filepath.Join(base, "home")
	for _, d := range []string{e.markerDir, e.attemptDir, filepath.Join(home, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(e.root, "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# the person's\n"), 0o644)
	git(e.root, "init", "-q")
	git(e.root, "add", "main.go")
	git(e.root, "commit", "-q", "-m", "first")
	wt := filepath.Join(t.TempDir(), "wt")
	git(e.root, "worktree", "add", "-q", "--detach", wt)
	private := "sandbox-private-" + filepath.Base(base)

	// Each line: a path to write, whether the write works inside, and whether it lands
	// (is there after the run).
	tries := []struct {
		path         string
		inside, land bool
	}{
		{filepath.Join(wt, "inside.txt"), true, true},
		{filepath.Join(wt, "sub", "deep.txt"), true, true},
		{filepath.Join(e.markerDir, "TASK-1.done"), true, true},
		{filepath.Join(home, ".claude", "settings.json"), true, false},
		{filepath.Join(home, ".bashrc"), true, false},
		{filepath.Join("/tmp", private), true, false},
		{filepath.Join(e.root, ".git", "hacked"), true, false},
		{filepath.Join(e.root, "main.go"), true, false},
		{filepath.Join(e.root, ".orchestrator", "task_queue.md"), true, false},
		{filepath.Join(e.attemptDir, "result.json"), true, false},
		{"/usr/hacked", false, false},
	}
	var script strings.Builder
	// What the person has is not there to read.
	for _, p := range []string{filepath.Join(e.root, ".git", "config"), filepath.Join(e.root, "main.go"), filepath.Join(home, ".claude"), filepath.Join(home, ".bashrc")} {
		script.WriteString("if [ -e '" + p + "' ]; then echo 'saw " + p + "'; fi\n")
	}
	for _, tr := range tries {
		// mkdir -p for the deep one; each write says whether it worked.
		script.WriteString("mkdir -p \"$(dirname '" + tr.path + "')\" 2>/dev/null; if echo x > '" + tr.path + "' 2>/dev/null; then echo 'wrote " + tr.path + "'; else echo 'refused " + tr.path + "'; fi\n")
	}
	script.WriteString("pwd; cat /tmp/" + private + "\n")
	p := startSandboxed(t, e, Sandbox{Dir: wt, Home: home, Hide: []string{e.root}}, []string{"sh", "-c", script.String()})
	waitDone(t, p)
	out := p.Stdout()
	if p.ExitCode() != 0 {
		t.Fatalf("exit code %d:\n%s", p.ExitCode(), out)
	}
	if strings.Contains(out, "saw ") {
		t.Errorf("the agent saw what is hidden:\n%s", out)
	}
	for _, tr := range tries {
		verb := "refused "
		if tr.inside {
			verb = "wrote "
		}
		if !strings.Contains(out, verb+tr.path+"\n") {
			t.Errorf("want %q inside the sandbox; output:\n%s", verb+tr.path, out)
		}
		b, _ := os.ReadFile(tr.path)
		if got := string(b) == "x\n"; got != tr.land {
			t.Errorf("%s holds %q after the run", tr.path, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# the person's\n" {
		t.Errorf("the person's .bashrc = %q", b)
	}
	if !strings.Contains(out, wt+"\nx\n") {
		t.Errorf("the agent did not start in its worktree or could not read back its /tmp file:\n%s", out)
	}
}

// TestSandboxContainment: an agent starts a process that leaves its process group and
// session (setsid), then exits. In the sandbox, that process is gone by the time Done is
// closed, and never does what it meant to. Without the sandbox it outlives the agent.
func TestSandboxContainment(t *testing.T) {
	requireBwrap(t)
	for _, sandboxed := range []bool{true, false} {
		t.Run(map[bool]string{true: "sandbox", false: "no sandbox"}[sandboxed], func(t *testing.T) {
			e := newEnv(t)
			ready, goOn, late := filepath.Join(e.root, "ready"), filepath.Join(e.root, "go"), filepath.Join(e.root, "late")
			// The escapee says it runs, sleeps, then writes late. The agent waits for the
			// test's go-ahead, so that the test can see the escapee first.
			script := `setsid sh -c 'touch ` + ready + `; sleep 1; touch ` + late + `' &
while [ ! -e ` + goOn + ` ]; do sleep 0.01; done
echo agent done; exit 3`
			var p *Process
			if sandboxed {
				p = startSandboxed(t, e, Sandbox{}, []string{"sh", "-c", script})
			} else {
				var err error
				p, err = Start(StartOptions{Command: []string{"sh", "-c", script}, Dir: e.root, Env: e.vars(), LogPath: e.log()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Stop(10 * time.Millisecond) })
			}
			waitFile(t, ready)
			var escapees []envProc
			for _, q := range withEnv("ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir) {
				if st, err := readStat(q.pid); err == nil && st.pgrp != p.PID() {
					escapees = append(escapees, q)
				}
			}
			if len(escapees) == 0 {
				t.Fatal("no process of the agent left its process group")
			}
			if err := os.WriteFile(goOn, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitDone(t, p)
			if p.ExitCode() != 3 || !strings.Contains(p.Stdout(), "agent done") {
				t.Errorf("exit code %d, output %q; want 3 and the agent's output", p.ExitCode(), p.Stdout())
			}
			alive := 0
			for _, q := range escapees {
				if Alive(q.pid, q.stat.start) {
					alive++
					if !sandboxed {
						t.Cleanup(func() { unix.Kill(q.pid, unix.SIGKILL) })
					}
				}
			}
			if sandboxed {
				if alive > 0 {
					t.Fatalf("%d of the %d processes that left the agent's group outlived it", alive, len(escapees))
				}
				time.Sleep(1500 * time.Millisecond) // the escapee's sleep, had it survived
				if _, err := os.Stat(late); err == nil {
					t.Error("the escapee wrote its file after the agent's end")
				}
			} else if alive == 0 {
				t.Error("without the sandbox the escapee did not outlive the agent: the test shows nothing")
			} else {
				// It writes its file after the agent's end; waiting for it also keeps that
				// write from landing in the test's folder while the folder is removed.
				waitFile(t, late)
			}
		})
	}
}

// outsideTmp returns a new folder outside /tmp, removed when the test ends.
func outsideTmp(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	parent := filepath.Join(cache, "orchestrator-test")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(scaled(10 * time.Second))
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSandboxProcess: a sandboxed agent behaves as Start and Stop promise. bwrap is Start's
// child, and the sandbox's init bwrap's.
func TestSandboxProcess(t *testing.T) {
	requireBwrap(t)
	t.Run("exit code, output and environment", func(t *testing.T) {
		e := newEnv(t)
		p := startSandboxed(t, e, Sandbox{Env: []string{"EXTRA=inside"}}, []string{testAgent}, "TESTAGENT_MODE=env")
		waitDone(t, p)
		if p.ExitCode() != 0 {
			t.Fatalf("exit code %d: %s", p.ExitCode(), p.Stdout())
		}
		want := strings.Join([]string{
			"ORCHESTRATOR_ATTEMPT_DIR=" + e.attemptDir,
			"ORCHESTRATOR_MARKER_DIR=" + e.markerDir,
			"ORCHESTRATOR_ROOT=" + e.root,
			"ORCHESTRATOR_TASK_ID=TASK-1",
		}, "\n")
		if !strings.Contains(p.Stdout(), want) {
			t.Errorf("stdout = %q, want the variables\n%s", p.Stdout(), want)
		}
		log, _ := os.ReadFile(e.log())
		if !strings.Contains(string(log), want) {
			t.Errorf("agent.log = %q", log)
		}
		assertGroupGone(t, p.PID())
	})
	t.Run("extra environment", func(t *testing.T) {
		e := newEnv(t)
		p := startSandboxed(t, e, Sandbox{Env: []string{"EXTRA=in=side"}}, []string{"sh", "-c", `echo "$EXTRA $TMPDIR"; exit 7`}, "TMPDIR=/elsewhere")
		waitDone(t, p)
		if p.ExitCode() != 7 || p.Stdout() != "in=side /tmp\n" {
			t.Errorf("exit code %d, output %q; want 7 and %q", p.ExitCode(), p.Stdout(), "in=side /tmp\n")
		}
	})
	t.Run("honest agent", func(t *testing.T) {
		e := newEnv(t)
		p := startSandboxed(t, e, Sandbox{}, []string{testAgent}, "TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc/add.go=package calc")
		waitDone(t, p)
		if p.ExitCode() != 0 {
			t.Fatalf("exit code %d: %s", p.ExitCode(), p.Stdout())
		}
		if _, err := ParseResult(p.Stdout(), RoleImplementer); err != nil {
			t.Errorf("result: %v\n%s", err, p.Stdout())
		}
		if _, err := os.Stat(filepath.Join(e.markerDir, "TASK-1.done")); err != nil {
			t.Errorf("marker: %v", err)
		}
	})
	t.Run("stop obeyed", func(t *testing.T) {
		e := newEnv(t)
		p := startSandboxed(t, e, Sandbox{}, []string{testAgent}, "TESTAGENT_MODE=hang")
		waitInside(t, e, p)
		start := time.Now()
		p.Stop(10 * time.Second)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Stop of a sandboxed agent that obeys SIGTERM took %v: SIGTERM did not reach it", d)
		}
		assertGroupGone(t, p.PID())
		assertNoneLeft(t, e)
	})
	t.Run("stop needs kill", func(t *testing.T) {
		e := newEnv(t)
		p := startSandboxed(t, e, Sandbox{}, []string{testAgent}, "TESTAGENT_MODE=stubborn")
		waitOutput(t, p, "ignoring SIGTERM")
		start := time.Now()
		p.Stop(200 * time.Millisecond)
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("Stop returned after %v, before the grace period", d)
		}
		select {
		case <-p.Done():
		default:
			t.Fatal("Stop returned before bwrap was reaped")
		}
		assertGroupGone(t, p.PID())
		assertNoneLeft(t, e)
	})
	t.Run("grandchild", func(t *testing.T) {
		e := newEnv(t)
		p := startSandboxed(t, e, Sandbox{}, []string{testAgent}, "TESTAGENT_MODE=grandchild", "TESTAGENT_PIDFILE="+filepath.Join(e.root, "child.pid"))
		waitDone(t, p)
		// The grandchild ends with the agent, before Done: no Stop needed.
		if p.ExitCode() != 0 {
			t.Errorf("exit code %d", p.ExitCode())
		}
		assertGroupGone(t, p.PID())
		assertNoneLeft(t, e)
	})
}

// waitInside waits until the agent runs inside the sandbox: bwrap, its init and the agent
// carry the attempt's variable.
func waitInside(t *testing.T, e env, p *Process) {
	t.Helper()
	deadline := time.Now().Add(scaled(10 * time.Second))
	for len(withEnv("ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir)) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start inside its sandbox")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// assertNoneLeft checks that no process of the attempt e is left.
func assertNoneLeft(t *testing.T, e env) {
	t.Helper()
	if left := withEnv("ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir); len(left) > 0 {
		t.Errorf("%d process(es) of the attempt left: %+v", len(left), left)
	}
}

// TestSandboxAdoption: crash recovery finds a sandboxed agent by its environment, as the
// process Start started (bwrap), even when a process inside leads a group of its own, and
// StopAdopted ends all of it: while bwrap is our child, and after its parent (the
// orchestrator that started it) is gone.
func TestSandboxAdoption(t *testing.T) {
	requireBwrap(t)
	for _, orphan := range []bool{false, true} {
		t.Run(map[bool]string{false: "child", true: "orphan"}[orphan], func(t *testing.T) {
			e := newEnv(t)
			ready := filepath.Join(e.root, "ready")
			agent := []string{"sh", "-c", "setsid sleep 60 & touch " + ready + "; exec sleep 60"}
			var p *Process
			if orphan {
				// The starter runs bwrap in a session of its own, as Start does, and exits
				// at once, as a crashed orchestrator would.
				argv := append([]string{"sh", "-c", `setsid "$@" </dev/null >/dev/null 2>&1 &`, "sh"}, Sandbox{Dir: e.root, Writable: []string{e.markerDir}}.Wrap(agent, e.vars())...)
				starter := exec.Command(argv[0], argv[1:]...)
				starter.Env = e.vars()
				if out, err := starter.CombinedOutput(); err != nil {
					t.Fatalf("starter: %v\n%s", err, out)
				}
			} else {
				p = startSandboxed(t, e, Sandbox{}, agent)
			}
			waitFile(t, ready)
			// The child may write its file a moment before its setsid takes effect.
			var procs []envProc
			leaders := 0
			for deadline := time.Now().Add(scaled(5 * time.Second)); leaders < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				procs = withEnv("ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir)
				leaders = 0
				for _, q := range procs {
					if q.stat.pgrp == q.pid {
						leaders++
					}
				}
			}
			if leaders < 2 {
				t.Fatalf("want bwrap and the setsid process leading groups; processes: %+v", procs)
			}
			pid, start, ok := FindByEnv("ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir)
			if !ok {
				t.Fatal("FindByEnv found nothing")
			}
			t.Cleanup(func() { StopAdopted(pid, start, "ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir, 10*time.Millisecond) })
			if p != nil && (pid != p.PID() || start != p.StartTime()) {
				t.Fatalf("FindByEnv = %d, %d; want bwrap, %d, %d", pid, start, p.PID(), p.StartTime())
			}
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); !slices.Contains(strings.Split(string(b), "\x00"), "--unshare-pid") {
				t.Errorf("FindByEnv found %q, not bwrap", b)
			}
			if !Alive(pid, start) {
				t.Fatal("the agent is not alive")
			}
			StopAdopted(pid, start, "ORCHESTRATOR_ATTEMPT_DIR", e.attemptDir, time.Second)
			assertNoneLeft(t, e)
			if p != nil {
				waitDone(t, p)
			}
		})
	}
}
