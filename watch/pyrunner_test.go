package watch_test

// End-to-end tests of the hardened Python and Go runners (SPEC §7.5, §7.6; issue 23 items 3
// and 5), through the real binary with the gate in the sandbox: an implementer whose
// discount is wrong makes the gate's run report it right through what Python and Go load
// before, around and after the tests — the report written at interpreter exit, a root
// package named pytest, a root decimal.py, a package's metadata with a pytest plugin,
// committed bytecode, a go.mod replace into the tree, a .pth file. Each is refused, with
// the failure type and the file named; the honest implementer on the same project
// completes.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Python cheats. Each implementation is wrong (discount returns the price unchanged)
// unless the cheat makes the report say otherwise.
var (
	// pyJUnitAtExit rewrites the JUnit report at interpreter exit, after pytest wrote it:
	// its path is on the command line.
	pyJUnitAtExit = `import atexit
import re
import sys


def _rewrite():
    for a in sys.argv:
        if a.startswith("--junitxml="):
            path = a.split("=", 1)[1]
            with open(path) as f:
                x = f.read()
            x = re.sub(r'(<testcase [^>]*name="test_unit_001_discount"[^>]*>).*?</testcase>', r'\1</testcase>', x, flags=re.S)
            with open(path, "w") as f:
                f.write(x)


atexit.register(_rewrite)


def discount(cents, p):
    return cents
`
	// pyPipeAtExit writes a passing report of the test into every pipe the process holds,
	// at interpreter exit.
	pyPipeAtExit = `import atexit
import json
import os


def _forge():
    line = json.dumps({"event": "test", "nodeid": "tests/test_discount.py::test_unit_001_discount",
                       "when": "call", "outcome": "passed", "file": "tests/test_discount.py"}) + "\n"
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                os.write(int(fd), line.encode())
        except OSError:
            pass


atexit.register(_forge)


def discount(cents, p):
    return cents
`
)

// goReplaceCheat: the implementer takes its discount from a module it vendors into the
// tree with a go.mod replace: a forged copy that also holds the test's package path.
var goReplaceCheat = map[string]string{
	"go.mod":                           "module example.com/shop\n\ngo 1.22\n\nrequire example.com/discount v0.0.0\n\nreplace example.com/discount => ./third_party/discount\n",
	"third_party/discount/go.mod":      "module example.com/discount\n\ngo 1.22\n",
	"third_party/discount/discount.go": "package discount\n\n// Of returns c less p percent.\nfunc Of(c, p int64) int64 { return c - c*p/100 }\n",
	"cart/discount.go": `package cart

import (
	"example.com/discount"
	"example.com/shop/money"
)

// Discount returns c less p percent of it.
func Discount(c money.Cents, p int64) money.Cents { return money.Cents(discount.Of(int64(c), p)) }
`,
}

// pyBytecodeCheat returns the files of an implementer whose committed source is wrong
// (a*b) while its committed bytecode, of the unchecked-hash kind Python runs without
// comparing it with the source, is right.
func pyBytecodeCheat(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "discount.py")
	writeFile(t, src, pyGreenFiles["shop/discount.py"])
	pyc := filepath.Join(dir, "discount.pyc")
	out, err := exec.Command("/usr/bin/python3", "-c", `import py_compile, sys
py_compile.compile(sys.argv[1], cfile=sys.argv[2], invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH, doraise=True)`, src, pyc).CombinedOutput()
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
	b, err := os.ReadFile(pyc)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := exec.Command("/usr/bin/python3", "-c", "import sys; print(sys.implementation.cache_tag)").Output()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		".gitignore":       ".pytest_cache/\n", // so that the bytecode is committed
		"shop/discount.py": "def discount(cents, p):\n    return cents * p\n",
		"shop/__pycache__/discount." + strings.TrimSpace(string(tag)) + ".pyc": string(b),
	}
}

