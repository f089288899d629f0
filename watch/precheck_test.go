package watch

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
)

// TestPrecheckStage drives the pre-check stage alone, with no agent, repository or gate:
// from what the agent left (its marker, its final message, how its run ended, whether its
// candidate could be read) to the attempt's result before any of its code runs, and
// whether its claim stands for the gate. Only a claim of done with a readable candidate
// reaches the gate; a cheat's claim that the format does not allow never does.
func TestPrecheckStage(t *testing.T) {
	block := func(role, status, state string) string {
		return "```tdd-result\nrole: " + role + "\nstatus: " + status + "\nstate: " + state + "\nfiles: []\ncommand: go test ./...\noutput_excerpt: ok\nmessage: which rounding?\n```\n"
	}
	cases := []struct {
		name    string
		kind    queue.TaskKind
		marker  markers.Kind // "" for none
		body    string
		stop    string
		adopted bool
		candErr error
		gated   bool
		outcome string
		typ     string
	}{
		{name: "done marker reaches the gate", kind: queue.KindBuild, marker: markers.Done, gated: true, outcome: "failed"},
		{name: "failed marker", kind: queue.KindBuild, marker: markers.Failed, outcome: "failed", typ: "agent_failed"},
		{name: "no claim", kind: queue.KindBuild, adopted: true, outcome: "failed", typ: "no_marker"},
		{name: "no claim, its process gone unseen", kind: queue.KindBuild, outcome: "failed", typ: "agent_lost"},
		{name: "no claim at its timeout", kind: queue.KindBuild, stop: reasonTimeout, outcome: "failed", typ: "timeout"},
		{name: "a result block of another role", kind: queue.KindBuild, marker: markers.Done, body: block("test-writer", "ok", "success"), outcome: "failed", typ: "format_violation"},
		{name: "its own role's success block", kind: queue.KindBuild, marker: markers.Done, body: block("implementer", "ok", "success"), gated: true, outcome: "failed"},
		{name: "stuck on a requirement", kind: queue.KindBuild, marker: markers.Failed, body: block("implementer", "failed", "issue"), outcome: "issue", typ: "issue"},
		{name: "done, but its worktree is gone", kind: queue.KindBuild, marker: markers.Done, candErr: errors.New("no worktree"), outcome: "failed", typ: "agent_lost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := config.Default()
			r := newRunner(Options{Layout: queue.Layout{Root: root}, Config: cfg, Out: io.Discard})
			if err := os.MkdirAll(r.o.Layout.Markers(), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.marker != "" {
				if err := markers.Write(r.o.Layout.Markers(), "TASK-001", tc.marker, []byte(tc.body)); err != nil {
					t.Fatal(err)
				}
			}
			cfg.TaskTimeout.Duration = time.Minute
			a := &attempt{id: "TASK-001", n: 1, agent: "scripted", task: queue.Task{ID: "TASK-001", Kind: tc.kind}, stopReason: tc.stop, adopted: tc.adopted, candidate: "c0ffee", base: "ba5e"}
			res, log, gated := r.precheck(a, tc.candErr)
			if gated != tc.gated || res.Outcome != tc.outcome || res.Type != tc.typ {
				t.Fatalf("precheck: gated %v, outcome %q, type %q; want %v, %q, %q\n%s", gated, res.Outcome, res.Type, tc.gated, tc.outcome, tc.typ, log)
			}
			if !strings.HasPrefix(log.String(), "task TASK-001 attempt 1 (BUILD task, agent scripted)\n") {
				t.Errorf("gate.log starts:\n%s", log)
			}
			if !gated && res.Reason == "" {
				t.Errorf("an attempt the pre-checks end has no reason: %+v", res)
			}
		})
	}
}
