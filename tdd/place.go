package tdd

import (
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/queue"
)

// Roles of a cycle's agents (SPEC §9).
const (
	RoleTestWriter  = "test-writer"
	RoleImplementer = "implementer"
	RoleRefactorer  = "refactorer"
)

// A Place is where a task stands in its requirement's TDD cycle: the role its agent
// plays, and what of the cycle that role may know.
type Place struct {
	FR   string
	Role string
	AC   string   // the implementer's acceptance criterion
	Red  string   // the test writer's task
	ACs  []string // every AC of the requirement, in order (the RED task's Test IDs)
	// Builders are the implementers' tasks, by AC, and Texts the ACs' texts as their
	// tasks hold them.
	Builders map[string]string
	Texts    map[string]string
}

// PlaceOf returns task t's place in a TDD cycle, or nil for a task of no cycle: one
// without an FR field, or a BUILD task of a cycle that is neither an AC's nor the
// refactor.
func PlaceOf(d *queue.Doc, t queue.Task) *Place {
	if d == nil || t.Record == nil {
		return nil
	}
	fr := strings.TrimSpace(d.Get(t.Record, FieldFR))
	if queue.IsEmpty(fr) {
		return nil
	}
	p := &Place{FR: fr, Red: RedID(fr), Builders: map[string]string{}, Texts: map[string]string{}}
	switch {
	case t.Kind == queue.KindTest:
		p.Role = RoleTestWriter
	case t.Category == CategoryRefactor:
		p.Role = RoleRefactorer
	case !queue.IsEmpty(d.Get(t.Record, FieldAC)):
		p.Role, p.AC = RoleImplementer, strings.TrimSpace(d.Get(t.Record, FieldAC))
	default:
		return nil
	}
	if rec, ok := d.Record(p.Red); ok {
		p.ACs = d.Task(rec).TestIDs
	}
	for _, o := range d.Tasks() {
		if strings.TrimSpace(d.Get(o.Record, FieldFR)) != fr {
			continue
		}
		if ac := strings.TrimSpace(d.Get(o.Record, FieldAC)); !queue.IsEmpty(ac) {
			p.Builders[ac] = o.ID
			p.Texts[ac] = acText(d.ProseText(o.Record), ac)
		}
	}
	return p
}

// acText returns what an AC says, from its task's prose: the text after its ID.
func acText(body, ac string) string {
	_, after, ok := strings.Cut(body, ac)
	if !ok {
		after = body
	}
	return strings.TrimSpace(strings.TrimLeft(after, "*_:`—– -\t"))
}

// Index returns the position of ac in the cycle (-1 if it is not one of its ACs).
func (p *Place) Index(ac string) int { return slices.Index(p.ACs, ac) }

// OtherTexts returns the texts of the ACs other than the place's own.
func (p *Place) OtherTexts() []string {
	var out []string
	for ac, text := range p.Texts {
		if ac != p.AC && text != "" {
			out = append(out, text)
		}
	}
	slices.Sort(out)
	return out
}

// OtherIDs returns the IDs of the ACs other than the place's own, in the cycle's order.
func (p *Place) OtherIDs() []string {
	var out []string
	for _, ac := range p.ACs {
		if ac != p.AC {
			out = append(out, ac)
		}
	}
	return out
}

// ACTests sorts the cycle's tests (tests, by AC) for the GREEN gate of the place's AC:
// its own; those of the ACs before it, which must still pass; those of the ACs after it,
// in order, which may not pass yet. The command is the caller's.
func (p *Place) ACTests(tests map[string][]string) gate.ACTests {
	t := gate.ACTests{AC: p.AC, Own: tests[p.AC], Later: map[string][]string{}}
	at := p.Index(p.AC)
	for i, ac := range p.ACs {
		switch {
		case i < at:
			t.Earlier = append(t.Earlier, tests[ac]...)
		case i > at:
			t.Later[ac] = tests[ac]
			t.Order = append(t.Order, ac)
		}
	}
	return t
}
