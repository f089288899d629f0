package testrun

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// Origin returns where a failed test's panic or exception was raised: the innermost frame of
// the project's own code (its file relative to root, slash-separated, and its line) and what
// was raised ("panic" for Go, the exception's name for pytest). ok is false when the test's
// output shows nothing raised (a failed assertion, t.Errorf, pytest's assert) or no frame of
// the project. SPEC §7.2 reads a failure raised in a test file as a broken test, not a RED:
// the test fails before the implementation has a say. Go and pytest are read; the other
// runners give false.
func Origin(r Runner, t Test, root string) (file string, line int, kind string, ok bool) {
	if t.Status != Failed {
		return "", 0, "", false
	}
	switch r {
	case Go:
		return goOrigin(t.Output, root)
	case Pytest:
		return pyOrigin(t.Output, root)
	}
	return "", 0, "", false
}

// goFrameFileRE reads the file line of a goroutine trace's frame: "\t/abs/x_test.go:12 +0x2e".
var goFrameFileRE = lazyre.New(`^\t(.+\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)

// goOrigin reads a Go panic's trace: after the frame of runtime's panic(), the first frame
// that is not the runtime's or the testing package's and whose file is under root.
func goOrigin(out, root string) (string, int, string, bool) {
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			start = i
			break
		}
	}
	if start < 0 {
		return "", 0, "", false
	}
	// The panicking goroutine's frames: a function line, then its file line.
	var funcs, files []string
	for i := start; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "goroutine ") && len(funcs) > 0 {
			break // the next goroutine
		}
		if goFrameFileRE().MatchString(lines[i+1]) && !strings.HasPrefix(lines[i], "\t") {
			funcs = append(funcs, lines[i])
			files = append(files, lines[i+1])
			i++
		}
	}
	from := 0
	for i, f := range funcs {
		if strings.HasPrefix(f, "panic(") {
			from = i + 1
		}
	}
	for i := from; i < len(funcs); i++ {
		if strings.HasPrefix(funcs[i], "runtime.") || strings.HasPrefix(funcs[i], "testing.") {
			continue
		}
		m := goFrameFileRE().FindStringSubmatch(files[i])
		if rel, ok := underRoot(m[1], root); ok {
			n, _ := strconv.Atoi(m[2])
			return rel, n, "panic", true
		}
	}
	return "", 0, "", false
}

// pyLocRE reads a location line of a pytest traceback: "tests/test_x.py:7: KeyError",
// "calc.py:5: in parse", "tests/test_x.py:7: ".
var pyLocRE = lazyre.New(`^(\S[^:]*\.py):(\d+): ?(.*)$`)

// pyOrigin reads a pytest traceback: the exception is the last location line's, and the
// frame it was raised in is the last location line under root. An AssertionError, or
// pytest's Failed (pytest.fail, pytest.raises that saw nothing), is an assertion.
func pyOrigin(out, root string) (string, int, string, bool) {
	var file, kind string
	line := 0
	for _, l := range strings.Split(out, "\n") {
		m := pyLocRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if k := strings.TrimSpace(m[3]); k != "" && !strings.HasPrefix(k, "in ") {
			kind = k
		}
		if rel, ok := underRoot(m[1], root); ok {
			file = rel
			line, _ = strconv.Atoi(m[2])
		}
	}
	if kind == "" || file == "" {
		return "", 0, "", false
	}
	if i := strings.LastIndexByte(kind, '.'); i >= 0 {
		kind = kind[i+1:] // json.decoder.JSONDecodeError
	}
	switch kind {
	case "AssertionError", "Failed":
		return "", 0, "", false
	}
	return file, line, kind, true
}

// underRoot returns p relative to root when it is in root's tree (a relative p already is).
func underRoot(p, root string) (string, bool) {
	if strings.HasPrefix(p, "<") {
		return "", false // <frozen importlib._bootstrap>
	}
	if !filepath.IsAbs(p) {
		return cleanPath(p), true
	}
	for _, r := range []string{root, evalRoot(root)} {
		if r == "" {
			continue
		}
		if rel, err := filepath.Rel(r, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

func evalRoot(root string) string {
	if root == "" {
		return ""
	}
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return ""
	}
	return r
}
