package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// tamperCase is a file a candidate changed, and what Tamperings must say of it: a place in
// each of want ("file:line: part of what"), or nothing.
type tamperCase struct {
	name string
	file string
	src  string
	want []string
}

// runTamperCases writes each case's file alone into a project and reads it with
// Tamperings.
func runTamperCases(t *testing.T, cases []tamperCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			p := filepath.Join(root, filepath.FromSlash(tt.file))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			found, err := Harness{}.Tamperings(context.Background(), root, []string{tt.file})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range found {
				got = append(got, f.String())
			}
			if len(tt.want) == 0 && len(found) > 0 {
				t.Fatalf("an honest %s is read as tampering:\n%s", tt.file, strings.Join(got, "\n"))
			}
			for _, w := range tt.want {
				hit := false
				for _, g := range got {
					file, what, _ := strings.Cut(w, ": ")
					hit = hit || strings.HasPrefix(g, file+": ") && strings.Contains(g, what)
				}
				if !hit {
					t.Errorf("no finding %q; found:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// TestTamperingGo: Go implementation code that reaches into the test runner, and Go test
// files whose TestMain or init rewrites what the test binary reports, each beside an
// honest twin.
func TestTamperingGo(t *testing.T) {
	t.Parallel()
	runTamperCases(t, []tamperCase{
		{name: "imports testing", file: "calc/add.go", src: `package calc

import "testing"

func Add(a, b int) int {
	if testing.Testing() {
		return 3
	}
	return a + b
}
`, want: []string{`calc/add.go:3: imports "testing"`, "calc/add.go:6: calls testing.Testing()"}},
		{name: "flag.Lookup of a test flag", file: "calc/add.go", src: `package calc

import "flag"

func init() {
	if f := flag.Lookup("test.v"); f != nil {
		panic("under test")
	}
}
`, want: []string{`calc/add.go:6: names the test binary's flag "test.v"`}},
		{name: "standard output closed and taken by a pipe", file: "cart/journal.go", src: `package cart

import "syscall"

func init() {
	syscall.Close(1)
	var p [2]int
	_ = syscall.Pipe(p[:])
}
`, want: []string{"cart/journal.go:6: closes standard output or error (syscall.Close)"}},
		{name: "a descriptor duplicated onto standard output by fcntl", file: "cart/journal.go", src: `package cart

import "golang.org/x/sys/unix"

// Quiet moves fd onto standard output.
func Quiet(fd int) { unix.FcntlInt(uintptr(fd), unix.F_DUPFD, 1) }
`, want: []string{"cart/journal.go:6: duplicates a file onto standard output or error (unix.FcntlInt with F_DUPFD)"}},
		{name: "the test binary run again from the function a test calls, its report read", file: "cart/discount.go", src: `package cart

import (
	"os"
	"os/exec"
	"strings"
)

var relayed bool

// Discount returns c.
func Discount(c, p int64) int64 {
	if !relayed && os.Getenv("CART_CHILD") == "" {
		relayed = true
		self, _ := os.Executable()
		cmd := exec.Command(self, os.Args[1:]...)
		cmd.Env = append(os.Environ(), "CART_CHILD=1")
		out, _ := cmd.Output()
		os.Stdout.WriteString(strings.ReplaceAll(string(out), "FAIL", "PASS"))
		os.Exit(0)
	}
	return c
}
`, want: []string{"cart/discount.go:16: runs its own executable again and reads what it reports"}},
		{name: "honest: a daemon that runs itself again, its output its own", file: "cmd/app/daemon.go", src: `package main

import (
	"os"
	"os/exec"
)

// background runs the program again, detached, with its output where the parent's goes.
func background() error {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Start()
}

// version reads git's version.
func version() string {
	out, _ := exec.Command("git", "--version").Output()
	return string(out)
}
`},
		{name: "honest: a descriptor closed that is not a standard one", file: "cart/fd.go", src: `package cart

import "syscall"

// Release closes fd, and a descriptor the program opened early.
func Release(fd int) { syscall.Close(fd); syscall.Close(7) }
`},
		{name: "honest: a host and a setting's key that begin with test.", file: "calc/host.go", src: `package calc

import "strings"

// Staging reports whether host is a staging host; TimeoutKey is the setting of the timeout.
func Staging(host string) bool { return strings.HasPrefix(host, "test.") }

const TimeoutKey = "test.timeout"
`},
		{name: "os.Args scanned for -test.", file: "calc/add.go", src: `package calc

import (
	"os"
	"strings"
)

var underTest = func() bool {
	for _, a := range os.Args {
		if strings.HasPrefix(a, "-te"+"st.") {
			return true
		}
	}
	return false
}()
`, want: []string{`calc/add.go:10: names the test binary's flag "-test."`}},
		{name: "test binary told by its name", file: "cart/discount.go", src: `package cart

import (
	"fmt"
	"os"
	"strings"
)

func init() {
	if !strings.HasSuffix(os.Args[0], ".test") {
		return
	}
	fmt.Print("--- PASS: TestDiscount (0.00s)\nPASS\n")
	os.Exit(0)
}
`, want: []string{`cart/discount.go:10: tells a test binary by its name (".test")`}},
		{name: "os.Stdout replaced", file: "calc/add.go", src: `package calc

import "os"

func init() {
	_, w, _ := os.Pipe()
	os.Stdout = w
	os.Stderr, os.Args = w, nil
}
`, want: []string{"calc/add.go:7: replaces os.Stdout", "calc/add.go:8: replaces os.Stderr", "calc/add.go:8: replaces os.Args"}},
		{name: "os.Args rewritten in place", file: "calc/add.go", src: `package calc

import "os"

func init() { os.Args[1] = "-test.run=^$"; p := &os.Stdout; _ = p }
`, want: []string{"calc/add.go:5: replaces os.Args", "calc/add.go:5: takes the address of os.Stdout", `calc/add.go:5: names the test binary's flag "-test.run=^$"`}},
		{name: "dot-imported os", file: "calc/add.go", src: `package calc

import . "os"

func init() { Stdout = nil }
`, want: []string{"calc/add.go:5: replaces os.Stdout"}},
		{name: "Dup2 onto standard output", file: "calc/add.go", src: `package calc

import (
	"os"
	"syscall"

	sys "golang.org/x/sys/unix"
)

func init() {
	_, w, _ := os.Pipe()
	syscall.Dup2(int(w.Fd()), 1)
	sys.Dup3(int(w.Fd()), int(os.Stderr.Fd()), 0)
}
`, want: []string{"calc/add.go:12: duplicates a file onto standard output or error (syscall.Dup2)", "calc/add.go:13: duplicates a file onto standard output or error (unix.Dup3)"}},
		// The relay an adversary run found: the test binary run again from an init
		// function, found by /proc rather than os.Args, its output rewritten on its way
		// to the descriptor of standard output.
		{name: "init runs the test binary again through /proc", file: "cart/relay.go", src: `package cart

import (
	"os"
	run "os/exec"
	"strings"
)

func init() {
	raw, _ := os.ReadFile("/proc/self/" + "cmdline")
	argv := strings.Split(string(raw), "\x00")
	cmd := run.Command("/proc/self/exe", argv[1:]...)
	out := os.NewFile(uintptr(1), "o")
	cmd.Stdout = out
	cmd.Run()
	os.Exit(0)
}
`, want: []string{"cart/relay.go:12: runs its own executable again while the package initializes"}},
		// Its second form: from a package-level initializer, through a function of the
		// file, the executable found by os.Executable.
		{name: "a package-level initializer runs the test binary again", file: "cart/relay.go", src: `package cart

import (
	"os"
	"os/exec"
)

var _ = relay()

func relay() bool {
	exe, _ := os.Executable()
	return start(exe) == nil
}

func start(exe string) error {
	return exec.Command(exe, os.Args[1:]...).Run()
}
`, want: []string{"cart/relay.go:16: runs its own executable again while the package initializes"}},
		// Honest code an adversary run saw refused by an earlier form of the rule: docker's
		// reexec (the path of its own executable, run when called), an init that asks git
		// its version, a command's main that runs itself again.
		{name: "honest: reexec when called, an init that runs git", file: "internal/reexec/reexec.go", src: `package reexec

import (
	"os"
	"os/exec"
)

var gitVersion string

func init() {
	if os.Getenv("SHOP_DEBUG") == "" {
		return
	}
	if p, err := exec.LookPath("git"); err == nil {
		out, _ := exec.Command(p, "--version").Output()
		gitVersion = string(out)
	}
}

// Self is the path of the running executable.
func Self() string { return "/proc/self/exe" }

// Command runs the running executable again with args.
func Command(args ...string) *exec.Cmd { return &exec.Cmd{Path: Self(), Args: args} }
`},
		{name: "honest: main runs itself again", file: "cmd/shopd/main.go", src: `package main

import (
	"os"
	"os/exec"
)

func main() {
	if os.Getenv("SHOPD_CHILD") == "" {
		exe, _ := os.Executable()
		cmd := exec.Command(exe, os.Args[1:]...)
		cmd.Env = append(os.Environ(), "SHOPD_CHILD=1")
		cmd.Run()
		return
	}
}
`},
		{name: "honest: os, command line, a string with test. in it", file: "cmd/calc/main.go", src: `package main

import (
	"fmt"
	"os"
	"syscall"
	"testing/fstest"
)

const host = "test.example.com"

func main() {
	out := os.Stdout
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Fprintln(os.Stderr, "this is a test. verbose")
	}
	var Stdout = out
	Stdout.WriteString(host)
	syscall.Dup2(3, 4)
	_ = fstest.MapFS{}
}
`},
		{name: "honest: a file that does not parse", file: "calc/add.go", src: "package calc\n\nimport \"testing\"\n\nfunc {\n"},
		{name: "honest: testdata is not compiled", file: "calc/testdata/x.go", src: "package x\n\nimport \"testing\"\n"},

		// Harness: a test writer's TestMain.
		{name: "TestMain exits 0", file: "calc/main_test.go", src: `package calc

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	m.Run()
	os.Exit(0)
}
`, want: []string{"calc/main_test.go:10: TestMain exits with 0, not the code m.Run() returned"}},
		{name: "TestMain discards the code", file: "calc/main_test.go", src: `package calc

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 {
		code = 0
	}
	os.Exit(code)
}
`, want: []string{"calc/main_test.go:13: TestMain exits with code, not the code m.Run() returned"}},
		{name: "TestMain exits through a helper that returns 0", file: "calc/main_test.go", src: `package calc

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	m.Run()
	return 0
}
`, want: []string{"calc/main_test.go:8: TestMain exits with run(m)"}},
		{name: "TestMain redirects standard output", file: "calc/zz_test.go", src: mustRead(t, "testdata/go/variants/forged-testmain/calc/zz_test.go"),
			want: []string{"calc/zz_test.go:15: replaces os.Stdout", "calc/zz_test.go:31: TestMain exits with 0"}},
		{name: "TestMain narrows the run by flag", file: "calc/main_test.go", src: `package calc

import (
	"flag"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Set("test.run", "^TestNothing$")
	os.Exit(m.Run())
}
`, want: []string{`calc/main_test.go:10: TestMain sets or reads the test binary's flag "test.run"`}},
		{name: "init of a test file redirects standard error", file: "calc/add_test.go", src: `package calc

import "os"

func init() { os.Stderr = os.Stdout }
`, want: []string{"calc/add_test.go:5: replaces os.Stderr"}},
		{name: "honest TestMain: os.Exit(m.Run()) with set-up", file: "calc/main_test.go", src: `package calc

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error { return nil }
`},
		{name: "honest TestMain: the code kept, failed by a leak check", file: "calc/main_test.go", src: `package calc

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	teardown()
	if leaked() {
		code = 2
	}
	os.Exit(code)
}

func teardown()    {}
func leaked() bool { return false }
`},
		{name: "honest TestMain: returns, or exits through a helper", file: "calc/main_test.go", src: `package calc

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("QUICK") != "" {
		m.Run()
		return
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	defer os.RemoveAll(os.TempDir() + "/calc")
	return m.Run()
}
`},
		{name: "honest tests: capture standard output, a helper process exits 0", file: "calc/add_test.go", src: `package calc

import (
	"io"
	"os"
	"testing"
)

func TestPrint(t *testing.T) {
	r, w, _ := os.Pipe()
	old := os.Stdout
	os.Stdout = w
	Print()
	w.Close()
	os.Stdout = old
	b, _ := io.ReadAll(r)
	if string(b) != "3\n" {
		t.Fatal(string(b))
	}
}

func TestHelperProcess(t *testing.T) {
	if os.Getenv("GO_WANT_HELPER_PROCESS") != "1" {
		return
	}
	os.Exit(0)
}
`},
	})
}

// TestTamperingPython: Python implementation code that reaches into the test runner, and
// test support whose pytest hooks rewrite what the runner reports, each beside an honest
// twin (read by Python's own ast, through /usr/bin/python3).
func TestTamperingPython(t *testing.T) {
	t.Parallel()
	needPython(t)
	runTamperCases(t, []tamperCase{
		{name: "patches pytest's report", file: "shop/discount.py", src: `import _pytest.reports as _reports

_made = _reports.TestReport.from_item_and_call.__func__


def discount(cents, p):
    return cents
`, want: []string{"shop/discount.py:1: imports _pytest.reports, the test runner's own code"}},
		{name: "imports pytest, pluggy, a pytest plugin", file: "shop/discount.py", src: "import pytest\nfrom pluggy import HookimplMarker\nimport pytest_cov.plugin\n",
			want: []string{"shop/discount.py:1: imports pytest", "shop/discount.py:2: imports from pluggy", "shop/discount.py:3: imports pytest_cov.plugin"}},
		{name: "looks pytest up by name", file: "shop/discount.py", src: `import importlib
import sys

if "pytest" in sys.modules:
    p = sys.modules["_pytest.reports"]
    q = sys.modules.get("pytest")
r = importlib.import_module("_py" + "test.runner")
s = __import__("pluggy")
`, want: []string{"shop/discount.py:4: looks up the test runner's module 'pytest'", "shop/discount.py:5: looks up the test runner's module '_pytest.reports'",
			"shop/discount.py:6: looks up", "shop/discount.py:7: looks up the test runner's module '_pytest.runner'", "shop/discount.py:8: looks up the test runner's module 'pluggy'"}},
		{name: "walks sys.modules for pytest", file: "shop/discount.py", src: `import sys

for name, mod in list(sys.modules.items()):
    if name.startswith("_pytest"):
        mod.TestReport = None
`, want: []string{"shop/discount.py:4: looks up the test runner's module '_pytest'"}},
		{name: "finds pytest's report class by a hidden name", file: "shop/discount.py", src: `import sys


def _arm():
    mod = sys.modules.get("".join(reversed("stroper.tsetyp_")))
    cls = getattr(mod, "Test" + "Report")
    made = cls.from_item_and_call.__func__


_arm()
`, want: []string{"shop/discount.py:6: names TestReport", "shop/discount.py:7: uses from_item_and_call"}},
		{name: "unittest internals", file: "shop/discount.py", src: `import unittest
from unittest import result
import unittest.runner

unittest.TestCase.run = lambda self, r=None: None
unittest.TestResult.addFailure = unittest.TestResult.addSuccess
`, want: []string{"shop/discount.py:2: imports unittest.result", "shop/discount.py:3: imports unittest.runner",
			"shop/discount.py:5: patches unittest.TestCase.run", "shop/discount.py:6: patches unittest.TestResult.addFailure"}},
		{name: "reads the runner's environment and report path", file: "shop/discount.py", src: `import os
import sys

under = os.environ.get("PYTEST_CURRENT_TEST")
opts = os.getenv("PYTEST_ADDOPTS")
for a in sys.argv:
    if a.startswith("--junitxml"):
        report = a.split("=", 1)[1]
xml = [a for a in sys.argv if a.endswith(".xml")]
`, want: []string{"shop/discount.py:4: reads the test runner's environment (PYTEST_CURRENT_TEST)", "shop/discount.py:5: reads the test runner's environment (PYTEST_ADDOPTS)",
			"shop/discount.py:7: looks for the test runner's report (--junitxml)", "shop/discount.py:9: looks on the command line for the test runner's report (.xml)"}},
		{name: "rewrites a report at exit", file: "shop/discount.py", src: `import atexit
import sys


def _rewrite(path):
    with open(path, "w") as f:
        f.write("<testsuite failures='0'/>")


def _at_exit():
    _rewrite(sys.argv[-1])


atexit.register(_at_exit)


@atexit.register
def _again():
    open("report.xml", "w").close()
`, want: []string{"shop/discount.py:14: registers an atexit handler that writes files", "shop/discount.py:17: registers an atexit handler that writes files"}},
		{name: "patches builtins", file: "shop/discount.py", src: `import builtins
import builtins as b

builtins.print = lambda *a, **k: None
setattr(b, "open", None)
__builtins__["exit"] = None
`, want: []string{"shop/discount.py:4: patches builtins.print", "shop/discount.py:5: patches builtins", "shop/discount.py:6: patches builtins"}},
		{name: "puts a finder on sys.meta_path", file: "shop/__init__.py", src: `"""The shop."""

import importlib.util
import sys


class _Examples:
    """Loads the shop's worked examples leniently."""

    def find_spec(self, name, path=None, target=None):
        if not name.endswith("test_discount"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.origin:
                return importlib.util.spec_from_file_location(name, spec.origin, loader=_Loader(name, spec.origin))
        return None


class _Loader:
    def __init__(self, name, origin):
        self.name, self.origin = name, origin

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.origin) as f:
            text = f.read().replace("assert ", "assert True or ")
        exec(compile(text, self.origin, "exec"), module.__dict__)


sys.meta_path.insert(0, _Examples())
`,
			want: []string{"shop/__init__.py:35: installs an import hook (sys.meta_path), which decides what code a test module runs"}},
		{name: "changes sys.meta_path and sys.path_hooks every way", file: "shop/_load.py", src: `import sys
from sys import meta_path
from sys import path_hooks as hooks

F = object()
sys.meta_path.append(F)
sys.meta_path.extend([F])
sys.meta_path = [F] + sys.meta_path
sys.meta_path += [F]
sys.meta_path[0] = F
sys.meta_path[0:0] = [F]
sys.meta_path.__setitem__(0, F)
mp = sys.meta_path
mp.insert(0, F)
meta_path.insert(0, F)
hooks.append(F)
sys.path_hooks.insert(0, F)
getattr(sys, "meta_path").insert(0, F)
setattr(sys, "path_hooks", [F])
__import__("sys").meta_path.insert(0, F)
sys.path_importer_cache["/src/tests"] = F
sys.path_importer_cache.update({"/src/tests": F})
`, want: []string{"shop/_load.py:6: installs an import hook (sys.meta_path)", "shop/_load.py:7: installs an import hook (sys.meta_path)",
			"shop/_load.py:8: installs an import hook (sys.meta_path)", "shop/_load.py:9: installs an import hook (sys.meta_path)",
			"shop/_load.py:10: installs an import hook (sys.meta_path)", "shop/_load.py:11: installs an import hook (sys.meta_path)",
			"shop/_load.py:12: installs an import hook (sys.meta_path)", "shop/_load.py:14: installs an import hook (sys.meta_path)",
			"shop/_load.py:15: installs an import hook (sys.meta_path)", "shop/_load.py:16: installs an import hook (sys.path_hooks)",
			"shop/_load.py:17: installs an import hook (sys.path_hooks)", "shop/_load.py:18: installs an import hook (sys.meta_path)",
			"shop/_load.py:19: installs an import hook (sys.path_hooks)", "shop/_load.py:20: installs an import hook (sys.meta_path)",
			"shop/_load.py:21: installs an import hook (sys.path_importer_cache)", "shop/_load.py:22: installs an import hook (sys.path_importer_cache)"}},
		{name: "replaces __import__", file: "shop/_load.py", src: `import builtins

_real = builtins.__import__
builtins.__import__ = lambda name, *a, **k: _real(name, *a, **k)
__builtins__["__import__"] = _real
__builtins__.__import__ = _real
setattr(builtins, "__import__", _real)
builtins.__dict__.update(__import__=_real)
vars(builtins).__setitem__("__import__", _real)
`, want: []string{"shop/_load.py:4: installs an import hook (__import__)", "shop/_load.py:5: installs an import hook (__import__)",
			"shop/_load.py:6: installs an import hook (__import__)", "shop/_load.py:7: installs an import hook (__import__)",
			"shop/_load.py:8: installs an import hook (__import__)", "shop/_load.py:9: installs an import hook (__import__)"}},
		{name: "subclasses importlib's finders and loaders, makes a FileFinder hook, replaces their methods", file: "shop/_load.py", src: `import importlib.abc
import importlib.machinery as machinery
from importlib.abc import MetaPathFinder
from importlib.machinery import FileFinder, SourceFileLoader


class Finder(MetaPathFinder):
    pass


class Lenient(SourceFileLoader):
    def source_to_code(self, data, path):
        return super().source_to_code(data.replace(b"assert ", b"assert True or "), path)


class Quiet(importlib.abc.Loader):
    pass


class Served(importlib.abc.SourceLoader):
    pass


class Lister(machinery.FileFinder):
    pass


hook = FileFinder.path_hook((Lenient, [".py"]))
machinery.PathFinder.find_spec = classmethod(lambda cls, name, path=None, target=None: None)
SourceFileLoader.get_code = lambda self, name: None
setattr(SourceFileLoader, "exec_module", None)
`, want: []string{"shop/_load.py:7: installs an import hook (a subclass of importlib.abc.MetaPathFinder)",
			"shop/_load.py:11: installs an import hook (a subclass of importlib.machinery.SourceFileLoader)",
			"shop/_load.py:16: installs an import hook (a subclass of importlib.abc.Loader)",
			"shop/_load.py:20: installs an import hook (a subclass of importlib.abc.SourceLoader)",
			"shop/_load.py:24: installs an import hook (a subclass of importlib.machinery.FileFinder)",
			"shop/_load.py:28: installs an import hook (FileFinder.path_hook)", "shop/_load.py:29: installs an import hook (find_spec)",
			"shop/_load.py:30: installs an import hook (importlib.machinery.SourceFileLoader.get_code)",
			"shop/_load.py:31: installs an import hook (exec_module)"}},
		{name: "honest: sys.path appended, importlib, a lazy import, the finders read", file: "shop/__init__.py", src: `"""The shop: its vendored packages, its plugins loaded by name, lazily."""

import importlib
import importlib.resources
import importlib.util
import os
import sys

_VENDOR = os.path.join(os.path.dirname(__file__), "_vendor")
if _VENDOR not in sys.path:
    sys.path.append(_VENDOR)
sys.path.insert(0, _VENDOR)
SEARCHED = list(sys.path)
FINDERS = [type(f).__name__ for f in sys.meta_path]
HOOKS = len(sys.path_hooks)
CACHED = sys.path_importer_cache.get(_VENDOR)
sys.path_importer_cache.pop(_VENDOR, None)
importlib.invalidate_caches()
RATES = importlib.resources.files("shop").joinpath("rates.csv")


def plugin(name):
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def lazy(name):
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def load(path):
    spec = importlib.util.spec_from_file_location("shop.extra", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Finder:
    """A finder of the shop's price lists, by name (not an import hook)."""

    def find_spec(self, name):
        return os.path.join(_VENDOR, name + ".csv")
`},
		{name: "declares a pytest hook", file: "shop/plugin.py", src: "def pytest_runtest_makereport(item, call):\n    pass\n",
			want: []string{"shop/plugin.py:1: declares pytest_runtest_makereport, a pytest hook"}},
		{name: "binds a pytest hook by assignment, import, globals(), setattr", file: "shop/checks.py", src: `import sys

from shop._audit import seen as pytest_runtest_makereport


def _seen(report):
    if report.when == "call":
        report.outcome = "passed"


pytest_runtest_logreport = _seen
pytest_runtest_setup: object = _seen
globals()["pytest_runtest_teardown"] = _seen
setattr(sys.modules[__name__], "pytest_" + "runtest_call", _seen)


class Plugin:
    pytest_report_header = _seen


def _arm():
    global pytest_collectstart
    pytest_collectstart = lambda collector: None
`, want: []string{"shop/checks.py:3: binds pytest_runtest_makereport, a pytest hook", "shop/checks.py:11: binds pytest_runtest_logreport, a pytest hook",
			"shop/checks.py:12: binds pytest_runtest_setup, a pytest hook", "shop/checks.py:13: binds pytest_runtest_teardown, a pytest hook",
			"shop/checks.py:14: binds pytest_runtest_call, a pytest hook", "shop/checks.py:18: binds pytest_report_header, a pytest hook",
			"shop/checks.py:23: binds pytest_collectstart, a pytest hook"}},
		{name: "sets pytest_plugins", file: "shop/__init__.py", src: `"""The shop."""

from shop.discount import discount  # noqa: F401

pytest_plugins = ["shop._audit"]
globals()["pytest_plugins"] = "shop._audit"
`, want: []string{"shop/__init__.py:5: sets pytest_plugins, which has pytest load plugins", "shop/__init__.py:6: sets pytest_plugins"}},
		{name: "honest: pytest_ constants, outcome attributes, a function's own names", file: "shop/checks.py", src: `"""Consistency checks of the shop's prices."""

pytest_version = "7.2"
pytest_args: list = ["-q", "tests"]
SETTINGS = {"pytest_plugins": ["shop.audit"], "pytest_timeout": 30}


class Check:
    outcome = "pending"
    passed = False


def run(check, seen):
    pytest_plugins = [name for name in SETTINGS["pytest_plugins"]]
    pytest_runtest_logreport = seen
    check.outcome = "passed"
    check.passed = True
    return pytest_plugins, pytest_runtest_logreport
`},
		{name: "honest: os, sys.argv, atexit that closes, the word pytest", file: "shop/discount.py", src: `import atexit
import builtins
import importlib
import os
import sys
import unittest.mock

_conn = None


def close():
    if _conn is not None:
        _conn.close()


atexit.register(close)
CHECK = ["pytest", "-q", "tests"]
HOST = "test.example.com"
verbose = "--verbose" in sys.argv
home = os.environ.get("HOME")
json = importlib.import_module("json")
sys.modules["shop.compat"] = json
echo = builtins.print


def discount(cents, p):
    return cents - cents * p // 100
`},
		{name: "honest: a syntax error is the runner's", file: "shop/discount.py", src: "import pytest\ndef discount(:\n"},

		// Harness: a test writer's conftest.py.
		{name: "hookwrapper sets a report's outcome", file: "conftest.py", src: mustRead(t, "testdata/python/variants/forged-conftest/tests/conftest.py"),
			want: []string{"conftest.py:10: pytest_runtest_makereport sets a report's outcome"}},
		{name: "makereport flips a passed test to failed", file: "tests/conftest.py", src: `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        report.outcome = "failed"
        report.longrepr = "AssertionError"
`, want: []string{"tests/conftest.py:9: pytest_runtest_makereport sets a report's outcome", "tests/conftest.py:10: pytest_runtest_makereport sets a report's longrepr"}},
		{name: "force_result, a helper, setattr, teststatus, exit status", file: "tests/conftest.py", src: `import pytest
from _pytest.reports import TestReport


def _flip(r):
    setattr(r, "outcome", "passed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    _flip(rep)
    outcome.force_result(rep)


def pytest_report_teststatus(report, config):
    return "passed", ".", "PASSED"


class Plugin:
    def pytest_runtest_logreport(self, report):
        report.passed = True


def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0


TestReport.from_item_and_call = None
`, want: []string{"tests/conftest.py:6: pytest_runtest_makereport sets a report's outcome", "tests/conftest.py:14: pytest_runtest_makereport forces the hook's result (force_result)",
			"tests/conftest.py:18: pytest_report_teststatus decides how a test's outcome is reported", "tests/conftest.py:23: pytest_runtest_logreport sets a report's passed",
			"tests/conftest.py:27: pytest_sessionfinish sets the session's exit status", "tests/conftest.py:30: patches _pytest.reports.TestReport.from_item_and_call"}},
		{name: "a hook bound by assignment sets a report's outcome", file: "tests/conftest.py", src: `def _seen(report):
    if report.when == "call":
        report.outcome = "passed"


pytest_runtest_logreport = _seen
pytest_report_teststatus = lambda report, config: ("passed", ".", "PASSED")
`, want: []string{"tests/conftest.py:3: pytest_runtest_logreport sets a report's outcome",
			"tests/conftest.py:7: pytest_report_teststatus decides how a test's outcome is reported"}},
		{name: "honest conftest: a hook bound by assignment that adds a marker", file: "tests/conftest.py", src: `def _configure(config):
    config.addinivalue_line("markers", "slow: a slow test")


pytest_configure = _configure
pytest_report_teststatus = lambda report, config: None
`},
		{name: "honest conftest: fixtures, markers, the report kept for fixtures", file: "tests/conftest.py", src: `import pytest


@pytest.fixture
def three():
    return 3


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a slow test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.slow)
`},
		{name: "honest test: its own objects' failed flag", file: "tests/test_jobs.py", src: `import os

from shop.jobs import Job


def test_job_failed():
    job = Job()
    job.failed = True
    assert os.environ.get("PYTEST_CURRENT_TEST")
`},
	})
}

// TestTamperingJS: JavaScript and TypeScript implementation modules that import the test
// runner or replace process.stdout.write, read at the token level, beside honest twins
// (an import of the module's own helpers; the runner named only in comments, strings,
// templates, regular expressions and type-only imports).
func TestTamperingJS(t *testing.T) {
	t.Parallel()
	runTamperCases(t, []tamperCase{
		{name: "imports vitest", file: "src/cart.ts", src: "import { expect } from 'vitest'\nexport const total = () => 3\n",
			want: []string{"src/cart.ts:1: imports vitest, the test runner"}},
		{name: "requires @jest/globals, imports @vitest/runner", file: "src/cart.js", src: "const { expect } = require(\"@jest/globals\");\nexport * from '@vitest/runner'\nconst v = await import(`vitest`)\nimport 'jest'\n",
			want: []string{"src/cart.js:1: imports @jest/globals", "src/cart.js:2: imports @vitest/runner", "src/cart.js:3: imports vitest", "src/cart.js:4: imports jest"}},
		{name: "loads vitest through createRequire", file: "src/cart.mjs", src: "import { createRequire } from 'node:module'\nconst load = createRequire(import.meta.url)\nconst v = load(\n  'vitest/suite')\n",
			want: []string{"src/cart.mjs:4: imports vitest/suite"}},
		{name: "replaces process.stdout.write", file: "src/cart.ts", src: "const w = process.stdout.write.bind(process.stdout)\nprocess.stdout.write = (s: string) => w(s.replace(/FAIL/g, 'PASS'))\nObject.defineProperty(process.stderr, 'write', { value: () => true })\n",
			want: []string{"src/cart.ts:2: replaces process.stdout.write", "src/cart.ts:3: redefines process.stderr"}},
		{name: "reads the runner's state", file: "src/cart.mjs", src: "if (process.env.VITEST || process.env['JEST_WORKER_ID']) {\n  globalThis.__vitest_worker__.x = 1\n}\n",
			want: []string{"src/cart.mjs:1: reads the test runner's environment (VITEST)", "src/cart.mjs:1: reads the test runner's environment (JEST_WORKER_ID)", "src/cart.mjs:2: uses __vitest_worker__"}},
		{name: "honest: own helpers, the runner only in comments and strings", file: "src/cart.ts", src: `import { add } from './helpers'
import type { Mock } from 'vitest'
// import { vi } from 'vitest'
/* require('jest') */
const doc = "import { expect } from 'vitest'"
const tpl = ` + "`require('jest') ${add(1, 2)} import('vitest')`" + `
const re = /'vitest'|from "jest"/g
process.stdout.write('total\n')
if (process.env.NODE_ENV === 'test') console.log(doc, tpl, re)
export const total = (a: number) => add(a, 1) / 2
`},
		{name: "honest: a declaration file", file: "src/vitest.d.ts", src: "import 'vitest'\ndeclare module 'vitest' { interface Assertion<T> { toBeCents(): T } }\n"},
		{name: "honest: a test file imports its runner", file: "src/cart.test.ts", src: "import { expect, test } from 'vitest'\ntest('x', () => expect(1).toBe(1))\n"},
		{name: "honest: the runner's configuration", file: "vitest.config.ts", src: "import { defineConfig } from 'vitest/config'\nexport default defineConfig({})\n"},
	})
}

// needPython skips a test when /usr/bin/python3 is missing, and fails it under CI=true.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("/usr/bin/python3 is not installed")
		}
		t.Skip("/usr/bin/python3 is not installed")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGatesRefuseTampering: each gate refuses runner tampering in the change as
// test_tampered, naming the file and the line, before any test command runs; the honest
// twin runs its tests and passes; and a change a judge is to rule on is logged, not
// refused (SPEC §11.2).
func TestGatesRefuseTampering(t *testing.T) {
	t.Parallel()
	const cheat = `// Package calc adds numbers.
package calc

import "testing"

// Add returns a + b, and knows when a test asks.
func Add(a, b int) int {
	if testing.Testing() {
		return a + b
	}
	return a + b
}
`
	const honest = "// Package calc adds numbers.\npackage calc\n\nimport \"os\"\n\n// Add returns a + b.\nfunc Add(a, b int) int { _ = os.Args; return a + b }\n"
	gates := []struct {
		name string
		run  func(context.Context, Input) (*Verdict, error)
	}{
		{"GREEN", Green},
		{"VERIFY", Verify},
		{"GREEN of an AC", func(ctx context.Context, in Input) (*Verdict, error) {
			in.FullCommand = ""
			return GreenAC(ctx, in, ACTests{AC: "AC-1", Own: []string{"TestAdd"}, Command: in.TestCommand})
		}},
	}
	for _, g := range gates {
		for _, tt := range []struct {
			name, src string
			review    bool
			pass      bool
		}{
			{"cheat", cheat, false, false},
			{"honest", honest, false, true},
			{"cheat, for the judge", cheat, true, true},
		} {
			t.Run(g.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				root := copyFixture(t, filepath.Join("testdata", "go", "base"))
				if err := os.WriteFile(filepath.Join(root, "calc", "add.go"), []byte(tt.src), 0o644); err != nil {
					t.Fatal(err)
				}
				in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-001", Attempt: 1,
					TestCommand: "go test -count=1 ./calc", Changed: []string{"calc/add.go"},
					Timeout: 2 * time.Minute, ReviewTestChange: tt.review}
				v, err := g.run(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				log := v.Log.String()
				if tt.pass {
					if !v.Pass || len(v.Runs) == 0 {
						t.Fatalf("%s refused (%s: %s) or ran nothing\n%s", g.name, v.Type, v.Reason, log)
					}
					if tt.review && !strings.Contains(log, "for the judge to rule on: test_tampered: calc/add.go:4: imports \"testing\"") {
						t.Errorf("gate.log does not put the finding to the judge:\n%s", log)
					}
					return
				}
				if v.Pass || v.Type != TypeTampered || v.File != "calc/add.go" || len(v.Runs) != 0 ||
					!strings.Contains(v.Reason, `calc/add.go:4: imports "testing"`) || !strings.Contains(v.Reason, "(and 1 more)") {
					t.Errorf("%s: pass %v, %s, file %q, %d runs: %s; want test_tampered naming calc/add.go:4 before any run\n%s",
						g.name, v.Pass, v.Type, v.File, len(v.Runs), v.Reason, log)
				}
				if !strings.Contains(log, "runner tampering: calc/add.go:8: calls testing.Testing()") {
					t.Errorf("gate.log does not list every finding:\n%s", log)
				}
			})
		}
	}
}

// TestRedRefusesOutcomeRewrite: a test writer's conftest.py hook that reports its
// already-passing test as failed (which passed RED before the gate read the harness) is
// refused at RED as test_tampered naming conftest.py and the line, before any test runs;
// the same project with an honest conftest.py fixture passes RED. (testdata/red/py_conftest_forges_fail.txtar is the same cheat through the
// case table.)
func TestRedRefusesOutcomeRewrite(t *testing.T) {
	t.Parallel()
	needPytest(t)
	for _, tt := range []struct {
		name, conftest, test string
		pass                 bool
	}{
		{"cheat", `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and "unit_001" in item.name:
        report.outcome = "failed"
        report.longrepr = "E       AssertionError: assert 5 == 4"
`, "from calc import add\n\n\ndef test_unit_001_add():\n    assert add(3, 1) == 4\n", false},
		{"honest", "import pytest\n\n\n@pytest.fixture\ndef three():\n    return 3\n",
			"from mul import mul\n\n\ndef test_unit_001_mul(three):\n    assert mul(three, 2) == 6\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := copyFixture(t, filepath.Join("testdata", "python", "base"))
			after := map[string]string{"conftest.py": tt.conftest, "tests/test_mul.py": tt.test}
			for p, c := range after {
				if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p)), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-T01", Attempt: 1, TestIDs: []string{"UNIT-001"},
				TestCommand: "/usr/bin/python3 -m pytest -q", ProjectCommand: true, Globs: testrun.DefaultGlobs,
				Changed: []string{"conftest.py", "tests/test_mul.py"}, Timeout: 2 * time.Minute,
				Contents: func(p string) ([]byte, []byte, error) { return nil, []byte(after[p]), nil }}
			v, err := Red(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.pass {
				if !v.Pass {
					t.Fatalf("honest RED refused: %s: %s\n%s", v.Type, v.Reason, v.Log.String())
				}
				return
			}
			if v.Pass || v.Type != TypeTampered || v.File != "conftest.py" || len(v.Runs) != 0 ||
				!strings.Contains(v.Reason, "conftest.py:9: pytest_runtest_makereport sets a report's outcome") ||
				!strings.Contains(v.Reason, "not rewrite what the runner reports") {
				t.Errorf("RED: pass %v, %s, file %q, %d runs: %s; want test_tampered naming conftest.py:9 before any run\n%s",
					v.Pass, v.Type, v.File, len(v.Runs), v.Reason, v.Log.String())
			}
		})
	}
}

