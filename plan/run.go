package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
)

// DefaultMaxRetries is how many times a rejected output goes back to the planner when the
// config does not set retries.max_retries (SPEC §17).
const DefaultMaxRetries = 3

// Env names of what the planner is given.
const (
	EnvPlanFile = "ORCHESTRATOR_PLAN_FILE" // the scratch file, the one file it may write
	EnvRoot     = "ORCHESTRATOR_ROOT"      // the repository root, where it runs
	EnvRoundDir = "ORCHESTRATOR_ATTEMPT_DIR"
)

// Options say how to run the planner.
type Options struct {
	Layout queue.Layout
	Config *config.Config
	// PRDPath is the requirements file as the person named it, PRD its text.
	PRDPath string
	PRD     []byte
	Plan    *queue.Plan
	// Agent is the agent to run; "" takes the config's (its ladder by round number).
	Agent string
	// MaxRetries is how many times a rejected output goes back to the planner: a run has
	// up to MaxRetries+1 rounds.
	MaxRetries int
	// DryRun judges as usual but writes no queue.
	DryRun bool
	// Sandbox runs the planner in bubblewrap, the tree read-only but its scratch file.
	// Without it, the tree is checked from outside after each round.
	Sandbox bool
	// Env is the planner's base environment (nil: this process's).
	Env []string
	// Events, when not nil, hears of each round as it goes.
	Events func(Event)
}

// An Event is something that happened in a run, for progress output.
type Event struct {
	Round   int
	What    string // "started", "rejected", "accepted", "refused"
	Message string
	// Findings are a rejected round's findings, and Dir its folder.
	Findings []queue.Finding
	Dir      string
}

// A Round is the record of one round: what the planner did and what the gate said.
type Round struct {
	N        int             `json:"round"`
	Dir      string          `json:"dir"`
	Agent    string          `json:"agent"`
	PID      int             `json:"pid,omitempty"`
	ExitCode int             `json:"exit_code"`
	Elapsed  string          `json:"elapsed"`
	Accepted bool            `json:"accepted"`
	Problem  string          `json:"problem,omitempty"` // what kept the output from being judged
	Findings []queue.Finding `json:"findings"`
	Errors   int             `json:"errors"`
	New      []string        `json:"new_tasks"`
	Changed  []string        `json:"changed_files,omitempty"` // files the planner changed outside its scratch file
}

// Feedback is what the planner is given back after a rejection: the findings as validate
// prints them, or the one problem that kept its output from being judged.
func (r *Round) Feedback() string {
	if r.Problem != "" {
		return r.Problem + "\n"
	}
	return FindingsText(r.Findings)
}

// A Result is the outcome of a run.
type Result struct {
	Rounds []Round
	// Outcome is "written", "dry-run" (accepted, not written) or "halted".
	Outcome string
	// Reason says why it halted.
	Reason string
	// Queue holds the task queue as written, or as it would be with DryRun.
	Queue []byte
	New   []string
	// Coverage is the queue's coverage of the plan, once accepted.
	Coverage *queue.CoverageReport
	// Report is the halt report (markdown), and ReportPath where it was written.
	Report, ReportPath string
	// Dir is the run's folder of records.
	Dir string
}

// Outcomes.
const (
	Written = "written"
	DryRun  = "dry-run"
	Halted  = "halted"
)

// An ExistingError says the queue has errors that no planner can mend: it may only add
// tasks. Nothing was run.
type ExistingError struct{ Findings []queue.Finding }

func (e *ExistingError) Error() string {
	return fmt.Sprintf("the task queue has %d errors that new tasks cannot mend; fix them first (orchestrator validate)", len(e.Findings))
}

