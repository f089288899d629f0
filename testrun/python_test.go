package testrun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadStream: the lines of the orchestrator's pytest reporter give each test its
// outcome; a test reported twice, a report after its session ended, a line the reporter did
// not write, or more sessions than the command runs, make the report forged.
func TestReadStream(t *testing.T) {
	const (
		start = `{"event": "start"}` + "\n"
		end   = `{"event": "end"}` + "\n"
	)
	line := func(id, when, outcome string) string {
		return `{"event": "test", "nodeid": "tests/test_a.py::` + id + `", "when": "` + when + `", "outcome": "` + outcome + `", "file": "tests/test_a.py", "message": "m", "text": ""}` + "\n"
	}
	ok := func(id string) string {
		return line(id, "setup", "passed") + line(id, "call", "passed") + line(id, "teardown", "passed")
	}
	tests := []struct {
		name     string
		stream   string
		sessions int
		passed   []string
		failed   []string
		forged   string // part of What; "" for none
	}{
		{name: "honest", stream: start + ok("test_x") + line("test_y", "setup", "passed") + line("test_y", "call", "failed") + line("test_y", "teardown", "passed") + end,
			sessions: 1, passed: []string{"tests/test_a.py::test_x"}, failed: []string{"tests/test_a.py::test_y"}},
		{name: "a teardown that fails after a passing call", stream: start + line("test_x", "setup", "passed") + line("test_x", "call", "passed") + line("test_x", "teardown", "failed") + end,
			sessions: 1, failed: []string{"tests/test_a.py::test_x"}},
		{name: "a rerun", stream: start + line("test_x", "setup", "passed") + line("test_x", "call", "rerun") + ok("test_x") + end,
			sessions: 1, passed: []string{"tests/test_a.py::test_x"}},
		{name: "two sessions of two commands", stream: start + ok("test_x") + end + start + line("test_x", "setup", "passed") + line("test_x", "call", "failed") + end,
			sessions: 2, failed: []string{"tests/test_a.py::test_x"}},
		{name: "a test reported twice with two outcomes", stream: start + line("test_x", "setup", "passed") + line("test_x", "call", "failed") + line("test_x", "call", "passed") + end,
			sessions: 1, forged: "reported twice, failed and passed"},
		{name: "a passing report written at exit", stream: start + line("test_x", "setup", "passed") + line("test_x", "call", "failed") + end + line("test_x", "call", "passed"),
			sessions: 1, forged: "came after the run ended"},
		{name: "a whole session forged at exit", stream: start + line("test_x", "call", "failed") + end + start + line("test_x", "call", "passed") + end,
			sessions: 1, forged: "more pytest sessions than the command runs"},
		{name: "a line of something else", stream: start + "PASSED everything\n" + ok("test_x") + end,
			sessions: 1, forged: "did not write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPytestParser("/r", tt.sessions)
			res := &Result{Runner: Pytest}
			p.finish(res, [][]byte{[]byte(tt.stream)})
			if tt.forged != "" {
				if res.Forged == nil || !strings.Contains(res.Forged.What, tt.forged) || !res.Forged.Stream || res.Forged.Where == "" {
					t.Errorf("Forged = %+v, want one saying %q", res.Forged, tt.forged)
				}
				return
			}
			if res.Forged != nil {
				t.Fatalf("honest stream refused: %+v", res.Forged)
			}
			if !slices.Equal(res.Passed(), tt.passed) || !slices.Equal(res.Failed(), tt.failed) {
				t.Errorf("passed %q, failed %q; want %q, %q", res.Passed(), res.Failed(), tt.passed, tt.failed)
			}
		})
	}
}

