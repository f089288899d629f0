package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/testrun"
)

// A PreflightError lists every agent a run could start that cannot start (SPEC §12): an
// unknown name, an agent without a command, a program that is not installed; and every
// test command it could run that cannot run here (SPEC §7.6): its program not found, its
// runner not installed. Each problem is a *queue.ParseError for a task's Agent or Test
// Command field or the task queue's Project Commands, a *config.Error for a name or a
// command in config.yaml, or a plain error for a default or a flag's agent, which has no
// line.
type PreflightError struct {
	Problems []error
}

func (e *PreflightError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the problems, for errors.As.
func (e *PreflightError) Unwrap() []error { return e.Problems }

// Preflight checks, before any task is launched, that every agent the run could start can
// start, so that a misconfiguration is reported at once and never by burning an attempt of
// a task. It checks the Agent field of every task that could still run (any status but
// completed and skipped; only the tasks named in only, when it names any), and the config's
// default agent and its ladder when such a task has no Agent field of its own (then one of
// them runs it). A name is checked, and its command, and that its program is installed. The
// replay agent is this program: it needs nothing installed.
//
// A program is installed when it is on PATH, or, for a command whose program has a slash,
// when that file exists and is executable (relative to the repository root, where agents
// run). Preflight returns a *PreflightError, or nil.
//
// It checks the test commands too (checkTestCommands): a program that is not found or a
// runner that is not installed would otherwise be met by the gate after an agent worked,
// and stop the run then.
func Preflight(l queue.Layout, cfg *config.Config, tasks *queue.Doc, only ...string) error {
	named, missing := startProblems(l, cfg, tasks, only, false)
	problems := mergeProblems(named, missing)
	if len(problems) == 0 {
		return nil
	}
	return &PreflightError{Problems: problems}
}

// CheckStart makes Preflight's checks for `orchestrator validate`, so that validate reports
// every problem watch would refuse to start with: it is the same check (startProblems),
// given to validate in two lists: the problems of the files (an unknown agent name, an
// agent without a command), and those of this machine, which may not be the one that runs
// the agents (a program or a test runner that is not installed). It checks more than
// Preflight, never less: the names of the config's default agent and ladder even when no
// task would use them, and the project's test command even when no task could run.
func CheckStart(l queue.Layout, cfg *config.Config, tasks *queue.Doc) (named, notInstalled []error) {
	named, notInstalled = startProblems(l, cfg, tasks, nil, true)
	return mergeProblems(named, nil), notInstalled
}

// startProblems is the check of Preflight and CheckStart: the agents (checkAgents) and the
// test commands (checkTestCommands) of the tasks that could still run, only those named in
// only when it names any. With all, every name in config.yaml and the project's test
// command are checked whether a task needs them or not. The default agent's program is
// checked whenever a task would start it, config.yaml naming it or not: watch refuses to
// start without it, so validate says so too.
func startProblems(l queue.Layout, cfg *config.Config, tasks *queue.Doc, only []string, all bool) (named, notInstalled []error) {
	named, notInstalled = checkAgents(l, cfg, tasks, only, all)
	return named, append(notInstalled, checkTestCommands(l, cfg, tasks, only, all)...)
}

// checkTestCommands checks, with testrun.SetupCheck, that the test commands a run could
// run can run in the project's folder with the gate's environment: the Test Command of each
// task that could still run (any status but completed and skipped; only the tasks named in
// only, when it names any), and the project's test command when such a task exists (it
// decides a BUILD task's GREEN and is the test command of a task without one), or always.
// Each problem is at the line that sets the command; a problem met by many commands (a
// runner that is not installed) is reported once, at its first line, with how many more
// commands have it.
func checkTestCommands(l queue.Layout, cfg *config.Config, tasks *queue.Doc, only []string, always bool) []error {
	// Each command with where it is set: a task's row, config.yaml's line (inConfig), or
	// the queue's Project Commands row (no ID). The errors are made only for the problems.
	type at struct {
		command  string
		line     int
		id       string
		inConfig bool
	}
	var todo []at
	project := always // check the project's command
	if tasks != nil {
		for i := range tasks.Records {
			rec := &tasks.Records[i]
			if len(only) > 0 && !slices.Contains(only, rec.ID) {
				continue
			}
			status, _ := queue.NormalizeStatus(queue.Tasks, tasks.Get(rec, "Status"))
			if status == queue.StatusCompleted || status == queue.StatusSkipped {
				continue
			}
			project = true
			f, ok := tasks.Lookup(rec, "Test Command")
			if !ok || queue.IsEmpty(tasks.Value(f)) {
				continue
			}
			todo = append(todo, at{command: strings.TrimSpace(tasks.Value(f)), line: f.Line(), id: rec.ID})
		}
	}
	if project {
		switch {
		case cfg.Commands.Test != "":
			line := cfg.Line("commands", "test")
			if line == 0 {
				line = cfg.Line("commands")
			}
			todo = append([]at{{command: cfg.Commands.Test, line: line, inConfig: true}}, todo...)
		case tasks != nil && tasks.ProjectCommand("Test") != "":
			todo = append([]at{{command: tasks.ProjectCommand("Test"), line: projectCommandLine(tasks, "Test")}}, todo...)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	check := &testrun.SetupCheck{Root: l.Root, Env: gate.EnvFor(gate.PinnedEnv(os.Environ()), l.Root)}
	var problems []error
	first := map[string]int{} // by reason: the problem that reported it
	more := map[string]int{}
	checked := make(map[string]bool, len(todo))
	for _, c := range todo {
		if checked[c.command] {
			continue
		}
		checked[c.command] = true
		err := check.Check(context.Background(), c.command)
		if err == nil {
			continue
		}
		reason := err.Error()
		var se *testrun.SetupError
		if errors.As(err, &se) {
			reason = se.Reason
		}
		if _, ok := first[reason]; ok {
			more[reason]++
			continue
		}
		first[reason] = len(problems)
		msg := fmt.Sprintf("test command %q cannot run: %s", c.command, reason)
		if c.inConfig {
			problems = append(problems, &config.Error{Path: cfg.Path(), Line: c.line, Msg: msg})
		} else {
			problems = append(problems, &queue.ParseError{Path: tasks.Path, Line: c.line, ID: c.id, Msg: msg})
		}
	}
	for reason, n := range more {
		suffix := fmt.Sprintf(" (and %d more test commands)", n)
		if n == 1 {
			suffix = " (and one more test command)"
		}
		problems[first[reason]] = withSuffix(problems[first[reason]], suffix)
	}
	return problems
}

// projectCommandLine returns the line of the task queue's Project Commands row name, 0
// when there is none.
func projectCommandLine(tasks *queue.Doc, name string) int {
	t, ok := tasks.SectionTable("Project Commands", "Command")
	if !ok {
		return 0
	}
	for _, row := range t.Rows {
		if strings.EqualFold(tasks.CellText(row, 0), name) && !queue.IsEmpty(tasks.CellText(row, 1)) {
			return row.Line
		}
	}
	return 0
}

// mergeProblems puts the problems of config.yaml first, in line order, then the tasks'.
// Each problem's place is found once, not in every comparison of the sort.
func mergeProblems(a, b []error) []error {
	all := append(slices.Clip(a), b...)
	type ranked struct {
		err        error
		rank, line int
	}
	rs := make([]ranked, len(all))
	for i, e := range all {
		rs[i].err = e
		var ce *config.Error
		var pe *queue.ParseError
		switch {
		case errors.As(e, &ce):
			rs[i].rank, rs[i].line = 1, ce.Line
		case errors.As(e, &pe):
			rs[i].rank, rs[i].line = 2, pe.Line
		}
	}
	slices.SortStableFunc(rs, func(x, y ranked) int {
		if x.rank != y.rank {
			return x.rank - y.rank
		}
		return x.line - y.line
	})
	for i := range rs {
		all[i] = rs[i].err
	}
	return all
}

// checkAgents checks the agents of the tasks that could still run, and the config's default
// agent and ladder when one of those tasks has no agent of its own, or always by name with
// allNames. A program is checked whenever its agent is used.
func checkAgents(l queue.Layout, cfg *config.Config, tasks *queue.Doc, only []string, allNames bool) (named, missing []error) {
	p := &preflight{l: l, cfg: cfg, checked: map[string]problem{}}
	// A problem once: a task's by its fields (formatting thousands of them only to tell them
	// apart is most of this check's time on a large queue), any other by its text.
	seen := map[any]bool{}
	add := func(pr problem, err error) {
		var key any
		if pe, ok := err.(*queue.ParseError); ok {
			key = *pe
		} else {
			key = err.Error()
		}
		if !seen[key] {
			seen[key] = true
			if pr.notInstalled {
				missing = append(missing, err)
			} else {
				named = append(named, err)
			}
		}
	}
	needDefault := false
	if tasks != nil {
		for i := range tasks.Records {
			rec := &tasks.Records[i]
			if len(only) > 0 && !slices.Contains(only, rec.ID) {
				continue
			}
			status, _ := queue.NormalizeStatus(queue.Tasks, tasks.Get(rec, "Status"))
			if status == queue.StatusCompleted || status == queue.StatusSkipped {
				continue
			}
			f, ok := tasks.Lookup(rec, "Agent")
			name := ""
			if ok {
				name = strings.TrimSpace(tasks.Value(f))
			}
			if queue.IsEmpty(name) {
				needDefault = true
				continue
			}
			if pr := p.check(name, tasks.Get(rec, "Complexity"), true); pr.msg != "" {
				add(pr, &queue.ParseError{Path: tasks.Path, Line: f.Line(), ID: rec.ID, Msg: pr.msg})
			}
		}
	}
	// The config's names: the ladder, when there is one, picks every attempt's agent.
	// The reviewer and the judge, when configured, run after every GREEN gate that passes.
	type ref struct {
		name   string
		keys   []string
		always bool
	}
	refs := []ref{{cfg.Agent, []string{"agent"}, false}}
	for i, name := range cfg.Ladder {
		refs = append(refs, ref{name, []string{"ladder", strconv.Itoa(i)}, false})
	}
	if cfg.Review.Reviewer != "" {
		refs = append(refs, ref{cfg.Review.Reviewer, []string{"review", "reviewer"}, true})
	}
	if cfg.Review.Judge != "" {
		refs = append(refs, ref{cfg.Review.Judge, []string{"review", "judge"}, true})
	}
	for i, ref := range refs {
		used := ref.always || needDefault && (i > 0 || len(cfg.Ladder) == 0)
		if !used && !allNames {
			continue
		}
		pr := p.check(ref.name, "", used)
		if pr.msg == "" {
			continue
		}
		// A configured agent's problem is in its command, which has a line of its own.
		line := cfg.Line(ref.keys...)
		if _, ok := cfg.Agents[ref.name]; ok {
			line = cfg.Line("agents", ref.name, "command")
		}
		var err error = &config.Error{Path: cfg.Path(), Line: line, Msg: pr.msg}
		if line == 0 {
			err = errors.New(pr.msg) // the default agent, or a flag's
		}
		add(pr, err)
	}
	return named, groupMissing(missing)
}

// groupMissing keeps the first report of each missing program, and says how many more times
// the same agent is named: a queue of a thousand tasks of an agent that is not installed
// gets one line, not a thousand.
func groupMissing(list []error) []error {
	msg := func(e error) string {
		var pe *queue.ParseError
		var ce *config.Error
		switch {
		case errors.As(e, &pe):
			return pe.Msg
		case errors.As(e, &ce):
			return ce.Msg
		}
		return e.Error()
	}
	list = mergeProblems(list, nil)
	var out []error
	more := map[string]int{}
	first := map[string]int{}
	for _, e := range list {
		m := msg(e)
		if _, ok := first[m]; ok {
			more[m]++
			continue
		}
		first[m] = len(out)
		out = append(out, e)
	}
	for m, n := range more {
		suffix := fmt.Sprintf(" (named %d more times)", n)
		if n == 1 {
			suffix = " (named once more)"
		}
		out[first[m]] = withSuffix(out[first[m]], suffix)
	}
	return out
}

// A problem is what keeps an agent from starting: msg, or "" for none.
type problem struct {
	msg          string
	notInstalled bool // its program is missing on this machine
}

// preflight remembers the agents it has checked: a hundred tasks of one agent look its
// program up once.
type preflight struct {
	l       queue.Layout
	cfg     *config.Config
	checked map[string]problem // by name, complexity and installed
}

// check returns what keeps the agent called name from starting for a task of the given
// complexity, or "". With installed false, only the name and the command are checked.
func (p *preflight) check(name, complexity string, installed bool) problem {
	key := name + "\x00" + strings.ToLower(strings.TrimSpace(complexity)) + "\x00" + strconv.FormatBool(installed)
	if pr, ok := p.checked[key]; ok {
		return pr
	}
	pr := p.checkAgent(name, complexity, installed)
	p.checked[key] = pr
	return pr
}

func (p *preflight) checkAgent(name, complexity string, installed bool) problem {
	configured := map[string][]string{}
	for k, v := range p.cfg.Agents {
		configured[k] = v.Command
	}
	if _, ok := configured[name]; name == agents.Replay && !ok {
		return problem{} // this program, run with its replay subcommand
	}
	ad, err := agents.Lookup(name, configured)
	if err != nil {
		return problem{msg: err.Error()}
	}
	argv := ad.Command(agents.ModelOptions{
		Model:    p.cfg.Model(strings.ToLower(strings.TrimSpace(complexity))),
		MaxTurns: p.cfg.MaxTurns,
	})
	if len(argv) == 0 || argv[0] == "" {
		return problem{msg: fmt.Sprintf("agent %s has no command: give it one under agents: in %s", name, filepath.Base(p.l.Config()))}
	}
	if !installed {
		return problem{}
	}
	if err := p.installed(argv[0]); err != nil {
		return problem{msg: fmt.Sprintf("agent %s: %v", name, err), notInstalled: true}
	}
	return problem{}
}

// installed reports why program cannot be started by an agent running in the repository
// root, or nil.
func (p *preflight) installed(program string) error {
	if !strings.Contains(program, "/") {
		if _, err := exec.LookPath(program); err != nil {
			return fmt.Errorf("program %q is not installed (not on PATH)", program)
		}
		return nil
	}
	path := program
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.l.Root, path)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("program %q does not exist", program)
	case err != nil:
		return fmt.Errorf("program %q: %w", program, err)
	case fi.IsDir():
		return fmt.Errorf("program %q is a folder", program)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("program %q is not executable", program)
	}
	return nil
}

// withSuffix returns the finding err with suffix added to its message, keeping its file and
// line where it has them.
func withSuffix(err error, suffix string) error {
	switch e := err.(type) {
	case *queue.ParseError:
		c := *e
		c.Msg += suffix
		return &c
	case *config.Error:
		c := *e
		c.Msg += suffix
		return &c
	}
	return errors.New(err.Error() + suffix)
}
