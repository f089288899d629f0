package tdd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
)

// cycleDoc returns a queue holding a person's task and the cycle `orchestrator tdd`
// writes for a requirement of three ACs.
func cycleDoc(t *testing.T) *queue.Doc {
	t.Helper()
	fr, err := Parse("f.md", "STE-001", []byte("# STE-001: Promotions\n\n## Acceptance Criteria\n\n"+
		"- AC-STE.1 a basket of three items gets ten percent off\n"+
		"- AC-STE.2 a voucher code is applied after the discount (see AC-STE.1)\n"+
		"- AC-STE.3 short\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := queue.Parse("q.md", []byte("# Task Queue\n\n### TASK-001: mine\n\n| Field | Value |\n|---|---|\n| Status | pending |\n"), queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	out, err := queue.Apply(d, fr.Ops(d)...)
	if err != nil {
		t.Fatal(err)
	}
	d, err = queue.Parse("q.md", out, queue.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func task(t *testing.T, d *queue.Doc, id string) queue.Task {
	t.Helper()
	rec, ok := d.Record(id)
	if !ok {
		t.Fatalf("no task %s", id)
	}
	return d.Task(rec)
}

// TestPlaceOf: each task of a cycle gets its role, and an implementer its AC; the texts
// are what each AC's task says of it; a task of no cycle has no place.
func TestPlaceOf(t *testing.T) {
	d := cycleDoc(t)
	for id, want := range map[string]string{
		"TASK-STE-001-RED":      RoleTestWriter + "|",
		"TASK-STE-001-AC1":      RoleImplementer + "|AC-STE.1",
		"TASK-STE-001-AC2":      RoleImplementer + "|AC-STE.2",
		"TASK-STE-001-REFACTOR": RoleRefactorer + "|",
	} {
		p := PlaceOf(d, task(t, d, id))
		if p == nil {
			t.Fatalf("%s: no place", id)
		}
		if got := p.Role + "|" + p.AC; got != want {
			t.Errorf("%s: role|AC = %s, want %s", id, got, want)
		}
		if p.Red != "TASK-STE-001-RED" || !reflect.DeepEqual(p.ACs, []string{"AC-STE.1", "AC-STE.2", "AC-STE.3"}) {
			t.Errorf("%s: red %s, ACs %v", id, p.Red, p.ACs)
		}
	}
	p := PlaceOf(d, task(t, d, "TASK-STE-001-AC2"))
	if p.Builders["AC-STE.1"] != "TASK-STE-001-AC1" || p.Builders["AC-STE.3"] != "TASK-STE-001-AC3" {
		t.Errorf("builders %v", p.Builders)
	}
	if got := p.Texts["AC-STE.1"]; !strings.HasPrefix(got, "a basket of three items gets ten percent off") {
		t.Errorf("AC-STE.1's text = %q", got)
	}
	if got := p.OtherIDs(); !reflect.DeepEqual(got, []string{"AC-STE.1", "AC-STE.3"}) {
		t.Errorf("other IDs = %v", got)
	}
	for _, o := range p.OtherTexts() {
		if strings.Contains(o, "voucher") {
			t.Errorf("the other ACs' texts hold the place's own: %q", o)
		}
	}
	if p := PlaceOf(d, task(t, d, "TASK-001")); p != nil {
		t.Errorf("a task of no cycle has the place %+v", p)
	}
}

// TestACTests: AC2's gate runs its own tests and AC1's, which must still pass; AC3's may
// not pass yet.
func TestACTests(t *testing.T) {
	d := cycleDoc(t)
	p := PlaceOf(d, task(t, d, "TASK-STE-001-AC2"))
	got := p.ACTests(map[string][]string{
		"AC-STE.1": {"p.TestAC_STE_1"}, "AC-STE.2": {"p.TestAC_STE_2", "p.TestAC_STE_2b"}, "AC-STE.3": {"p.TestAC_STE_3"},
	})
	want := gate.ACTests{AC: "AC-STE.2", Own: []string{"p.TestAC_STE_2", "p.TestAC_STE_2b"}, Earlier: []string{"p.TestAC_STE_1"},
		Later: map[string][]string{"AC-STE.3": {"p.TestAC_STE_3"}}, Order: []string{"AC-STE.3"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ACTests = %+v\nwant %+v", got, want)
	}
}