// TestConfiguredPlugins: with plugin autoload off, the plugins a project's pytest
// configuration requires are named with -p by their pytest11 entry point, as the command's
// interpreter sees them installed outside the checkout; a distribution of the same name
// inside the checkout does not count, and a plugin the configuration does not name is not
// loaded.
func TestConfiguredPlugins(t *testing.T) {
	needTool(t, "pytest", havePytest())
	// An installed plugin outside the checkout, on PYTHONPATH: pytest-stamp, entry point
	// "stamp", which marks the run; and one nobody configured, which would fail every test.
	site := t.TempDir()
	writeFile(t, filepath.Join(site, "pytest_stamp-1.0.dist-info", "METADATA"), []byte("Metadata-Version: 2.1\nName: pytest-stamp\nVersion: 1.0\n"))
	writeFile(t, filepath.Join(site, "pytest_stamp-1.0.dist-info", "entry_points.txt"), []byte("[pytest11]\nstamp = pytest_stamp\n"))
	writeFile(t, filepath.Join(site, "pytest_stamp.py"), []byte("def pytest_report_header(config):\n    return 'STAMP LOADED'\n"))
	writeFile(t, filepath.Join(site, "pytest_breaker-1.0.dist-info", "METADATA"), []byte("Metadata-Version: 2.1\nName: pytest-breaker\nVersion: 1.0\n"))
	writeFile(t, filepath.Join(site, "pytest_breaker-1.0.dist-info", "entry_points.txt"), []byte("[pytest11]\nbreaker = pytest_breaker\n"))
	writeFile(t, filepath.Join(site, "pytest_breaker.py"), []byte("def pytest_runtest_call(item):\n    raise AssertionError('BREAKER LOADED')\n"))

	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	writeFile(t, filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname = \"calc\"\n\n[tool.pytest.ini_options]\nrequired_plugins = [\"pytest-stamp>=1.0\"]\naddopts = \"-p no:cacheprovider\"\n"))
	writeFile(t, filepath.Join(dir, "calc.py"), []byte("def add(a, b):\n    return a + b\n"))
	writeFile(t, filepath.Join(dir, "tests", "test_calc.py"), []byte("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"))
	// A distribution in the checkout that claims the same name: not counted.
	writeFile(t, filepath.Join(dir, "forge-1.0.dist-info", "METADATA"), []byte("Metadata-Version: 2.1\nName: pytest-stamp\nVersion: 9.0\n"))
	writeFile(t, filepath.Join(dir, "forge-1.0.dist-info", "entry_points.txt"), []byte("[pytest11]\nforged = forge\n"))

	if got := configuredPlugins(dir); !slices.Equal(got, []string{"pytest-stamp"}) {
		t.Errorf("configuredPlugins = %q, want [pytest-stamp]", got)
	}
	env := append(os.Environ(), "PYTHONPATH="+site+string(filepath.ListSeparator)+dir)
	res, err := Run(context.Background(), dir, "/usr/bin/python3 -m pytest -q", 5*time.Minute, WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Ran, " -p stamp ") || strings.Contains(res.Ran, "forged") {
		t.Errorf("ran %q; want -p stamp and not the checkout's entry point", res.Ran)
	}
	if res.Class != ClassPass || !slices.Equal(res.Passed(), []string{"tests/test_calc.py::test_add"}) {
		t.Errorf("class %s, passed %v; want the one test passing (the breaker not loaded)\n%s", res.Class, res.Passed(), res.Output)
	}
	if strings.Contains(res.Output, "BREAKER LOADED") {
		t.Errorf("a plugin nobody configured was loaded:\n%s", res.Output)
	}
	// Without the required plugin installed, pytest says it is missing.
	res, err = Run(context.Background(), dir, "/usr/bin/python3 -m pytest -q", 5*time.Minute, WithEnv(os.Environ()))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(res.Output, "pytest-stamp") {
		t.Errorf("exit %d without the plugin; want pytest to say pytest-stamp is missing\n%s", res.ExitCode, res.Output)
	}
}

// TestPythonScriptImportsItsFolder: a test command that runs a script by name imports the
// modules beside it (a runner script and its helper, Django's manage.py), which Python
// finds only when the script's folder is on its path; pytest keeps the safe path.
func TestPythonScriptImportsItsFolder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "run_tests.py"), []byte("import sys\nimport testlib\n\nsys.exit(testlib.main())\n"))
	writeFile(t, filepath.Join(dir, "testlib.py"), []byte("import os\n\n\ndef main():\n    print('safe path', os.environ.get('PYTHONSAFEPATH'))\n    return 0\n"))
	res, err := Run(context.Background(), dir, "/usr/bin/python3 run_tests.py", time.Minute, WithEnv(os.Environ()))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Output, "safe path None") {
		t.Errorf("exit %d; want the script to import its helper and exit 0\n%s", res.ExitCode, res.Output)
	}
}
