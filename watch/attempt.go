package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/cost"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/internal/ownfile"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/tdd"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// An attempt is one run of one task's agent, and the value that carries it along its path:
// launch (run.go) fills in its task, slot, base and agent; makeCandidate (candidate.go) its
// candidate and changes; the gate (judge.go) its verdict; landing (land.go) its commit; and
// its usage is added as its runs end (cost.go). finish (finish.go) lists the stages in order.
type attempt struct {
	id      string
	n       int
	dir     string
	task    queue.Task
	agent   string
	adapter agents.Adapter // nil for an adopted agent
	argv    []string
	testCmd string // the task's test command when the attempt started
	// seed is the commit a re-emit attempt's agent on a worker starts from (seedReemit):
	// the work of the attempt it re-emits, one commit on the base.
	seed string
	// depTests are the TEST tasks a BUILD task depends on: their RED manifests feed its gate.
	depTests []string
	// mirror is the readable copy of the attempt folder, under .orchestrator/runs; dir,
	// in the orchestrator's state, is the one the gate and recovery trust.
	mirror string
	// copied holds the stamp of each file of the folder as its readable copy was last
	// made (copyOut): a file not changed since is not copied again.
	copiedMu sync.Mutex
	copied   map[string]fileStamp
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
	candidate string
	onto      string
	changes   []worktree.Change
	// patched is closed once changes.diff is written (writePatch); nil before.
	patched    <-chan struct{}
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
	// redsAhead are the candidates of TEST tasks ahead of it in the merge queue, which its
	// gate's tree holds though they have not landed (owedTests).
	redsAhead []string
	// fresh is what the verdict's run of the whole suite adds to the baseline once the
	// candidate lands (growBaseline); nil without such a run.
	fresh      *testrun.Baseline
	gateOutput string // raw output of the command that failed the gate
	proc       *agents.Process
	pid        int  // for an adopted agent
	adopted    bool // an agent of an earlier run that crash recovery waited for
	start      uint64
	started    time.Time
	// remote is the run of its agent on a worker (remote.go); nil for a local agent.
	remote *remoteRun

	// cycle is the task's place in a TDD cycle (nil for other tasks); final is the
	// agent's final message, once read.
	cycle *tdd.Place
	final string

	graceTimer *time.Timer // set when its marker is seen
	timeout    *time.Timer
	stopReason string

	// What its agent runs spent, and a rate limit its program reported (cost.go).
	usage     []cost.Run
	usageRead bool
	limit     *agents.RateLimit

	// ahead is closed once makeAhead has made the files the attempt's decision writes.
	ahead chan struct{}

	// stages are how long each stage after its agent's run took (timed), for its record;
	// a gate the merge queue runs beside the loop adds its own (addStage).
	stagesMu sync.Mutex
	stages   []StageTime
}

// A StageTime is how long one stage of an attempt's path took, in milliseconds: the
// record's answer to where the time between an agent's end and its task's status went
// (end_run, candidate, pre_checks, gate, review, landing).
type StageTime struct {
	Stage string  `json:"stage"`
	MS    float64 `json:"ms"`
}

// timed starts timing stage; the function it returns ends it. A stage that runs twice (a
// gate run again on a new head) is listed twice.
func (a *attempt) timed(stage string) func() {
	start := time.Now()
	return func() { a.addStage(stage, time.Since(start)) }
}

// addStage lists stage as having taken d. A gate the merge queue runs beside the loop adds
// its own.
func (a *attempt) addStage(stage string, d time.Duration) {
	a.stagesMu.Lock()
	defer a.stagesMu.Unlock()
	a.stages = append(a.stages, StageTime{stage, float64(d.Microseconds()) / 1000})
}

// readTask fills in what the attempt keeps of its task's record in tasks: its test
// command, the TEST tasks it depends on, its title, prose and complexity, its place in a
// TDD cycle.
func (a *attempt) readTask(cfg *config.Config, tasks *queue.Doc) {
	rec := a.task.Record
	a.testCmd = testCommand(cfg, tasks, rec)
	a.depTests = depTests(tasks, a.task)
	a.title = tasks.TitleText(rec)
	a.body = strings.TrimSpace(tasks.ProseText(rec))
	a.complexity = tasks.Get(rec, "Complexity")
	a.setCycle(tasks)
}

// ref is the ref of the attempt's candidate, which keeps it for inspection (and from git's
// garbage collection) wherever it is rebased.
func (a *attempt) ref() string { return fmt.Sprintf("refs/orchestrator/attempts/%s/%d", a.id, a.n) }

