package testrun

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A SetupError is a test command that cannot run for a reason of the machine it runs on,
// not of the code it tests (SPEC §7.6): its program is not found, its runner is not
// installed, or the sandbox it runs in could not start. No test ran, so it says nothing
// about an agent's work: the loop stops and a person fixes the set-up. It wraps ErrNotRun.
//
// Run returns one, before anything runs, for what CheckSetup finds; a sandbox that wraps
// the command returns one when its own start fails, before the command starts.
type SetupError struct {
	// Command is the test command line as given.
	Command string
	// Program is the program that is missing or does not work ("" when the problem is not
	// one program's, as a sandbox that could not start).
	Program string
	// Reason says what is wrong, in one line.
	Reason string
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrNotRun, e.Command, e.Reason)
}

// Unwrap returns ErrNotRun: a command that cannot run did not run.
func (e *SetupError) Unwrap() error { return ErrNotRun }

// A SetupCheck looks, before a test command runs, for what would keep it from running that
// is no fault of the code it tests: a program of the command line the shell does not find,
// and for the runners Detect knows, a runner that is not installed (go and cargo that do not
// start, pytest that the Python the command names cannot import, vitest or jest that npx
// would have to download). It looks each program up once, however many commands name it.
//
// It reads the command line as Detect does and checks only what is certain: the programs
// of the simple commands before the first ||, if, while, until, case, for or ! (a command
// there may be missing by design, a fallback follows), none after a command that changes
// the shell's environment (., source, export, a PATH assignment), and no line with a
// command substitution or a here-document, which the lexer does not read.
type SetupCheck struct {
	// Root is the folder the command runs in.
	Root string
	// Env is the command's environment (nil: the orchestrator's).
	Env []string
	// Candidate says that Root is a checkout of an agent's candidate: a program that
	// would be a file in it is the candidate's, so its absence is the candidate's
	// failure, not the set-up's, and nothing in it is run to check it.
	Candidate bool

	found   map[string]string // by program name: what `command -v` printed, "" for not found
	probed  map[string]error  // by runner, program and folder: what checkRunner found
	checked map[string]error  // by planKey: what Check found
	envHash string            // of Env, for probesPassed
}

// CheckSetup checks that command can run in root with env (nil: the orchestrator's), as
// a SetupCheck with Candidate set, and returns a *SetupError or nil (or another error when
// the check itself could not run).
func CheckSetup(ctx context.Context, root, command string, env []string) error {
	c := &SetupCheck{Root: root, Env: env, Candidate: true}
	return c.Check(ctx, command)
}

// Check checks one command line. It returns a *SetupError for the first problem found, or
// nil; another error means the check itself could not run (a Root that does not exist).
func (c *SetupCheck) Check(ctx context.Context, command string) error {
	key := planKey(command)
	if err, ok := c.checked[key]; ok {
		return setupFor(err, command)
	}
	err := c.check(ctx, command)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if c.checked == nil {
		c.checked = map[string]error{}
	}
	c.checked[key] = err
	return err
}

// planKey returns what decides a command line's check: for one simple command of plain
// words (no quotes, expansions, operators, assignments or redirections) whose program is
// no wrapper, the program and the word after it, and the one after that when it is
// "-m" or a toolchain ("go test", "python3 -m pytest", "cargo +nightly test"): what
// tells its runner (runnerAt); else the whole line. A queue of ten thousand tasks whose
// commands differ only in their arguments is checked once.
func planKey(command string) string {
	if strings.ContainsAny(command, "|&;<>()$`\\\"'*?[]#~{}!=\n\r\t") {
		return command
	}
	w0, rest, _ := strings.Cut(strings.TrimLeft(command, " "), " ")
	if wrappers[path.Base(w0)] || runWrappers[path.Base(w0)] {
		return command
	}
	w1, rest, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
	key := w0 + " " + w1
	if w1 == "-m" || strings.HasPrefix(w1, "+") {
		w2, _, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
		key += " " + w2
	}
	return key
}

// check is Check without its memory.
func (c *SetupCheck) check(ctx context.Context, command string) error {
	p := planSetup(command)
	if err := c.lookup(ctx, p.names); err != nil {
		return err
	}
	for _, name := range p.names {
		if c.found[name] != "" {
			continue
		}
		if c.Candidate && c.pathInRoot() {
			continue // it might have been the candidate's, on a PATH that reaches into it
		}
		return &SetupError{Command: command, Program: name, Reason: fmt.Sprintf("program %q is not installed (not on PATH)", name)}
	}
	for _, prog := range p.paths {
		abs := c.abs(prog)
		if c.Candidate && within(c.Root, abs) {
			continue // the candidate's own file: its absence is the candidate's failure
		}
		if err := isExecutable(abs); err != nil {
			return &SetupError{Command: command, Program: prog, Reason: fmt.Sprintf("program %q %v", prog, err)}
		}
	}
	if p.probe == nil {
		return nil
	}
	return c.checkRunner(ctx, command, *p.probe)
}

