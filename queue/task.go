package queue

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// A TaskKind is what a task does in the TDD loop (SPEC §3.4).
type TaskKind int

// Task kinds, in the order the ready set runs them.
const (
	KindTest TaskKind = iota
	KindVerify
	KindBuild
	KindQA
)

func (k TaskKind) String() string {
	return [...]string{"TEST", "VERIFY", "BUILD", "QA"}[k]
}

// A Task is the scheduling view of one task record.
type Task struct {
	ID       string
	Line     int
	Status   string // canonical; "" when the field is empty or missing
	Category string
	Mode     string
	Kind     TaskKind
	Deps     []string
	TestIDs  []string
	Halted   bool
	Issues   []string // Source Issue and Remediation links
	Record   *Record

	exempt bool // | TDD | exempt |
}

// StatusByHand is how a task completed without a verified commit is shown: a person set
// it, the gate never checked it (SPEC §7.1 item 7).
const StatusByHand = "completed by hand"

// ShownStatus is the status to show for t: StatusByHand for a completed task that verified
// (the orchestrator's own record, never the queue's word alone) does not confirm was
// verified at its Commit, else its Status. A nil verified confirms nothing.
func (d *Doc) ShownStatus(t Task, verified func(id, commit string) bool) string {
	if t.Status != StatusCompleted {
		return t.Status
	}
	commit := strings.TrimSpace(d.Get(t.Record, "Commit"))
	if IsEmpty(commit) || verified == nil || !verified(t.ID, commit) {
		return StatusByHand
	}
	return t.Status
}

// Tasks returns the tasks of d in file order.
func (d *Doc) Tasks() []Task {
	out := make([]Task, len(d.Records))
	fill := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = d.Task(&d.Records[i])
		}
	}
	n := len(out)
	if n < parallelTasks || runtime.GOMAXPROCS(0) < 2 {
		fill(0, n)
		return out
	}
	// A large queue's tasks are read in two halves at once (Task only reads d), as a
	// large file is scanned (scanFast).
	var wg sync.WaitGroup
	wg.Go(func() { fill(n/2, n) })
	fill(0, n/2)
	wg.Wait()
	return out
}

// Task returns the scheduling view of record r.
func (d *Doc) Task(r *Record) Task {
	t := Task{ID: r.ID, Line: r.Line, Record: r}
	f, found := d.taskFields(r)
	t.Status, t.Category, t.Mode, t.Halted = d.taskWords(f, found)
	t.Kind = kindOf(t.Category, t.Mode)
	t.Deps = d.Deps(r)
	t.TestIDs = d.list(nil, f[3], found[3])
	t.Issues = d.list(d.list(nil, f[5], found[5]), f[6], found[6])
	t.exempt = found[7] && strings.EqualFold(strings.TrimSpace(d.Value(f[7])), "exempt")
	return t
}

// taskWords reads the one-word fields of a task from its fields (taskFields): Status,
// Category, Mode and Halted. The ready set reads them of every task, Task of each.
func (d *Doc) taskWords(f [len(taskFieldNames)]Field, found [len(taskFieldNames)]bool) (status, category, mode string, halted bool) {
	status = d.word(f[0], found[0], normStatus[d.Kind], statusWords[d.Kind])
	category = d.word(f[1], found[1], lowerTrim, plainWords)
	mode = d.word(f[2], found[2], lowerTrim, plainWords)
	halted = d.word(f[4], found[4], lowerTrim, plainWords) == "true"
	return status, category, mode, halted
}

// taskFieldNames are the fields Task reads (besides the dependencies), in the order of
// taskFieldKeys; taskFieldMask has their keyBits.
var (
	taskFieldNames = [...]string{"Status", "Category", "Mode", "Test IDs", "Halted", "Source Issue", "Remediation", "TDD"}
	taskFieldKeys  = func() (out [len(taskFieldNames)]uint32) {
		for i, n := range taskFieldNames {
			out[i] = fieldKey([]byte(n))
		}
		return out
	}()
	taskFieldMask = func() (m uint64) {
		for _, k := range taskFieldKeys {
			m |= keyBit(k)
		}
		return m
	}()
)

// taskFields does Lookup(r, name) for each of taskFieldNames in one pass over r's fields:
// validate reads every task of a large queue.
func (d *Doc) taskFields(r *Record) (out [len(taskFieldNames)]Field, found [len(taskFieldNames)]bool) {
	missing := len(taskFieldNames)
	for _, list := range [2][]Field{d.Fields(r), d.Prose(r)} {
		for _, f := range list {
			if taskFieldMask&keyBit(f.key) == 0 {
				continue // most fields: one test rules them out
			}
			for i, k := range taskFieldKeys {
				if f.key == k && !found[i] && sameName(f.Name().Bytes(d.Src), taskFieldNames[i]) {
					out[i], found[i] = f, true
					missing--
				}
			}
		}
		if missing == 0 {
			break
		}
	}
	return out, found
}