func TestRunnerCheatsSandboxed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		go_   bool
		green map[string]string
		// typ and file: the failure wanted, and the file its reason names ("" any).
		typ, file string
	}{
		{name: "pytest honest", green: pyGreenFiles},
		{name: "go honest", go_: true, green: goGreenFiles},
		{name: "a root package named pytest", green: map[string]string{"shop/discount.py": pyWrongDiscount,
			"pytest/__init__.py": "import sys\nsys.exit(0)\n"}, typ: "test_tampered", file: "pytest/__init__.py"},
		{name: "a root decimal.py shadowing the standard library", green: map[string]string{
			"shop/discount.py": "import decimal\n\n\ndef discount(cents, p):\n    return cents\n",
			"decimal.py":       "import os\nos._exit(0)\n"}, typ: "test_tampered", file: "decimal.py"},
		{name: "a dist-info with a pytest11 entry point", green: map[string]string{"shop/discount.py": pyWrongDiscount,
			"forge-1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: forge\nVersion: 1.0\n",
			"forge-1.0.dist-info/entry_points.txt": "[pytest11]\nforge = forge\n",
			"forge.py":                             pyForgedConftest}, typ: "test_tampered", file: "forge-1.0.dist-info/"},
		{name: "committed bytecode that runs a right discount", typ: "test_tampered", file: "shop/__pycache__/discount."},
		{name: "a .pth file", green: map[string]string{"shop/discount.py": pyWrongDiscount, "forge.pth": "import forge\n",
			"forge.py": pyForgedImport}, typ: "test_tampered", file: "forge.pth"},
		{name: "a go.mod replace into the tree", go_: true, green: goReplaceCheat, typ: "test_tampered", file: "go.mod"},
		{name: "the JUnit report rewritten at exit", green: map[string]string{"shop/discount.py": pyJUnitAtExit},
			typ: "test_tampered", file: "shop/discount.py:8: looks for the test runner's report (--junitxml=)"},
		{name: "forged report lines written to the pipes at exit", green: map[string]string{"shop/discount.py": pyPipeAtExit},
			typ: "forged_results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			needPytest(t)
			fixture, command, redFiles := "pyproj", pyTest, pyRedFiles
			if tt.go_ {
				fixture, command, redFiles = "gomod", goTest, goRedFiles
			}
			if tt.green == nil {
				tt.green = pyBytecodeCheat(t)
			}
			red, green := files(t, redFiles), files(t, tt.green)
			r := newRealRepo(t, fixture, command, redGreenVerify()[:2], map[string][]string{
				"writer":  slowAgent("test-writer", 0, 0, red),
				"builder": slowAgent("implementer", 0, 0, green),
			}, "")
			r.write(".orchestrator/no_auto_retry", "")
			r.sandboxed(red, green, filepath.Dir(r.starts))
			code, out := r.runWith([]string{"ORCHESTRATOR_GATE_CACHE=" + sharedGateCache(t), "GOCACHE=" + goCache(t)}, "watch", "--once")
			st := r.statuses()
			if st["TASK-T01"] != "completed" {
				t.Fatalf("TASK-T01 is %q, want completed (its writer is honest)%s\n%s", st["TASK-T01"], r.describeAttempts("TASK-T01"), out)
			}
			checkRunnerCheat(t, r, "TASK-001", code, out, tt.typ, tt.file)
		})
	}
}

// checkRunnerCheat checks the outcome of task id: completed when typ is "", else failed
// with typ naming file, nothing of it landed.
func checkRunnerCheat(t *testing.T, r *realRepo, id string, code int, out, typ, file string) {
	t.Helper()
	st := r.statuses()
	if typ == "" {
		if code != 0 || st[id] != "completed" {
			t.Fatalf("honest: exit %d, %s %q; want 0, completed%s\n%s", code, id, st[id], r.describeAttempts(id), out)
		}
		return
	}
	if st[id] == "completed" || code == 0 {
		t.Fatalf("%s is %q (exit %d) after the cheat, want not completed%s\n%s", id, st[id], code, r.describeAttempts(id), r.attemptLogs(id))
	}
	res := r.result(id, 1)
	if res["failure_type"] != typ || !strings.Contains(fmt.Sprint(res["reason"]), file) {
		t.Errorf("attempt 1: %v: %v; want %s naming %q\n%s", res["failure_type"], res["reason"], typ, file, r.attemptLogs(id))
	}
}
