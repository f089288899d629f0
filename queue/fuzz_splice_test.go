package queue

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// spliceQueue builds a queue file around fuzzed text. The bits of shape choose where the
// text goes and how the tables are written:
//
//	bits 0-2: the text goes in TASK-1's Notes cell, its Agent cell, after its heading, in its
//	          body, as a raw line of its table, before TASK-2's table, at the start of the
//	          file, or at its end (then without a final newline)
//	bit 3:    CRLF line endings
//	bit 4:    an aligned table (padded to equal widths)
//	bit 5:    compact rows (`|Notes|x|`)
//	bit 6:    rows without a trailing pipe
func spliceQueue(text []byte, shape byte) []byte {
	t := string(text)
	at := func(pos byte, s string) string {
		if shape&7 == pos {
			return s + t
		}
		return s
	}
	row := func(name, value string) string {
		var b strings.Builder
		switch {
		case shape&(1<<5) != 0:
			b.WriteString("|" + name + "|" + value)
		case shape&(1<<4) != 0:
			b.WriteString("| " + name + strings.Repeat(" ", max(0, 8-len(name))) + " | " + value + strings.Repeat(" ", max(0, 12-len(value))))
		default:
			b.WriteString("| " + name + " | " + value)
		}
		if shape&(1<<6) == 0 {
			if shape&(1<<5) != 0 {
				b.WriteString("|")
			} else {
				b.WriteString(" |")
			}
		}
		return b.String() + "\n"
	}
	var b strings.Builder
	b.WriteString(at(6, "") + "# Tasks\n\n")
	b.WriteString(at(2, "### TASK-1: Parse") + "\n\n")
	b.WriteString(row("Field", "Value"))
	b.WriteString(row("--------", "------------"))
	b.WriteString(row("Status", "pending"))
	notes := "two words"
	if shape&7 == 0 {
		notes = t
	}
	b.WriteString(row("Notes", notes))
	agent := "claude"
	if shape&7 == 1 {
		agent = t
	}
	b.WriteString(row("Agent", agent))
	if shape&7 == 4 {
		b.WriteString(t + "\n")
	}
	b.WriteString(row("Mode", "write"))
	b.WriteString(at(3, "\n**Objective:** Parse it.") + "\n\n")
	b.WriteString(at(5, "### TASK-2\n\n") + "\n\n")
	b.WriteString(row("Field", "Value"))
	b.WriteString(row("---", "---"))
	b.WriteString(row("Status", "completed"))
	b.WriteString(row("Notes", "a \\| b"))
	src := b.String()
	if shape&(1<<3) != 0 {
		src = strings.ReplaceAll(src, "\n", "\r\n")
	}
	if shape&7 == 7 {
		src += t
	}
	return []byte(src)
}

// cellInterior returns the bytes between the pipes around f's value cell: from the pipe
// after its name to the next pipe, or to the end of the line when none follows.
func cellInterior(d *Doc, f Field) Span {
	row := d.RowSpan(f)
	start := bytes.LastIndexByte(d.Src[f.Name().Stop:f.Value().Start], '|') + f.Name().Stop + 1
	end := row.Stop
	if k := bytes.IndexByte(d.Src[f.Value().Stop:row.Stop], '|'); k >= 0 {
		end = f.Value().Stop + k
	}
	return Span{start, end}
}

