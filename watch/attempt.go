package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/worktree"
)

// Why an attempt's agent was stopped before it ended on its own.
const (
	reasonTimeout     = "timeout"
	reasonAfterMarker = "after_marker" // it lingered past the grace period after its marker
	reasonPerson      = "person"       // a person set the task to another status
	reasonSignal      = "signal"       // the orchestrator was interrupted
)

// An attempt is one run of one task's agent.
type attempt struct {
	id      string
	n       int
	dir     string
	task    queue.Task
	agent   string
	adapter agents.Adapter // nil for an adopted agent
	argv    []string
	testCmd string // the task's test command when the attempt started
	// depTests are the TEST tasks a BUILD task depends on: their RED manifests feed its gate.
	depTests []string
	// mirror is the readable copy of the attempt folder, under .orchestrator/runs; dir,
	// in the orchestrator's state, is the one the gate and recovery trust.
	mirror string
	// slot is the attempt's worktree, base the integration head it started from.
	slot *worktree.Slot
	base string
	// config is the fingerprint of the repository's own configuration when the attempt
	// started (SPEC §15.2 item 4), compared when it ends and before its gate runs.
	config worktree.ConfigPrint
	// fatal, when set, stops the run once the attempt is recorded: its configuration
	// changed, or its gate's checkout is not the candidate (stopsRun).
	fatal error
	// candidate is the commit of what the agent changed (base itself when it changed
	// nothing), changes what git says it changed. onto, when set, is the integration head
	// the candidate was rebased onto before its gate (ontoHead): candidate's parent then.
	candidate  string
	onto       string
	changes    []worktree.Change
	strays     []string // files the agent left under .orchestrator/ that git ignores
	title      string   // the task's title, for the landed commit's subject
	body       string   // the task's prose, for the reviewer and the judge
	complexity string   // the task's Complexity, which picks the model
	// ruling is the reviewer's or the judge's pass, for the landed commit's trailers.
	ruling string
	// reviewTests: the change's test_tampered finding goes to the judge (SPEC §7.3), and
	// the gate runs the changed tests instead of refusing them.
	reviewTests bool
	verdict     *gate.Verdict // the gate's verdict on the candidate
	gateOutput  string        // raw output of the command that failed the gate
	proc        *agents.Process
	pid         int  // for an adopted agent
	adopted     bool // an agent of an earlier run that crash recovery waited for
	start       uint64
	started     time.Time

	// cycle is the task's place in a TDD cycle (nil for other tasks); final is the
	// agent's final message, once read.
	cycle *cycle
	final string

	graceTimer *time.Timer // set when its marker is seen
	timeout    *time.Timer
	stopReason string

	// What its agent runs spent, and a rate limit its program reported (cost.go).
	usage     []RunUsage
	usageRead bool
	limit     *agents.RateLimit
}

// unchanged reports whether the attempt's candidate changes nothing: it is its base, or,
// moved onto the integration head before its gate, the head itself.
func (a *attempt) unchanged() bool {
	return a.candidate == a.base || a.onto != "" && a.candidate == a.onto
}

// stop ends the attempt's whole process group: SIGTERM, then SIGKILL after grace. An
// adopted agent (not our child) is signalled only as far as it is proved to be the
// attempt's: see agents.StopAdopted.
//
// Either way, a descendant that left the agent's process group (setsid, a double fork) is
// found by the attempt folder in its environment and ended too, so that nothing the agent
// started changes files after it, or under the gate.
func (a *attempt) stop(grace time.Duration) {
	start := a.start
	if a.proc != nil {
		a.proc.Stop(grace)
	} else if !a.adopted {
		start = 0 // gone before we knew it: whatever carries its attempt folder is its
	}
	agents.StopAdopted(a.pid, start, "ORCHESTRATOR_ATTEMPT_DIR", a.dir, grace)
}

// finalText returns the agent's final message as its program reports it: from its output,
// or for an agent of an earlier run, from its log in the attempt folder. An agent program's own error
// (an API error, out of turns) is returned as an *agents.AgentError.
func (a *attempt) finalText() (string, error) {
	if a.adapter == nil {
		return "", nil
	}
	if a.proc != nil {
		return a.adapter.FinalText([]byte(a.proc.Stdout()))
	}
	// An agent of an earlier run: what it wrote is in its log.
	return a.adapter.FinalText([]byte(tail(filepath.Join(a.mirror, "agent.log"), agents.MaxStdout)))
}