// Run runs the planner until the gate accepts its output or the budget is spent (SPEC §17).
// An accepted queue is written (unless DryRun); a run that halts writes its report. The
// error is for what is no verdict on the planner: unreadable input, the queue's own
// errors (*ExistingError), an agent that cannot start, an interruption (ctx).
func Run(ctx context.Context, o Options) (*Result, error) {
	existing, err := queue.Load(o.Layout.Tasks())
	if err != nil {
		return nil, err
	}
	bad, err := PreCheck(existing, o.Plan)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, &ExistingError{Findings: bad}
	}
	if err := checkAgents(o); err != nil {
		return nil, err
	}
	dir, err := newRunDir(o.Layout)
	if err != nil {
		return nil, err
	}
	// The scratch file has a folder of its own, the one place the planner may write in the
	// sandbox: tools that save a file by writing a temporary file beside it and renaming it
	// (Claude Code's Write does) need its folder. Nothing else in the folder is read.
	r := &runner{o: o, dir: dir, scratch: filepath.Join(dir, "scratch", "plan.md")}
	if err := os.Mkdir(filepath.Dir(r.scratch), 0o755); err != nil {
		return nil, err
	}
	// The scratch file exists from the start, empty: an agent that edits files finds it.
	if err := os.WriteFile(r.scratch, nil, 0o644); err != nil {
		return nil, err
	}
	res := &Result{Dir: dir}
	feedback := ""
	for n := 1; n <= o.MaxRetries+1; n++ {
		round, verdict, err := r.round(ctx, n, feedback)
		if round != nil {
			res.Rounds = append(res.Rounds, *round)
		}
		if err != nil {
			return res, err
		}
		switch {
		case len(round.Changed) > 0:
			res.Outcome, res.Reason = Halted, fmt.Sprintf("the planner changed files other than its scratch file (%s): its output is refused", strings.Join(round.Changed, ", "))
			r.event(n, "refused", res.Reason)
			return res, r.halt(res)
		case round.Problem != "" && strings.HasPrefix(round.Problem, gaveUp):
			res.Outcome, res.Reason = Halted, round.Problem
			r.event(n, "refused", res.Reason)
			return res, r.halt(res)
		case verdict != nil && verdict.OK():
			return res, r.accept(ctx, res, verdict)
		}
		if r.o.Events != nil {
			r.o.Events(Event{Round: n, What: "rejected", Message: rejection(round), Findings: round.Findings, Dir: round.Dir})
		}
		feedback = round.Feedback()
	}
	res.Outcome = Halted
	res.Reason = fmt.Sprintf("the planner's output was rejected %d times (retries allowed: %d)", len(res.Rounds), o.MaxRetries)
	return res, r.halt(res)
}

// gaveUp starts the problem of a planner that reported failure.
const gaveUp = "the planner gave up"

func rejection(r *Round) string {
	if r.Problem != "" {
		return r.Problem
	}
	return errorCount(r.Errors)
}

// errorCount says "1 error" or "N errors".
func errorCount(n int) string {
	if n == 1 {
		return "1 error"
	}
	return fmt.Sprintf("%d errors", n)
}

type runner struct {
	o       Options
	dir     string // .orchestrator/runs/plan/<n>
	scratch string
}

func (r *runner) event(n int, what, msg string) {
	if r.o.Events != nil {
		r.o.Events(Event{Round: n, What: what, Message: msg})
	}
}

// newRunDir makes the next free .orchestrator/runs/plan/<n>.
func newRunDir(l queue.Layout) (string, error) {
	base := filepath.Join(l.Runs(), "plan")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	for n := 1; ; n++ {
		dir := filepath.Join(base, strconv.Itoa(n))
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return dir, err
	}
}

