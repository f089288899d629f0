package retry

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/orchestrator/orchestrator/queue"
)

// A row is one `| Name | Value |` row to set in a section's field table. A row the table
// does not have is added at its end when add is set, and otherwise left out.
type row struct {
	name, value string
	add         bool
}

// setSectionRows returns an op that sets rows of the `Field | Value` table of the section
// titled title (the issue queue's Queue Status, session_state.md's Auto-Retry State), and
// whether the section has such a table. It is a queue.ReplaceSection whose text is the
// section's own bytes with only the value cells of those rows replaced, each keeping its
// padding (and, in an aligned table, its width when the value fits); rows it does not have
// are added at the end of the table if they say so. The op changes nothing when every
// value is already there.
func setSectionRows(d *queue.Doc, title string, rows []row) (queue.Op, bool) {
	sp, ok := d.SectionBody(title)
	if !ok {
		return nil, false
	}
	t, ok := d.SectionFieldTable(title)
	if !ok {
		return nil, false
	}
	src := d.Src
	type edit struct {
		start, stop int
		text        string
	}
	var edits []edit
	done := make([]bool, len(rows))
	headerWidth := utf8.RuneCount(src[t.Header.Start:t.Header.End])
	for _, r := range t.Rows {
		if len(r.Cells) < 2 {
			continue
		}
		name := d.CellText(r, 0)
		for i, want := range rows {
			if done[i] || !queue.SameName(name, want.name) {
				continue
			}
			done[i] = true
			value := queue.EscapeCell(want.value)
			cell := r.Cells[1]
			if string(cell.Bytes(src)) == value {
				break
			}
			// The cell's interior: from the pipe after the name to the next pipe or the end.
			in := bytes.IndexByte(src[r.Cells[0].Stop:r.End], '|')
			if in < 0 {
				break
			}
			inStart := r.Cells[0].Stop + in + 1
			inEnd := r.End
			if k := bytes.IndexByte(src[cell.Stop:r.End], '|'); k >= 0 && cell.Stop >= inStart {
				inEnd = cell.Stop + k
			}
			if cell.Start == cell.Stop || cell.Start < inStart {
				edits = append(edits, edit{inStart, inEnd, " " + value + " "})
				break
			}
			left, right := string(src[inStart:cell.Start]), string(src[cell.Stop:inEnd])
			if utf8.RuneCount(src[r.Start:r.End]) == headerWidth && inEnd < r.End {
				// An aligned table: keep the column's width when the value fits.
				diff := utf8.RuneCountInString(value) - utf8.RuneCount(cell.Bytes(src))
				switch {
				case diff < 0:
					right += strings.Repeat(" ", -diff)
				case diff > 0:
					trim := min(diff, len(right)-1)
					if trim > 0 && strings.TrimLeft(right[:trim], " ") == "" {
						right = right[trim:]
					}
				}
			}
			edits = append(edits, edit{inStart, inEnd, left + value + right})
			break
		}
	}
	var tail strings.Builder
	for i, r := range rows {
		if !done[i] && r.add {
			// "\n" even in a CRLF file: ReplaceSection gives its text the file's line endings.
			tail.WriteString("\n| " + r.name + " | " + queue.EscapeCell(r.value) + " |")
		}
	}
	if tail.Len() > 0 {
		edits = append(edits, edit{t.End, t.End, tail.String()})
	}
	if len(edits) == 0 {
		return queue.ReplaceSection{Title: title, Text: string(src[sp.Start:sp.Stop])}, true
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	last := sp.Start
	for _, e := range edits {
		b.Write(src[last:e.start])
		b.WriteString(e.text)
		last = e.stop
	}
	b.Write(src[last:sp.Stop])
	return queue.ReplaceSection{Title: title, Text: b.String()}, true
}
