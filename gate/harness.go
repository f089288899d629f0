package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/testrun"
)

// A Harness says which files decide how tests run and what they report (SPEC §7.6): the
// test files; conftest.py at any depth; pytest.ini and .pytest.ini; the pytest sections of pyproject.toml
// ([tool.pytest…]), setup.cfg ([tool:pytest]) and tox.ini ([pytest]); the jest, vitest
// and vite configurations and Babel's; package.json's test scripts (test, pretest,
// posttest, test:…) and its jest and babel keys; Go files that declare TestMain; go.work; go.mod's replace directives
// that point at a folder; .cargo/config.toml; the Makefile when a test command runs make;
// a file of the project that a test command names (./test.sh, bash scripts/ci.sh: the
// script that decides what runs and how its exit reads);
// files at the root that shadow a standard-library module or a runner's package
// (pytest/, decimal.py: shadows); committed bytecode and package metadata (__pycache__/,
// *.pyc, *.dist-info/, *.egg-info/, *.pth: pyMetadata); the packages imported only by
// tests (testSupport, from the gate's checkout); and what config harness_globs adds. Only
// a TEST task may change it.
type Harness struct {
	// TestGlobs name the test files (config test_globs; nil: testrun.DefaultGlobs).
	TestGlobs []string
	// Globs are config harness_globs: more files of the harness.
	Globs []string
	// Commands are the test commands the gate runs: a Makefile is part of the harness when
	// one of them runs make.
	Commands []string

	// support holds the files of the packages imported only by tests (testSupport), as the
	// gate found them in its checkout, before and after the change.
	support map[string]bool
	// scripts holds the shell scripts that the scripts a test command names run in turn
	// (innerScripts), as the gate found them in its checkout.
	scripts map[string]bool
}

// Contents reads a changed file as it is at the candidate's base (before) and in the
// candidate (after); nil stands for a file that does not exist there. The loop reads both
// from git.
type Contents func(path string) (before, after []byte, err error)

// A HarnessChange is a change to a file of the harness.
type HarnessChange struct {
	Path string
	// What was done to it: added, changed or deleted (a rename is a deletion and an
	// addition).
	What string
	// Test: the file is a test file.
	Test bool
	// Other: the file also changed outside its harness part (package.json beyond its
	// test scripts, pyproject.toml beyond its pytest sections): not a test writer's to
	// change.
	Other bool
	// Data: the file is test data that was there before (isTestData): a golden file, a
	// case of a data-driven test.
	Data bool
}