// round runs the planner once and judges its output. The verdict is nil when the output
// could not be judged (the round's Problem says why).
func (r *runner) round(ctx context.Context, n int, feedback string) (*Round, *Verdict, error) {
	o := r.o
	dir := filepath.Join(r.dir, strconv.Itoa(n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	// The queue as it is now: a person may have edited it since the last round.
	existing, err := queue.Load(o.Layout.Tasks())
	if err != nil {
		return nil, nil, err
	}
	prompt, err := r.prompt(existing, feedback)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte(prompt), 0o644); err != nil {
		return nil, nil, err
	}
	name := o.Agent
	if name == "" {
		name = o.Config.AgentFor(n)
	}
	argv, adapter, err := command(o.Config, name)
	if err != nil {
		return nil, nil, err
	}
	round := &Round{N: n, Dir: dir, Agent: name, Findings: []queue.Finding{}, New: []string{}}
	var before snapshot
	var kept map[string]keptFile
	if !o.Sandbox {
		before = takeSnapshot(o.Layout.Root, r.unwatched())
		kept = keepFiles(r.guarded())
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(slices.Clip(env), EnvPlanFile+"="+r.scratch, EnvRoot+"="+o.Layout.Root, EnvRoundDir+"="+dir)
	start := time.Now()
	p, err := agents.Start(agents.StartOptions{
		Command: argv, Dir: o.Layout.Root, Prompt: prompt, Env: env,
		LogPath: filepath.Join(dir, "agent.log"), Sandbox: r.sandbox(name, argv, dir),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start agent %s: %w", name, err)
	}
	round.PID = p.PID()
	r.event(n, "started", fmt.Sprintf("agent %s (pid %d)", name, p.PID()))
	defer r.record(round)
	timeout := time.NewTimer(o.Config.TaskTimeout.Duration)
	defer timeout.Stop()
	var stopErr error
	select {
	case <-p.Done():
	case <-timeout.C:
		round.Problem = fmt.Sprintf("the planner did not finish within task_timeout (%s)", o.Config.TaskTimeout.Duration)
	case <-ctx.Done():
		stopErr = ctx.Err()
		round.Problem = "interrupted"
	}
	// Whatever it left running ends with it, before anything it wrote is read.
	p.Stop(o.Config.StopGrace.Duration)
	round.ExitCode = p.ExitCode()
	round.Elapsed = time.Since(start).Round(time.Millisecond).String()
	if stopErr != nil {
		return round, nil, stopErr
	}
	if !o.Sandbox {
		round.Changed = changed(before, takeSnapshot(o.Layout.Root, r.unwatched()))
		if len(round.Changed) > 0 {
			if err := restore(kept, dir); err != nil {
				return round, nil, err
			}
			return round, nil, nil
		}
	}
	if round.Problem != "" {
		return round, nil, nil
	}
	text, err := adapter.FinalText([]byte(p.Stdout()))
	if err != nil {
		round.Problem = err.Error()
		return round, nil, nil
	}
	res, err := agents.ParseResult(text, agents.RolePlanner)
	if err != nil {
		round.Problem = err.Error()
		return round, nil, nil
	}
	if res.Status == agents.StatusFailed {
		round.Problem = gaveUp
		if res.Message != "" {
			round.Problem += ": " + res.Message
		}
		return round, nil, nil
	}
	// The scratch file is read as the file it is: a link put in its place (to the queue, or
	// to a file the planner may not read) is not followed.
	if info, err := os.Lstat(r.scratch); err == nil && !info.Mode().IsRegular() {
		round.Problem = fmt.Sprintf("the scratch file %s is not a regular file (%s): write the tasks into it", r.scratch, info.Mode().Type())
		return round, nil, nil
	}
	src, err := os.ReadFile(r.scratch)
	if err != nil {
		round.Problem = fmt.Sprintf("the scratch file %s cannot be read: %v", r.scratch, err)
		return round, nil, nil
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), src, 0o644); err != nil {
		return round, nil, err
	}
	candidate := filepath.Join(dir, "task_queue.md")
	v := Judge(existing, r.scratch, src, o.Plan, candidate)
	if v.Candidate != nil {
		if err := os.WriteFile(candidate, v.Candidate, 0o644); err != nil {
			return round, nil, err
		}
	}
	round.Findings = append(round.Findings, v.Findings...)
	round.Errors = v.Errors()
	round.New = append(round.New, v.New...)
	round.Accepted = v.OK()
	if err := os.WriteFile(filepath.Join(dir, "findings.txt"), []byte(v.Text()), 0o644); err != nil {
		return round, nil, err
	}
	return round, v, nil
}

// unwatched are the folders the outside check does not list: this run's records, which the
// orchestrator writes while the planner runs, and the folders a `watch` running beside it
// writes (attempt records, markers, reports), none of which the gate reads back. (The
// queue files are listed: without a sandbox, a change of the queue while the planner works
// is the planner's.)
func (r *runner) unwatched() []string {
	l := r.o.Layout
	return []string{r.dir, l.Runs(), l.Markers(), filepath.Join(l.Dir(), "reports")}
}

// record writes the round's record, result.json, for people.
func (r *runner) record(round *Round) {
	b, err := json.MarshalIndent(round, "", "  ")
	if err == nil {
		os.WriteFile(filepath.Join(round.Dir, "result.json"), append(b, '\n'), 0o644)
	}
}

// prompt renders the planner's prompt for the queue as it is and the feedback of the last
// rejection.
func (r *runner) prompt(existing *queue.Doc, feedback string) (string, error) {
	o := r.o
	in := prompts.PlannerInput{
		PRDPath:   o.PRDPath,
		PRD:       string(o.PRD),
		PlanPath:  o.Plan.Path,
		QueuePath: o.Layout.Tasks(),
		Existing:  existing.IDs(),
		PlanFile:  r.scratch,
		Findings:  feedback,
	}
	mapped := map[string]bool{}
	for _, t := range existing.Tasks() {
		if t.Kind == queue.KindTest {
			for _, id := range t.TestIDs {
				mapped[id] = true
			}
		}
	}
	about := testNames(o.Plan.Path)
	for _, c := range o.Plan.Categories {
		pc := prompts.PlannerCategory{Name: c.Name}
		for _, t := range c.Tests {
			if mapped[t.ID] {
				in.Mapped++
				continue
			}
			a := about[t.ID]
			pc.Tests = append(pc.Tests, prompts.PlannerTest{ID: t.ID, Name: a.name, Priority: a.priority})
		}
		if len(pc.Tests) > 0 {
			in.Categories = append(in.Categories, pc)
		}
	}
	return prompts.RenderPlanner(in, filepath.Join(o.Layout.Dir(), "prompts"))
}

// A testAbout is what the plan says of a test besides its ID.
type testAbout struct{ name, priority string }

// testNames reads the names and priorities of the plan's tests, which queue.Plan skips, for
// the prompt. A plan whose tests say other things, or nothing, gives what it can.
func testNames(path string) map[string]testAbout {
	var plan struct {
		Tests map[string][]map[string]any `json:"tests"`
	}
	out := map[string]testAbout{}
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &plan) != nil {
		return out
	}
	for _, tests := range plan.Tests {
		for _, t := range tests {
			id, _ := t["id"].(string)
			name, _ := t["name"].(string)
			prio, _ := t["priority"].(string)
			out[id] = testAbout{name: oneLine(name), priority: oneLine(prio)}
		}
	}
	return out
}

// oneLine keeps a name on one line of the prompt's list.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// sandbox returns the jail of the planner, the agent called name that runs argv for the
// round whose folder is dir: the profile of every agent (SPEC §15.2: an empty home, its
// program's state in a private folder of the round, a cleared environment with config
// agent_env, no host sockets) but for its desk, the person's tree, which it reads: the
// tree read-only, its git folder and the user's configuration folder hidden, the scratch
// file's folder writable.
func (r *runner) sandbox(name string, argv []string, dir string) *agents.Sandbox {
	if !r.o.Sandbox {
		return nil
	}
	config := filepath.Join(dir, "agent-state")
	_ = os.RemoveAll(config)
	sb := &agents.Sandbox{Dir: r.o.Layout.Root, ReadOnlyDir: true, Writable: []string{filepath.Dir(r.scratch)},
		Program: agents.ProgramOf(name, argv), Config: config, Pass: r.o.Config.AgentEnv}
	if out, err := exec.Command("git", "-C", r.o.Layout.Root, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir").Output(); err == nil {
		sb.Hide = strings.Fields(string(out))
	}
	if cfg, err := os.UserConfigDir(); err == nil {
		sb.Hide = append(sb.Hide, cfg)
	}
	// Its inputs stay readable where they live, even in the temporary folder (private in
	// the sandbox): the requirements' and the plan's folders, and its own program's.
	read := []string{r.o.PRDPath, r.o.Plan.Path}
	if len(argv) > 0 && filepath.IsAbs(argv[0]) {
		read = append(read, argv[0])
	}
	for _, p := range read {
		if abs, err := filepath.Abs(p); err == nil && strings.HasPrefix(abs, "/tmp/") {
			if dir := filepath.Dir(abs); !slices.Contains(sb.ReadOnly, dir) {
				sb.ReadOnly = append(sb.ReadOnly, dir)
			}
		}
	}
	for _, d := range r.o.Config.SandboxWritable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.o.Layout.Root, d)
		}
		sb.Writable = append(sb.Writable, d)
	}
	for _, d := range r.o.Config.SandboxReadable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.o.Layout.Root, d)
		}
		sb.ReadOnly = append(sb.ReadOnly, d)
	}
	// The toolchains and programs of the home folder stay readable in the empty home, as
	// in the gate's sandbox.
	sb.ReadOnly = append(sb.ReadOnly, gate.Toolchains(os.Environ())...)
	if home, err := os.UserHomeDir(); err == nil {
		sb.Home = home
	}
	return sb
}

