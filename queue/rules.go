package queue

import (
	"bytes"
	"fmt"
)

// Check reports every rule of SPEC §6.1 for a queue file: those of CheckStructure
// (dependencies exist, no dependency cycle, field values well-formed) and, for a task queue,
// TDD ordering (CheckTDD) and, when plan is not nil, coverage and the matrix
// (CheckCoverage). The findings in d come first, in line order; then those in the plan file,
// in its line order. (Unique IDs are checked by Parse.)
func Check(d *Doc, plan *Plan) []Finding {
	if d.Kind != Tasks {
		return CheckStructure(d)
	}
	// Reading the tasks and checking the field values take most of the time on a large
	// queue; each half of the records is done on its own core.
	n := len(d.Records)
	tasks := make([]Task, n)
	var values [2][]Finding
	half := func(k, lo, hi int) {
		for i := lo; i < hi; i++ {
			tasks[i] = d.Task(&d.Records[i])
		}
		values[k] = d.checkValues(lo, hi)
	}
	if n < parallelTasks {
		half(0, 0, n)
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			half(1, n/2, n)
		}()
		half(0, 0, n/2)
		<-done
	}
	// Then the rules over the whole graph, again on two cores: coverage needs no index.
	var refs, tdd []Finding
	done := make(chan struct{})
	go func() {
		defer close(done)
		g := newGraph(tasks, d.index)
		refs = checkRefs(d, tasks, g)
		tdd = checkTDD(d, tasks, g)
	}()
	var inQueue, inPlan []Finding
	if plan != nil {
		inQueue, inPlan = checkCoverage(d, tasks, plan)
	}
	<-done
	// On one line: field values, then references, then TDD, then coverage (the sort keeps
	// this order).
	out := append(values[0], values[1]...)
	out = append(out, refs...)
	out = append(out, tdd...)
	out = append(out, inQueue...)
	return append(sortFindings(out), inPlan...)
}

// parallelTasks is the size of queue from which Check, and Tasks, read it on two cores.
const parallelTasks = 2000

// CheckTDD reports SPEC §6.1 item 3 for the task queue d, TDD ordering:
//
//   - a TEST task depends on no BUILD task: tests are written before the code they test;
//   - every BUILD task depends, directly or through other tasks, on at least one TEST task.
//
// BUILD tasks of the categories devops and docs, and tasks with `| TDD | exempt |`, are
// outside TDD: they need no TEST task, and a TEST task may depend on them (a test may need
// the Docker setup a devops task makes). A TEST task is checked against its direct
// dependencies only; one that reaches a BUILD task through another TEST task is reported at
// that task, and VERIFY and QA tasks come after BUILD tasks anyway.
func CheckTDD(d *Doc) []Finding {
	tasks := d.Tasks()
	return sortFindings(checkTDD(d, tasks, newGraph(tasks, d.index)))
}

// checkTDD is CheckTDD with the tasks' graph made.
func checkTDD(d *Doc, tasks []Task, g *graph) []Finding {
	var out []Finding
	n := len(tasks)
	// Who depends on whom, reversed: dependents[j] are the tasks that depend on task j.
	// The slices share one array (counted first), which matters on a queue of 10,000 tasks.
	count := make([]int32, n+1)
	for _, j := range g.to {
		count[j+1]++
	}
	for j := 1; j <= n; j++ {
		count[j] += count[j-1]
	}
	flat := make([]int32, len(g.to))
	fill := make([]int32, n)
	copy(fill, count[:n])
	for i, t := range tasks {
		for _, j := range g.deps(i) {
			flat[fill[j]] = int32(i)
			fill[j]++
			if t.Kind == KindTest && !tddExempt(t) && tasks[j].Kind == KindBuild && !tddExempt(tasks[j]) {
				out = append(out, Finding{Path: d.Path, Line: d.depLine(t.Record), ID: t.ID, Severity: Error,
					Message: fmt.Sprintf("TEST task depends on BUILD task %s: tests come before the code they test", tasks[j].ID)})
			}
		}
	}
	// Every task that depends on a TEST task, directly or not: a search from the TEST tasks
	// along the reversed edges, linear in tasks and dependencies.
	reaches := make([]bool, n)
	var queue []int32
	for i, t := range tasks {
		if t.Kind == KindTest {
			queue = append(queue, int32(i))
		}
	}
	for len(queue) > 0 {
		j := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, i := range flat[count[j]:count[j+1]] {
			if !reaches[i] {
				reaches[i] = true
				queue = append(queue, i)
			}
		}
	}
	for i, t := range tasks {
		if t.Kind == KindBuild && !tddExempt(t) && !reaches[i] {
			out = append(out, Finding{Path: d.Path, Line: d.depLine(t.Record), ID: t.ID, Severity: Error,
				Message: "BUILD task depends on no TEST task, directly or through other tasks: its tests come first (or mark it | TDD | exempt |)"})
		}
	}
	return out
}

