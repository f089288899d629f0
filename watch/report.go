package watch

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

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
	// color paints status words (Table only): the command line decides, from the
	// terminal and NO_COLOR.
	color bool
}

// row is one task's line in the live table.
type row struct {
	id, state, agent string
	cost             string // what the task's attempts cost so far
	attempt          int
	since            time.Time
}

// newReporter returns a reporter that writes to w in format f; with color, a Table paints
// its status words.
func newReporter(w io.Writer, f Format, color bool) *reporter {
	r := &reporter{w: w, format: f, rows: map[string]*row{}, stop: make(chan struct{}), color: color}
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
	eventFields
}

// eventFields is what an event says of one attempt besides its message, as fields of
// `watch --json` (SPEC §7.1): a program reads the attempt, its agent, its outcome, its
// failure type and where its gate.log is without parsing the message. A field that does
// not apply is left out.
type eventFields struct {
	Attempt     int    `json:"attempt,omitempty"`
	Agent       string `json:"agent,omitempty"`
	Outcome     string `json:"outcome,omitempty"`
	FailureType string `json:"failure_type,omitempty"`
	// GateLog is the attempt's gate.log, relative to the repository root.
	GateLog string `json:"gate_log,omitempty"`
	// Worker is the worker the attempt's agent runs on (SPEC §18); "" here.
	Worker string `json:"worker,omitempty"`
}

// shownAbove are the events whose line the live table keeps above it, so that a person
// sees why without opening a file: a rejection (failed, retry), a halt, a block, a task
// skipped with nothing landed, and a run that stops.
var shownAbove = map[string]bool{"failed": true, "retry": true, "halted": true, "blocked": true, "skipped": true, "stopped": true}

// event reports one thing that happened to a task ("" for the run itself).
func (r *reporter) event(id, kind, msg string) {
	r.eventWith(id, kind, msg, eventFields{})
}

// eventWith reports one thing that happened to one of a task's attempts, with the fields
// that say which and how it ended.
func (r *reporter) eventWith(id, kind, msg string, f eventFields) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	switch r.format {
	case JSON:
		b, _ := json.Marshal(eventJSON{Time: now.UTC().Format(time.RFC3339Nano), Event: kind, Task: id, Message: msg, eventFields: f})
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
			fmt.Fprintf(r.w, "%s: %s\n", r.paint(kind), msg)
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
		case "started", "adopted", "sent":
			if kind == "sent" || rw.state != "queued" {
				rw.since = now
				rw.attempt++
			}
			rw.state = "in_progress"
			if kind == "sent" {
				rw.state = "queued" // for a worker to take it
			}
			if f.Agent != "" {
				rw.agent = f.Agent
			} else if i := strings.Index(msg, "agent "); i >= 0 {
				rw.agent = strings.Fields(msg[i+6:])[0]
			}
			if f.Worker != "" {
				rw.agent += " on " + f.Worker
			}
		case "marker":
			rw.state = "checking"
		case "rate_limited":
			rw.state = "waiting" // for its agent's rate limit to lift
		case "retry":
			rw.state = "pending"
		case "completed", "failed", "stopped", "timeout", "halted", "blocked", "skipped":
			rw.state = kind
		}
		if f.Attempt > 0 {
			rw.attempt = f.Attempt
		}
		if shownAbove[kind] {
			// Keep the reason visible above the table.
			r.clear()
			fmt.Fprintf(r.w, "%s %s: %s\n", id, r.paint(kind), msg)
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
	// The header's STATUS is painted too (in the default colour), so that its column
	// carries the same invisible bytes as the words under it.
	fmt.Fprintf(tw, "TASK\t%s\tATTEMPT\tELAPSED\tAGENT\tCOST\n", r.paint("STATUS"))
	for _, id := range r.order {
		rw := r.rows[id]
		elapsed := ""
		if !rw.since.IsZero() && (rw.state == "in_progress" || rw.state == "checking" || rw.state == "queued") {
			elapsed = time.Since(rw.since).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", rw.id, r.paint(rw.state), rw.attempt, elapsed, rw.agent, orDash(rw.cost))
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
	fmt.Fprintf(tw, "TASK\tKIND\t%s\tATTEMPTS\n", r.paint("STATUS"))
	for _, t := range tasks.Tasks() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", t.ID, t.Kind, r.paint(orNone(tasks.ShownStatus(t, verified))), lastAttempt(l.Runs(), t.ID))
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
func (r *reporter) block(id, kind, msg, text string, f eventFields) {
	r.eventWith(id, kind, msg, f)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.format == JSON {
		return // the report is in .orchestrator/reports/, with its JSON twin
	}
	r.clear()
	fmt.Fprintf(r.w, "\n%s\n", strings.TrimRight(text, "\n"))
	r.draw()
}

// Colours of status words, as SGR codes. Every code has two digits, so that every painted
// word carries the same number of invisible bytes and the table's columns stay aligned
// (tabwriter counts bytes, not what the terminal shows); a word with no colour of its own
// is painted in the default colour (39) for the same reason.
var statusColors = map[string]string{
	"completed":   "32", // green
	"failed":      "31", // red
	"halted":      "31",
	"retry":       "31", // a rejection, retried
	"blocked":     "33", // yellow: a person looks
	"skipped":     "33",
	"stopped":     "33",
	"timeout":     "33",
	"waiting":     "33",
	"in_progress": "36", // cyan: running
	"checking":    "36",
	"warning":     "33",
	"interrupt":   "33",
}

// paint returns word in its status colour when the reporter paints (a terminal, and
// NO_COLOR not set), else word as it is.
func (r *reporter) paint(word string) string {
	if !r.color || r.format != Table {
		return word
	}
	code, ok := statusColors[word]
	if !ok {
		code = "39"
	}
	return "\x1b[" + code + "m" + word + "\x1b[0m"
}

// fieldsOf returns what the events of attempt a, decided as res, say of it: its number,
// agent, outcome and failure type, and its gate.log (in the readable copy of its folder)
// relative to the repository root.
func (r *runner) fieldsOf(a *attempt, res result) eventFields {
	f := eventFields{Attempt: a.n, Agent: a.agent, Outcome: res.Outcome, FailureType: res.Type}
	if a.mirror != "" {
		path := filepath.Join(a.mirror, "gate.log")
		if rel, err := filepath.Rel(r.o.Layout.Root, path); err == nil {
			path = rel
		}
		f.GateLog = path
	}
	return f
}

// maxReason is how much of a reason an event line holds; gate.log has all of it.
const maxReason = 600

// reasonLine returns the message of an event that rejects, halts or blocks attempt n:
// "attempt 2 (test_fails): why; then; see .orchestrator/runs/TASK-001/2/gate.log", on one
// line whatever why holds. typ, then and gateLog may be empty.
func reasonLine(n int, typ, why, then, gateLog string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d", n)
	if typ != "" {
		fmt.Fprintf(&b, " (%s)", typ)
	}
	b.WriteString(": ")
	b.WriteString(orNone(clipReason(oneLine(why), maxReason)))
	if then = oneLine(then); then != "" {
		b.WriteString("; " + then)
	}
	if gateLog != "" {
		b.WriteString("; see " + gateLog)
	}
	return b.String()
}

// clipReason returns s cut to at most n bytes, on a character's boundary, with "…" where
// it was cut.
func clipReason(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