// ErrAgent matches, with errors.Is, an agent that cannot start: an unknown name, no command,
// a program that is not installed. It is found before any round runs.
var ErrAgent = errors.New("agent cannot start")

// checkAgents checks every agent the rounds could get (the ladder's, by round number).
func checkAgents(o Options) error {
	seen := map[string]bool{}
	for n := 1; n <= o.MaxRetries+1; n++ {
		name := o.Agent
		if name == "" {
			name = o.Config.AgentFor(n)
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		argv, _, err := command(o.Config, name)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrAgent, err)
		}
		program := argv[0]
		if strings.Contains(program, "/") && !filepath.IsAbs(program) {
			program = filepath.Join(o.Layout.Root, program)
		}
		if _, err := exec.LookPath(program); err != nil {
			return fmt.Errorf("%w: agent %s: program %q is not installed (%v)", ErrAgent, name, argv[0], err)
		}
	}
	return nil
}

// command returns the agent's command line and adapter. The planner gets the model of
// complex tasks.
func command(cfg *config.Config, name string) ([]string, agents.Adapter, error) {
	configured := map[string][]string{}
	for k, v := range cfg.Agents {
		configured[k] = v.Command
	}
	ad, err := agents.Lookup(name, configured)
	if err != nil {
		return nil, nil, err
	}
	argv := ad.Command(agents.ModelOptions{Model: cfg.Model("complex"), MaxTurns: cfg.MaxTurns})
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, fmt.Errorf("agent %s has no command: give it one under agents: in config.yaml", name)
	}
	return argv, ad, nil
}

