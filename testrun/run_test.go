package testrun

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// copyProject copies testdata/projects/<name> to a temporary folder and returns it. A
// node_modules folder is linked, not copied.
func copyProject(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", "projects", name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "node_modules" {
				abs, err := filepath.Abs(p)
				if err != nil {
					return err
				}
				if err := os.Symlink(abs, target); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// needTool skips a test whose runner is not installed, except on CI (CI=true), where `make
// test` installs every runner first, so a missing one is a failure.
func needTool(t *testing.T, name string, installed bool) {
	t.Helper()
	if installed {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI=true: CI runs `make test`, whose test-deps target installs it (testrun/testdata/install-deps.sh)", name)
	}
	t.Skipf("%s is not installed: run testrun/testdata/install-deps.sh (make test-deps) to run this test", name)
}

func havePytest() bool {
	return exec.Command("/usr/bin/python3", "-c", "import pytest").Run() == nil
}

func haveVitest() bool {
	if _, err := exec.LookPath("node"); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join("testdata", "projects", "ts", "node_modules", ".bin", "vitest"))
	return err == nil
}

func haveCargo() bool {
	_, err := exec.LookPath("cargo")
	return err == nil
}

// projectCase is a fixture project, the command that runs its tests, and what a run gives.
type projectCase struct {
	name      string
	command   string
	available func() bool
	tool      string
	runner    Runner
	passed    []string
	failed    []string
	skipped   []string
}

var projectCases = []projectCase{
	{
		name: "go", command: "go test ./...", runner: Go,
		passed: []string{
			"example.com/proj/calc.TestAdd",
			"example.com/proj/calc.TestTable/add_ok",
			"example.com/proj/calc.TestTable/(weird)_[name]",
			"example.com/proj/strs.TestUpper",
			"example.com/proj/strs.TestUpperEmpty",
			"example.com/proj/strs.TestUpperEmpty/empty",
		},
		failed: []string{
			"example.com/proj/calc.TestSub",
			"example.com/proj/calc.TestTable",
			"example.com/proj/calc.TestTable/sub_wrong",
		},
		skipped: []string{"example.com/proj/calc.TestLater"},
	},
	{
		name: "python", command: "/usr/bin/python3 -m pytest", runner: Pytest,
		available: havePytest, tool: "pytest (/usr/bin/python3 -m pytest)",
		passed: []string{
			"tests/test_calc.py::test_add",
			"tests/test_calc.py::TestGroup::test_zero",
			"tests/test_calc.py::test_param[1-2]",
			"tests/test_calc.py::test_param[x y-z]",
		},
		failed:  []string{"tests/test_calc.py::test_sub"},
		skipped: []string{"tests/test_calc.py::test_later"},
	},
	{
		name: "ts", command: "npx vitest run", runner: Vitest,
		available: haveVitest, tool: "vitest (testdata/projects/ts/node_modules)",
		passed: []string{
			"src/calc.test.ts > add > adds two numbers",
			"src/calc.test.ts > add > with zero (edge) > keeps the number",
			"src/calc.test.ts > adds two numbers",
			"src/more.test.ts > adds more",
		},
		failed:  []string{"src/calc.test.ts > sub > subtracts"},
		skipped: []string{"src/calc.test.ts > sub > later"},
	},
	{
		name: "rust", command: "cargo test", runner: Cargo,
		available: haveCargo, tool: "cargo",
		passed:  []string{"tests::adds", "int_add"},
		failed:  []string{"tests::subtracts"},
		skipped: []string{"tests::later"},
	},
}