// FuzzSplice sets a field of a record in a queue file that holds fuzzed text somewhere. When
// the file parses, the edit must change nothing but the interior of the field's value cell,
// the result must parse with every field as before but the one set, which reads back as the
// value (with `|` escaped and unescaped), and the same edit made again changes nothing. A
// value with a line break or a NUL byte, or that is not UTF-8, is refused.
func FuzzSplice(f *testing.F) {
	for _, s := range []struct {
		text  string
		value string
		shape byte
	}{
		{"x", "completed later", 0},
		{"", "", 0},
		{"a \\| b", "c | d", 0},
		{"a\\", "b\\", 1 << 5},
		{"x", "", 1 << 5},
		{"x", "", 1 << 6},
		{"x", "", 1<<5 | 1<<6},
		{"- item", "v", 3},
		{"| Extra | row |", "v", 4},
		{"```", "v", 3},
		{"<!--", "v", 2},
		{"# Heading", "v", 6},
		{"tail", "a|b", 7 | 1<<3},
		{"x", "line\nbreak", 0},
		{"x", "cr\rhere", 1 << 3},
		{"wide ✓ value", "ünïcödé ✓✓✓", 1 << 4},
		{"x", "a value longer than the column", 1 << 4},
		{"x", "\\", 1<<4 | 1<<6},
	} {
		f.Add([]byte(s.text), s.value, s.shape, false)
		f.Add([]byte(s.text), s.value, s.shape, true)
	}
	f.Fuzz(func(t *testing.T, text []byte, value string, shape byte, agent bool) {
		src := spliceQueue(text, shape)
		d, err := Parse("q.md", src, Tasks)
		if err != nil {
			return
		}
		r, ok := d.Record("TASK-1")
		if !ok {
			return
		}
		field := "Notes"
		if agent {
			field = "Agent"
		}
		var target Field
		found := false
		for _, fl := range d.Fields(r) {
			if SameName(d.Name(fl), field) {
				target, found = fl, true
			}
		}
		if !found {
			return
		}
		before := fieldValues(d)
		op := SetField{ID: "TASK-1", Field: field, Value: value}
		out, err := Apply(d, op)
		if strings.ContainsAny(value, "\r\n\x00") || !utf8.ValidString(value) {
			if err == nil || !bytes.Equal(out, src) {
				t.Fatalf("value %q with a line break, a NUL or not UTF-8: err = %v, file changed: %v", value, err, !bytes.Equal(out, src))
			}
			return
		}
		if err != nil {
			t.Fatalf("set %s=%q: %v", field, value, err)
		}

		in := cellInterior(d, target)
		if !bytes.HasPrefix(out, src[:in.Start]) || !bytes.HasSuffix(out, src[in.Stop:]) ||
			len(out) < in.Start+len(src)-in.Stop {
			t.Fatalf("bytes outside the cell interior %d..%d changed:\nbefore %q\nafter  %q", in.Start, in.Stop, src, out)
		}
		interior := out[in.Start : len(out)-(len(src)-in.Stop)]
		if old := src[in.Start:in.Stop]; bytes.Count(interior, []byte("\n")) > bytes.Count(old, []byte("\n")) ||
			bytes.Count(interior, []byte("\r")) > bytes.Count(old, []byte("\r")) {
			t.Fatalf("line break written into the cell: %q -> %q", old, interior)
		}

		d2, err := Parse("q.md", out, Tasks)
		if err != nil {
			t.Fatalf("result does not parse: %v\nbefore %q\nafter  %q", err, src, out)
		}
		r2, ok := d2.Record("TASK-1")
		if !ok {
			t.Fatalf("TASK-1 lost:\n%q", out)
		}
		if got, want := d2.Get(r2, field), strings.TrimSpace(value); got != want {
			t.Fatalf("%s reads back %q, want %q\nafter %q", field, got, want, out)
		}
		checkAligned(t, d, d2, target, field, value)
		after := fieldValues(d2)
		before["TASK-1\x00"+normalizeName(field)] = strings.TrimSpace(value)
		if !equalMaps(before, after) {
			t.Fatalf("other fields changed:\nbefore %v\nafter  %v\nfile %q", before, after, out)
		}

		again, err := Apply(d2, op)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("the same edit again: err %v, changed: %q -> %q", err, out, again)
		}
	})
}

// checkAligned checks SPEC §3.5 for a table that was aligned (every line's pipes at the same
// columns as the header's) before field f was set to value: a value that fits keeps the
// column's width, so the row's pipes still stand under the header's; a longer one is
// written as ` value `.
func checkAligned(t *testing.T, before, after *Doc, f Field, field, value string) {
	t.Helper()
	row := before.RowSpan(f)
	tb := before.tableAt(row.Start)
	if tb == nil {
		return
	}
	lines := bytes.Split(before.Src[tb.Start:tb.End], []byte("\n"))
	header := pipeColumns(bytes.TrimSuffix(lines[0], []byte("\r")), nil)
	if len(header) != 3 {
		return // no closing pipe: the value column has no width
	}
	for _, l := range lines {
		if !slices.Equal(pipeColumns(bytes.TrimSuffix(l, []byte("\r")), nil), header) {
			return // not aligned
		}
	}
	r, _ := after.Record("TASK-1")
	var got Field
	for _, fl := range after.Fields(r) {
		if SameName(after.Name(fl), field) {
			got = fl
		}
	}
	line := after.RowSpan(got).Bytes(after.Src)
	esc := EscapeCell(strings.TrimSpace(value))
	cols := pipeColumns(line, nil)
	if len(cols) != 3 || cols[1] != header[1] {
		t.Fatalf("row %q of an aligned table lost its shape (header pipes at %v)", line, header)
	}
	if width := header[2] - header[1] - 1; utf8.RuneCountInString(esc)+2 <= width {
		if !slices.Equal(cols, header) {
			t.Fatalf("value %q fits the aligned column, but the row is %q (header pipes at %v)", value, line, header)
		}
	} else if cell := string(line[bytes.IndexByte(line[1:], '|')+2:]); cell != " "+esc+" |" {
		t.Fatalf("value %q longer than the aligned column: cell %q, want %q", value, cell, " "+esc+" |")
	}
}

// fieldValues maps "ID\x00field" to the value of every table field of d.
func fieldValues(d *Doc) map[string]string {
	m := map[string]string{}
	for i := range d.Records {
		r := &d.Records[i]
		for _, f := range d.Fields(r) {
			m[r.ID+"\x00"+normalizeName(d.Name(f))] = d.Value(f)
		}
	}
	return m
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