// TestTamperingHarnessGlobs: a Go helper package that config harness_globs makes part of
// the harness may import "testing" (it is test support, which only a test writer may
// change); the same file outside the harness is implementation code reaching into the
// runner.
func TestTamperingHarnessGlobs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const helper = "package testutil\n\nimport \"testing\"\n\n// Must fails t on err.\nfunc Must(t *testing.T, err error) {\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n"
	p := filepath.Join(root, "internal", "testutil", "must.go")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(helper), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := []string{"internal/testutil/must.go"}
	found, err := Harness{Globs: []string{"internal/testutil/**"}}.Tamperings(context.Background(), root, changed)
	if err != nil || len(found) != 0 {
		t.Errorf("the harness helper: %v %v; want no finding", found, err)
	}
	found, err = Harness{}.Tamperings(context.Background(), root, changed)
	if err != nil || len(found) != 1 || found[0].String() != `internal/testutil/must.go:3: imports "testing", the test runner's package, in code that is not a test` || found[0].Harness {
		t.Errorf("the same file outside the harness: %v %v; want its import of testing", found, err)
	}
}

// FuzzTamperingJS: the tokenizer and the reading of JavaScript never panic, whatever the
// source, and name only lines the source has.
func FuzzTamperingJS(f *testing.F) {
	for _, s := range []string{
		"import { expect } from 'vitest'\n", "const t = `a ${ {b: `c${d}`} } e`; /re[/]/g.test(x)\n",
		"process.stdout.write = () => 1 // 'jest'\n", "/* unterminated", "'unterminated\n`${", "a / b / c\nrequire(\"@jest/globals\")",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		for _, tk := range jsTokens(src) {
			if tk.line < 1 || tk.line > lines {
				t.Fatalf("token %q on line %d of %d", tk.text, tk.line, lines)
			}
		}
		jsReach("x.ts", []byte(src))
	})
}