// A setupPlan is what a command line's set-up check looks at.
type setupPlan struct {
	names []string // programs the shell looks up on PATH (or builtins)
	paths []string // programs named by a path
	probe *probe   // the runner to check is installed, if any
}

// A probe is a runner to check: the word that runs it (go, cargo, python3, a path to a
// Python), or for vitest and jest run through npx, the runner's name.
type probe struct {
	runner  Runner
	program string
	npx     bool
}

// shellConditionals start commands whose failure is handled by the shell (a condition, a
// loop, a negation): a program missing there may be missing by design.
var shellConditionals = map[string]bool{
	"if": true, "while": true, "until": true, "!": true, "case": true, "for": true, "select": true,
	"function": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"esac": true, "in": true,
}

// shellStateful are builtins that change how later commands are found (PATH, aliases,
// functions, the environment): after one, nothing more is checked.
var shellStateful = map[string]bool{
	".": true, "source": true, "export": true, "set": true, "eval": true, "alias": true,
	"unset": true, "hash": true, "trap": true, "typeset": true, "declare": true, "local": true,
	"readonly": true, "shopt": true, "enable": true, "builtin": true,
}

// planSetup reads a command line for the programs it runs (see SetupCheck).
func planSetup(command string) setupPlan {
	var p setupPlan
	if strings.Contains(command, "$(") || strings.Contains(command, "`") || strings.Contains(command, "<<") {
		return p // a command substitution or a here-document: the lexer does not read them
	}
	words := lex(command)
	var cmd []word
	var list []setupPlan // the and-or list being read, one plan per simple command: it
	// counts once it has ended with ; or a newline, or the line ends
	cd := false
	commit := func() {
		for _, q := range list {
			p.names = append(p.names, q.names...)
			p.paths = append(p.paths, q.paths...)
			if p.probe == nil {
				p.probe = q.probe
			}
		}
		list = nil
	}
	for i := 0; i <= len(words); i++ {
		if i < len(words) && !words[i].op {
			if !words[i].redir {
				cmd = append(cmd, words[i])
			}
			continue
		}
		op := ""
		if i < len(words) {
			op = words[i].text
		}
		if op == "(" && len(cmd) > 0 {
			break // a function definition: what it runs, and when, is not read here
		}
		q, stop := planSimple(cmd, &cd)
		cmd = nil
		if stop {
			// What this list runs may be handled by what follows: keep only the lists
			// that ended before it.
			return p
		}
		list = append(list, q)
		switch op {
		case "||":
			// What comes before runs as a try whose failure (a missing program too) the
			// command line handles: neither it nor what follows is certain to run.
			return p
		case "&":
			list = nil // run in the background: its exit decides nothing
		case ";", "\n", "":
			commit()
		}
	}
	return p
}

// planSimple reads one simple command. stop says that nothing after it can be checked.
// cd is set once a command changed the folder, after which a relative path names an
// unknown file.
func planSimple(cmd []word, cd *bool) (q setupPlan, stop bool) {
	pathSet := false
	add := func(prog string) {
		switch {
		case pathSet:
			// The command has a PATH of its own.
		case strings.Contains(prog, "/"):
			if !*cd || filepath.IsAbs(prog) {
				q.paths = append(q.paths, prog)
			}
		default:
			q.names = append(q.names, prog)
		}
	}
	for i := 0; i < len(cmd); i++ {
		t := cmd[i].text
		if isAssignment(t) {
			pathSet = pathSet || strings.HasPrefix(t, "PATH=")
			continue
		}
		switch {
		case shellConditionals[t] || shellStateful[t]:
			return q, true
		case t == "{" || t == "}":
			continue
		case !literal(t):
			return q, false // an expansion: what runs is not known here
		}
		base := path.Base(t)
		next := ""
		if i+1 < len(cmd) {
			next = cmd[i+1].text
		}
		switch {
		case t == "command" && (next == "-v" || next == "-V"):
			return q, false // a question, not a run
		case wrappers[base]:
			add(t)
			if strings.HasPrefix(next, "-") {
				return q, false // its options may take values: what it runs is not certain
			}
			if (base == "npx" || base == "bunx" || base == "pnpx") && next != "" {
				// npx finds the package in node_modules/.bin, not on PATH.
				if (next == "vitest" || next == "jest") && !pathSet {
					q.probe = &probe{runner: Vitest, program: next, npx: true}
					if next == "jest" {
						q.probe.runner = Jest
					}
				}
				return q, false
			}
			continue
		case runWrappers[base] && (next == "run" || next == "exec" || next == "dlx" || next == "x"),
			base == "yarn" && next != "":
			add(t)
			return q, false // the wrapper finds the program in its own environment
		}
		add(t)
		switch t {
		case "cd", "pushd", "popd":
			*cd = true
		}
		if s, ok := runnerAt(cmd, i); ok && !pathSet {
			switch {
			case s.runner == Go, s.runner == Cargo:
				q.probe = &probe{runner: s.runner, program: t}
			case s.runner == Pytest && strings.HasPrefix(base, "python"):
				q.probe = &probe{runner: Pytest, program: t}
			}
		}
		return q, false
	}
	return q, pathSet // assignments alone: one of PATH changes what later commands find
}

