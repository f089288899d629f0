package queue

import (
	"sort"
	"strings"
)

// Ready returns the ready set (SPEC §6.2): tasks that are pending, not halted, whose
// dependencies are all completed or skipped, and that are not running. running may be nil;
// issues (may be nil) marks the tasks of critical issues, which come first. Then TEST before
// VERIFY before BUILD before QA, then file order.
func Ready(tasks *Doc, issues *Doc, running map[string]bool) []Task {
	return ReadyAfter(tasks, issues, running, nil)
}

// ReadyAfter is Ready as if the tasks in changed had the statuses given there: the watch
// loop uses it to pick the next tasks in the same write that records a finished one.
func ReadyAfter(tasks *Doc, issues *Doc, running map[string]bool, changed map[string]string) []Task {
	// Every task's status, by its record's place (an ID is unique: a second one is a parse
	// error). Only the ready tasks are read whole: on a large queue, building every task
	// is most of the time and memory this takes.
	status := make([]string, len(tasks.Records))
	halted := make([]bool, len(tasks.Records))
	kind := make([]TaskKind, len(tasks.Records))
	for i := range tasks.Records {
		r := &tasks.Records[i]
		var category, mode string
		status[i], category, mode, halted[i] = tasks.taskWords(tasks.taskFields(r))
		if s, ok := changed[r.ID]; ok {
			status[i] = s
		}
		kind[i] = kindOf(category, mode)
	}
	done := func(id string) bool {
		i, ok := tasks.index[id]
		return ok && (status[i] == StatusCompleted || status[i] == StatusSkipped)
	}
	var ready []int
	for i := range tasks.Records {
		r := &tasks.Records[i]
		if status[i] != StatusPending || halted[i] || running[r.ID] {
			continue
		}
		ok := true
		for _, dep := range tasks.Deps(r) {
			if !done(dep) {
				ok = false
				break
			}
		}
		if ok {
			ready = append(ready, i)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	critical := CriticalTasks(issues)
	// Sorted by rank (critical first, then kind), stably: the sort moves small values, and
	// each ready task is built once, in its place.
	type rank struct {
		i        int
		critical bool
		kind     TaskKind
	}
	ranks := make([]rank, len(ready))
	for k, i := range ready {
		crit := false
		if len(critical) > 0 {
			t := tasks.Task(&tasks.Records[i])
			crit = isCritical(critical, &t)
		}
		ranks[k] = rank{i, crit, kind[i]}
	}
	sort.SliceStable(ranks, func(i, j int) bool {
		if ranks[i].critical != ranks[j].critical {
			return ranks[i].critical
		}
		return ranks[i].kind < ranks[j].kind
	})
	out := make([]Task, len(ranks))
	for k, rk := range ranks {
		out[k] = tasks.Task(&tasks.Records[rk.i])
		out[k].Status = status[rk.i]
	}
	return out
}

// isCritical reports whether t is one of the critical tasks, or names one of the critical
// issues as its source or remediation.
func isCritical(critical map[string]bool, t *Task) bool {
	if len(critical) == 0 {
		return false
	}
	if critical[t.ID] {
		return true
	}
	for _, id := range t.Issues {
		if critical[id] {
			return true
		}
	}
	return false
}

// CriticalTasks returns the tasks named by open critical issues: their Task Ref, Source Task
// and the tasks whose Source Issue is such an issue.
func CriticalTasks(issues *Doc) map[string]bool {
	out := map[string]bool{}
	if issues == nil {
		return out
	}
	for i := range issues.Records {
		r := &issues.Records[i]
		if !strings.EqualFold(strings.TrimSpace(issues.Get(r, "Priority")), "critical") {
			continue
		}
		switch s, _ := NormalizeStatus(Issues, issues.Get(r, "Status")); s {
		case "completed", "wont_fix", "duplicate":
			continue
		}
		out[r.ID] = true // matched against tasks' Source Issue below
		for _, f := range []string{"Task Ref", "Source Task"} {
			for _, id := range List(issues.Get(r, f)) {
				out[id] = true
			}
		}
	}
	return out
}
