package testrun

import (
	"bytes"
	"context"
	"errors"
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
	"unicode/utf8"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/sandbox"
)

// ErrNoCommand is returned by Run for an empty command line.
var ErrNoCommand = errors.New("no test command")

// Run runs a test command line with sh -c in root, in its own process group, and reads what
// its runner reports. It adds the flags that make the runner report structured output (see
// Detect for the runners), reads that output, and classifies the run (Classify, with
// DefaultGlobs). A command that takes longer than timeout (0: no limit) has its whole
// process group killed and gives a Result with TimedOut set and ClassError. Failing tests
// and build errors are results, not errors: the error is for a command that could not be
// started at all, or a context that ended (then the process group is killed too). Without
// WithEnv, the command runs with the orchestrator's environment.
//
// Before it runs anything, it checks the set-up (CheckSetup, root being a candidate's
// checkout): a program of the command line that the shell does not find, or a runner that
// is not installed, is a *SetupError, and nothing runs. A command that then still exits
// 126 or 127 is checked again, without what earlier checks found: a program gone since
// is a *SetupError. Else it is a result like any other (ClassError): the program the line
// names was found, so what was not found or could not run is something that program ran,
// which may be the candidate's code (a test binary, a script of the tree) and may not be
// told apart from the machine's fault; so it stays the candidate's failure.
func Run(ctx context.Context, root, command string, timeout time.Duration, opts ...Option) (*Result, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if strings.TrimSpace(command) == "" {
		return nil, ErrNoCommand
	}
	if err := CheckSetup(ctx, root, command, o.env); err != nil {
		return nil, err
	}
	r := Detect(command)
	var f *feeder
	start := time.Now()
	inv, code, timedOut, reports, forged, err := run(ctx, root, command, r, timeout, o, func(inv invocation) io.Writer {
		f = newFeeder(inv, root)
		return f
	})
	if err != nil {
		return nil, err
	}
	if code == 126 || code == 127 {
		// The check may have found a program where an earlier run's check did
		// (foundOnPath): if it is gone since, the machine changed, not the code.
		forgetLookups()
		if err := CheckSetup(ctx, root, command, o.env); err != nil {
			return nil, err
		}
	}
	res := &Result{Runner: r, Command: command, Ran: inv.command, ExitCode: code, TimedOut: timedOut}
	f.finish(res, reports)
	if forged != nil && res.Forged == nil {
		res.Forged = forged
	}
	res.Duration = time.Since(start)
	if timedOut {
		res.Output += fmt.Sprintf("\n(timed out after %s)\n", timeout)
	}
	res.Class, res.Reason = Classify(res, nil)
	return res, nil
}

// run runs command, instrumented for runner r, in root as Run does, with its output going
// to the writer out makes for the invocation, and returns the invocation, the exit code,
// whether it timed out, and the runner's reports: what it wrote to its report pipes
// (reportpipe.go), then what came through the report stream; and how a report pipe was
// written by more than the runner (nil when it was not).
func run(ctx context.Context, root, command string, r Runner, timeout time.Duration, o options, out func(invocation) io.Writer) (inv invocation, code int, timedOut bool, reports [][]byte, forged *ForgedError, err error) {
	env := o.env
	if o.sandbox != nil && o.sandbox.Env != nil {
		env = o.sandbox.Env
	}
	if env == nil {
		env = os.Environ()
	}
	env = PythonEnv(env, r)
	ps := newPytestSetup(root, env)
	// The run's own folders: tmp, writable by the command (the JavaScript runners' report
	// files, Python's bytecode folder that nothing writes), and ro, read-only in the sandbox
	// (the orchestrator's pytest reporter). Each is made only where the run uses it: a
	// folder costs about as much as a short command here, and a go, cargo or plain command
	// out of the sandbox uses neither.
	inv, tmp, err := instrumentIn(command, r, ps, o.sandbox != nil)
	if err != nil {
		return inv, -1, false, nil, nil, fmt.Errorf("run tests: %w", err)
	}
	if tmp != "" {
		defer removeAll(tmp)
	}
	ro := filepath.Join(tmp, "ro")
	if inv.stream || o.sandbox != nil {
		if err := os.Mkdir(ro, 0o700); err != nil {
			return inv, -1, false, nil, nil, fmt.Errorf("run tests: %w", err)
		}
	}
	var stream *reportStream
	if inv.stream {
		if stream, err = newReportStream(); err != nil {
			return inv, -1, false, nil, nil, fmt.Errorf("run tests: %w", err)
		}
		defer stream.close()
		if err := ps.write(ro, stream.id); err != nil {
			return inv, -1, false, nil, nil, fmt.Errorf("run tests: %w", err)
		}
		env = setEnv(env, "PYTHONPATH", joinPath(ro, env))
	}
	var pipes []*reportPipe
	for _, path := range inv.reports {
		p, err := newReportPipe(path)
		if err != nil {
			return inv, -1, false, nil, nil, fmt.Errorf("run tests: %w", err)
		}
		pipes = append(pipes, p)
	}
	code, timedOut, err = execute(ctx, root, inv, timeout, out(inv), env, o.jail(tmp, ro, env), stream)
	for _, p := range pipes {
		report, notAlone := p.finish()
		if report != nil {
			reports = append(reports, report)
		}
		if notAlone && forged == nil {
			forged = &ForgedError{Where: filepath.Base(p.path), Stream: true,
				What: "the runner's report was written by more than the runner (its report pipe was opened again and written after the runner's report, or held open past the run)"}
		}
	}
	if err != nil {
		return inv, -1, false, nil, nil, err
	}
	if stream != nil {
		reports = append(reports, stream.bytes())
	}
	return inv, code, timedOut, reports, forged, nil
}

