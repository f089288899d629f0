package retry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// Now is the clock of the package, for what has no time of its own (ResetRun, a Failure
// whose At is zero). Tests replace it.
var Now = time.Now

// A Failure is one failed attempt of a task, as its gate saw it.
type Failure struct {
	Task         string    // the task's ID
	Category     string    // the task's Category; read from the task queue when empty
	Type         Type      // what failed
	PrimaryError string    // the first error line; PrimaryError(Output) when empty
	FailingTest  string    // the first failing test; FailingTest(Output) when empty
	File         string    // the file concerned, relative to the repository, if any
	Output       string    // the gate's raw output
	Summary      string    // one line for the issue; made from Task, Type and PrimaryError when empty
	At           time.Time // when it failed; Now() when zero
	// Halt, when set, halts the task with this reason whatever the retry budget says: the
	// caller's own rule, such as the third false success (SPEC §10.3).
	Halt string
	// Stop, when set, fails the task with this reason and retries it no more, without
	// halting it: the caller's own budget is spent, and what failed is not needed to go on
	// (a TDD cycle's refactor, SPEC §9).
	Stop string
	// Mode, Role and AC say, for a task of a TDD cycle, its failure mode (A to E), the role
	// of its agent and the acceptance criterion (SPEC §9); LastBlock is the agent's last
	// tdd-result block, as it wrote it. The halt report names them.
	Mode, Role, AC, LastBlock string
	// Forget are the task's earlier failures that no longer count toward its retry state:
	// they happened on commits the integration branch no longer holds (a person reset or
	// rewrote its history), and a reset inherits no halt of the history it abandoned.
	// Each signature leaves the task's signature history once, and each one that was
	// retried gives its retry back. When nothing of the history is left, a halt of the
	// open issue was the abandoned history's too: it no longer holds.
	Forget []Forgotten
}

// A Forgotten failure is one of Failure.Forget: its signature, and whether the retry
// rules retried it (it used one of Retry-Count).
type Forgotten struct {
	Signature string
	Retried   bool
}

// Limits are the retry limits of SPEC §8.3 (config.Retries holds them). A zero field means
// its default: 10 retries per task, a halt at the third identical failure, 15 auto-retries
// per run.
type Limits struct {
	MaxRetries        int // retries of one task (an issue's Max-Retries overrides it)
	SameSignatureHalt int // how many times one signature may occur for a task before it halts
	GlobalCap         int // auto-retries of all tasks in one run
}

// DefaultLimits returns the limits of SPEC §8.3.
func DefaultLimits() Limits { return Limits{MaxRetries: 10, SameSignatureHalt: 3, GlobalCap: 15} }

func (lim Limits) orDefaults() Limits {
	def := DefaultLimits()
	if lim.MaxRetries <= 0 {
		lim.MaxRetries = def.MaxRetries
	}
	if lim.SameSignatureHalt <= 0 {
		lim.SameSignatureHalt = def.SameSignatureHalt
	}
	if lim.GlobalCap <= 0 {
		lim.GlobalCap = def.GlobalCap
	}
	return lim
}

// A Decision is what Record decided about a failed attempt and wrote to the queues.
type Decision struct {
	Retry bool // the task is pending again, to be retried now
	Halt  bool // the task halted: it needs a person (watch --once exits 3)
	// Deferred means the retry was due but the run's global cap was reached: the task
	// is failed for this run, with Retry-Deferred saying why, and the next run retries it
	// (Requeue). It is not halted.
	Deferred    bool
	HaltReason  string // why it halted, as written in Halt-Reason
	Signature   string // the failure's signature (SPEC §8.1)
	RepeatCount int    // Signature-Repeat-Count: earlier occurrences of Signature for the task
	RetryCount  int    // Retry-Count as written: retries used, this one included
	IssueID     string // the task's open issue, new or updated

	Status           string   // the task's new Status: pending, failed or halted
	Reason           string   // one line that says why, for the loop's report
	MaxRetries       int      // the task's retry limit
	Signatures       []string // the signatures of the task's failures, oldest first, this one last
	TotalAutoRetries int      // the run's auto-retries after this decision
	// unhalt clears the open issue's halt, which was of an abandoned history
	// (Failure.Forget), unless this failure halts it again.
	unhalt bool
}

