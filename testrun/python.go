package testrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// PythonEnv returns env with the settings every Python test run gets (SPEC §7.6): no user
// site ahead of the standard library (PYTHONNOUSERSITE), no plugin autoload (the reporter
// adds the project's configured plugins with -p), and no bytecode written; and for a run
// of runner pytest, no current folder on the path either (PYTHONSAFEPATH). A script run by
// name (python3 run_tests.py, python manage.py test) keeps its own folder on the path, from
// which it imports the modules beside it; a file of the root named after a module of the
// standard library is part of the harness (gate: shadows), which no implementer may add.
// Bytecode is not read from the checkout either: the gate removes what its checkout holds
// before each run (RemoveBytecode). A bytecode folder of the run's own would do the same,
// but Python would then compile the standard library and pytest from source at every run,
// about two seconds each here. Run applies it to every command, in the sandbox or not.
func PythonEnv(env []string, r Runner) []string {
	env = slices.Clone(env)
	settings := [][2]string{
		{"PYTHONNOUSERSITE", "1"},
		{"PYTHONDONTWRITEBYTECODE", "1"},
		{"PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"},
	}
	if r == Pytest {
		settings = append(settings, [2]string{"PYTHONSAFEPATH", "1"})
	}
	for _, kv := range settings {
		env = setEnv(env, kv[0], kv[1])
	}
	return env
}

// RemoveBytecode deletes the Python bytecode under root, a checkout of the gate's:
// __pycache__ folders and .pyc and .pyo files, committed or left by an earlier run.
// Bytecode is never trusted (SPEC §7.6): committed bytecode of the unchecked-hash kind
// runs whatever it holds while the source beside it, which lands, says something else.
func RemoveBytecode(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		switch {
		case d.IsDir() && (name == ".git" || name == "node_modules"):
			return filepath.SkipDir
		case d.IsDir() && name == "__pycache__":
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			return filepath.SkipDir
		case !d.IsDir() && (strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo")):
			return os.Remove(p)
		}
		return nil
	})
}

// setEnv sets key to value in env, replacing every earlier setting of it.
func setEnv(env []string, key, value string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
	return append(env, key+"="+value)
}

// lookupEnv returns the last value of key in env.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// reportFD is the file descriptor the orchestrator's pytest reporter writes to: the first
// of exec.Cmd.ExtraFiles, inherited through the shell (and bubblewrap, which passes
// inherited descriptors on).
const reportFD = 3

// reporterSource is the pytest plugin the orchestrator supplies (SPEC §7.5, §7.6): it
// writes one JSON line per test report and per failed collection to the pipe the
// orchestrator holds, so that what the run reported cannot be rewritten afterwards, as a
// report file could be. It takes the pipe off descriptor 3 at once, where nothing the
// tests start inherits it; it writes nothing in an xdist worker, whose reports the
// controller writes, nor in a process whose descriptor 3 is not the pipe (it checks the
// pipe's device and inode). The first line of a session says the reporter started, the
// last that the session ended: a line after it was written by something else.
//
// It also puts the folder pytest was started in at the end of sys.path, after the standard
// library and the installed packages: with PYTHONSAFEPATH, python -m pytest no longer puts
// it first, and a project whose tests import its modules from the root still finds them,
// but a root file cannot shadow the standard library or the runner's packages.
const reporterSource = `# The orchestrator's reporter of one test run; it reads nothing the run writes.
import json as _json
import os as _os
import sys as _sys

_write = _os.write
try:
    _st = _os.fstat(%[1]d)
    if "%%d:%%d" %% (_st.st_dev, _st.st_ino) != %[3]q:
        raise OSError("descriptor %[1]d is not the orchestrator's pipe")
    _fd = _os.dup(%[1]d)
    _os.close(%[1]d)
    _os.set_inheritable(_fd, False)
except OSError:
    _fd = -1
_worker = False
_cwd = _os.getcwd()
_sys.path[:] = [p for p in _sys.path if p not in ("", ".", _cwd)]


def _send(obj):
    if _fd < 0 or _worker:
        return
    data = (_json.dumps(obj) + "\n").encode("utf-8", "replace")
    try:
        while data:
            data = data[_write(_fd, data):]
    except OSError:
        pass


def _text(report):
    longrepr = report.longrepr
    if longrepr is None:
        return "", ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]), ""
    message = ""
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        message = str(getattr(crash, "message", ""))
    try:
        text = report.longreprtext
    except Exception:
        text = str(longrepr)
    return message[:%[2]d], text[:%[2]d]


def pytest_configure(config):
    global _worker
    _worker = hasattr(config, "workerinput")
    _send({"event": "start"})


def pytest_load_initial_conftests(early_config, parser, args):
    here = str(early_config.invocation_params.dir)
    if here not in _sys.path:
        _sys.path.append(here)


def pytest_collectreport(report):
    if report.failed:
        message, text = _text(report)
        _send({"event": "collect", "nodeid": report.nodeid, "outcome": report.outcome,
               "message": message, "text": text})


def pytest_runtest_logreport(report):
    message, text = _text(report)
    location = getattr(report, "location", None) or ("", 0, "")
    _send({"event": "test", "nodeid": report.nodeid, "when": report.when,
           "outcome": report.outcome, "xfail": hasattr(report, "wasxfail"),
           "file": str(location[0]), "message": message, "text": text})


def pytest_unconfigure(config):
    _send({"event": "end"})
`