// dataChanges returns the changes to test data that existed before (isTestData): what an
// existing test expects, which only a TEST task may change (SPEC §7.3). New data files
// are not among them: no test that ran before reads them.
func dataChanges(paths []string, read Contents) ([]HarnessChange, error) {
	var out []HarnessChange
	for _, p := range paths {
		if !isTestData(p) {
			continue
		}
		before, after, err := read(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if before == nil || bytes.Equal(before, after) && after != nil {
			continue
		}
		c := HarnessChange{Path: p, What: "changed", Data: true}
		if after == nil {
			c.What = "deleted"
		}
		out = append(out, c)
	}
	return out, nil
}

func (c HarnessChange) String() string {
	return fmt.Sprintf("%s (%s)", c.Path, c.What)
}

// A part says how much of a file belongs to the harness, by its path alone.
type part int

const (
	partNone    part = iota // not part of the harness
	partWhole               // the whole file
	partSection             // a section of it (see harnessPart)
	partGo                  // a Go file: the whole file, if it declares TestMain
)

// kind says how much of the file at p (slash-separated, relative to the project) belongs to
// the harness.
func (h Harness) kind(p string) part {
	p = strings.TrimPrefix(path.Clean(p), "./")
	globs := h.TestGlobs
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	if testrun.IsTestFile(p, globs) || len(h.Globs) > 0 && testrun.IsTestFile(p, h.Globs) {
		return partWhole
	}
	base := path.Base(p)
	if h.support[p] || shadows(p) || pyMetadata(p) || h.named(p) || h.scripts[p] {
		return partWhole
	}
	switch {
	case base == "conftest.py", base == "pytest.ini", base == ".pytest.ini", base == "go.work":
		return partWhole
	case p == "go.mod":
		return partSection
	case configRE().MatchString(base):
		return partWhole
	case base == "config.toml" || base == "config":
		if path.Base(path.Dir(p)) == ".cargo" {
			return partWhole
		}
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile":
		if h.runsMake() {
			return partWhole
		}
	case base == "pyproject.toml", base == "setup.cfg", base == "tox.ini", base == "package.json":
		return partSection
	case strings.HasSuffix(base, ".go"):
		return partGo
	}
	return partNone
}

// runnerPackages are the packages of the test runners and what Python loads by itself: a
// file at the project's root named after one replaces it for the tests.
var runnerPackages = []string{"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup",
	"tomli", "attr", "attrs", "xdist", "execnet", "sitecustomize", "usercustomize", "coverage", "hypothesis"}

// pyExts are the endings of the files Python imports a module from.
var pyExts = []string{".py", ".pyc", ".pyo", ".pyd", ".so", ".pyw"}

// shadows reports whether p, relative to the project, is a file at its root that shadows a
// module of Python's standard library (stdlibModules) or a runner's own package
// (runnerPackages): NAME.py (or .so, .pyc, …), or a Python file of a root folder NAME/.
// Python and pytest put the root on the path ahead of the standard library in many
// set-ups (python -m pytest, a rootdir conftest.py, tests/__init__.py).
func shadows(p string) bool {
	name, rest, nested := strings.Cut(p, "/")
	file := p
	if nested {
		file = rest
	} else if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	pyFile := false
	for _, ext := range pyExts {
		if strings.HasSuffix(file, ext) {
			pyFile = true
		}
	}
	return pyFile && (slices.Contains(stdlibModules, name) || slices.Contains(runnerPackages, name))
}

// pyMetadata reports whether p is compiled bytecode or package metadata, which decide what
// Python runs without being its source: anything in a __pycache__ folder, a .pyc or .pyo,
// a .pth file, anything in a *.dist-info or *.egg-info folder, an .egg-link.
func pyMetadata(p string) bool {
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "__pycache__", strings.HasSuffix(part, ".dist-info"), strings.HasSuffix(part, ".egg-info"):
			return true
		}
	}
	for _, ext := range []string{".pyc", ".pyo", ".pth", ".egg-link"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// configRE matches the file names of jest, vitest and vite configurations, and Babel's,
// which transforms the test files before jest runs them (a plugin there may drop every
// assertion of a test file whose bytes stay as at RED).
var configRE = lazyre.New(`^(?:(?:jest|vitest|vite)\.(?:config|workspace)(?:\.[\w-]+)*\.(?:js|cjs|mjs|ts|cts|mts|json)|babel\.config\.(?:js|cjs|mjs|ts|cts|mts|json)|\.babelrc(?:\.(?:js|cjs|mjs|json))?)$`)

// runsMake reports whether a test command runs make.
func (h Harness) runsMake() bool {
	for _, c := range h.Commands {
		if makeRE().MatchString(c) {
			return true
		}
	}
	return false
}

var makeRE = lazyre.New(`(?:^|[\s;&|(/])(?:g?make)(?:\s|$)`)

// named reports whether a test command names the file at p as one of its words
// (commandFiles).
func (h Harness) named(p string) bool {
	for _, c := range h.Commands {
		if slices.Contains(commandFiles(c), p) {
			return true
		}
	}
	return false
}

// commandFiles returns the scripts of the project a command runs: the program of each of
// its simple commands when it is a relative path (./test.sh, scripts/ci.sh), and the
// script an interpreter is given (sh scripts/ci.sh, python3 run_tests.py, node run.js),
// cleaned. The files a command only reads or builds (grep x a.txt, go vet calc.go) are
// not among them: they are the implementation as often as not. Absolute paths are the
// machine's; a module run with -m is no file.
func commandFiles(c string) []string {
	var out []string
	for _, seg := range commandSegmentsRE().Split(c, -1) {
		words := strings.Fields(seg)
		for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") || slices.Contains(wrappers, words[0])) {
			words = words[1:] // VAR=value, exec, env, time, nice
		}
		if len(words) == 0 {
			continue
		}
		prog := strings.Trim(words[0], `"'`)
		if interpreterRE().MatchString(path.Base(prog)) {
			prog = ""
			for _, w := range words[1:] {
				w = strings.Trim(w, `"'`)
				if w == "-m" || w == "-c" || w == "-e" {
					break // a module, or a program on the command line
				}
				if !strings.HasPrefix(w, "-") {
					prog = w
					break
				}
			}
		}
		if prog == "" || strings.HasPrefix(prog, "/") || strings.HasPrefix(prog, "$") || !strings.Contains(prog, "/") && path.Ext(prog) == "" {
			continue // a program on the PATH, or none
		}
		if f := strings.TrimPrefix(path.Clean(prog), "./"); f != "." && !strings.HasPrefix(f, "../") {
			out = append(out, f)
		}
	}
	return out
}