// Halt reasons, as written in Halt-Reason (SPEC §8.4).
func haltRepeated(n int) string   { return fmt.Sprintf("Repeated identical failure (%dx)", n) }
func haltMaxRetries(n int) string { return fmt.Sprintf("Max retries reached (%d)", n) }
func haltGlobalCap(n int) string  { return fmt.Sprintf("Global auto-retry cap reached (%d)", n) }

// testHookBeforeTaskWrite, when set, runs between the issue's write and the task's: tests
// edit the task there as a person would.
var testHookBeforeTaskWrite func()

// mu serializes Record, Resolve, ResetRun and Convert within the process: a decision reads
// three files and writes them one after another. (Between processes, the run's counter is
// read and raised under the queue lock, so the global cap holds.)
var mu sync.Mutex

// NoAutoRetryPath returns the file whose presence turns auto-retry off (SPEC §8.3).
func NoAutoRetryPath(l queue.Layout) string { return filepath.Join(l.Dir(), "no_auto_retry") }

// Record records a failed attempt (SPEC §8.2–§8.4) and decides whether the task is retried.
//
// It appends the task's issue to the issue queue, or updates its one open issue (same Source
// Task, Status not completed, wont_fix or duplicate, not handed to another task by Task
// Ref): signature, Previous-Signatures, Signature-Repeat-Count, Retry-Count, Max-Retries. A
// new issue has the fields of SPEC §8.2 in that order, a **Summary:** and the raw output
// under **Failure Details:**, and goes below the "<!-- Issues are appended below this line
// -->" line where the file has one. The Queue Status counts are kept current.
//
// The retry state is the open issue's fields (the task's where the issue has none, as for a
// new issue or a task made by `issues convert`). The task is retried when all of SPEC §8.3
// hold: the issue's Auto-Retry is not false and it is not Halted; no
// .orchestrator/no_auto_retry file; the signature occurred fewer than SameSignatureHalt
// times for the task; Retry-Count < Max-Retries; and the run's total_auto_retries in
// session_state.md is below GlobalCap (it is raised in the same locked write). A repeated
// signature, Max-Retries or the global cap halts the task (§8.4); a turned-off auto-retry
// only fails it. A missing issue_queue.md or session_state.md is made from the template
// `orchestrator init` writes.
//
// The task then gets Status pending (retry: Retry-Count + 1), failed, or halted (with Halted
// and Halt-Reason; the issue also gets Auto-Retry false), and the retry fields and
// Remediation. Status is changed only if it is still what it was when Record read it: if a
// person set it meanwhile, their value stays and Record returns an error that matches
// queue.ErrConflict, with the Decision as recorded in the issue but Retry false (the run's
// counter is not raised).
func Record(ctx context.Context, l queue.Layout, f Failure, lim Limits) (Decision, error) {
	d, status, err := Prepare(ctx, l, f, lim)
	if err != nil {
		return d, err
	}
	if testHookBeforeTaskWrite != nil {
		testHookBeforeTaskWrite()
	}
	if err := writeTask(ctx, l, f.Task, status, &d); err != nil {
		return d, errors.Join(err, d.GiveBack(ctx, l))
	}
	return d, nil
}

