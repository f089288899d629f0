package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/orchestrator/orchestrator/cost"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/spotcheck"
	"github.com/orchestrator/orchestrator/watch"
	"github.com/spf13/cobra"
)

// statusOptions are the options of `orchestrator status`.
type statusOptions struct {
	*globalOptions
	JSON bool
	Plan string
}

func newStatusCommand(g *globalOptions) *cobra.Command {
	opts := &statusOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "status",
		Short: "Show every task with its status, attempts and dependencies, and what is ready",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runStatus(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON with every task's fields")
	c.Flags().StringVar(&opts.Plan, "plan", "", "test plan `file` for the coverage line (default projectspec/test-plan-output.json, if it exists)")
	return c
}

// statusTask is one task of `status --json`.
type statusTask struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Line   int    `json:"line"`
	Status string `json:"status"`
	// Verified is false for a task completed by hand: completed with no Commit.
	Verified  bool              `json:"verified"`
	Kind      string            `json:"kind"`
	Attempts  int               `json:"attempts"`
	DependsOn []string          `json:"depends_on"`
	Fields    map[string]string `json:"fields"`
	// CostUSD and Tokens are what its attempts spent (SPEC §16): null when unknown.
	CostUSD *float64 `json:"cost_usd"`
	Tokens  *int64   `json:"tokens"`
	// SpotCheck is a QA task's last spot check decision (PASS, WARN, FAIL, CRITICAL),
	// omitted when none ran.
	SpotCheck string `json:"spot_check,omitempty"`
	// ChangedTests are the existing tests a completed TEST task's landing rewrote to state
	// new behaviour (SPEC §7.2), as file:name, as its Orchestrator-Changed-Tests trailer
	// names them; omitted when none.
	ChangedTests []string `json:"changed_tests,omitempty"`
	// RunsOn is where a running task's attempt runs when its agent is on a worker
	// (SPEC §18): "worker NAME", or "a worker" until one has taken its job; omitted for an
	// attempt whose agent runs here.
	RunsOn string `json:"runs_on,omitempty"`
}

// statusReport is the whole of `status --json`.
type statusReport struct {
	Tasks   []statusTask   `json:"tasks"`
	Counts  map[string]int `json:"counts"`
	Ready   []string       `json:"ready"`
	Running []string       `json:"running"`
	Halted  []string       `json:"halted"`
	// Coverage is the coverage matrix (as `coverage --json` prints it) when there is a test
	// plan.
	Coverage *coverageJSON `json:"coverage,omitempty"`
	// Cost is what every task's attempts spent, as `orchestrator cost` sums it.
	Cost cost.Bucket `json:"cost"`
	// EditedState names the records of the orchestrator's state whose seal fails: edited
	// outside the orchestrator, they are not evidence (SPEC §15.2 item 4).
	EditedState []string `json:"edited_state,omitempty"`
}