// literal reports whether a word is what it says, with no expansion the shell would make.
func literal(w string) bool {
	return w != "" && !strings.ContainsAny(w, "$`*?[\n\r\t\x00") && !strings.HasPrefix(w, "~")
}

// lookupScript prints, for each argument, what `command -v` says of it, or an empty line.
const lookupScript = `for p do if r=$(command -v "$p"); then printf '%s\n' "$r"; else echo; fi; done`

// lookup asks the shell where the programs not looked up yet are, as the test command's
// own shell would find them: in Root, with Env.
func (c *SetupCheck) lookup(ctx context.Context, names []string) error {
	if c.found == nil {
		c.found = map[string]string{}
	}
	var todo []string
	for _, n := range names {
		if _, ok := c.found[n]; ok || slices.Contains(todo, n) {
			continue
		}
		if p, ok := c.remembered(n); ok {
			c.found[n] = p
			continue
		}
		todo = append(todo, n)
	}
	if len(todo) == 0 {
		return nil
	}
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", lookupScript, "sh"}, todo...)...)
	cmd.Dir, cmd.Env = c.Root, c.env()
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("look up %s in %s: %w", strings.Join(todo, ", "), c.Root, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(todo) {
		return fmt.Errorf("look up %s: the shell printed %d lines for %d programs", strings.Join(todo, ", "), len(lines), len(todo))
	}
	for i, n := range todo {
		c.found[n] = lines[i]
		c.remember(n, lines[i])
	}
	return nil
}

// foundOnPath remembers, for the life of the process, where the shell found the programs
// whose place does not depend on the folder the command runs in, by PATH and name: a
// gate that runs the tests a hundred times starts no shell to look for go again. A
// command that exits 126 or 127 makes Run forget them (forgetLookups) and look again.
var foundOnPath sync.Map

// pathKey returns the key of name in foundOnPath, and whether its place depends on the
// PATH alone: a bare name, on a PATH of absolute folders outside Root.
func (c *SetupCheck) pathKey(name string) (string, bool) {
	if strings.Contains(name, "/") || c.pathInRoot() {
		return "", false
	}
	p, _ := lookupEnv(c.env(), "PATH")
	return p + "\x00" + name, true
}

// remembered returns where name was found before, if foundOnPath holds it.
func (c *SetupCheck) remembered(name string) (string, bool) {
	k, ok := c.pathKey(name)
	if !ok {
		return "", false
	}
	v, ok := foundOnPath.Load(k)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// remember keeps in foundOnPath where name was found, when pathKey allows it.
func (c *SetupCheck) remember(name, found string) {
	if k, ok := c.pathKey(name); ok && found != "" {
		foundOnPath.Store(k, found)
	}
}

// forgetLookups forgets every program found before: they are looked up again.
func forgetLookups() { foundOnPath.Clear() }

func (c *SetupCheck) env() []string {
	if c.Env == nil {
		return os.Environ()
	}
	return c.Env
}

// abs returns a program's path, relative ones from Root.
func (c *SetupCheck) abs(prog string) string {
	if filepath.IsAbs(prog) {
		return filepath.Clean(prog)
	}
	return filepath.Join(c.Root, prog)
}

// pathInRoot reports whether the command's PATH has a folder that may be in Root: a
// relative one, or one under Root.
func (c *SetupCheck) pathInRoot() bool {
	for _, kv := range c.env() {
		v, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(v) {
			if !filepath.IsAbs(dir) || within(c.Root, dir) {
				return true
			}
		}
	}
	return false
}

// within reports whether path is root or under it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// isExecutable says why the file at path cannot be run as a program, or nil.
func isExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("does not exist")
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("is a folder")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("is not executable")
	}
	return nil
}

// pytestProbe tells whether the Python that runs it can import pytest, without importing
// it (find_spec runs no code of the package), and without the current folder on its path:
// the question is whether pytest is installed for that interpreter, not whether the tree
// holds a folder of that name.
const pytestProbe = `import sys, importlib.util
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.exit(0 if importlib.util.find_spec("pytest") else 3)`