// Prepare is Record without the task's write: it decides, records the issue and takes the
// run's auto-retry, and returns the decision and the task's Status when it read it. The
// caller writes the task in its own write of the task queue, with the other changes it
// makes there: the Status (d.Status) and d.Ops, if the task's Status is still what it was.
// If that write does not happen (a person's edit won), the caller gives the auto-retry back
// with d.GiveBack.
func Prepare(ctx context.Context, l queue.Layout, f Failure, lim Limits) (Decision, string, error) {
	mu.Lock()
	defer mu.Unlock()
	lim = lim.orDefaults()
	if !queue.ValidID(f.Task) {
		return Decision{}, "", fmt.Errorf("record failure: %q is not a task ID", f.Task)
	}
	if _, err := ParseType(string(f.Type)); err != nil {
		return Decision{}, "", fmt.Errorf("record failure of %s: %w", f.Task, err)
	}
	if f.At.IsZero() {
		f.At = Now()
	}
	f.At = f.At.UTC().Truncate(time.Second)
	if f.PrimaryError == "" {
		f.PrimaryError = PrimaryError(f.Output)
	}
	if f.FailingTest == "" {
		f.FailingTest = FailingTest(f.Output)
	}
	sig := Signature(f.Type, f.PrimaryError, f.FailingTest, f.File)

	tasks, err := queue.LoadOnly(l.Tasks(), f.Task)
	if err != nil {
		return Decision{}, "", err
	}
	tr, ok := tasks.Record(f.Task)
	if !ok {
		return Decision{}, "", fmt.Errorf("%s: %w: %s", l.Tasks(), queue.ErrNotFound, f.Task)
	}
	taskStatus := tasks.Get(tr, "Status")
	if f.Category == "" {
		f.Category = tasks.Get(tr, "Category")
	}
	if err := ensureFile(l.Issues(), "issue_queue.md"); err != nil {
		return Decision{}, "", err
	}
	issues, err := queue.Load(l.Issues())
	if err != nil {
		return Decision{}, "", err
	}
	ir := openIssue(issues, f.Task)
	st, err := readState(tasks, tr, issues, ir)
	if err != nil {
		return Decision{}, "", err
	}

	st = st.forget(f.Forget)
	d := decide(st, sig, lim, fileExists(NoAutoRetryPath(l)), ir)
	d.unhalt = st.unhalt
	if f.Halt != "" && !d.Halt {
		if d.Retry {
			d.RetryCount--
		}
		d.Retry, d.Halt, d.HaltReason, d.Status = false, true, f.Halt, queue.StatusHalted
		d.Reason = "halted: " + f.Halt
	}
	if f.Stop != "" && !d.Halt {
		if d.Retry {
			d.RetryCount--
		}
		d.Retry, d.Status, d.Reason = false, queue.StatusFailed, "failed: "+f.Stop
	}
	if d.Retry {
		total, ok, err := takeAutoRetry(ctx, l, lim.GlobalCap, f, d)
		if err != nil {
			return Decision{}, "", err
		}
		d.TotalAutoRetries = total
		if !ok {
			// No more auto-retries this run (SPEC §8.4): the retry waits for the next run.
			d.Retry, d.Deferred, d.Status = false, true, queue.StatusFailed
			d.HaltReason = haltGlobalCap(lim.GlobalCap)
			d.Reason = fmt.Sprintf("failed: the run's %d auto-retries reached the global cap; no more auto-retries this run, the next run retries it", total)
		}
	} else if total, err := AutoRetries(l); err == nil {
		d.TotalAutoRetries = total
	}
	if err := writeIssue(ctx, l, f, &d); err != nil {
		return Decision{}, "", errors.Join(err, d.GiveBack(ctx, l))
	}
	return d, taskStatus, nil
}

// GiveBack returns the run's auto-retry that d took, for a retry that does not happen (the
// task's write did not: a person's edit won). It does nothing for a decision that took
// none, and runs even when ctx is done.
func (d *Decision) GiveBack(ctx context.Context, l queue.Layout) error {
	if !d.Retry {
		return nil
	}
	d.TotalAutoRetries--
	d.Retry = false
	return giveBackAutoRetry(context.WithoutCancel(ctx), l)
}

// state is the retry state of a task before a failure.
type state struct {
	retryCount     int
	maxRetries     int
	haveMaxRetries bool
	signature      string   // Failure-Signature: the last failure's
	previous       []string // Previous-Signatures: the ones before it
	autoRetryOff   bool     // Auto-Retry is false
	halted         bool
	unhalt         bool // the open issue's halt was the abandoned history's (forget)
}