var normStatus = [...]func(string) string{
	Tasks:  func(v string) string { s, _ := NormalizeStatus(Tasks, v); return s },
	Issues: func(v string) string { s, _ := NormalizeStatus(Issues, v); return s },
}

func kindOf(category, mode string) TaskKind {
	switch {
	case mode == "verify" || category == "test_verification":
		return KindVerify
	case category == "testing" || strings.HasPrefix(category, "testing:"):
		if mode == "" || mode == "write" {
			return KindTest
		}
		return KindBuild
	case category == "qa":
		return KindQA
	}
	return KindBuild
}

// Deps returns the IDs r depends on: the union of its `Depends On` and `Dependencies` rows,
// in order. A `**Dependencies:**` prose line counts only when no table row names the
// dependencies (SPEC §3.1): once `set` has written a Depends On row, the row is what counts,
// so that a person or the orchestrator can change the dependencies of a record that
// claudestrator wrote in prose.
func (d *Doc) Deps(r *Record) []string {
	var out []string
	var seen map[string]bool // once the list is long; a short one is searched
	add := func(f Field) {
		for _, id := range d.list(nil, f, true) {
			switch {
			case seen != nil:
				if seen[id] {
					continue
				}
				seen[id] = true
			case slices.Contains(out, id):
				continue
			case len(out) == 16:
				seen = make(map[string]bool, 64)
				for _, x := range out {
					seen[x] = true
				}
				seen[id] = true
			}
			out = append(out, id)
		}
	}
	rows := false
	for _, f := range d.Fields(r) {
		if isDepsField(d, f) {
			add(f)
			rows = true
		}
	}
	if rows {
		return out
	}
	for _, f := range d.Prose(r) {
		if isDepsField(d, f) {
			add(f)
		}
	}
	return out
}

var dependsOnKey, dependenciesKey = fieldKey([]byte("Depends On")), fieldKey([]byte("Dependencies"))

// isDepsField reports whether f is a Depends On or Dependencies field. The name's hash is
// compared first: validate asks this of every field of a large queue.
func isDepsField(d *Doc, f Field) bool {
	n := f.Name().Bytes(d.Src)
	return f.key == dependsOnKey && sameName(n, "Depends On") || f.key == dependenciesKey && sameName(n, "Dependencies")
}

// list appends the items of field f's value (see List), when found, to out. An item that is
// the ID of a record of d is that record's own string: reading every task of a large queue
// makes no copy of most dependencies.
func (d *Doc) list(out []string, f Field, found bool) []string {
	if !found {
		return out
	}
	v := f.Value().Bytes(d.Src)
	if bytes.IndexByte(v, '\\') >= 0 {
		v = []byte(d.Value(f)) // with `\|` unescaped
	}
	return appendList(out, v, func(item []byte) string {
		if i, ok := d.index[string(item)]; ok {
			return d.Records[i].ID
		}
		return string(item)
	})
}

// plainWords are the usual lower-case values of Category, Mode and Halted, and
// statusWords the canonical statuses of each kind of queue: values that read as themselves.
// d.word returns them without allocating: reading the tasks of a 10,000-task queue is
// otherwise mostly copying these words.
var (
	plainWords  = wordSet("testing", "test_verification", "backend", "frontend", "fullstack", "devops", "docs", "qa", "write", "verify", "true", "false")
	statusWords = [...]map[string]string{
		Tasks:  wordSet(StatusPending, StatusInProgress, StatusCompleted, StatusFailed, StatusHalted, StatusBlocked, StatusSkipped),
		Issues: wordSet("pending", "accepted", "in_progress", "completed", "duplicate", "wont_fix"),
	}
)

func wordSet(words ...string) map[string]string {
	m := make(map[string]string, len(words))
	for _, w := range words {
		m[w] = w
	}
	return m
}

// word returns the value of field f (found, or else absent) read by norm: the value itself
// when it is in words (each of which norm keeps as it is), else norm of the value.
func (d *Doc) word(f Field, found bool, norm func(string) string, words map[string]string) string {
	if !found {
		return norm("")
	}
	if w, ok := words[string(f.Value().Bytes(d.Src))]; ok {
		return w
	}
	return norm(d.Value(f))
}

func lowerTrim(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
