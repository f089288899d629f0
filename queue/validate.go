package queue

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
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

func (f Finding) String() string { return string(f.AppendText(nil)) }

// AppendText appends the finding as validate prints it, `path:line: ID: message`, to b.
// (validate may print thousands.)
func (f Finding) AppendText(b []byte) []byte {
	b = append(b, f.Path...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(f.Line), 10)
	b = append(b, ": "...)
	if f.ID != "" {
		b = append(b, f.ID...)
		b = append(b, ": "...)
	}
	if f.Severity == Warning {
		b = append(b, "warning: "...)
	}
	return append(b, f.Message...)
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

// CheckValues reports SPEC §6.1 item 2 alone: the field values of d that are not
// well-formed.
func CheckValues(d *Doc) []Finding { return d.checkValues(0, len(d.Records)) }

// CheckRefs reports the dependencies of the task queue d that do not exist, and its
// dependency cycles (SPEC §6.1 item 1, but for unique IDs, which Parse checks).
func CheckRefs(d *Doc) []Finding {
	tasks := d.Tasks()
	return sortFindings(checkRefs(d, tasks, newGraph(tasks, d.index)))
}

// checkStructure is CheckStructure with the tasks of a task queue already read (Check shares
// them with the other rules).
func checkStructure(d *Doc, tasks []Task) []Finding {
	out := d.checkValues(0, len(d.Records))
	if d.Kind == Tasks {
		out = append(out, checkRefs(d, tasks, newGraph(tasks, d.index))...)
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
			if name == "" || !sameName(f.Name().Bytes(d.Src), name) || quickValid(d.Kind, name, f.Value().Bytes(d.Src)) {
				continue
			}
			if v := d.Value(f); checkSyntax(d.Kind, name, v) != nil {
				err := checkSyntax(d.Kind, d.Name(f), v)
				out = append(out, Finding{Path: d.Path, Line: f.Line(), ID: r.ID, Severity: Error, Message: err.Error()})
			}
		}
	}
	return out
}

// checkRefs reports dependencies that do not exist and dependency cycles.
func checkRefs(d *Doc, tasks []Task, g *graph) []Finding {
	var out []Finding
	add := func(line int, id string, format string, args ...any) {
		out = append(out, Finding{Path: d.Path, Line: line, ID: id, Severity: Error, Message: fmt.Sprintf(format, args...)})
	}
	for _, m := range g.missing {
		t := tasks[m.task]
		add(d.depLine(t.Record), t.ID, "depends on %s, which does not exist", m.id)
	}
	for _, cyc := range cycles(tasks, g) {
		first := tasks[g.index[cyc[0]]]
		add(d.depLine(first.Record), first.ID, "dependency cycle: %s", strings.Join(append(cyc, cyc[0]), " -> "))
	}
	return out
}

// depLine returns the line of r's dependency field, or of its heading.
func (d *Doc) depLine(r *Record) int {
	for _, name := range []string{"Depends On", "Dependencies"} {
		if f, ok := d.Lookup(r, name); ok {
			return f.Line()
		}
	}
	return r.Line
}

// A graph holds the tasks' dependencies resolved to task indices, in compressed rows: task
// i depends on the tasks to[at[i]:at[i+1]]. The rules over the whole queue share it, which
// looks every dependency up once on a queue of 10,000 tasks.
type graph struct {
	index   map[string]int // task ID -> its first task
	at, to  []int32
	missing []missingDep // dependencies on IDs that no task has, in task order
}

type missingDep struct {
	task int
	id   string
}

// newGraph makes the graph of tasks. index maps each task ID to its first task; when it is
// nil, newGraph makes it. (The tasks of a Doc are its records: the Doc's index serves.)
func newGraph(tasks []Task, index map[string]int) *graph {
	if index == nil {
		index = make(map[string]int, len(tasks))
		for i, t := range tasks {
			if _, dup := index[t.ID]; !dup {
				index[t.ID] = i
			}
		}
	}
	g := &graph{index: index, at: make([]int32, len(tasks)+1)}
	edges := 0
	for _, t := range tasks {
		edges += len(t.Deps)
	}
	g.to = make([]int32, 0, edges)
	for i, t := range tasks {
		for _, dep := range t.Deps {
			if j, ok := g.index[dep]; ok {
				g.to = append(g.to, int32(j))
			} else {
				g.missing = append(g.missing, missingDep{i, dep})
			}
		}
		g.at[i+1] = int32(len(g.to))
	}
	return g
}

// deps returns the tasks that task i depends on.
func (g *graph) deps(i int) []int32 { return g.to[g.at[i]:g.at[i+1]] }

// Cycles returns the dependency cycles among tasks, each as the IDs along it, starting from
// the task that comes first in the file. It runs in time linear in tasks and edges (Tarjan's
// strongly connected components, iteratively).
func Cycles(tasks []Task) [][]string { return cycles(tasks, newGraph(tasks, nil)) }

// cycles is Cycles with the tasks' graph already made.
func cycles(tasks []Task, g *graph) [][]string {
	n := len(tasks)
	const unvisited = -1
	idx := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range idx {
		idx[i] = unvisited
	}
	var stack []int32
	var comps [][]int32
	var counter int32
	type frame struct{ v, next int32 }
	var call []frame
	for root := range int32(n) {
		if idx[root] != unvisited {
			continue
		}
		call = append(call[:0], frame{root, 0})
		idx[root], low[root] = counter, counter
		counter++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if adj := g.deps(int(f.v)); int(f.next) < len(adj) {
				w := adj[f.next]
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
			var comp []int32
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 || slices.Contains(g.deps(int(v)), v) {
				comps = append(comps, comp)
			}
		}
	}
	if len(comps) == 0 {
		return nil
	}
	// One walk per component, with arrays shared by all of them: compOf[v] is the component
	// of task v (-1 outside any cycle), prev[v] the step before v in the current walk.
	compOf := make([]int32, n)
	prev := make([]int32, n)
	for i := range compOf {
		compOf[i], prev[i] = -1, -1
	}
	for c, comp := range comps {
		for _, v := range comp {
			compOf[v] = int32(c)
		}
	}
	paths := make([][]int32, len(comps))
	for c, comp := range comps {
		paths[c] = cyclePath(g, comp, int32(c), compOf, prev)
	}
	slices.SortFunc(paths, func(a, b []int32) int { return int(a[0] - b[0]) })
	out := make([][]string, len(paths))
	for i, path := range paths {
		out[i] = make([]string, len(path))
		for j, v := range path {
			out[i][j] = tasks[v].ID
		}
	}
	return out
}

// cyclePath walks one cycle inside the strongly connected component comp (number c), from
// its first task in file order: a breadth-first search from that task back to it, within
// the component, which gives the shortest cycle through it. prev is -1 for every task when
// it is called, and again when it returns.
func cyclePath(g *graph, comp []int32, c int32, compOf, prev []int32) []int32 {
	start := slices.Min(comp)
	queue := []int32{start}
	end := int32(-1)
	for len(queue) > 0 && end < 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.deps(int(v)) {
			if compOf[w] != c {
				continue
			}
			if w == start {
				end = v
				break
			}
			if prev[w] < 0 {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	var path []int32
	for v := end; v != start; v = prev[v] {
		path = append(path, v)
	}
	path = append(path, start)
	slices.Reverse(path)
	for _, v := range comp {
		prev[v] = -1
	}
	return path
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