// pytestSetup is what Run gives the pytest commands of one run: the module name of its
// reporter (random for the run, so that no configuration written beforehand can block it
// with -p no:NAME) and the project's configured plugins.
type pytestSetup struct {
	module string
	// plugins returns the -p names of the plugins the project's configuration asks for
	// (nil: none).
	plugins func(s site) []string
}

// defaultReporter is the reporter's module name when Run does not choose one (tests, and
// the recordings).
const defaultReporter = "orchestrator_report"

// newPytestSetup returns the set-up of the pytest commands of a run in root with env.
func newPytestSetup(root string, env []string) *pytestSetup {
	var b [6]byte
	_, _ = rand.Read(b[:])
	ps := &pytestSetup{module: "orchestrator_report_" + hex.EncodeToString(b[:])}
	cache := map[string][]string{}
	ps.plugins = func(s site) []string {
		names := configuredPlugins(root)
		if len(names) == 0 {
			return nil
		}
		interp := pythonOf(s, root, env)
		if interp == "" {
			return nil
		}
		key := interp + "\x00" + strings.Join(names, " ")
		if got, ok := cache[key]; ok {
			return got
		}
		got := entryPoints(interp, checkoutTop(root), env, names)
		cache[key] = got
		return got
	}
	return ps
}

// write writes the reporter into dir, a folder outside the checkout that the run only
// reads, for the pipe whose device and inode are id.
func (ps *pytestSetup) write(dir, id string) error {
	src := fmt.Sprintf(reporterSource, reportFD, maxTestOutput, id)
	if err := os.WriteFile(filepath.Join(dir, ps.module+".py"), []byte(src), 0o444); err != nil {
		return fmt.Errorf("write the pytest reporter: %w", err)
	}
	return os.Chmod(dir, 0o555)
}

// A reportStream is the pipe a run's pytest reporter writes to: the command inherits its
// write end, the orchestrator reads the other while the command runs.
type reportStream struct {
	r, w *os.File
	id   string // the pipe's device and inode, "dev:ino"
	buf  capped
	done chan struct{}
}

// maxReport caps what a run's reporter may write.
const maxReport = 64 << 20

func newReportStream() (*reportStream, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(w.Fd()), &st); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	return &reportStream{r: r, w: w, id: fmt.Sprintf("%d:%d", st.Dev, st.Ino), buf: capped{max: maxReport}, done: make(chan struct{})}, nil
}

// started closes the write end the command now holds, and starts reading.
func (s *reportStream) started() {
	s.w.Close()
	go func() {
		_, _ = io.Copy(&s.buf, s.r)
		close(s.done)
	}()
}

// wait waits until every process that held the write end is gone, or until late fires (at
// once when late is nil): a process that left the group still holds it.
func (s *reportStream) wait(late <-chan time.Time) {
	if late == nil {
		s.r.Close()
		<-s.done
		return
	}
	select {
	case <-s.done:
	case <-late:
		s.r.Close()
		<-s.done
	}
}

// bytes returns what the reporter wrote.
func (s *reportStream) bytes() []byte {
	if s.done == nil {
		return nil
	}
	return s.buf.Bytes()
}

// close closes both ends; what was read stays.
func (s *reportStream) close() {
	s.r.Close()
	s.w.Close()
}

