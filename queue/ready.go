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
	all := tasks.Tasks()
	status := make(map[string]string, len(all))
	for i, t := range all {
		if s, ok := changed[t.ID]; ok {
			all[i].Status = s
			t.Status = s
		}
		status[t.ID] = t.Status
	}
	critical := CriticalTasks(issues)
	isCritical := func(t Task) bool {
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
	var out []Task
	for _, t := range all {
		if t.Status != StatusPending || t.Halted || running[t.ID] {
			continue
		}
		ok := true
		for _, dep := range t.Deps {
			if s := status[dep]; s != StatusCompleted && s != StatusSkipped {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ci, cj := isCritical(out[i]), isCritical(out[j])
		if ci != cj {
			return ci
		}
		return out[i].Kind < out[j].Kind
	})
	return out
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