// instrumentIn instruments command for runner r (instrument) with the run's own folder,
// made (os.MkdirTemp) only when the run uses it: in the sandbox, which makes it writable,
// or when the instrumented command reports there. Without one, tmp is "".
func instrumentIn(command string, r Runner, ps *pytestSetup, jailed bool) (inv invocation, tmp string, err error) {
	inv = instrument(command, r, "", ps)
	if !inv.stream && len(inv.reports) == 0 && !jailed {
		return inv, "", nil
	}
	if tmp, err = os.MkdirTemp("", "testrun-"); err != nil {
		return inv, "", err
	}
	if len(inv.reports) > 0 {
		// The JavaScript runners' report paths are in the folder: again with its name
		// (string work; pytest's reporter is not in the command line but on PYTHONPATH).
		inv = instrument(command, r, tmp, ps)
	}
	return inv, tmp, nil
}

// Parse reads the recorded output of a run of runner r in root: its combined output, its
// exit code, and the reports the runner wrote (the lines of the orchestrator's reporter, or
// JUnit XML, for pytest; JSON for vitest and jest; none for go, cargo and exit). It classifies the result with DefaultGlobs.
func Parse(r Runner, root string, exitCode int, output []byte, reports [][]byte) *Result {
	f := newFeeder(invocation{runner: r}, root)
	_, _ = f.Write(output)
	res := &Result{Runner: r, ExitCode: exitCode}
	f.finish(res, reports)
	res.Class, res.Reason = Classify(res, nil)
	return res
}

// An Option changes how Run runs a command.
type Option func(*options)

type options struct {
	env     []string         // nil: the orchestrator's own
	sandbox *sandbox.Profile // nil: no sandbox
}

// jail returns the sandbox the command runs in, with the environment env, the run's own
// folder tmp writable in it and ro, in tmp, read-only; or nil.
func (o options) jail(tmp, ro string, env []string) *sandbox.Profile {
	if o.sandbox == nil {
		return nil
	}
	p := o.sandbox.With([]string{ro}, []string{tmp})
	p.Env = env
	return &p
}

// removeAll removes a run's folder, the read-only ones in it too: those are made
// writable first when a plain removal fails on them (most runs have none).
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// joinPath returns PYTHONPATH with dir first.
func joinPath(dir string, env []string) string {
	if v, ok := lookupEnv(env, "PYTHONPATH"); ok && v != "" {
		return dir + string(filepath.ListSeparator) + v
	}
	return dir
}

// WithSandbox runs the command in the sandbox p (SPEC §7.6): p's environment is the
// command's, and the orchestrator's own goes to bwrap. The run's report folder is made
// writable in it.
func WithSandbox(p *sandbox.Profile) Option {
	return func(o *options) { o.sandbox = p }
}

// WithEnv runs the command with exactly the environment env (KEY=VALUE pairs) instead of
// the orchestrator's: the gate's pinned environment (SPEC §7.6).
func WithEnv(env []string) Option {
	return func(o *options) { o.env = slices.Clone(env) }
}

