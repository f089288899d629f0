package queue

import "strings"

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
}

// Tasks returns the tasks of d in file order.
func (d *Doc) Tasks() []Task {
	out := make([]Task, len(d.Records))
	for i := range d.Records {
		out[i] = d.Task(&d.Records[i])
	}
	return out
}

// Task returns the scheduling view of record r.
func (d *Doc) Task(r *Record) Task {
	t := Task{ID: r.ID, Line: r.Line, Record: r}
	t.Status, _ = NormalizeStatus(d.Kind, d.Get(r, "Status"))
	t.Category = strings.ToLower(strings.TrimSpace(d.Get(r, "Category")))
	t.Mode = strings.ToLower(strings.TrimSpace(d.Get(r, "Mode")))
	t.Kind = kindOf(t.Category, t.Mode)
	t.Deps = d.Deps(r)
	t.TestIDs = List(d.Get(r, "Test IDs"))
	t.Halted, _ = Bool(d.Get(r, "Halted"))
	t.Issues = append(List(d.Get(r, "Source Issue")), List(d.Get(r, "Remediation"))...)
	return t
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
	seen := map[string]bool{}
	add := func(v string) {
		for _, id := range List(v) {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	rows := false
	for _, f := range d.Fields(r) {
		if n := d.Name(f); SameName(n, "Depends On") || SameName(n, "Dependencies") {
			add(d.Value(f))
			rows = true
		}
	}
	if rows {
		return out
	}
	for _, f := range d.Prose(r) {
		if n := d.Name(f); SameName(n, "Depends On") || SameName(n, "Dependencies") {
			add(d.Value(f))
		}
	}
	return out
}