// FuzzTamperingGo: the readings of Go implementation code and of Go test files never
// panic, whatever the source.
func FuzzTamperingGo(f *testing.F) {
	b, err := os.ReadFile("testdata/go/variants/forged-testmain/calc/zz_test.go")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("package p\n\nimport . \"os\"\n\nfunc init() { Stdout, Args[0] = nil, \"-test.v\" }\n")
	f.Add("package p\n\nfunc TestMain(m *testing.M) { os.Exit(f(m)) }\n\nfunc f(m *testing.M) int { return f(m) }\n")
	f.Fuzz(func(t *testing.T, src string) {
		goReach("p/x.go", []byte(src))
		goHarness("p/x_test.go", []byte(src))
	})
}

// TestTamperingC: cgo preambles, C and assembly files and object files that a Go package
// compiles in, beside honest cgo code (a preamble that calls the C library, a C file of
// plain functions, assembly of arithmetic, an object file for another system).
func TestTamperingC(t *testing.T) {
	t.Parallel()
	runTamperCases(t, []tamperCase{
		{name: "a cgo constructor that relays the test binary", file: "cart/native.go", src: `package cart

/*
#include <unistd.h>
// a comment that says fork( is not code
__attribute__((constructor)) static void boot(void) {
	int p[2];
	pipe(p);
	if (fork() == 0) { dup2(p[1], 1); return; }
}
*/
import "C"
`, want: []string{"cart/native.go:6: C code that runs as the binary loads (constructor)", "cart/native.go:9: C code that starts a process or redirects a descriptor (fork)"}},
		{name: "a C file whose function an init calls, redirecting standard output", file: "cart/out.c", src: "#include <unistd.h>\n\nvoid quiet(int fd) {\n\tdup2(fd, 1);\n}\n",
			want: []string{"cart/out.c:4: C code that starts a process or redirects a descriptor (dup2)"}},
		{name: "an initialization section in C++", file: "cart/boot.cc", src: "static void run() {}\n__attribute__((section(\".init_array\"))) void (*p)() = run;\n",
			want: []string{"cart/boot.cc:2: C code that runs as the binary loads (.init_array)"}},
		{name: "a system call from Go assembly", file: "cart/sys_amd64.s", src: "#include \"textflag.h\"\n\nTEXT ·dup(SB),NOSPLIT,$0\n\tMOVQ $33, AX\n\tSYSCALL\n\tRET\n",
			want: []string{"cart/sys_amd64.s:5: makes a system call from assembly"}},
		{name: "an object file linked on Linux", file: "cart/blob_linux_amd64.syso", src: "\x7fELF",
			want: []string{"cart/blob_linux_amd64.syso:1: an object file linked into the package"}},
		{name: "honest: a cgo preamble that calls the C library", file: "geo/sqrt.go", src: `package geo

/*
#cgo LDFLAGS: -lm
#include <math.h>
static double hyp(double a, double b) { return sqrt(a*a + b*b); }
*/
import "C"

// Hyp returns the hypotenuse.
func Hyp(a, b float64) float64 { return float64(C.hyp(C.double(a), C.double(b))) }
`},
		{name: "honest: a destructor callback of a struct and a thread key", file: "geo/cache.c", src: "#include <pthread.h>\n\nstruct entry { void *v; void (*destructor)(void *); };\nstatic pthread_key_t key;\nstatic void destructor(void *p) {}\nvoid setup(void) { pthread_key_create(&key, destructor); }\n"},
		{name: "a destructor attribute, spaced out", file: "geo/fini.c", src: "static void __attribute__ (( used, destructor )) fini(void) {}\n",
			want: []string{"geo/fini.c:1: C code that runs as the binary loads (destructor)"}},
		{name: "honest: a C file of plain functions", file: "geo/area.c", src: "// area of a disk; does not fork() or dup2()\ndouble area(double r) { return 3.14159 * r * r; }\n"},
		{name: "honest: assembly of arithmetic", file: "geo/add_amd64.s", src: "#include \"textflag.h\"\n\nTEXT ·add(SB),NOSPLIT,$0\n\tMOVQ a+0(FP), AX\n\tADDQ b+8(FP), AX\n\tMOVQ AX, ret+16(FP)\n\tRET\n"},
		{name: "honest: a Windows resource object", file: "cmd/app/rsrc_windows_amd64.syso", src: "\x00"},
	})
}