// forget takes the failures of another history out of the state (Failure.Forget): one
// occurrence of each signature, oldest first, and the retries they used. When no
// signature is left, the open issue's halt (and the Auto-Retry false a halt writes) was of
// that history too.
func (st state) forget(list []Forgotten) state {
	if len(list) == 0 {
		return st
	}
	history := slices.Clone(st.previous)
	if st.signature != "" {
		history = append(history, st.signature)
	}
	for _, f := range list {
		if i := slices.Index(history, f.Signature); i >= 0 {
			history = slices.Delete(history, i, i+1)
		}
		if f.Retried && st.retryCount > 0 {
			st.retryCount--
		}
	}
	st.signature, st.previous = "", nil
	if n := len(history); n > 0 {
		st.signature, st.previous = history[n-1], history[:n-1]
	} else if st.halted {
		st.halted, st.autoRetryOff, st.unhalt = false, false, true
	}
	return st
}

// readState reads the retry fields of the open issue ir, falling back on the task's for a
// field the issue does not have (or when there is no open issue).
func readState(tasks *queue.Doc, tr *queue.Record, issues *queue.Doc, ir *queue.Record) (state, error) {
	get := func(name string) (string, *queue.Doc, *queue.Record) {
		if ir != nil {
			if v := issues.Get(ir, name); !queue.IsEmpty(v) {
				return v, issues, ir
			}
		}
		return tasks.Get(tr, name), tasks, tr
	}
	var st state
	var err error
	num := func(name string) (int, bool) {
		v, d, r := get(name)
		if queue.IsEmpty(v) {
			return 0, false
		}
		n, e := queue.Int(v)
		if e != nil && err == nil {
			err = fieldError(d, r, name, e)
		}
		return n, e == nil
	}
	flag := func(name string) (bool, bool) {
		v, d, r := get(name)
		if queue.IsEmpty(v) {
			return false, false
		}
		b, e := queue.Bool(v)
		if e != nil && err == nil {
			err = fieldError(d, r, name, e)
		}
		return b, e == nil
	}
	st.retryCount, _ = num("Retry-Count")
	st.maxRetries, st.haveMaxRetries = num("Max-Retries")
	if v, _, _ := get("Failure-Signature"); !queue.IsEmpty(v) {
		st.signature = strings.TrimSpace(v)
	}
	v, _, _ := get("Previous-Signatures")
	st.previous = queue.List(v)
	if ir != nil {
		if on, set := flag("Auto-Retry"); set && !on {
			st.autoRetryOff = true
		}
		st.halted, _ = flag("Halted")
	}
	return st, err
}

func fieldError(d *queue.Doc, r *queue.Record, name string, err error) error {
	line := r.Line
	if f, ok := d.Lookup(r, name); ok {
		line = f.Line()
	}
	return &queue.ParseError{Path: d.Path, Line: line, ID: r.ID, Msg: fmt.Sprintf("%s: %v", name, err)}
}

// decide applies SPEC §8.3 and §8.4, all but the global cap, which takeAutoRetry checks.
func decide(st state, sig string, lim Limits, noAutoRetry bool, ir *queue.Record) Decision {
	history := append([]string(nil), st.previous...)
	if st.signature != "" {
		history = append(history, st.signature)
	}
	repeat := 0
	for _, s := range history {
		if s == sig {
			repeat++
		}
	}
	maxRetries := lim.MaxRetries
	if st.haveMaxRetries {
		maxRetries = st.maxRetries
	}
	d := Decision{
		Signature:   sig,
		RepeatCount: repeat,
		RetryCount:  st.retryCount,
		MaxRetries:  maxRetries,
		Signatures:  append(history, sig),
		Status:      queue.StatusFailed,
	}
	issueID := "its issue"
	if ir != nil {
		issueID = ir.ID
	}
	switch {
	case noAutoRetry:
		d.Reason = "failed: auto-retry is off (.orchestrator/no_auto_retry exists)"
	case st.autoRetryOff:
		d.Reason = "failed: " + issueID + " has Auto-Retry false"
	case st.halted:
		d.Reason = "failed: " + issueID + " is halted"
	case repeat+1 >= lim.SameSignatureHalt:
		d.Halt, d.HaltReason = true, haltRepeated(repeat+1)
		d.Reason = fmt.Sprintf("halted: signature %s occurred %d times", sig, repeat+1)
	case st.retryCount >= maxRetries:
		d.Halt, d.HaltReason = true, haltMaxRetries(maxRetries)
		d.Reason = fmt.Sprintf("halted: %d of %d retries used", st.retryCount, maxRetries)
	default:
		d.Retry = true
		d.RetryCount = st.retryCount + 1
		d.Status = queue.StatusPending
		d.Reason = fmt.Sprintf("retry %d of %d", d.RetryCount, maxRetries)
	}
	if d.Halt {
		d.Status = queue.StatusHalted
	}
	return d
}

