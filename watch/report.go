package watch

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// Format is how a run reports progress.
type Format int

// Formats.
const (
	Lines Format = iota // one line per event (no terminal)
	JSON                // JSON lines
	Table               // a live table, for a terminal
)

// reporter writes progress. It is safe for concurrent use.
type reporter struct {
	mu     sync.Mutex
	w      io.Writer
	format Format
	rows   map[string]*row
	order  []string
	drawn  int // lines of the live table on screen
	stop   chan struct{}
}

// row is one task's line in the live table.
type row struct {
	id, state, agent string
	cost             string // what the task's attempts cost so far
	attempt          int
	since            time.Time
}

func newReporter(w io.Writer, f Format) *reporter {
	r := &reporter{w: w, format: f, rows: map[string]*row{}, stop: make(chan struct{})}
	if f == Table {
		go r.tick()
	}
	return r
}

// tick redraws the live table every second, so that elapsed times move.
func (r *reporter) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			r.draw()
			r.mu.Unlock()
		}
	}
}

func (r *reporter) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
}

// eventJSON is one line of --json output.
type eventJSON struct {
	Time    string `json:"time"`
	Event   string `json:"event"`
	Task    string `json:"task,omitempty"`
	Message string `json:"message"`
}

// event reports one thing that happened to a task ("" for the run itself).
func (r *reporter) event(id, kind, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	switch r.format {
	case JSON:
		b, _ := json.Marshal(eventJSON{Time: now.UTC().Format(time.RFC3339Nano), Event: kind, Task: id, Message: msg})
		fmt.Fprintf(r.w, "%s\n", b)
	case Lines:
		if id == "" {
			fmt.Fprintf(r.w, "%s %s: %s\n", now.Format("15:04:05"), kind, msg)
		} else {
			fmt.Fprintf(r.w, "%s %s %s: %s\n", now.Format("15:04:05"), id, kind, msg)
		}
	case Table:
		if id == "" {
			r.clear()
			fmt.Fprintf(r.w, "%s: %s\n", kind, msg)
			r.draw()
			return
		}
		rw := r.rows[id]
		if rw == nil {
			rw = &row{id: id}
			r.rows[id] = rw
			r.order = append(r.order, id)
		}
		switch kind {
		case "started", "adopted":
			rw.state, rw.since = "in_progress", now
			rw.attempt++
			if i := strings.Index(msg, "agent "); i >= 0 {
				rw.agent = strings.Fields(msg[i+6:])[0]
			}
		case "marker":
			rw.state = "checking"
		case "rate_limited":
			rw.state = "waiting" // for its agent's rate limit to lift
		case "completed", "failed", "stopped", "timeout":
			rw.state = kind
			if kind == "failed" {
				// Keep the reason visible above the table.
				r.clear()
				fmt.Fprintf(r.w, "%s failed: %s\n", id, msg)
			}
		}
		r.draw()
	}
}

// cost sets what a task's attempts cost so far, for the live table's cost column.
func (r *reporter) cost(id, cost string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rw := r.rows[id]; rw != nil {
		rw.cost = cost
	}
}

// orDash returns s, or "-" for nothing yet.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clear removes the live table from the screen.
func (r *reporter) clear() {
	if r.drawn > 0 {
		fmt.Fprintf(r.w, "\x1b[%dA\x1b[J", r.drawn)
		r.drawn = 0
	}
}

// draw redraws the live table in place.
func (r *reporter) draw() {
	if r.format != Table {
		return
	}
	r.clear()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPT\tELAPSED\tAGENT\tCOST")
	for _, id := range r.order {
		rw := r.rows[id]
		elapsed := ""
		if !rw.since.IsZero() && (rw.state == "in_progress" || rw.state == "checking") {
			elapsed = time.Since(rw.since).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", rw.id, rw.state, rw.attempt, elapsed, rw.agent, orDash(rw.cost))
	}
	tw.Flush()
	fmt.Fprint(r.w, b.String())
	r.drawn = strings.Count(b.String(), "\n")
}

// final prints the final table of every task and the counts by status.
func (r *reporter) final(tasks *queue.Doc, l queue.Layout, verified func(id, commit string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.format == JSON {
		counts := countStatuses(tasks, verified)
		b, _ := json.Marshal(struct {
			Event  string         `json:"event"`
			Counts map[string]int `json:"counts"`
		}{"summary", counts})
		fmt.Fprintf(r.w, "%s\n", b)
		return
	}
	r.clear()
	fmt.Fprintln(r.w)
	tw := tabwriter.NewWriter(r.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tKIND\tSTATUS\tATTEMPTS")
	for _, t := range tasks.Tasks() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", t.ID, t.Kind, orNone(tasks.ShownStatus(t, verified)), lastAttempt(l.Runs(), t.ID))
	}
	tw.Flush()
	counts := countStatuses(tasks, verified)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], orNone(k)))
	}
	fmt.Fprintf(r.w, "\n%d tasks: %s\n", len(tasks.Records), strings.Join(parts, ", "))
	if plan, err := queue.LoadPlan(l.Plan()); err == nil {
		fmt.Fprintf(r.w, "\n%s", queue.Coverage(tasks, plan).Render())
	}
}

func countStatuses(d *queue.Doc, verified func(id, commit string) bool) map[string]int {
	counts := map[string]int{}
	for _, t := range d.Tasks() {
		counts[d.ShownStatus(t, verified)]++
	}
	return counts
}

// block reports an event with a block of text, such as a halt report.
func (r *reporter) block(id, kind, msg, text string) {
	r.event(id, kind, msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.format == JSON {
		return // the report is in .orchestrator/reports/, with its JSON twin
	}
	r.clear()
	fmt.Fprintf(r.w, "\n%s\n", strings.TrimRight(text, "\n"))
	r.draw()
}