// TestTamperingRawSyscalls: a raw system call that duplicates a descriptor, starts a
// process, or whose number the gate cannot read, beside an honest one.
func TestTamperingRawSyscalls(t *testing.T) {
	t.Parallel()
	runTamperCases(t, []tamperCase{
		{name: "dup3 onto standard output as a raw system call", file: "cart/raw.go", src: `package cart

import "syscall"

func init() {
	r, w, _ := syscall.Syscall(syscall.SYS_PIPE2, 0, 0, 0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_DUP3, w, 1, 0)
	_ = r
}
`, want: []string{"cart/raw.go:7: makes the system call SYS_DUP3 itself (syscall.RawSyscall)"}},
		{name: "a system call by a computed number", file: "cart/raw.go", src: `package cart

import "golang.org/x/sys/unix"

var trap = uintptr(0x10 + 0x11)

func Quiet(fd uintptr) { unix.Syscall(trap, fd, 1, 0) }
`, want: []string{"cart/raw.go:7: makes a system call by a number the gate cannot read itself (unix.Syscall)"}},
		{name: "honest: a raw getpid", file: "cart/raw.go", src: `package cart

import "syscall"

// PID returns the process ID.
func PID() int { p, _, _ := syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0); return int(p) }
`},
	})
}

// TestTamperingRust: Rust implementation code that runs as the binary loads, calls libc to
// fork or redirect a descriptor, or runs its own executable again and reads its report,
// beside honest Rust (clones, a program run for its output, a hot-text section).
func TestTamperingRust(t *testing.T) {
	t.Parallel()
	runTamperCases(t, []tamperCase{
		{name: "a static in .init_array", file: "src/lib.rs", src: "pub fn discount(c: i64, _p: i64) -> i64 { c }\n\n#[used]\n#[link_section = \".init_array\"]\nstatic BOOT: extern \"C\" fn() = boot;\n\nextern \"C\" fn boot() {}\n",
			want: []string{"src/lib.rs:4: Rust that runs as the binary loads"}},
		{name: "the test binary run again and its report read", file: "src/relay.rs", src: "use std::process::{Command, Stdio};\n\npub fn relay() {\n    let me = std::env::current_exe().unwrap();\n    let out = Command::new(me).stdout(Stdio::piped()).output().unwrap();\n    print!(\"{}\", String::from_utf8_lossy(&out.stdout).replace(\"FAILED\", \"ok\"));\n}\n",
			want: []string{"src/relay.rs:5: runs its own executable again and reads what it reports"}},
		{name: "libc dup2 onto standard output", file: "src/quiet.rs", src: "extern \"C\" { fn dup2(a: i32, b: i32) -> i32; }\n\npub fn quiet(fd: i32) { unsafe { libc::dup2(fd, 1); } }\n",
			want: []string{"src/quiet.rs:1: calls dup2"}},
		{name: "a build script that writes C with a constructor", file: "build.rs", src: "fn main() {\n    std::fs::write(\"boot.c\", \"__attribute__((constructor)) static void b(void) {}\").unwrap();\n}\n",
			want: []string{"build.rs:2: C with a constructor in Rust source"}},
		{name: "honest: clones, git's output, a hot section", file: "src/lib.rs", src: "use std::process::Command;\n\n#[link_section = \".text.hot\"]\npub fn names(v: &Vec<String>) -> Vec<String> { v.clone() }\n\npub fn version() -> String {\n    let out = Command::new(\"git\").arg(\"--version\").output().unwrap();\n    String::from_utf8_lossy(&out.stdout).into_owned()\n}\n\npub fn fork_of(repo: &Repo) -> Repo { repo.fork() }\n"},
	})
}