// openIssue returns the task's open issue in d: the last issue whose Source Task is task,
// whose Status is not completed, wont_fix or duplicate, and whose Task Ref (if any) is the
// task itself. It returns nil when there is none.
func openIssue(d *queue.Doc, task string) *queue.Record {
	var out *queue.Record
	for i := range d.Records {
		r := &d.Records[i]
		if !isOpen(d, r) || !slices.Contains(queue.List(d.Get(r, "Source Task")), task) {
			continue
		}
		if ref := queue.List(d.Get(r, "Task Ref")); len(ref) > 0 && !slices.Contains(ref, task) {
			continue
		}
		out = r
	}
	return out
}

// isOpen reports whether an issue still needs work.
func isOpen(d *queue.Doc, r *queue.Record) bool {
	s, _ := queue.NormalizeStatus(queue.Issues, d.Get(r, "Status"))
	switch s {
	case "completed", "wont_fix", "duplicate":
		return false
	}
	return true
}

// writeTask applies the decision to the task record, if its Status is still status.
func writeTask(ctx context.Context, l queue.Layout, id, status string, d *Decision) error {
	_, err := queue.UpdateRecords(ctx, l.Tasks(), queue.Tasks, []string{id}, func(doc *queue.Doc) ([]queue.Op, error) {
		if _, ok := doc.Record(id); !ok {
			return nil, fmt.Errorf("%s: %w: %s", doc.Path, queue.ErrNotFound, id)
		}
		return append([]queue.Op{
			queue.Expect{ID: id, Field: "Status", Value: status},
			queue.SetField{ID: id, Field: "Status", Value: d.Status},
		}, d.Ops(doc, id)...), nil
	})
	if errors.Is(err, queue.ErrConflict) {
		return fmt.Errorf("%w: a person changed %s while its attempt ran; the failure is recorded in %s, the task is left as they set it", err, id, d.IssueID)
	}
	return err
}

// Ops returns what the decision writes into task id of doc, beside its Status: the retry
// fields, the issue as Remediation, and Halted and Halt-Reason, or Retry-Deferred.
func (d *Decision) Ops(doc *queue.Doc, id string) []queue.Op {
	r, ok := doc.Record(id)
	if !ok {
		return nil
	}
	remediation := queue.List(doc.Get(r, "Remediation"))
	if !slices.Contains(remediation, d.IssueID) {
		remediation = append(remediation, d.IssueID)
	}
	ops := []queue.Op{
		queue.SetField{ID: id, Field: "Retry-Count", Value: strconv.Itoa(d.RetryCount)},
		queue.SetField{ID: id, Field: "Failure-Signature", Value: d.Signature},
		queue.SetField{ID: id, Field: "Previous-Signatures", Value: listValue(d.Signatures[:len(d.Signatures)-1])},
		queue.SetField{ID: id, Field: "Signature-Repeat-Count", Value: strconv.Itoa(d.RepeatCount)},
		queue.SetField{ID: id, Field: "Remediation", Value: strings.Join(remediation, ", ")},
	}
	switch {
	case d.Halt:
		ops = append(ops,
			queue.SetField{ID: id, Field: "Halted", Value: "true"},
			queue.SetField{ID: id, Field: "Halt-Reason", Value: d.HaltReason})
	case d.Deferred:
		ops = append(ops, queue.SetField{ID: id, Field: "Retry-Deferred", Value: d.HaltReason})
	case !queue.IsEmpty(doc.Get(r, "Retry-Deferred")):
		ops = append(ops, queue.SetField{ID: id, Field: "Retry-Deferred", Value: ""})
	}
	return ops
}

// listValue writes a list as SPEC §3.2 reads it: [a, b], or [] when empty.
func listValue(list []string) string { return "[" + strings.Join(list, ", ") + "]" }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