// probesPassed remembers the runner checks that passed, by runner, program, folder and
// environment, for the life of the process: a gate that runs the tests a hundred times
// starts Python to ask once.
var probesPassed sync.Map

// checkRunner checks that the runner of a probe is installed.
func (c *SetupCheck) checkRunner(ctx context.Context, command string, pr probe) error {
	if pr.npx {
		// npx runs the package of the nearest node_modules/.bin, else one on PATH, else
		// downloads it: a test run has no network, and an unpinned download is no test.
		for dir := c.Root; ; dir = filepath.Dir(dir) {
			if isExecutable(filepath.Join(dir, "node_modules", ".bin", pr.program)) == nil {
				return nil
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		if err := c.lookup(ctx, []string{pr.program}); err != nil {
			return err
		}
		if c.found[pr.program] != "" {
			return nil
		}
		return &SetupError{Command: command, Program: pr.program, Reason: fmt.Sprintf(
			"%s is not installed: no node_modules/.bin/%s in %s or a folder above it, and none on PATH (npx would download it)", pr.program, pr.program, c.Root)}
	}
	where := pr.program
	if !strings.Contains(where, "/") {
		where = c.found[where]
	} else {
		where = c.abs(where)
	}
	if !filepath.IsAbs(where) || c.Candidate && within(c.Root, where) {
		// A builtin or a function; or a file of the candidate, which runs in the
		// sandbox or not at all.
		return nil
	}
	dir := os.TempDir() // go and cargo: no go.mod or rust-toolchain.toml of the tree
	var args []string
	switch pr.runner {
	case Go:
		args = []string{"version"}
	case Cargo:
		args = []string{"--version"}
	case Pytest:
		// In Root, as the command runs: a pyenv shim picks its Python by the folder's
		// .python-version. Nothing of the tree runs: Python imports its site module
		// before the folder is on its path, and the probe takes the folder off again.
		args, dir = []string{"-c", pytestProbe}, c.Root
	default:
		return nil
	}
	local := string(pr.runner) + "\x00" + where + "\x00" + dir
	if err, ok := c.probed[local]; ok {
		return setupFor(err, command)
	}
	err := c.probe(ctx, pr, where, dir, args, local)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if c.probed == nil {
		c.probed = map[string]error{}
	}
	c.probed[local] = err
	return setupFor(err, command)
}

// setupFor returns a runner check's error for command: a *SetupError found for another
// command names this one.
func setupFor(err error, command string) error {
	var se *SetupError
	if errors.As(err, &se) {
		c := *se
		c.Command = command
		return &c
	}
	return err
}

// probeEnvHash hashes env for probesPassed, less the -overlay flags of GOFLAGS: an overlay
// changes only what a build reads, and no probe builds anything, while the gate gives each
// RED probe run an overlay of its own (a new file each time).
func probeEnvHash(env []string) string {
	h := sha256.New()
	for _, kv := range env {
		if flags, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			kv = "GOFLAGS=" + strings.Join(slices.DeleteFunc(strings.Fields(flags), func(f string) bool {
				return strings.HasPrefix(f, "-overlay=") || strings.HasPrefix(f, "--overlay=")
			}), " ")
		}
		h.Write([]byte(kv))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// probe runs a runner's check (program where with args, in dir) unless it passed before
// in this process with the same environment. Its *SetupError names no command: setupFor
// fills it in.
func (c *SetupCheck) probe(ctx context.Context, pr probe, where, dir string, args []string, local string) error {
	if c.envHash == "" {
		c.envHash = probeEnvHash(c.env())
	}
	key := local + "\x00" + c.envHash
	if _, ok := probesPassed.Load(key); ok {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(pctx, where, args...)
	cmd.Dir, cmd.Env = dir, c.env()
	if pr.runner == Pytest {
		// The candidate's checkout is the folder: nothing of it on Python's path, no
		// bytecode written there (the probe runs outside the sandbox).
		cmd.Env = PythonEnv(cmd.Env, pr.runner)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		probesPassed.Store(key, true)
		return nil
	case pr.runner == Pytest && errors.As(err, &ee) && ee.ExitCode() == 3:
		what := fmt.Sprintf("%q", pr.program)
		if where != pr.program {
			what += " (" + where + ")"
		}
		return &SetupError{Program: pr.program, Reason: fmt.Sprintf(
			"pytest is not installed for %s: it cannot import pytest (No module named pytest)", what)}
	}
	shown := strings.Join(append([]string{pr.program}, args...), " ")
	if pr.runner == Pytest {
		shown = pr.program + " -c 'import pytest'"
	}
	detail := lastLine(string(out))
	if detail == "" {
		detail = err.Error()
	}
	return &SetupError{Program: pr.program, Reason: fmt.Sprintf("%s runner does not start: %s failed: %s", pr.runner, shown, detail)}
}