// guarded lists the files a planner that wrote out of place gets put back: the queue
// files, the session state, the config, and the inputs.
func (r *runner) guarded() []string {
	l := r.o.Layout
	out := []string{l.Tasks(), l.Issues(), l.Session(), l.Config(), r.o.Plan.Path}
	if p, err := filepath.Abs(r.o.PRDPath); err == nil {
		out = append(out, p)
	}
	return out
}

// A keptFile is a guarded file as it was before a round: its bytes and mode, or that it did
// not exist.
type keptFile struct {
	data   []byte
	mode   fs.FileMode
	exists bool
}

func keepFiles(paths []string) map[string]keptFile {
	out := map[string]keptFile{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			out[p] = keptFile{}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		out[p] = keptFile{data: b, mode: info.Mode().Perm(), exists: true}
	}
	return out
}

// restore puts back each kept file that differs now. The planner's version of it is kept in
// the round's folder, under refused/, so that nothing is lost.
func restore(kept map[string]keptFile, roundDir string) error {
	paths := make([]string, 0, len(kept))
	for p := range kept {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		k := kept[p]
		now, err := os.ReadFile(p)
		exists := err == nil
		if exists == k.exists && bytes.Equal(now, k.data) {
			continue
		}
		if exists {
			aside := filepath.Join(roundDir, "refused", filepath.Base(p))
			if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(aside, now, 0o644); err != nil {
				return err
			}
		}
		if !k.exists {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err := writeAtomic(p, k.data, k.mode); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data to path by a temp file in the same folder, fsynced and renamed
// over it.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// accept writes the accepted output: the queue re-read under the lock, the verdict made
// again on its bytes of now (a person may have edited it since the round began), and the
// new tasks and the matrix applied only if it still passes.
func (r *runner) accept(ctx context.Context, res *Result, v *Verdict) error {
	n := len(res.Rounds)
	res.New, res.Coverage, res.Queue = v.New, v.Coverage, v.Candidate
	if r.o.DryRun {
		res.Outcome = DryRun
		r.event(n, "accepted", fmt.Sprintf("%d new tasks, coverage %s (dry run: nothing written)", len(v.New), v.Coverage.Summary()))
		return nil
	}
	src, err := os.ReadFile(r.scratch)
	if err != nil {
		return err
	}
	candidate := filepath.Join(res.Rounds[n-1].Dir, "task_queue.md")
	var late *Verdict
	_, err = queue.Update(ctx, r.o.Layout.Tasks(), queue.Tasks, func(d *queue.Doc) ([]queue.Op, error) {
		late = Judge(d, r.scratch, src, r.o.Plan, candidate)
		if !late.OK() {
			return nil, errChangedMeanwhile
		}
		return late.ops, nil
	})
	if errors.Is(err, errChangedMeanwhile) {
		res.Outcome = Halted
		res.Rounds[n-1].Findings = late.Findings
		res.Reason = "the task queue changed while the planner worked, and its tasks no longer pass with it"
		return r.halt(res)
	}
	if err != nil {
		return err
	}
	res.Outcome, res.New, res.Coverage = Written, late.New, late.Coverage
	if res.Queue, err = os.ReadFile(r.o.Layout.Tasks()); err != nil {
		return err
	}
	r.event(n, "accepted", fmt.Sprintf("%d new tasks appended to %s, coverage %s", len(late.New), r.o.Layout.Tasks(), late.Coverage.Summary()))
	return nil
}

var errChangedMeanwhile = errors.New("queue changed meanwhile")