// rebaseOnto rebases commit cand of attempt a onto commit onto (a *worktree.ConflictError
// naming the paths when it does not apply).
func (r *runner) rebaseOnto(ctx context.Context, a *attempt, cand, onto string) (string, error) {
	return r.repo.Rebase(ctx, cand, onto, fmt.Sprintf("%s attempt %d (candidate, on %.12s)\n", a.id, a.n, onto))
}

// unchanged reports whether the attempt's candidate changes nothing: it is its base, or,
// moved onto the integration head before its gate, the head itself.
func (a *attempt) unchanged() bool {
	return a.candidate == a.base || a.onto != "" && a.candidate == a.onto
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
	Usage []cost.Run    `json:"usage,omitempty"`
	Spent *agents.Usage `json:"spent,omitempty"`
	// Remote says the agent runs on a worker (SPEC §18), Worker which one, once known.
	Remote bool   `json:"remote,omitempty"`
	Worker string `json:"worker,omitempty"`
	// Stages are how long each stage after the agent's run took, in order (timed).
	Stages []StageTime `json:"stages,omitempty"`
}

// record writes the attempt's record, result.json: sealed in the orchestrator's state, and
// its readable copy.
func (a *attempt) record(res result) {
	res = a.filled(res)
	b, _ := json.MarshalIndent(res, "", "  ")
	// The record the gate and recovery read is sealed; its readable copy is not.
	sealed, err := sealKey().SealJSON(seal.KindResult, b)
	if err != nil {
		sealed = b // no key: not evidence, but people still read it
	}
	a.writeEach("result.json", append(sealed, '\n'), append(b, '\n'))
}

// filled is res with what the attempt knows of itself, as its record holds it.
func (a *attempt) filled(res result) result {
	res.Task, res.Attempt, res.Agent = a.id, a.n, a.agent
	res.Command, res.PID, res.StartTime, res.Started = a.argv, a.pid, a.start, a.started
	res.Base, res.Candidate = a.base, a.candidate
	if a.slot != nil {
		res.Slot = a.slot.Name
	}
	if a.remote != nil {
		res.Remote, res.Worker = true, a.remote.worker
	}
	if len(a.usage) > 0 {
		res.Usage = a.usage
		spent := cost.Sum(res.Usage)
		res.Spent = &spent
	}
	a.stagesMu.Lock()
	res.Stages = slices.Clone(a.stages)
	a.stagesMu.Unlock()
	if !a.started.IsZero() && res.Outcome != "running" {
		res.Elapsed = time.Since(a.started).Round(time.Millisecond).String()
	}
	return res
}

// recordWithLog writes the attempt's record and its gate.log side by side: each is two
// files made (the record and its readable copy), which costs more than the rest of the
// stage that writes them.
func (a *attempt) recordWithLog(res result, log string) {
	logged := make(chan struct{})
	go func() {
		a.write("gate.log", []byte(log))
		close(logged)
	}()
	a.record(res)
	<-logged
}

// recording holds the attempt folders (in the orchestrator's state) whose record is being
// written beside the loop (recordBeside): a read of one waits for its write (readResult).
var recording sync.Map // folder -> chan struct{}, closed once written

// recordHold, when a test sets it, holds each write recordBeside begins until it returns.
var recordHold func()

// recordBeside writes the attempt's record and its gate.log (recordWithLog) beside what the
// caller does next, and returns a function that waits for the write; it may be called
// again. Until the write is done, a read of the record waits for it.
func (a *attempt) recordBeside(res result, log string) (written func()) {
	done := make(chan struct{})
	recording.Store(a.dir, done)
	hold := recordHold
	go func() {
		if hold != nil {
			hold()
		}
		a.recordWithLog(res, log)
		recording.CompareAndDelete(a.dir, done)
		close(done)
	}()
	return func() { <-done }
}

// awaitRecord waits for the record of the attempt folder dir, when it is being written.
func awaitRecord(dir string) {
	if done, ok := recording.Load(dir); ok {
		<-done.(chan struct{})
	}
}

// write writes a file of the attempt folder, and its readable copy. The record is
// replaced whole (a temp file renamed over it): a crash never leaves half of one.
func (a *attempt) write(name string, b []byte) { a.writeEach(name, b, b) }