// configuredPlugins reads the plugins the pytest configuration of root names: its
// required_plugins (distribution names, without their version) and the -p options of its
// addopts (entry point or module names; not -p no:NAME). The configuration is the first of
// pytest.ini, .pytest.ini, pyproject.toml ([tool.pytest.ini_options]), tox.ini ([pytest])
// and setup.cfg ([tool:pytest]) that configures pytest, as pytest chooses.
func configuredPlugins(root string) []string {
	var out []string
	for _, v := range pytestIniValues(root, "required_plugins") {
		for _, f := range iniWords(v) {
			name := f
			if i := strings.IndexAny(f, "<>=!~;[ "); i >= 0 {
				name = f[:i]
			}
			if name != "" {
				out = append(out, name)
			}
		}
	}
	for _, v := range pytestIniValues(root, "addopts") {
		words := iniWords(v)
		for i, w := range words {
			name := ""
			switch {
			case w == "-p" && i+1 < len(words):
				name = words[i+1]
			case strings.HasPrefix(w, "-p") && len(w) > 2 && !strings.HasPrefix(w, "--"):
				name = w[2:]
			}
			if name != "" && !strings.HasPrefix(name, "no:") {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// iniWords splits an ini or TOML value into its words: a TOML list's strings, or the
// value's whitespace-separated words.
func iniWords(v string) []string {
	return strings.Fields(strings.NewReplacer("[", " ", "]", " ", ",", " ", "\"", " ", "'", " ").Replace(v))
}

// pytestIniValues returns the values of key in the pytest configuration in dir (see
// configuredPlugins), with their continuation lines; nil when there is none.
func pytestIniValues(dir, key string) []string {
	for _, name := range []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		text := string(b)
		section := map[string]string{"pyproject.toml": "[tool.pytest.ini_options]", "setup.cfg": "[tool:pytest]"}[name]
		if section == "" {
			section = "[pytest]"
		}
		i := strings.Index(text, section)
		if i < 0 {
			continue
		}
		var out []string
		lines := strings.Split(text[i+len(section):], "\n")
		for j, l := range lines {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, "[") && !strings.HasPrefix(t, "[\"") && !strings.HasPrefix(t, "['") {
				break // the next section
			}
			k, val, ok := strings.Cut(t, "=")
			if !ok || strings.TrimSpace(k) != key {
				continue
			}
			for n := j + 1; n < len(lines) && (strings.HasPrefix(lines[n], " ") || strings.HasPrefix(lines[n], "\t") || strings.Contains(val, "[") && !strings.Contains(val, "]")); n++ {
				val += " " + lines[n]
			}
			out = append(out, val)
		}
		return out
	}
	return nil
}

// pythonOf returns the interpreter a pytest site runs: the python word of "python3 -m
// pytest", else the interpreter of the pytest script's #! line; "" when it cannot be told
// (a wrapper such as uv run chooses it), or when it is a file of the checkout, which is
// candidate code and is never run outside the sandbox.
func pythonOf(s site, root string, env []string) string {
	w := s.words[s.at].text
	interp := ""
	if s.at >= 2 && s.words[s.at-1].text == "-m" {
		interp = lookPath(s.words[s.at-2].text, root, env)
	} else if s.at == s.lead {
		script := lookPath(w, root, env)
		if script == "" {
			return ""
		}
		f, err := os.Open(script)
		if err != nil {
			return ""
		}
		var head [256]byte
		n, _ := f.Read(head[:])
		f.Close()
		line, _, _ := strings.Cut(string(head[:n]), "\n")
		fields := strings.Fields(strings.TrimPrefix(line, "#!"))
		switch {
		case !strings.HasPrefix(line, "#!") || len(fields) == 0:
			return ""
		case filepath.Base(fields[0]) == "env" && len(fields) > 1:
			interp = lookPath(fields[1], root, env)
		default:
			interp = fields[0]
		}
	}
	if interp == "" || !filepath.IsAbs(interp) {
		return ""
	}
	top := checkoutTop(root)
	if real, err := filepath.EvalSymlinks(interp); err == nil && !inside(top, real) && !inside(top, interp) {
		return interp
	}
	return ""
}

// lookPath finds a program as the shell would with env's PATH, in root for a relative
// path with a slash.
func lookPath(name, root string, env []string) string {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(root, name)
		}
		return name
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative folder of PATH would be the checkout's
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// checkoutTop returns the top of the checkout root is in: the nearest folder that holds
// .git, else root.
func checkoutTop(root string) string {
	for dir := root; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return root
		}
		dir = parent
	}
}

// inside reports whether p is dir or under it.
func inside(dir, p string) bool {
	dir, p = filepath.Clean(dir), filepath.Clean(p)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// entryPointScript lists the pytest11 entry points of the distributions installed outside
// the checkout (argv[1]) whose distribution name or entry point name is one of argv[2:].
// It runs isolated (-I: no current folder, no user site, no PYTHON* variables), with the
// PYTHONPATH folders outside the checkout added at the end, so that nothing of the checkout
// runs or is looked at.
const entryPointScript = `import json, os, re, sys
import importlib.metadata as md
top = os.path.realpath(sys.argv[1])
def outside(p):
    p = os.path.realpath(p)
    return p != top and not p.startswith(top + os.sep)
for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    if p and os.path.isabs(p) and outside(p):
        sys.path.append(p)
sys.path[:] = [p for p in sys.path if p and outside(p)]
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
want = set(norm(n) for n in sys.argv[2:])
out = set()
for d in md.distributions():
    try:
        if not outside(str(d.locate_file(""))):
            continue
        name = norm(d.metadata["Name"] or "")
        for ep in d.entry_points:
            if ep.group == "pytest11" and (name in want or norm(ep.name) in want):
                out.add(ep.name)
    except Exception:
        pass
print(json.dumps(sorted(out)))
`

// entryPoints returns the -p names (pytest11 entry point names) of the configured plugins
// names, as the interpreter interp sees them installed outside top. A name that is no
// installed distribution's is left out: pytest then says it is missing.
func entryPoints(interp, top string, env []string, names []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, interp, append([]string{"-I", "-c", entryPointScript, top}, names...)...)
	cmd.Dir = os.TempDir()
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil
	}
	var eps []string
	if json.Unmarshal(bytes.TrimSpace(out.Bytes()), &eps) != nil {
		return nil
	}
	return eps
}
