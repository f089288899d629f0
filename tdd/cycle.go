package tdd

import (
	"fmt"
	"strings"

	"github.com/orchestrator/orchestrator/queue"
)

// Fields of the cycle's tasks that say what part of the cycle a task is.
const (
	// FieldFR names the requirement on every task of its cycle.
	FieldFR = "FR"
	// FieldAC names the acceptance criterion of an implementer's task.
	FieldAC = "AC"
	// CategoryRefactor is the refactorer's task's Category (a BUILD kind, SPEC §3.4).
	CategoryRefactor = "refactor"
)

// RedID, ACID and RefactorID return the IDs of the cycle's tasks.
func RedID(fr string) string        { return "TASK-" + TaskStem(fr) + "-RED" }
func ACID(fr string, n int) string  { return fmt.Sprintf("TASK-%s-AC%d", TaskStem(fr), n) }
func RefactorID(fr string) string   { return "TASK-" + TaskStem(fr) + "-REFACTOR" }
func sectionTitle(fr string) string { return "`" + fr + "`" }

// IDs returns the IDs of the cycle's tasks, in the order they run.
func (fr *FR) IDs() []string {
	out := []string{RedID(fr.ID)}
	for _, ac := range fr.ACs {
		out = append(out, ACID(fr.ID, ac.N))
	}
	return append(out, RefactorID(fr.ID))
}

// ACIDs returns the IDs of the acceptance criteria, in order.
func (fr *FR) ACIDs() []string {
	var out []string
	for _, ac := range fr.ACs {
		out = append(out, ac.ID)
	}
	return out
}

// Records returns the cycle's task records as markdown, by task ID: the test writer's,
// with every AC (its Test IDs are the AC IDs, so that the RED gate wants a failing test
// named after each); one implementer's per AC, holding that AC's text alone and depending
// on the task before it; the refactorer's, after the last AC.
func (fr *FR) Records() map[string]string {
	out := map[string]string{}
	table := func(rows ...[2]string) string {
		var b strings.Builder
		b.WriteString("| Field | Value |\n|-------|-------|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s |\n", r[0], queue.EscapeCell(r[1]))
		}
		return b.String()
	}
	red := RedID(fr.ID)
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: Failing tests for every acceptance criterion of %s\n\n", red, fr.ID)
	b.WriteString(table(
		[2]string{"Status", "pending"}, [2]string{"Category", "testing"}, [2]string{"Mode", "write"},
		[2]string{"Test IDs", strings.Join(fr.ACIDs(), ", ")}, [2]string{FieldFR, fr.ID}, [2]string{"Depends On", "-"},
	))
	fmt.Fprintf(&b, "\n**Requirement:** %s", fr.ID)
	if fr.Title != "" {
		fmt.Fprintf(&b, " (%s)", fr.Title)
	}
	b.WriteString("\n\n**Acceptance Criteria:**\n\n")
	for _, ac := range fr.ACs {
		b.WriteString("- " + indentRest(ac.Text, "  ") + "\n")
	}
	out[red] = b.String()
	prev := red
	for _, ac := range fr.ACs {
		id := ACID(fr.ID, ac.N)
		b.Reset()
		fmt.Fprintf(&b, "### %s: Make the tests of %s pass\n\n", id, ac.ID)
		b.WriteString(table(
			[2]string{"Status", "pending"}, [2]string{"Category", "backend"}, [2]string{"Depends On", prev},
			[2]string{FieldFR, fr.ID}, [2]string{FieldAC, ac.ID},
		))
		fmt.Fprintf(&b, "\n**Acceptance Criterion:**\n\n- %s\n", indentRest(ac.Text, "  "))
		out[id] = b.String()
		prev = id
	}
	id := RefactorID(fr.ID)
	b.Reset()
	fmt.Fprintf(&b, "### %s: Refactor what the implementers of %s wrote\n\n", id, fr.ID)
	b.WriteString(table(
		[2]string{"Status", "pending"}, [2]string{"Category", CategoryRefactor}, [2]string{"Depends On", prev},
		[2]string{FieldFR, fr.ID},
	))
	b.WriteString("\n**Objective:** Improve the structure of the code the implementers changed, without changing its behaviour; every test must still pass.\n")
	out[id] = b.String()
	return out
}

func indentRest(s, pad string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			lines[i] = pad + strings.TrimLeft(lines[i], " \t")
		} else {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// Ops returns the edits that write the cycle into the task queue d: the tasks it does not
// hold yet, appended after everything a person wrote (SPEC §3.5), under the requirement's
// section heading when none of them is there yet. A task already there is left as it is,
// whatever its state: running tdd again resumes the cycle and never duplicates it. It
// returns no ops when every task is there.
func (fr *FR) Ops(d *queue.Doc) []queue.Op {
	recs := fr.Records()
	var missing []string
	have := 0
	for _, id := range fr.IDs() {
		if _, ok := d.Record(id); ok {
			have++
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if have == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "## %s\n\n", sectionTitle(fr.ID))
		fmt.Fprintf(&b, "The TDD cycle of %s, written by `orchestrator tdd %s`: RED once for every acceptance criterion, GREEN once per criterion in order, REFACTOR once.\n", fr.ID, fr.ID)
		for _, id := range missing {
			b.WriteString("\n" + recs[id])
		}
		return []queue.Op{queue.AppendRecord{Text: b.String()}}
	}
	var ops []queue.Op
	for _, id := range missing {
		ops = append(ops, queue.AppendRecord{Text: recs[id]})
	}
	return ops
}