func runStatus(ctx context.Context, opts *statusOptions) error {
	l, err := opts.layout()
	if err != nil {
		return err
	}
	q, err := loadQueues(l)
	if err != nil {
		return err
	}
	rep := buildStatus(q)
	costs := cost.BuildReport(q.tasks, watch.ReadCosts(l, q.tasks))
	for i, tc := range costs.Tasks {
		if i < len(rep.Tasks) && rep.Tasks[i].ID == tc.Task {
			rep.Tasks[i].CostUSD, rep.Tasks[i].Tokens = tc.TotalUSD, tc.Tokens
		}
	}
	rep.Cost = costs.Run
	if rep.EditedState, err = watch.EditedState(ctx, l); err != nil {
		return err
	}
	var qa []string
	changed := false
	if repo := q.repo(); repo != nil {
		checked := dirNames(filepath.Join(repo.State(), "qa"))
		key, _ := repo.Key() // without a key no record is evidence
		for i, t := range rep.Tasks {
			if t.Verified && t.Kind == queue.KindTest.String() {
				rep.Tasks[i].ChangedTests = watch.ChangedTests(repo, t.ID, t.Fields["Commit"])
				changed = changed || len(rep.Tasks[i].ChangedTests) > 0
			}
			if !checked[t.ID+".spotcheck.json"] {
				continue
			}
			// A decision whose seal fails is not shown: EditedState names it.
			if d, err := spotcheck.ReadDecision(key, repo.State(), t.ID); err == nil && d != nil {
				rep.Tasks[i].SpotCheck = d.Decision
				qa = append(qa, t.ID+" "+d.Decision)
			}
		}
	}
	plan, err := loadPlan(l, opts.Plan, false)
	if err != nil {
		return err
	}
	var cov *queue.CoverageReport
	if plan != nil {
		cov = queue.Coverage(q.tasks, plan)
		c := toCoverageJSON(cov)
		rep.Coverage = &c
	}
	// One write for the whole report, not one per cell.
	out := bufio.NewWriterSize(opts.Stdout, 64<<10)
	if opts.JSON {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
		return out.Flush()
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	// The column of changed tests is there when a task changed some: rare, and wide.
	head := "TASK\tSTATUS\tKIND\tATTEMPTS\tCOST\tDEPENDS ON"
	if changed {
		head += "\tCHANGED TESTS"
	}
	fmt.Fprintln(w, head)
	for _, t := range rep.Tasks {
		deps := strings.Join(t.DependsOn, ", ")
		if deps == "" {
			deps = "-"
		}
		status := t.Status
		switch {
		case status == "":
			status = "-"
		case status == queue.StatusCompleted && !t.Verified:
			status = queue.StatusByHand
		}
		spent := "-"
		if t.Attempts > 0 {
			spent = cost.FormatUSD(t.CostUSD)
		}
		if !changed {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, status, t.Kind, t.Attempts, spent, deps)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, status, t.Kind, t.Attempts, spent, deps, joinOr(t.ChangedTests, "-"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var counts []string
	for _, s := range []string{queue.StatusPending, queue.StatusInProgress, queue.StatusCompleted, queue.StatusByHand, queue.StatusFailed, queue.StatusHalted, queue.StatusBlocked, queue.StatusSkipped} {
		if n := rep.Counts[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, s))
		}
	}
	fmt.Fprintf(out, "\n%d tasks: %s\n", len(rep.Tasks), joinOr(counts, "none"))
	fmt.Fprintf(out, "ready: %s\n", joinOr(rep.Ready, "none"))
	running := slices.Clone(rep.Running)
	for i, id := range running {
		for _, t := range rep.Tasks {
			if t.ID == id && t.RunsOn != "" {
				running[i] = id + " (on " + t.RunsOn + ")"
			}
		}
	}
	fmt.Fprintf(out, "running: %s\n", joinOr(running, "none"))
	fmt.Fprintf(out, "halted: %s\n", joinOr(rep.Halted, "none"))
	fmt.Fprintf(out, "cost: %s (verified work %s, rejected attempts %s), %s tokens\n",
		cost.FormatUSD(rep.Cost.TotalUSD), cost.FormatUSD(rep.Cost.VerifiedUSD), cost.FormatUSD(rep.Cost.RejectedUSD), cost.FormatTokens(rep.Cost.Tokens))
	if len(qa) > 0 {
		fmt.Fprintf(out, "spot checks: %s\n", strings.Join(qa, ", "))
	}
	if cov != nil {
		fmt.Fprintln(out, coverageLine(cov))
	}
	for _, rec := range rep.EditedState {
		fmt.Fprintf(out, "warning: orchestrator state was edited outside the orchestrator, and is not evidence: %s\n", rec)
	}
	return out.Flush()
}

func joinOr(list []string, empty string) string {
	if len(list) == 0 {
		return empty
	}
	return strings.Join(list, ", ")
}

func buildStatus(q *queues) statusReport {
	rep := statusReport{Counts: map[string]int{}, Ready: []string{}, Running: []string{}, Halted: []string{}}
	d := q.tasks
	for _, t := range d.Tasks() {
		st := statusTask{
			ID: t.ID, Title: d.TitleText(t.Record), Line: t.Line, Status: t.Status,
			Verified: t.Status == queue.StatusCompleted && d.ShownStatus(t, q.verified) == t.Status,
			Kind:     t.Kind.String(), Attempts: countAttempts(q.layout, t.ID),
			DependsOn: t.Deps, Fields: map[string]string{},
		}
		if st.DependsOn == nil {
			st.DependsOn = []string{}
		}
		for _, f := range d.Fields(t.Record) {
			st.Fields[d.Name(f)] = d.Value(f)
		}
		for _, f := range d.Prose(t.Record) {
			if _, ok := st.Fields[d.Name(f)]; !ok {
				st.Fields[d.Name(f)] = d.Value(f)
			}
		}
		rep.Counts[d.ShownStatus(t, q.verified)]++
		if t.Status == queue.StatusInProgress {
			rep.Running = append(rep.Running, t.ID)
			st.RunsOn = runsOn(q.layout, t.ID)
		}
		if t.Halted || t.Status == queue.StatusHalted {
			rep.Halted = append(rep.Halted, t.ID)
		}
		rep.Tasks = append(rep.Tasks, st)
	}
	if q.issues != nil {
		for i := range q.issues.Records {
			r := &q.issues.Records[i]
			if h, _ := queue.Bool(q.issues.Get(r, "Halted")); h {
				rep.Halted = append(rep.Halted, r.ID)
			}
		}
	}
	for _, t := range queue.Ready(q.tasks, q.issues, nil) {
		rep.Ready = append(rep.Ready, t.ID)
	}
	if rep.Tasks == nil {
		rep.Tasks = []statusTask{}
	}
	return rep
}

// runsOn says where the last attempt of a running task runs, from the record the watch
// keeps in its folder (result.json): "worker NAME" or "a worker" for an agent on a worker
// (the second until a worker has taken the job), "" for one here or no record.
func runsOn(l queue.Layout, id string) string {
	entries, _ := os.ReadDir(filepath.Join(l.Runs(), id))
	last := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && n > last {
			last = n
		}
	}
	if last == 0 {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(l.Runs(), id, strconv.Itoa(last), "result.json"))
	if err != nil {
		return ""
	}
	var rec struct {
		Remote bool   `json:"remote"`
		Worker string `json:"worker"`
	}
	if json.Unmarshal(b, &rec) != nil || !rec.Remote {
		return ""
	}
	if rec.Worker == "" {
		return "a worker"
	}
	return "worker " + rec.Worker
}

// countAttempts counts the attempt folders of a task under .orchestrator/runs/<ID>/.
func countAttempts(l queue.Layout, id string) int {
	entries, err := os.ReadDir(filepath.Join(l.Runs(), id))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n++
		}
	}
	return n
}
