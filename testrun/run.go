package testrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/orchestrator/orchestrator/internal/lazyre"
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
// 126 or 127 is a result like any other (ClassError): the program the line names was
// found, so what was not found or could not run is something that program ran, which may
// be the candidate's code (a test binary, a script of the tree) and may not be told apart
// from the machine's fault; so it stays the candidate's failure.
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
	tmp, err := os.MkdirTemp("", "testrun-")
	if err != nil {
		return nil, fmt.Errorf("run tests: %w", err)
	}
	defer os.RemoveAll(tmp)
	inv := instrument(command, r, tmp)
	f := newFeeder(inv, root)
	start := time.Now()
	code, timedOut, err := execute(ctx, root, inv, timeout, f, o.env)
	if err != nil {
		return nil, err
	}
	res := &Result{Runner: r, Command: command, Ran: inv.command, ExitCode: code, TimedOut: timedOut}
	f.finish(res, readReports(inv.reports))
	res.Duration = time.Since(start)
	if timedOut {
		res.Output += fmt.Sprintf("\n(timed out after %s)\n", timeout)
	}
	res.Class, res.Reason = Classify(res, nil)
	return res, nil
}

// Parse reads the recorded output of a run of runner r in root: its combined output, its
// exit code, and the report files the runner wrote (JUnit XML for pytest, JSON for vitest
// and jest; none for go, cargo and exit). It classifies the result with DefaultGlobs.
func Parse(r Runner, root string, exitCode int, output []byte, reports [][]byte) *Result {
	f := newFeeder(invocation{runner: r}, root)
	_, _ = f.Write(output)
	res := &Result{Runner: r, ExitCode: exitCode}
	f.finish(res, reports)
	res.Class, res.Reason = Classify(res, nil)
	return res
}

// readReports reads the report files a run was asked to write; a missing one is skipped
// (the runner did not get that far, or the user's own flags sent it elsewhere).
func readReports(paths []string) [][]byte {
	var out [][]byte
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// An Option changes how Run runs a command.
type Option func(*options)

type options struct {
	env []string // nil: the orchestrator's own
}

// WithEnv runs the command with exactly the environment env (KEY=VALUE pairs) instead of
// the orchestrator's: the gate's pinned environment (SPEC §7.6).
func WithEnv(env []string) Option {
	return func(o *options) { o.env = slices.Clone(env) }
}

// execute runs an invocation and copies its combined output to w from one goroutine. It
// returns the exit code (-1 for a timeout or a signal) and whether it timed out. env is the
// command's environment (nil: the orchestrator's).
func execute(ctx context.Context, dir string, inv invocation, timeout time.Duration, w io.Writer, env []string) (int, bool, error) {
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
	cmd := exec.Command("sh", "-c", inv.command)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if inv.runner == Vitest || inv.runner == Jest {
		// Node's color libraries turn colors on when CI is set, terminal or not.
		cmd.Env = append(cmd.Env, "NO_COLOR=1")
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return -1, false, fmt.Errorf("run %q in %s: %w", inv.command, dir, err)
	}
	pw.Close()
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
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		// A process that left the group still holds the pipe: stop reading.
		pr.Close()
		<-copied
	}
	pr.Close()
	if canceled {
		return -1, false, ctx.Err()
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

// killGroup kills a process group; a group that is gone is no error.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// A parser reads the output of one runner, line by line, then its report files.
type parser interface {
	// line is called for each line of output, without its line ending or color codes.
	line(s string)
	// finish fills the result's Tests and BuildErrors; it may replace Output.
	finish(res *Result, reports [][]byte)
}

func newParser(inv invocation, root string) parser {
	switch inv.runner {
	case Go:
		return newGoParser(inv.verbose)
	case Pytest:
		return newPytestParser(root)
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

// capped is a buffer that keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max  int
	lost bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.Buffer.Write(p[:c.room(len(p))])
	return len(p), nil
}

// WriteString writes s, capped.
func (c *capped) WriteString(s string) (int, error) {
	c.Buffer.WriteString(s[:c.room(len(s))])
	return len(s), nil
}

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