// execute runs an invocation and copies its combined output to w from one goroutine. It
// returns the exit code (-1 for a timeout or a signal) and whether it timed out. env is the
// command's environment (nil: the orchestrator's). With stream, the command inherits the
// write end of its pipe as descriptor 3 (reportFD), and what it writes there is read until
// the command and what it left behind are gone.
func execute(ctx context.Context, dir string, inv invocation, timeout time.Duration, w io.Writer, env []string, jail *sandbox.Profile, stream *reportStream) (int, bool, error) {
	if err := ctx.Err(); err != nil {
		return -1, false, err
	}
	// The output goes through a pipe of our own rather than exec's copying goroutines, so
	// that a process the tests leave behind, holding the pipe open, cannot keep Wait
	// waiting: once the shell exits, its process group is killed and the pipe read to EOF.
	pr, pw, err := os.Pipe()
	if err != nil {
		return -1, false, fmt.Errorf("run tests: %w", err)
	}
	if env == nil {
		env = os.Environ()
	}
	// Inside the sandbox, the sandbox's environment; bwrap itself runs with the
	// orchestrator's.
	argv := []string{"sh", "-c", inv.command}
	if jail == nil {
		env = colorOff(inv, env)
	}
	var extra []*os.File
	if stream != nil {
		extra = append(extra, stream.w)
	}
	// In the sandbox, its init says on a pipe of its own that it started the command: a
	// sandbox that did not start is a problem of the set-up, not the candidate's failure.
	var started, startedW *os.File
	if jail != nil {
		if started, startedW, err = os.Pipe(); err != nil {
			pr.Close()
			pw.Close()
			return -1, false, fmt.Errorf("run tests: %w", err)
		}
		defer started.Close()
		extra = append(extra, startedW)
		p := *jail
		if p.Env == nil {
			p.Env = env
		}
		p.Env = colorOff(inv, p.Env)
		if p.Dir == "" {
			p.Dir = dir
		}
		p.StartedFD = 2 + len(extra)
		argv, env = p.Wrap([]string{"sh", "-c", inv.command}), os.Environ()
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	head := &capped{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = env
	cmd.ExtraFiles = extra
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		if startedW != nil {
			startedW.Close()
		}
		return -1, false, fmt.Errorf("run %q in %s: %w", inv.command, dir, err)
	}
	pw.Close()
	if startedW != nil {
		startedW.Close()
	}
	w = io.MultiWriter(w, head)
	if stream != nil {
		stream.started()
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(w, pr)
		close(copied)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	pid := cmd.Process.Pid
	var werr error
	timedOut, canceled := false, false
	select {
	case werr = <-waited:
	case <-expired:
		timedOut = true
		killGroup(pid)
		werr = <-waited
	case <-ctx.Done():
		canceled = true
		killGroup(pid)
		werr = <-waited
	}
	killGroup(pid) // whatever the tests left running in the group
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	late := deadline.C
	select {
	case <-copied:
	case <-deadline.C:
		// A process that left the group still holds the pipe: stop reading.
		pr.Close()
		<-copied
		late = nil
	}
	pr.Close()
	if stream != nil {
		stream.wait(late)
	}
	if canceled {
		return -1, false, ctx.Err()
	}
	if started != nil && !timedOut && !sandboxStarted(started) {
		return -1, false, &SetupError{Command: inv.command, Reason: "the sandbox could not start: " + bwrapSaid(head.String())}
	}
	if timedOut {
		return -1, true, nil
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, false, nil
	case errors.As(werr, &ee):
		return ee.ExitCode(), false, nil
	}
	return -1, false, werr
}

// sandboxStarted reports whether the sandbox's init wrote its byte on started: every
// writer is gone by now (the init closes it before the command starts, and the sandbox's
// processes end with it), so a read does not wait; the deadline is for safety.
func sandboxStarted(started *os.File) bool {
	_ = started.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	n, _ := started.Read(b[:])
	return n == 1
}

// bwrapSaid returns bubblewrap's own complaint in a run's output (its "bwrap: " line), or
// the output's first line.
func bwrapSaid(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "bwrap: ") {
			return strings.TrimPrefix(l, "bwrap: ")
		}
	}
	l, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if l == "" {
		return "bwrap exited before it started the command, and said nothing"
	}
	return l
}

// colorOff returns env with NO_COLOR set for the JavaScript runners: Node's color libraries
// turn colors on when CI is set, terminal or not.
func colorOff(inv invocation, env []string) []string {
	if inv.runner == Vitest || inv.runner == Jest {
		return append(slices.Clone(env), "NO_COLOR=1")
	}
	return env
}

// killGroup kills a process group; a group that is gone is no error.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// A parser reads the output of one runner, line by line, then its reports.
type parser interface {
	// line is called for each line of output, without its line ending or color codes.
	line(s string)
	// finish fills the result's Tests and BuildErrors; it may replace Output.
	finish(res *Result, reports [][]byte)
}