// TestRunProjects runs each fixture project's tests for real, then the regression command
// of its passing tests, which must run exactly those tests (and, for Go, the parents of
// subtests) and pass.
func TestRunProjects(t *testing.T) {
	for _, pc := range projectCases {
		t.Run(pc.name, func(t *testing.T) {
			if pc.name == "rust" {
				// cargo is on every machine of the project (SPEC: go and cargo always run).
				if !haveCargo() {
					t.Fatal("cargo is not installed")
				}
			} else if pc.available != nil {
				needTool(t, pc.tool, pc.available())
			}
			t.Parallel()
			dir := copyProject(t, pc.name)
			ctx := context.Background()
			res, err := Run(ctx, dir, pc.command, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if res.Runner != pc.runner || res.ExitCode == 0 || res.Class != ClassAssertionFailure {
				t.Fatalf("runner %s, exit %d, class %s (%s); want %s, non-zero, %s\n%s", res.Runner, res.ExitCode, res.Class, res.Reason, pc.runner, ClassAssertionFailure, res.Output)
			}
			sameSet(t, "passed", res.Passed(), pc.passed)
			sameSet(t, "failed", res.Failed(), pc.failed)
			sameSet(t, "skipped", res.Skipped(), pc.skipped)
			for _, tt := range res.Tests {
				if tt.Status == Failed && tt.Output == "" {
					t.Errorf("failed test %s has no output", tt.ID)
				}
			}

			// The regression command re-runs exactly the passing tests, and passes.
			reg := RegressionCommandFor(dir, pc.command, res.Passed())
			again, err := Run(ctx, dir, reg, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if again.ExitCode != 0 || again.Class != ClassPass || len(again.Failed()) > 0 {
				t.Fatalf("regression command %q: exit %d, class %s (%s)\n%s", reg, again.ExitCode, again.Class, again.Reason, again.Output)
			}
			want := slices.Clone(pc.passed)
			if pc.runner == Go {
				// A failed parent whose passing subtests are re-run passes now.
				want = append(want, "example.com/proj/calc.TestTable")
			}
			sameSet(t, "re-run", again.Passed(), want)
		})
	}
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s tests:\n got %q\nwant %q", what, g, w)
	}
}

func TestRunTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	// The shell starts a grandchild and waits: both must die.
	res, err := Run(context.Background(), dir, "sleep 60 & echo $! > pid; echo started; wait", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 || res.Class != ClassError {
		t.Fatalf("timed out %v, exit %d, class %s", res.TimedOut, res.ExitCode, res.Class)
	}
	if !strings.Contains(res.Output, "started") || !strings.Contains(res.Output, "timed out after 500ms") {
		t.Errorf("output %q", res.Output)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %s", d)
	}
	waitGone(t, dir)
}

// waitGone checks that the process whose PID is in dir/pid has ended.
func waitGone(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Signal 0 finds a live process; a killed one that its new parent has not reaped
		// yet is a zombie, which /proc shows as state Z.
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunKillsWhatTheTestsLeaveBehind(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	// The command exits at once, but leaves a process that holds its output open.
	res, err := Run(context.Background(), dir, "sleep 60 & echo $! > pid; echo done", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Class != ClassPass || strings.TrimSpace(res.Output) != "done" {
		t.Fatalf("exit %d, class %s, output %q", res.ExitCode, res.Class, res.Output)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %s", d)
	}
	waitGone(t, dir)
}

func TestRunCanceled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := Run(ctx, dir, "sleep 60 & echo $! > pid; wait", time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	waitGone(t, dir)
}

func TestRunExit(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		command string
		exit    int
		class   Class
	}{
		{"true", 0, ClassPass},
		{"echo checking; exit 3", 3, ClassAssertionFailure},
		{"./no-such-script-xyz", 127, ClassError}, // a file of the tree: the candidate's (a program not found at all is a SetupError: setup_test.go)
	} {
		res, err := Run(context.Background(), dir, tt.command, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Runner != Exit || res.ExitCode != tt.exit || res.Class != tt.class || len(res.Tests) != 0 {
			t.Errorf("%q: runner %s, exit %d, class %s, %d tests; want exit, %d, %s", tt.command, res.Runner, res.ExitCode, res.Class, len(res.Tests), tt.exit, tt.class)
		}
	}
	if _, err := Run(context.Background(), dir, "  ", time.Minute); !errors.Is(err, ErrNoCommand) {
		t.Errorf("empty command: err = %v", err)
	}
	if _, err := Run(context.Background(), filepath.Join(dir, "missing"), "true", time.Minute); err == nil {
		t.Error("a missing folder: no error")
	}
}

// TestRunCapsOutput checks that Result.Output keeps the first 256 KiB of a larger output,
// while every test is still read.
func TestRunCapsOutput(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), dir, "head -c 1000000 /dev/zero | tr '\\0' x; echo", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) != maxOutput {
		t.Errorf("output is %d bytes, want %d", len(res.Output), maxOutput)
	}
}

// TestPytestIgnoresCommittedBytecode: a module's committed bytecode of the unchecked-hash
// kind, which Python runs without comparing it with the source, is not what the tests run:
// the gate removes it (RemoveBytecode) and Run's Python writes none. The source is wrong,
// its bytecode right; the test fails, as the source says.
func TestPytestIgnoresCommittedBytecode(t *testing.T) {
	needTool(t, "pytest", havePytest())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "calc.py"), []byte("def add(a, b):\n    return a + b\n"))
	cmd := exec.Command("/usr/bin/python3", "-c", `import py_compile
py_compile.compile("calc.py", doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)`)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(dir, "calc.py"), []byte("def add(a, b):\n    return a * b\n"))
	writeFile(t, filepath.Join(dir, "tests", "test_calc.py"), []byte("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"))
	// Without the orchestrator's settings, Python runs the committed bytecode: the cheat works.
	plain := exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider")
	plain.Dir = dir
	if out, err := plain.CombinedOutput(); err != nil {
		t.Fatalf("a plain pytest does not run the committed bytecode; the test tests nothing:\n%s", out)
	}
	if err := RemoveBytecode(dir); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), dir, "/usr/bin/python3 -m pytest -q", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != ClassAssertionFailure || len(res.Failed()) != 1 {
		t.Errorf("class %s, failed %v; want the test to fail as the source says\n%s", res.Class, res.Failed(), res.Output)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "__pycache__", "*")); len(m) > 0 {
		t.Errorf("the run wrote bytecode: %v", m)
	}
}

// TestRunFolderOnlyWhereUsed: a run has a folder of its own under the temp folder only
// where something uses it (pytest's reporter here; the JavaScript runners' reports; the
// sandbox, which makes it writable), and it is gone after the run. A plain command out of
// the sandbox runs without one: the command lists the temp folder while it runs.
func TestRunFolderOnlyWhereUsed(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tests", "test_one.py"), []byte("def test_one():\n    assert 1 == 1\n"))
	for _, tt := range []struct {
		command string
		runner  Runner
		folder  bool
	}{
		{`ls -a "$TMPDIR"`, Exit, false},
		{`ls -a "$TMPDIR"; /usr/bin/python3 -m pytest -q tests`, Pytest, true},
	} {
		res, err := Run(context.Background(), dir, tt.command, time.Minute, WithEnv(os.Environ()))
		if err != nil {
			t.Fatal(err)
		}
		if res.Runner != tt.runner || res.ExitCode != 0 {
			t.Fatalf("%s: runner %s, exit %d; want %s, 0\n%s", tt.command, res.Runner, res.ExitCode, tt.runner, res.Output)
		}
		if got := strings.Contains(res.Output, "testrun-"); got != tt.folder {
			t.Errorf("%s: a run folder while it ran: %v, want %v\n%s", tt.command, got, tt.folder, res.Output)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%s: left in the temp folder: %v", tt.command, left)
		}
	}
}