// wrappers are the programs that run the command after them.
var wrappers = []string{"exec", "env", "time", "nice", "command", "nohup"}

// commandSegmentsRE splits a command into its simple commands at the shell's operators.
var commandSegmentsRE = lazyre.New(`[;&|()\n` + "`" + `]+|\$\(`)

// interpreterRE matches the programs that run a script file given as their argument.
var interpreterRE = lazyre.New(`^(?:sh|bash|dash|zsh|ksh|python[0-9.]*|node|perl|ruby|php|Rscript|deno|bun|tsx|ts-node)$`)

// IsHarness reports whether the file at p, with the given content, is part of the harness
// (for a file of which only a section belongs to the harness, whether it has that section).
func (h Harness) IsHarness(p string, content []byte) bool {
	switch h.kind(p) {
	case partWhole:
		return true
	case partSection:
		hp, _ := harnessPart(path.Base(p), content)
		return len(hp) > 0
	case partGo:
		return testMainRE().Match(content)
	}
	return false
}

// testMainRE finds a TestMain declaration in Go source.
var testMainRE = lazyre.New(`(?m)^func\s+TestMain\s*\(`)

// Changes returns the changes to the harness among the changed paths, in their order, reading
// each file before and after the change with read.
func (h Harness) Changes(paths []string, read Contents) ([]HarnessChange, error) {
	var out []HarnessChange
	globs := h.TestGlobs
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	for _, p := range paths {
		k := h.kind(p)
		if k == partNone {
			continue
		}
		before, after, err := read(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		if bytes.Equal(before, after) && (before == nil) == (after == nil) {
			continue // a mode change only
		}
		c := HarnessChange{Path: p, What: "changed", Test: testrun.IsTestFile(p, globs)}
		switch {
		case before == nil:
			c.What = "added"
		case after == nil:
			c.What = "deleted"
		}
		switch k {
		case partGo:
			if !testMainRE().Match(before) && !testMainRE().Match(after) {
				continue
			}
		case partSection:
			name := path.Base(p)
			hb, rb := harnessPart(name, before)
			ha, ra := harnessPart(name, after)
			if bytes.Equal(hb, ha) {
				continue
			}
			c.Other = !bytes.Equal(rb, ra)
			if c.What != "changed" && len(hb)+len(ha) > 0 {
				// The file came or went with its harness section: what it says besides
				// is another change.
				c.Other = len(rb)+len(ra) > 0
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// harnessPart splits a file of which a section belongs to the harness into that section
// and the rest, each in a canonical form (so that reformatting the rest does not move the
// harness part, and the other way round). A file that cannot be read as its format says is
// all harness: the gate cannot tell what it changes.
func harnessPart(name string, content []byte) (harness, rest []byte) {
	if content == nil {
		return nil, nil
	}
	switch name {
	case "package.json":
		return packageJSONPart(content)
	case "pyproject.toml":
		return iniPart(content, func(section, key string) bool {
			return section == "tool.pytest" || strings.HasPrefix(section, "tool.pytest.") ||
				section == "tool" && (key == "pytest" || strings.HasPrefix(key, "pytest.")) ||
				section == "" && strings.HasPrefix(key, "tool.pytest")
		})
	case "setup.cfg":
		return iniPart(content, func(section, _ string) bool { return section == "tool:pytest" })
	case "tox.ini":
		return iniPart(content, func(section, _ string) bool { return section == "pytest" })
	case "go.mod":
		return goModPart(content)
	}
	return content, nil
}

// goModPart splits go.mod into its replace directives that point at a folder (./x, ../x,
// /x: into the tree, where an agent may put a forged copy of a module) and the rest.
func goModPart(content []byte) (harness, rest []byte) {
	var h, r bytes.Buffer
	inBlock := false
	for _, line := range strings.Split(string(content), "\n") {
		t := strings.TrimSpace(line)
		if i := strings.Index(t, "//"); i >= 0 {
			t = strings.TrimSpace(t[:i])
		}
		if t == "" {
			continue
		}
		replace := false
		switch {
		case inBlock && t == ")":
			inBlock = false
			continue
		case inBlock:
			replace = true
		case t == "replace (" || t == "replace(":
			inBlock = true
			continue
		case strings.HasPrefix(t, "replace ") || strings.HasPrefix(t, "replace\t"):
			replace = true
			t = strings.TrimSpace(t[len("replace"):])
		}
		if replace {
			if _, target, ok := strings.Cut(t, "=>"); ok {
				target = strings.TrimSpace(target)
				if strings.HasPrefix(target, "./") || strings.HasPrefix(target, "../") || strings.HasPrefix(target, "/") || target == "." || target == ".." {
					h.WriteString("replace " + strings.Join(strings.Fields(t), " ") + "\n")
					continue
				}
			}
		}
		r.WriteString(strings.Join(strings.Fields(t), " ") + "\n")
	}
	return h.Bytes(), r.Bytes()
}

// iniSectionRE reads a section header of an INI or TOML file: [name] or [[name]].
var iniSectionRE = lazyre.New(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(?:#.*)?$`)

// iniKeyRE reads the key of a key = value line.
var iniKeyRE = lazyre.New(`^\s*("[^"]*"|[^=:\s]+(?:\s*\.\s*[^=:\s]+)*)\s*[=:]`)

// iniPart splits an INI or TOML file into the lines that belong to the harness (in a
// section, or with a key, that in says) and the rest. A value continued on the next lines
// (indented, or a TOML array or string over several lines) goes with its key.
func iniPart(content []byte, in func(section, key string) bool) (harness, rest []byte) {
	var h, r bytes.Buffer
	section, inKey := "", false
	for _, line := range strings.Split(string(content), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
			continue
		}
		if m := iniSectionRE().FindStringSubmatch(line); m != nil && !startsIndented(line) {
			section = strings.Trim(strings.ReplaceAll(m[1], " ", ""), `"`)
			inKey = in(section, "")
			if inKey {
				h.WriteString(trimmed + "\n")
			} else {
				r.WriteString(trimmed + "\n")
			}
			continue
		}
		if m := iniKeyRE().FindStringSubmatch(line); m != nil && !startsIndented(line) {
			key := strings.Trim(strings.ReplaceAll(m[1], " ", ""), `"`)
			inKey = in(section, key)
		}
		if inKey {
			h.WriteString(trimmed + "\n")
		} else {
			r.WriteString(trimmed + "\n")
		}
	}
	return h.Bytes(), r.Bytes()
}

func startsIndented(line string) bool {
	return line != "" && (line[0] == ' ' || line[0] == '\t')
}

// packageJSONPart splits package.json into its test scripts and jest key, and the rest, each
// as canonical JSON.
func packageJSONPart(content []byte) (harness, rest []byte) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(content, &doc); err != nil {
		return content, nil
	}
	h := map[string]any{}
	for _, key := range []string{"jest", "babel"} {
		if j, ok := doc[key]; ok {
			h[key] = canonical(j)
			delete(doc, key)
		}
	}
	if s, ok := doc["scripts"]; ok {
		var scripts map[string]json.RawMessage
		if err := json.Unmarshal(s, &scripts); err != nil {
			return content, nil
		}
		for name, v := range scripts {
			if testScriptRE().MatchString(name) {
				h["scripts."+name] = canonical(v)
				delete(scripts, name)
			}
		}
		doc["scripts"], _ = json.Marshal(scripts)
	}
	r := map[string]any{}
	for k, v := range doc {
		r[k] = canonical(v)
	}
	rb, _ := json.Marshal(r)
	if len(h) == 0 {
		return nil, rb
	}
	hb, _ := json.Marshal(h)
	return hb, rb
}

// testScriptRE matches the names of package.json scripts that run tests: test and what npm
// runs around it, and test:… variants.
var testScriptRE = lazyre.New(`^(?:pre|post)?test(?:[:\-_].*)?$`)

// canonical decodes JSON into plain values, which json.Marshal writes with sorted keys.
func canonical(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
}

// harness returns the gate's Harness: in.Harness, with the test globs of the gate and the
// commands it runs.
func (in Input) harness() Harness {
	h := in.Harness
	if h.TestGlobs == nil {
		h.TestGlobs = in.Globs
	}
	h.Commands = append(slices.Clone(h.Commands), in.TestCommand, in.RegressionCommand)
	for _, m := range in.Deps {
		h.Commands = append(h.Commands, m.Command)
	}
	if in.Root != "" && in.Contents != nil {
		h.support = testSupport(in.Root, in.Changed, in.Contents, h.TestGlobs)
		h.scripts = h.innerScripts(in.Root)
	}
	return h
}

// innerScripts returns the shell scripts of the project at root that the files the test
// commands name (and the Makefile's recipes, when one runs make) run in turn, to a depth
// of three: test.sh's `./scripts/run-unit.sh`. What else a script runs (`go run
// ./tools/runner`, the modules a Python runner imports) is the person's to name, in
// config harness_globs. A
// shell script is a file ending in .sh or .bash, or starting with #!; a word of a script
// names one as a word of a command does (named), outside comments.
func (h Harness) innerScripts(root string) map[string]bool {
	out := map[string]bool{}
	var todo []string
	for _, c := range h.Commands {
		todo = append(todo, commandFiles(c)...)
	}
	if h.runsMake() {
		todo = append(todo, "Makefile", "makefile", "GNUmakefile") // its recipes run scripts too
	}
	for depth := 0; depth < 3 && len(todo) > 0; depth++ {
		var next []string
		for _, f := range todo {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil || len(b) > 1<<20 || !shellScript(f, b) && !isMakefile(f) {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if code, _, _ := strings.Cut(line, "#"); strings.TrimSpace(code) != "" || strings.HasPrefix(line, "#!") {
					for _, g := range commandFiles(code) {
						if !out[g] && g != f {
							if inner, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(g))); err == nil && shellScript(g, inner) {
								out[g] = true
								next = append(next, g)
							}
						}
					}
				}
			}
		}
		todo = next
	}
	return out
}

// isMakefile reports whether f is make's file at the project's root.
func isMakefile(f string) bool { return f == "Makefile" || f == "makefile" || f == "GNUmakefile" }

// shellScript reports whether the file f, with content b, is a shell script.
func shellScript(f string, b []byte) bool {
	return strings.HasSuffix(f, ".sh") || strings.HasSuffix(f, ".bash") || bytes.HasPrefix(b, []byte("#!"))
}

// checkHarness refuses a change to the harness, in the gate of a task that may not change
// it (GREEN, VERIFY: test_tampered), and returns nil when there is none or when the gate cannot read
// the changes (no Contents).
func (v *Verdict) checkHarness(in Input, typ string) (*Verdict, error) {
	if in.Contents == nil {
		return nil, nil
	}
	changes, err := in.harness().Changes(in.Changed, in.Contents)
	if err != nil {
		return nil, err
	}
	data, err := dataChanges(in.Changed, in.Contents)
	if err != nil {
		return nil, err
	}
	for _, d := range data {
		if !slices.ContainsFunc(changes, func(c HarnessChange) bool { return c.Path == d.Path }) {
			changes = append(changes, d)
		}
	}
	if len(changes) == 0 {
		fmt.Fprintf(&v.Log, "harness: unchanged\n")
		return nil, nil
	}
	c := changes[0]
	v.File = c.Path
	what := "a file of the test harness"
	switch {
	case c.Test:
		what = "a test file"
	case c.Data:
		what = "a file tests read (test data)"
	}
	var all []string
	for _, c := range changes {
		all = append(all, c.String())
	}
	return v.fail(typ, "%s: %s, %s, was %s; only a TEST task may change tests, their data and the harness (changed: %s)",
		typ, c.Path, what, c.What, strings.Join(all, ", ")), nil
}

// redHarness returns the changed files a test writer may change besides its test files:
// those that are part of the harness and changed only there. The others (outside) are out
// of its scope.
func redHarness(in Input, others []string) (allowed, outside []string, err error) {
	if in.Contents == nil {
		return nil, others, nil
	}
	changes, err := in.harness().Changes(others, in.Contents)
	if err != nil {
		return nil, nil, err
	}
	ok := map[string]bool{}
	for _, c := range changes {
		if !c.Other {
			ok[c.Path] = true
		}
	}
	for _, p := range others {
		if ok[p] {
			allowed = append(allowed, p)
		} else {
			outside = append(outside, p)
		}
	}
	return allowed, outside, nil
}