func newParser(inv invocation, root string) parser {
	switch inv.runner {
	case Go:
		return newGoParser(inv.verbose, inv.command)
	case Pytest:
		return newPytestParser(root, inv.sessions)
	case Vitest, Jest:
		return &jsParser{root: root}
	case Cargo:
		return &cargoParser{}
	}
	return nopParser{}
}

// nopParser reads nothing: an Exit run is judged by its exit code.
type nopParser struct{}

func (nopParser) line(string)              {}
func (nopParser) finish(*Result, [][]byte) {}

// A feeder is the writer a run's output goes to: it keeps the first maxOutput bytes and
// hands each line to the runner's parser, so that a large output is read without being kept.
type feeder struct {
	root    string
	p       parser
	raw     capped
	partial []byte
}

// maxLine caps one line of output; the rest of a longer line is dropped.
const maxLine = 4 << 20

func newFeeder(inv invocation, root string) *feeder {
	return &feeder{root: root, p: newParser(inv, root), raw: capped{max: maxOutput}}
}

func (f *feeder) Write(b []byte) (int, error) {
	n := len(b)
	f.raw.Write(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			f.partial = append(f.partial, b[:min(len(b), max(0, maxLine-len(f.partial)))]...)
			break
		}
		if len(f.partial) > 0 {
			f.partial = append(f.partial, b[:min(i, max(0, maxLine-len(f.partial)))]...)
			f.emit(f.partial)
			f.partial = f.partial[:0]
		} else {
			f.emit(b[:min(i, maxLine)])
		}
		b = b[i+1:]
	}
	return n, nil
}

func (f *feeder) emit(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if bytes.IndexByte(line, 0x1b) >= 0 {
		line = ansiRE().ReplaceAll(line, nil)
	}
	f.p.line(string(line))
}

// finish hands the last, unterminated line to the parser and fills res.
func (f *feeder) finish(res *Result, reports [][]byte) {
	if len(f.partial) > 0 {
		f.emit(f.partial)
		f.partial = nil
	}
	res.Output = stripANSI(f.raw.String())
	f.p.finish(res, reports)
	trimRoot(f.root, res.BuildErrors)
}

// trimRoot removes the root folder from the paths in lines of output, in place, which then
// read the same wherever the project is. The root's real path is looked up once, not per line.
func trimRoot(root string, lines []string) {
	if root == "" || root == "/" || len(lines) == 0 {
		return
	}
	prefixes := []string{strings.TrimSuffix(root, "/") + "/"}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		prefixes = append(prefixes, strings.TrimSuffix(real, "/")+"/")
	}
	for i, l := range lines {
		for _, p := range prefixes {
			l = strings.ReplaceAll(l, p, "")
		}
		lines[i] = l
	}
}

// ansiRE matches terminal escape sequences (colors, cursor moves).
var ansiRE = lazyre.New(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-Z\\-_])`)

func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	return ansiRE().ReplaceAllString(s, "")
}

// capped is a buffer that keeps the first max bytes written to it, and, with tail set, the
// last tail bytes of what did not fit (Tail).
type capped struct {
	bytes.Buffer
	max  int
	lost bool
	tail int
	end  []byte
}

func (c *capped) Write(p []byte) (int, error) {
	n := c.room(len(p))
	c.Buffer.Write(p[:n])
	c.keepEnd(p[n:])
	return len(p), nil
}

// WriteString writes s, capped.
func (c *capped) WriteString(s string) (int, error) {
	n := c.room(len(s))
	c.Buffer.WriteString(s[:n])
	c.keepEnd([]byte(s[n:]))
	return len(s), nil
}

// keepEnd keeps the last c.tail bytes of what did not fit.
func (c *capped) keepEnd(p []byte) {
	if c.tail <= 0 || len(p) == 0 {
		return
	}
	c.end = append(c.end, p...)
	if over := len(c.end) - c.tail; over > 0 {
		c.end = append(c.end[:0], c.end[over:]...)
	}
}

// Tail returns the end of what did not fit ("" without tail, or when all of it fit).
func (c *capped) Tail() string { return string(c.end) }

// room returns how many of n bytes still fit, and notes it when not all of them do.
func (c *capped) room(n int) int {
	room := max(0, c.max-c.Len())
	if room < n {
		c.lost = true
	}
	return min(n, room)
}

// capString cuts s to n bytes, marking the cut.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "\n…(cut)\n"
}