// writeEach writes a file of the attempt folder with state as its content, and its
// readable copy with mirror.
func (a *attempt) writeEach(name string, state, mirror []byte) {
	replace := func(dir string, b []byte) bool {
		tmp := filepath.Join(dir, tempName(name))
		return writeTemp(tmp, b) == nil && os.Rename(tmp, filepath.Join(dir, name)) == nil
	}
	switch {
	case a.dir == "" && a.mirror == "":
	case a.dir == "":
		replace(a.mirror, mirror)
	case a.mirror == "":
		replace(a.dir, state)
	default:
		// Side by side: creating a file costs more than the rest of most stages.
		copied := make(chan bool, 1)
		go func() { copied <- replace(a.mirror, mirror) }()
		if replace(a.dir, state) && <-copied {
			// Both written: the readable copy is up to date.
			if fi, err := os.Lstat(filepath.Join(a.dir, name)); err == nil {
				a.stampCopied(name, stampOf(fi))
			}
		}
	}
}

// tempName is the name of the temp file that a file of an attempt folder is written to
// before it takes the file's place (as gate.Manifest.Write names its own).
func tempName(name string) string { return "." + name + ".tmp" }

// isTemp reports whether a file of an attempt folder is a temp file (tempName).
func isTemp(name string) bool { return strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") }

// writeTemp writes b into the temp file tmp, made if need be (ownfile.Open: what is there
// that is not a plain file of its own is removed rather than written through).
func writeTemp(tmp string, b []byte) error {
	f, err := ownfile.Open(tmp, true, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// aheadFiles are the files of an attempt folder that the attempt's decision writes (in the
// orchestrator's state, and in the readable copy), on the path from its agent's marker to
// its task's status.
func (a *attempt) aheadFiles() (state, mirror []string) {
	mirror = []string{"result.json", "gate.log", "changes.diff"}
	handoff := "handoff-green.json" // the gate's (gate.Manifest.Write)
	if a.task.Kind == queue.KindTest {
		handoff = "handoff-red.json"
	}
	return append(slices.Clone(mirror), handoff), mirror
}

// makeAhead makes the temp files of aheadFiles while the attempt's agent runs. Making a
// file is finding a free inode for it, which costs up to a millisecond on a file system
// that many files were removed from (as on the disk of a machine that runs test suites);
// the decision then writes into files that are there, and makes none. A temp file that is
// there already is left as it is: one that holds a write under way is never touched.
func (a *attempt) makeAhead() {
	state, mirror := a.aheadFiles()
	for _, d := range []struct {
		dir   string
		names []string
	}{{a.dir, state}, {a.mirror, mirror}} {
		if d.dir == "" {
			continue
		}
		for _, name := range d.names {
			ownfile.Make(filepath.Join(d.dir, tempName(name)), 0o644)
		}
	}
}

// dropAhead removes what is left of the temp files of aheadFiles once the attempt is
// decided: those its decision did not use.
func (a *attempt) dropAhead() {
	if a.ahead != nil {
		<-a.ahead
	}
	if a.patched != nil {
		<-a.patched // changes.diff is written into its temp file beside the decision
	}
	state, mirror := a.aheadFiles()
	for _, name := range state {
		os.Remove(filepath.Join(a.dir, tempName(name)))
	}
	for _, name := range mirror {
		if a.mirror != "" {
			os.Remove(filepath.Join(a.mirror, tempName(name)))
		}
	}
}

// A fileStamp tells whether a file changed: its inode, size, modification and change
// times (a write or a rename over it changes one of them; the change time cannot be set
// back).
type fileStamp struct {
	ino, size, mtime, ctime int64
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino, st.ctime = int64(sys.Ino), sys.Ctim.Nano()
	}
	return st
}

func (a *attempt) stampCopied(name string, st fileStamp) {
	a.copiedMu.Lock()
	defer a.copiedMu.Unlock()
	if a.copied == nil {
		a.copied = map[string]fileStamp{}
	}
	a.copied[name] = st
}

func (a *attempt) copiedAs(name string) (fileStamp, bool) {
	a.copiedMu.Lock()
	defer a.copiedMu.Unlock()
	st, ok := a.copied[name]
	return st, ok
}

// copyOut brings the readable copy of the attempt folder up to date: the files the gate
// and the agent wrote there (hand-offs, agent.log) are copied once the attempt is decided.
func (a *attempt) copyOut() {
	if a.mirror == "" {
		return
	}
	if a.patched != nil {
		<-a.patched
	}
	entries, _ := os.ReadDir(a.dir)
	for _, e := range entries {
		if !e.Type().IsRegular() || isTemp(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		st := stampOf(fi)
		if was, ok := a.copiedAs(e.Name()); ok && was == st {
			continue // copied since it last changed
		}
		if b, err := os.ReadFile(filepath.Join(a.dir, e.Name())); err == nil {
			// Sealed records lose their seal: the copy is for people, never evidence.
			if os.WriteFile(filepath.Join(a.mirror, e.Name()), seal.Strip(b), 0o644) == nil {
				a.stampCopied(e.Name(), st)
			}
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
