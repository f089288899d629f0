package watch

import (
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
	"github.com/orchestrator/orchestrator/queue"
)

// A PreflightError lists every agent a run could start that cannot start (SPEC §12): an
// unknown name, an agent without a command, a program that is not installed. Each problem
// is a *queue.ParseError for a task's Agent field, a *config.Error for a name in
// config.yaml, or a plain error for a default or a flag's agent, which has no line.
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
// completed and skipped; only the tasks named in only, when it names any); the config's
// default agent and its ladder by name always, and for an installed program when a task
// that could still run has no Agent field of its own (then one of them runs it). The replay
// agent is this program: it needs nothing installed.
//
// A program is installed when it is on PATH, or, for a command whose program has a slash,
// when that file exists and is executable (relative to the repository root, where agents
// run). Preflight returns a *PreflightError, or nil.
func Preflight(l queue.Layout, cfg *config.Config, tasks *queue.Doc, only ...string) error {
	p := &preflight{l: l, cfg: cfg, checked: map[string]string{}}
	var taskProblems []error
	needDefault := false
	if tasks != nil {
		for i := range tasks.Records {
			rec := &tasks.Records[i]
			if len(only) > 0 && !slices.Contains(only, rec.ID) {
				continue
			}
			t := tasks.Task(rec)
			if t.Status == queue.StatusCompleted || t.Status == queue.StatusSkipped {
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
			if msg := p.check(name, tasks.Get(rec, "Complexity"), true); msg != "" {
				taskProblems = append(taskProblems, &queue.ParseError{Path: tasks.Path, Line: f.Line(), ID: rec.ID, Msg: msg})
			}
		}
	}
	// The config's names: the ladder, when there is one, picks every attempt's agent.
	var problems []error
	type ref struct {
		name string
		keys []string
	}
	refs := []ref{{cfg.Agent, []string{"agent"}}}
	for i, name := range cfg.Ladder {
		refs = append(refs, ref{name, []string{"ladder", strconv.Itoa(i)}})
	}
	for i, ref := range refs {
		used := needDefault && (i > 0 || len(cfg.Ladder) == 0)
		msg := p.check(ref.name, "", used)
		if msg == "" {
			continue
		}
		// A configured agent's problem is in its command, which has a line of its own.
		line := cfg.Line(ref.keys...)
		if _, ok := cfg.Agents[ref.name]; ok {
			line = cfg.Line("agents", ref.name, "command")
		}
		var err error = &config.Error{Path: cfg.Path(), Line: line, Msg: msg}
		if line == 0 {
			err = errors.New(msg) // the default agent, or a flag's
		}
		if !slices.ContainsFunc(problems, func(e error) bool { return e.Error() == err.Error() }) {
			problems = append(problems, err)
		}
	}
	problems = append(problems, taskProblems...)
	if len(problems) == 0 {
		return nil
	}
	return &PreflightError{Problems: problems}
}

// preflight remembers the agents it has checked: a hundred tasks of one agent look its
// program up once.
type preflight struct {
	l       queue.Layout
	cfg     *config.Config
	checked map[string]string // name, complexity and installed → the problem, or ""
}

// check returns what keeps the agent called name from starting for a task of the given
// complexity, or "". With installed false, only the name and the command are checked.
func (p *preflight) check(name, complexity string, installed bool) string {
	key := name + "\x00" + strings.ToLower(strings.TrimSpace(complexity)) + "\x00" + strconv.FormatBool(installed)
	if msg, ok := p.checked[key]; ok {
		return msg
	}
	msg := p.checkAgent(name, complexity, installed)
	p.checked[key] = msg
	return msg
}

func (p *preflight) checkAgent(name, complexity string, installed bool) string {
	configured := map[string][]string{}
	for k, v := range p.cfg.Agents {
		configured[k] = v.Command
	}
	if _, ok := configured[name]; name == agents.Replay && !ok {
		return "" // this program, run with its replay subcommand
	}
	ad, err := agents.Lookup(name, configured)
	if err != nil {
		return err.Error()
	}
	argv := ad.Command(agents.ModelOptions{
		Model:    p.cfg.Model(strings.ToLower(strings.TrimSpace(complexity))),
		MaxTurns: p.cfg.MaxTurns,
	})
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Sprintf("agent %s has no command: give it one under agents: in %s", name, filepath.Base(p.l.Config()))
	}
	if !installed {
		return ""
	}
	if err := p.installed(argv[0]); err != nil {
		return fmt.Sprintf("agent %s: %v", name, err)
	}
	return ""
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