// tddExempt reports whether t is outside TDD ordering: a devops or docs task, or one with
// `| TDD | exempt |`.
func tddExempt(t Task) bool { return t.Category == "devops" || t.Category == "docs" || t.exempt }

// CheckCoverage reports SPEC §6.1 items 4 and 5 for the task queue d and a test plan:
//
//   - every plan ID is mapped (in the Test IDs of a TEST task): an error in the plan file, at
//     the ID's line;
//   - no plan ID is mapped by two TEST tasks: an error at the second task's Test IDs;
//   - an ID in a task's Test IDs that the plan does not have: a warning;
//   - the coverage matrix section is what `orchestrator coverage --write` would write: an
//     error at the first line that differs, or at the end of the file when it is missing.
//
// The findings in d come first, in line order, then those in the plan file.
func CheckCoverage(d *Doc, plan *Plan) []Finding {
	inQueue, inPlan := checkCoverage(d, d.Tasks(), plan)
	return append(sortFindings(inQueue), inPlan...)
}

func checkCoverage(d *Doc, tasks []Task, plan *Plan) (inQueue, inPlan []Finding) {
	first := make([]int32, plan.Len()) // 1 + the index of the first TEST task that maps an ID
	for i, t := range tasks {
		if len(t.TestIDs) == 0 {
			continue
		}
		line := 0
		at := func() int {
			if line == 0 {
				line = t.Line
				if f, ok := d.Lookup(t.Record, "Test IDs"); ok {
					line = f.Line()
				}
			}
			return line
		}
		for _, id := range t.TestIDs {
			pos, ok := plan.index[id]
			switch {
			case !ok:
				inQueue = append(inQueue, Finding{Path: d.Path, Line: at(), ID: t.ID, Severity: Warning,
					Message: fmt.Sprintf("test ID %s is not in the test plan", id)})
			case t.Kind != KindTest:
			case first[pos] == 0:
				first[pos] = int32(i + 1)
			case int(first[pos]) != i+1:
				by := tasks[first[pos]-1]
				inQueue = append(inQueue, Finding{Path: d.Path, Line: at(), ID: t.ID, Severity: Error,
					Message: fmt.Sprintf("test ID %s is also mapped by %s (line %d): map each test ID to one TEST task", id, by.ID, by.Line)})
			}
		}
	}
	// One finding per unmapped plan ID: there may be thousands, and the tests of a category
	// share its message.
	unmapped := 0
	for _, f := range first {
		if f == 0 {
			unmapped++
		}
	}
	inPlan = make([]Finding, 0, unmapped)
	msgs := make([]string, len(plan.Categories))
	for pos, test := range plan.tests {
		if first[pos] != 0 {
			continue
		}
		if msgs[test.cat] == "" {
			msgs[test.cat] = "not mapped: no TEST task lists it in Test IDs (" + plan.Categories[test.cat].Name + ")"
		}
		inPlan = append(inPlan, Finding{Path: plan.Path, Line: test.Line, ID: test.ID, Severity: Error, Message: msgs[test.cat]})
	}
	if f, stale := checkMatrix(d, coverageOf(plan, func(i int) bool { return first[i] != 0 })); stale {
		inQueue = append(inQueue, f)
	}
	return inQueue, inPlan
}

// checkMatrix compares the coverage matrix section of d with what c renders.
func checkMatrix(d *Doc, c *CoverageReport) (Finding, bool) {
	ss, err := ReplaceSection{Title: CoverageTitle, Text: c.Render()}.splices(d)
	if err != nil || len(ss) == 0 {
		return Finding{}, false
	}
	f := Finding{Path: d.Path, Severity: Error}
	if _, h, ok := d.Section(CoverageTitle); ok {
		s := ss[0]
		old := d.Src[s.start:s.end]
		k := 0
		for k < len(old) && k < len(s.text) && old[k] == s.text[k] {
			k++
		}
		f.Line = h.Line + bytes.Count(d.Src[h.Start:s.start+k], []byte{'\n'})
		f.Message = "coverage matrix is stale; run `orchestrator coverage --write`"
		return f, true
	}
	f.Line = d.LineOf(max(0, len(d.Src)-1))
	f.Message = "no coverage matrix; run `orchestrator coverage --write`"
	return f, true
}
