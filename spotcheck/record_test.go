package spotcheck_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/spotcheck"
	"github.com/orchestrator/orchestrator/watch"
)

// userKey returns the person's key of the tests (TestMain's configuration folder).
func userKey(t *testing.T) *seal.Key {
	t.Helper()
	k, err := seal.User()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSpotCheckRecordsSealed: the spot check's records are sealed evidence (SPEC §15.2
// item 4). A spot check of TASK-Q01 fails (Add subtracts) and its mutation of TASK-001 is
// recorded. Each cheat edits a record in the orchestrator's state the way an agent with
// its hands on it would — the decision turned to PASS, the mutation's survivors taken out,
// a record written by hand without a seal, another task's sealed record copied over — and
// each is refused: not read back as the decision or the mutation, and named, file and
// what is wrong, by the audit that status and watch print. The honest twin, the records as
// the spot check wrote them, reads back as written and is named by nobody.
func TestSpotCheckRecordsSealed(t *testing.T) {
	t.Parallel()
	p := newProject(t, "go", nil, nil, strings.Replace(goAdd, "return a + b", "return a - b", 1), goAddTest)
	rep := p.spotcheck(true)
	if rep.Decision != spotcheck.Fail || len(rep.Mutations) != 1 {
		t.Fatalf("decision %s, %d mutation results; want FAIL and one", rep.Decision, len(rep.Mutations))
	}
	state := filepath.Join(p.root, ".git", "orchestrator")
	k := userKey(t)
	decision, mutation := spotcheck.DecisionPath(state, "TASK-Q01"), spotcheck.MutationPath(state, "TASK-001")
	honestDecision, _ := os.ReadFile(decision)
	honestMutation, _ := os.ReadFile(mutation)

	// The honest twin.
	d, err := spotcheck.ReadDecision(k, state, "TASK-Q01")
	if err != nil || d == nil || d.Decision != spotcheck.Fail || d.Commit != rep.Commit {
		t.Fatalf("the recorded decision reads %+v (%v), want FAIL at %s", d, err, rep.Commit)
	}
	m, err := spotcheck.ReadMutation(k, state, "TASK-001")
	if err != nil || m == nil || m.Summary() != rep.Mutations[0].Summary() {
		t.Fatalf("the recorded mutation reads %v (%v), want %s", m, err, rep.Mutations[0].Summary())
	}
	if edited, err := watch.EditedState(t.Context(), queue.Layout{Root: p.root}); err != nil || len(edited) > 0 {
		t.Fatalf("records as the spot check wrote them are named as edited: %v (%v)", edited, err)
	}

	for _, c := range []struct {
		name   string
		file   string // the record edited
		edit   func(b []byte) []byte
		reason error
		what   string // the audit says
	}{
		{name: "decision turned to PASS", file: decision, reason: seal.ErrBroken, what: "its seal does not match its content",
			edit: func(b []byte) []byte { return []byte(strings.Replace(string(b), `"FAIL"`, `"PASS"`, 1)) }},
		{name: "decision written by hand", file: decision, reason: seal.ErrUnsealed, what: "it has no seal",
			edit: func([]byte) []byte {
				return []byte(`{"task": "TASK-Q01", "decision": "PASS", "commit": "` + rep.Commit + `"}` + "\n")
			}},
		{name: "mutation survivors taken out", file: mutation, reason: seal.ErrBroken, what: "its seal does not match its content",
			edit: func(b []byte) []byte {
				s := string(b)
				start, end := strings.Index(s, `"survivors": [`), strings.Index(s, `"decision"`)
				s = s[:start] + `"survivors": [],` + "\n  " + s[end:]
				return []byte(strings.Replace(s, `"decision": "WARN"`, `"decision": "PASS"`, 1))
			}},
		{name: "another task's sealed decision copied over", file: decision, reason: seal.ErrBroken, what: "it is the record of TASK-Q02, not of TASK-Q01",
			edit: func([]byte) []byte {
				b, err := k.SealJSON(seal.KindSpot, []byte("{\n  \"task\": \"TASK-Q02\",\n  \"decision\": \"PASS\",\n  \"commit\": \""+rep.Commit+"\"\n}"))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(c.file)
			t.Cleanup(func() { os.WriteFile(c.file, before, 0o644) })
			edited := c.edit(before)
			if string(edited) == string(before) {
				t.Fatal("the cheat changes nothing")
			}
			if err := os.WriteFile(c.file, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			var got any
			var err error
			if c.file == decision {
				got, err = spotcheck.ReadDecision(k, state, "TASK-Q01")
			} else {
				got, err = spotcheck.ReadMutation(k, state, "TASK-001")
			}
			var ee *seal.EditedError
			if !errors.As(err, &ee) || !errors.Is(err, c.reason) || ee.Record != c.file {
				t.Fatalf("the edited record reads %+v, error %v; want a seal.EditedError naming %s (%v)", got, err, c.file, c.reason)
			}
			rel, _ := filepath.Rel(p.root, c.file)
			audit, err := watch.EditedState(t.Context(), queue.Layout{Root: p.root})
			if err != nil {
				t.Fatal(err)
			}
			if len(audit) != 1 || !strings.Contains(audit[0], rel) || !strings.Contains(audit[0], c.what) {
				t.Errorf("status and watch name %q; want one record, %s, saying %q", audit, rel, c.what)
			}
		})
	}
	// The records as written read back again once the cheats are undone.
	if b, _ := os.ReadFile(decision); string(b) != string(honestDecision) {
		t.Error("the decision was not restored")
	}
	if b, _ := os.ReadFile(mutation); string(b) != string(honestMutation) {
		t.Error("the mutation was not restored")
	}
}