// tail returns the last max bytes of the file at path ("" if it cannot be read).
func tail(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-limit, 0)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	return string(b[:n])
}

// result is an attempt's result.json. While the agent runs it says "running" and records
// the agent's PID and start time, so that a restarted orchestrator can tell whether that
// process still runs (crash recovery, SPEC §7.1).
type result struct {
	Task        string      `json:"task"`
	Attempt     int         `json:"attempt"`
	Agent       string      `json:"agent,omitempty"`
	Command     []string    `json:"command,omitempty"`
	PID         int         `json:"pid,omitempty"`
	StartTime   uint64      `json:"start_time,omitempty"`
	Started     time.Time   `json:"started,omitzero"`
	Slot        string      `json:"slot,omitempty"`
	Base        string      `json:"base,omitempty"`
	Candidate   string      `json:"candidate,omitempty"`
	Commit      string      `json:"commit,omitempty"`
	Claim       string      `json:"claim,omitempty"`
	Outcome     string      `json:"outcome"` // running, completed, failed, issue, blocked, stopped, interrupted, not_started, setup_error
	Type        string      `json:"failure_type,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Primary     string      `json:"primary_error,omitempty"`
	Message     string      `json:"message,omitempty"`
	FailingTest string      `json:"failing_test,omitempty"`
	File        string      `json:"file,omitempty"`
	ExitCode    *int        `json:"agent_exit_code,omitempty"`
	Gate        *gateResult `json:"gate,omitempty"`
	Elapsed     string      `json:"elapsed,omitempty"`
	// BudgetSpent marks the attempt that spent a TDD cycle task's budget (it halted or was
	// dropped): a person who sets the task going again gives it a new budget (tdd.go).
	BudgetSpent bool `json:"budget_spent,omitempty"`
	// Signature is the failure's signature (SPEC §8.1) and Retried whether the retry rules
	// retried it; Forgot lists the earlier attempts of another history whose failures its
	// decision stopped counting (forgotten), so that none is forgotten twice.
	Signature string `json:"signature,omitempty"`
	Retried   bool   `json:"retried,omitempty"`
	Forgot    []int  `json:"forgot,omitempty"`
	// Usage is what each agent run of the attempt spent, Spent their sum (SPEC §16).
	Usage []RunUsage    `json:"usage,omitempty"`
	Spent *agents.Usage `json:"spent,omitempty"`
}

func (a *attempt) record(res result) {
	res.Task, res.Attempt, res.Agent = a.id, a.n, a.agent
	res.Command, res.PID, res.StartTime, res.Started = a.argv, a.pid, a.start, a.started
	res.Base, res.Candidate = a.base, a.candidate
	if a.slot != nil {
		res.Slot = a.slot.Name
	}
	if len(a.usage) > 0 {
		res.Usage = a.usage
		spent := attemptUsage(res)
		res.Spent = &spent
	}
	if !a.started.IsZero() && res.Outcome != "running" {
		res.Elapsed = time.Since(a.started).Round(time.Millisecond).String()
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	// The record the gate and recovery read is sealed; its readable copy is not.
	sealed, err := sealKey().SealJSON(seal.KindResult, b)
	if err != nil {
		sealed = b // no key: not evidence, but people still read it
	}
	a.writeEach("result.json", append(sealed, '\n'), append(b, '\n'))
}

// write writes a file of the attempt folder, and its readable copy. The record is
// replaced whole (a temp file renamed over it): a crash never leaves half of one.
func (a *attempt) write(name string, b []byte) { a.writeEach(name, b, b) }

// writeEach writes a file of the attempt folder with state as its content, and its
// readable copy with mirror.
func (a *attempt) writeEach(name string, state, mirror []byte) {
	for _, w := range []struct {
		dir string
		b   []byte
	}{{a.dir, state}, {a.mirror, mirror}} {
		if w.dir == "" {
			continue
		}
		tmp := filepath.Join(w.dir, "."+name+".tmp")
		if os.WriteFile(tmp, w.b, 0o644) == nil {
			_ = os.Rename(tmp, filepath.Join(w.dir, name))
		}
	}
}

// copyOut brings the readable copy of the attempt folder up to date: the files the gate
// and the agent wrote there (hand-offs, agent.log) are copied once the attempt is decided.
func (a *attempt) copyOut() {
	if a.mirror == "" {
		return
	}
	entries, _ := os.ReadDir(a.dir)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(a.dir, e.Name())); err == nil {
			// Sealed records lose their seal: the copy is for people, never evidence.
			_ = os.WriteFile(filepath.Join(a.mirror, e.Name()), seal.Strip(b), 0o644)
		}
	}
}

// nextAttempt returns the number of the next attempt of a task: one more than the highest
// attempt folder.
func nextAttempt(runs, id string) int {
	return lastAttempt(runs, id) + 1
}

func lastAttempt(runs, id string) int {
	entries, _ := os.ReadDir(filepath.Join(runs, id))
	n := 0
	for _, e := range entries {
		if k, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && k > n {
			n = k
		}
	}
	return n
}

// launch begins an attempt of task t, whose Status advance has just set to in_progress:
// the attempt folder, its prompt, and the agent process.
func (r *runner) launch(ctx context.Context, tasks *queue.Doc, t queue.Task) error {
	l := r.o.Layout
	r.started[t.ID] = true
	if down := unreachableServices(tasks.Get(t.Record, "Required Services"), r.o.Config.Services); len(down) > 0 {
		// Not the agent's failure, and no attempt is used: a person starts the service
		// and sets the task back to pending.
		why := "required service unavailable: " + strings.Join(down, "; ")
		r.report.event(t.ID, "blocked", "no attempt used: "+why)
		_, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusBlocked, queue.SetField{ID: t.ID, Field: "Blocked-Reason", Value: why})
		return err
	}
	if w, ok := r.waitingCandidate(ctx, t.ID); ok {
		// Verified work that waited for the person's uncommitted changes: it lands with no
		// new agent run (SPEC §7.7), and spends nothing a budget counts.
		return r.landWaiting(ctx, tasks, t, w)
	}
	if why := r.overBudget(tasks, t); why != "" {
		return r.haltForBudget(ctx, tasks, t, why) // before the attempt, which would pass it
	}
	n := nextAttempt(r.runs, t.ID)
	a := &attempt{id: t.ID, n: n, dir: filepath.Join(r.runs, t.ID, strconv.Itoa(n)), mirror: filepath.Join(l.Runs(), t.ID, strconv.Itoa(n)), task: t, started: time.Now()}
	for _, d := range []string{a.dir, a.mirror} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	r.attempts++
	rec := t.Record
	a.testCmd = testCommand(r.o.Config, tasks, rec)
	a.depTests = depTests(tasks, t)
	a.title = tasks.TitleText(rec)
	a.body = strings.TrimSpace(proseBody(tasks, rec))
	a.complexity = tasks.Get(rec, "Complexity")
	a.setCycle(tasks)
	fail := func(reason, detail string) error {
		r.releaseSlot(a)
		a.write("gate.log", []byte("attempt could not start: "+detail+"\n"))
		res := result{Outcome: "failed", Reason: reason}
		a.record(res)
		ev := r.fieldsOf(a, res)
		r.report.eventWith(t.ID, "failed", reasonLine(n, "", "could not start ("+reason+"): "+detail, "", ev.GateLog), ev)
		_, err := r.setStatus(ctx, t.ID, queue.StatusInProgress, queue.StatusFailed)
		return err
	}
	// The agent's desk: a checkout of the integration head, all verified work and nothing
	// of any rejected attempt.
	if err := r.takeSlot(ctx, a); err != nil {
		return fail("worktree", err.Error())
	}
	if err := r.seedReemit(ctx, a); err != nil {
		return fail("worktree", err.Error())
	}
	// The repository's own configuration as the agent finds it: compared when it ends.
	config, err := r.repo.ConfigPrint(ctx)
	if err != nil {
		return fail("worktree", err.Error())
	}
	a.config = config
	root := r.projectDir(a.slot.Dir)
	prompt, err := renderPrompt(l, place{root: root, runs: r.runs, feedback: r.o.Config.RetryFeedback == "review"}, tasks, t, a.testCmd, n)
	if err != nil {
		return fail("prompt", err.Error())
	}
	a.write("prompt.md", []byte(prompt))
	if err := markers.Clear(l.Markers(), t.ID); err != nil {
		return err
	}
	a.agent = tasks.Get(rec, "Agent")
	if queue.IsEmpty(a.agent) {
		a.agent = r.o.Config.AgentFor(n)
	}
	argv, adapter, err := r.command(a.agent, tasks.Get(rec, "Complexity"))
	if err != nil {
		return fail("agent", err.Error())
	}
	if prevRes, ok := readResult(filepath.Join(r.runs, t.ID, strconv.Itoa(n-1))); ok && a.cycle != nil && reemitDue(r.runs, t.ID, n) && prevRes.Slot == a.slot.Name {
		// The re-emit prompt of mode D reaches the same session where the program can
		// resume one (in the same worktree folder: Claude Code keeps its sessions by
		// folder), so that the agent has the message it is asked to re-emit. Elsewhere it
		// starts afresh with that prompt alone.
		prev := []byte(tail(filepath.Join(l.Runs(), t.ID, strconv.Itoa(n-1), "agent.log"), agents.MaxStdout))
		if resume := agents.ResumeCommand(adapter.Name(), argv, prev); resume != nil {
			argv = resume
		}
	}
	a.adapter, a.argv = adapter, argv
	// Before the agent starts, the record says where it works: a restart after a crash
	// between here and the agent's first breath finds its worktree.
	a.record(result{Outcome: "starting"})
	markerDir, err := r.agentMarkers(a)
	if err != nil {
		return fail("agent", err.Error())
	}
	env := append(os.Environ(),
		"ORCHESTRATOR_TASK_ID="+t.ID,
		"ORCHESTRATOR_MARKER_DIR="+markerDir,
		"ORCHESTRATOR_ATTEMPT_DIR="+a.dir,
		"ORCHESTRATOR_ROOT="+root,
	)
	p, err := agents.Start(agents.StartOptions{
		// The log is for people to follow, in the readable copy; what the gate trusts is
		// not in it (a result block is a claim, which the gate checks).
		Command: argv, Dir: root, Prompt: prompt, Env: env, LogPath: filepath.Join(a.mirror, "agent.log"),
		Sandbox: r.sandbox(a, a.agent, argv, a.slot.Dir, a.dir, markerDir),
	})
	if err != nil {
		return fail("agent", fmt.Sprintf("start %s: %v", strings.Join(argv, " "), err))
	}
	a.proc, a.pid, a.start = p, p.PID(), p.StartTime()
	a.record(result{Outcome: "running"})
	r.report.eventWith(t.ID, "started", fmt.Sprintf("attempt %d, %s task, agent %s (pid %d)", n, t.Kind, a.agent, a.pid), eventFields{Attempt: n, Agent: a.agent})
	r.track(a, p.Done())
	return nil
}

// track makes the loop hear of the attempt's end and of its timeout.
func (r *runner) track(a *attempt, done <-chan struct{}) {
	r.running[a.id] = a
	left := r.o.Config.TaskTimeout.Duration - time.Since(a.started)
	a.timeout = time.AfterFunc(max(left, 0), func() { r.timeouts <- a })
	go func() {
		<-done
		r.finished <- a
	}()
	// A marker written before the watch on the folder saw it (or while we were down).
	r.markerSeen(a.id)
}

// command builds the agent's argument vector.
func (r *runner) command(name, complexity string) ([]string, agents.Adapter, error) {
	if _, configured := r.o.Config.Agents[agents.Replay]; name == agents.Replay && !configured {
		exe := r.o.Executable
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				return nil, nil, err
			}
		}
		dir := r.o.Config.ReplayDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.o.Layout.Root, dir)
		}
		ad := agents.NewReplay(exe, dir)
		return ad.Command(agents.ModelOptions{}), ad, nil
	}
	configured := map[string][]string{}
	for k, v := range r.o.Config.Agents {
		configured[k] = v.Command
	}
	ad, err := agents.Lookup(name, configured)
	if err != nil {
		return nil, nil, err
	}
	argv := ad.Command(agents.ModelOptions{Model: r.o.Config.Model(strings.ToLower(strings.TrimSpace(complexity))), MaxTurns: r.o.Config.MaxTurns})
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("agent %s has no command", name)
	}
	return argv, ad, nil
}

// A place is where a prompt's files come from: root, the tree the agent will work in, and
// runs, the attempt records of the orchestrator's state.
type place struct {
	root, runs string
	// feedback gives the judge's reasons for rejecting the previous attempt to the next
	// implementer (config retry_feedback: review).
	feedback bool
}

// placeOf is the place of `orchestrator prompt`: the person's tree, and the repository's
// attempt records (the readable copies outside a git repository).
func placeOf(l queue.Layout) place {
	if repo, err := worktree.Open(context.Background(), l.Root); err == nil {
		return place{root: l.Root, runs: stateRuns(repo)}
	}
	return place{root: l.Root, runs: l.Runs()}
}

// renderPrompt is shared with `orchestrator prompt ID`, which prints exactly this.
func renderPrompt(l queue.Layout, at place, tasks *queue.Doc, t queue.Task, testCmd string, attempt int) (string, error) {
	if text, ok, err := cyclePrompt(l, at, tasks, t, testCmd, attempt); ok {
		return text, err
	}
	rec := t.Record
	in := prompts.Input{
		Role:           prompts.RoleFor(t.Kind.String()),
		TaskID:         t.ID,
		Title:          tasks.TitleText(rec),
		Body:           strings.TrimSpace(proseBody(tasks, rec)),
		Root:           at.root,
		TestCommand:    testCmd,
		Attempt:        attempt,
		LastGateOutput: lastGateOutput(at.runs, t.ID, attempt),
	}
	if at.feedback {
		in.Feedback = judgeReasons(at.runs, t.ID, attempt)
	}
	for _, f := range tasks.Fields(rec) {
		in.Fields = append(in.Fields, prompts.Field{Name: tasks.Name(f), Value: tasks.Value(f)})
	}
	in.Allowlist = allowlist(at, tasks, t)
	in.Include = in.Allowlist
	return prompts.Render(in, filepath.Join(l.Dir(), "prompts"))
}

// PromptFor renders the prompt task id would get if it started now.
func PromptFor(l queue.Layout, cfg *config.Config, id string) (string, error) {
	info, err := PromptInfoFor(l, cfg, id)
	if err != nil {
		return "", err
	}
	return info.Prompt, nil
}

// proseBody returns the record's text after its field tables: objective, criteria, notes.
func proseBody(d *queue.Doc, rec *queue.Record) string {
	body := d.Body(rec)
	var out []string
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "|") {
			continue // the field table is given as fields
		}
		out = append(out, strings.TrimRight(line, "\r"))
	}
	return strings.Join(out, "\n")
}

// allowlist returns the files a task's prompt may include: its own Test File, and for a
// task that builds on TEST tasks, the test files those wrote: the test_files of their RED
// hand-offs, and their Test File fields. Only files that exist are listed. Implementation
// files are never on a test writer's list.
func allowlist(at place, tasks *queue.Doc, t queue.Task) []string {
	var list []string
	seen := map[string]bool{}
	add := func(paths []string) {
		for _, p := range paths {
			p = filepath.ToSlash(filepath.Clean(p))
			if seen[p] || strings.HasPrefix(p, "../") || filepath.IsAbs(p) {
				continue
			}
			if fi, err := os.Stat(filepath.Join(at.root, p)); err == nil && fi.Mode().IsRegular() {
				seen[p] = true
				list = append(list, p)
			}
		}
	}
	add(queue.List(tasks.Get(t.Record, "Test File")))
	if t.Kind != queue.KindTest {
		deps := depTests(tasks, t)
		add(redTestFiles(at.runs, deps))
		for _, dep := range deps {
			rec, _ := tasks.Record(dep)
			add(queue.List(tasks.Get(rec, "Test File")))
		}
	}
	sort.Strings(list)
	return list
}

// lastGateOutput returns the raw output of the failed gate of the attempt before attempt,
// if that one failed at its gate.
func lastGateOutput(runs, id string, attempt int) string {
	n := attempt - 1
	if n < 1 {
		return ""
	}
	dir := filepath.Join(runs, id, strconv.Itoa(n))
	res, ok := readResult(dir)
	if !ok || res.Outcome != "failed" || res.Gate == nil || res.Gate.Pass {
		// A change the judge failed passed its tests: there is no failed check to show.
		return ""
	}
	log, err := os.ReadFile(filepath.Join(dir, "gate.log"))
	if err != nil {
		return ""
	}
	return gate.LastOutput(string(log))
}

// depTests returns the TEST tasks t depends on, directly or through other tasks (SPEC
// §7.3: every RED test of them must pass), in the order they are first reached.
func depTests(tasks *queue.Doc, t queue.Task) []string {
	var out []string
	seen := map[string]bool{t.ID: true}
	var walk func(deps []string)
	walk = func(deps []string) {
		for _, dep := range deps {
			if seen[dep] {
				continue
			}
			seen[dep] = true
			rec, ok := tasks.Record(dep)
			if !ok {
				continue
			}
			d := tasks.Task(rec)
			if d.Kind == queue.KindTest {
				out = append(out, dep)
			}
			walk(d.Deps)
		}
	}
	walk(t.Deps)
	return out
}
