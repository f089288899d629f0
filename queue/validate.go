package queue

import (
	"fmt"
	"sort"
	"strings"
)

// Severity of a validation finding.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// A Finding is one problem that validate reports (SPEC §6.1).
type Finding struct {
	Path     string   `json:"path"`
	Line     int      `json:"line"`
	ID       string   `json:"id,omitempty"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	msg := f.Message
	if f.Severity == Warning {
		msg = "warning: " + msg
	}
	if f.ID != "" {
		return fmt.Sprintf("%s:%d: %s: %s", f.Path, f.Line, f.ID, msg)
	}
	return fmt.Sprintf("%s:%d: %s", f.Path, f.Line, msg)
}

// FindingsFromParse turns parse errors into findings.
func FindingsFromParse(err error) []Finding {
	var out []Finding
	if errs, ok := err.(ParseErrors); ok {
		for _, e := range errs {
			out = append(out, Finding{Path: e.Path, Line: e.Line, ID: e.ID, Severity: Error, Message: e.Msg})
		}
	}
	return out
}

// CheckStructure reports SPEC §6.1 items 1 and 2 for a task queue: every dependency exists,
// there is no dependency cycle, and field values are well-formed. (Unique IDs are checked by
// Parse.)
func CheckStructure(d *Doc) []Finding {
	var tasks []Task
	if d.Kind == Tasks {
		tasks = d.Tasks()
	}
	return checkStructure(d, tasks)
}

// checkStructure is CheckStructure with the tasks of a task queue already read (Check shares
// them with the other rules).
func checkStructure(d *Doc, tasks []Task) []Finding {
	out := d.checkValues(0, len(d.Records))
	if d.Kind == Tasks {
		out = append(out, checkRefs(d, tasks, taskIndex(tasks))...)
	}
	return sortFindings(out)
}

// checkValues reports the field values of records [lo, hi) that are not well-formed.
func (d *Doc) checkValues(lo, hi int) []Finding {
	var out []Finding
	for i := lo; i < hi; i++ {
		r := &d.Records[i]
		for _, f := range d.Fields(r) {
			// Most fields need no check, and most values pass: the field's name as written
			// is only needed for the message.
			name := checkedName(f)
			if name == "" || !sameName(f.Name.Bytes(d.Src), name) || quickValid(d.Kind, name, f.Value.Bytes(d.Src)) {
				continue
			}
			if v := d.Value(f); checkSyntax(d.Kind, name, v) != nil {
				err := checkSyntax(d.Kind, d.Name(f), v)
				out = append(out, Finding{Path: d.Path, Line: f.Line, ID: r.ID, Severity: Error, Message: err.Error()})
			}
		}
	}
	return out
}

// checkRefs reports dependencies that do not exist and dependency cycles.
func checkRefs(d *Doc, tasks []Task, index map[string]int) []Finding {
	var out []Finding
	add := func(line int, id string, sev Severity, format string, args ...any) {
		out = append(out, Finding{Path: d.Path, Line: line, ID: id, Severity: sev, Message: fmt.Sprintf(format, args...)})
	}
	for _, t := range tasks {
		for _, dep := range t.Deps {
			if _, ok := index[dep]; !ok {
				add(d.depLine(t.Record), t.ID, Error, "depends on %s, which does not exist", dep)
			}
		}
	}
	for _, cyc := range cycles(tasks, index) {
		first := tasks[index[cyc[0]]]
		add(d.depLine(first.Record), first.ID, Error, "dependency cycle: %s", strings.Join(append(cyc, cyc[0]), " -> "))
	}
	return out
}

// depLine returns the line of r's dependency field, or of its heading.
func (d *Doc) depLine(r *Record) int {
	for _, name := range []string{"Depends On", "Dependencies"} {
		if f, ok := d.Lookup(r, name); ok {
			return f.Line
		}
	}
	return r.Line
}

// Cycles returns the dependency cycles among tasks, each as the IDs along it, starting from
// the task that comes first in the file. It runs in time linear in tasks and edges (Tarjan's
// strongly connected components, iteratively).
func Cycles(tasks []Task) [][]string { return cycles(tasks, taskIndex(tasks)) }

// taskIndex maps each task ID to its first task.
func taskIndex(tasks []Task) map[string]int {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if _, dup := index[t.ID]; !dup {
			index[t.ID] = i
		}
	}
	return index
}

// cycles is Cycles with the tasks' index already made.
func cycles(tasks []Task, index map[string]int) [][]string {
	n := len(tasks)
	adj := make([][]int, n)
	for i, t := range tasks {
		for _, dep := range t.Deps {
			if j, ok := index[dep]; ok {
				adj[i] = append(adj[i], j)
			}
		}
	}
	const unvisited = -1
	idx := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range idx {
		idx[i] = unvisited
	}
	var stack []int
	var comps [][]int
	counter := 0
	type frame struct{ v, next int }
	for root := 0; root < n; root++ {
		if idx[root] != unvisited {
			continue
		}
		call := []frame{{root, 0}}
		idx[root], low[root] = counter, counter
		counter++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.next < len(adj[f.v]) {
				w := adj[f.v][f.next]
				f.next++
				if idx[w] == unvisited {
					idx[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && idx[w] < low[f.v] {
					low[f.v] = idx[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != idx[v] {
				continue
			}
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			selfLoop := false
			for _, w := range adj[v] {
				if w == v {
					selfLoop = true
				}
			}
			if len(comp) > 1 || selfLoop {
				comps = append(comps, comp)
			}
		}
	}
	var out [][]string
	for _, comp := range comps {
		out = append(out, cyclePath(tasks, adj, comp))
	}
	sort.Slice(out, func(i, j int) bool { return index[out[i][0]] < index[out[j][0]] })
	return out
}

// cyclePath walks one cycle inside a strongly connected component, from its first task in
// file order, following the first dependency that stays in the component.
func cyclePath(tasks []Task, adj [][]int, comp []int) []string {
	in := make(map[int]bool, len(comp))
	start := comp[0]
	for _, v := range comp {
		in[v] = true
		if v < start {
			start = v
		}
	}
	// Breadth-first search from start back to start, within the component: the shortest
	// cycle through the first task.
	prev := map[int]int{}
	queue := []int{start}
	seen := map[int]bool{start: true}
	end := -1
	for len(queue) > 0 && end < 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range adj[v] {
			if !in[w] {
				continue
			}
			if w == start {
				end = v
				break
			}
			if !seen[w] {
				seen[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	var path []int
	for v := end; v != start; v = prev[v] {
		path = append(path, v)
	}
	path = append(path, start)
	names := make([]string, len(path))
	for i := range path {
		names[i] = tasks[path[len(path)-1-i]].ID
	}
	return names
}

func sortFindings(fs []Finding) []Finding {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Path != fs[j].Path {
			return fs[i].Path < fs[j].Path
		}
		return fs[i].Line < fs[j].Line
	})
	return fs
}
