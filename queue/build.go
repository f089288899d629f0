package queue

import (
	"bytes"
	"fmt"
)

// A builder turns the top-level blocks that either parser finds (headings, paragraph lines,
// tables) into records and fields. Both parsers feed it the same calls for the same input, so
// they produce the same Doc.
type builder struct {
	d    *Doc
	cur  int // index of the open record, or -1
	rows []Row
	span []Span
	errs ParseErrors

	// keep says which records keep their fields in the Doc; the others are checked and
	// then dropped, which saves memory when only one record will be edited.
	keep    func(id string) bool
	keeping bool
	scratch []Field // fields of a record that is not kept
	hasFT   bool    // the open record has a field table
	keyBits uint64  // the keyBit of every field name of the open record
	rowBuf  []Row   // rows of the table being built
	spanBuf []Span
	whole   *whole // the allocations shared with a sibling (see presizeSplit)
}

func newBuilder(d *Doc) *builder {
	return &builder{d: d, cur: -1, keeping: true}
}

func (b *builder) heading(level, line, start int, text Span) {
	b.d.Headings = append(b.d.Headings, Heading{Level: level, Line: line, Start: start, Text: text})
	if b.cur >= 0 {
		r := &b.d.Records[b.cur]
		if level <= r.Level || b.recordHeading(level, text) {
			b.closeRecord(start)
		}
	}
	if !b.recordHeading(level, text) {
		return
	}
	t := text.Bytes(b.d.Src)
	n, title := matchID(t)
	tstart := text.Start + (len(t) - len(title))
	b.d.Records = append(b.d.Records, Record{
		ID:     string(t[:n]),
		Level:  level,
		Line:   line,
		Start:  start,
		Title:  Span{tstart, text.Stop},
		tables: [2]int{len(b.d.Tables), len(b.d.Tables)},
		fields: [2]int{len(b.d.fields), len(b.d.fields)},
		prose:  [2]int{len(b.d.prose), len(b.d.prose)},
	})
	b.cur = len(b.d.Records) - 1
	b.keeping = b.keep == nil || b.keep(b.d.Records[b.cur].ID)
	b.scratch = b.scratch[:0]
	b.hasFT = false
	b.keyBits = 0
}

func (b *builder) recordHeading(level int, text Span) bool {
	if level < 2 || level > 4 {
		return false
	}
	n, _ := matchID(text.Bytes(b.d.Src))
	return n > 0
}

func (b *builder) closeRecord(end int) {
	d := b.d
	r := &d.Records[b.cur]
	r.End = end
	r.tables[1] = len(d.Tables)
	r.fields[1] = len(d.fields)
	r.prose[1] = len(d.prose)
	b.cur = -1
	fields := b.scratch
	if b.keeping {
		fields = d.Fields(r)
	}
	if !b.hasFT {
		b.errorf(r.Line, r.ID, "record has no field table (| Field | Value |)")
		return
	}
	for _, f := range fields {
		if f.key != statusKey || !equalFoldASCII(f.Name().Bytes(d.Src), "status") {
			continue
		}
		if v := d.Value(f); !IsEmpty(v) {
			if _, ok := NormalizeStatus(d.Kind, v); !ok {
				b.errorf(f.Line(), r.ID, "unknown status %q", v)
			}
		}
	}
}

var statusKey = fieldKey([]byte("status"))

// paragraph takes the lines of a top-level paragraph and finds a table in it as goldmark's
// table extension does (see tableAt).
func (b *builder) paragraph(lines []lineSpan) {
	i, header, cols := b.tableAt(lines, b.withEOL)
	if i == 0 {
		b.prose(lines)
		return
	}
	b.prose(lines[:i-1])
	b.tableLines(header, lines[i-1:], cols)
}

// tableLines records a table of cols columns: its header row (split from lines[0]), its
// delimiter row lines[1], and a row for every later line.
func (b *builder) tableLines(header Row, lines []lineSpan, cols int) {
	t := Table{Header: header, Start: lines[0].start, End: lines[len(lines)-1].end}
	if b.cur >= 0 && isFieldHeader(b.d.Src, header) {
		// A record's field table, by far the most common: its rows go straight to fields.
		b.fieldTable(t)
		for _, l := range lines[2:] {
			b.spanBuf = b.spanBuf[:0]
			b.fieldRow(b.splitRowInto(&b.spanBuf, l, cols, false))
		}
		return
	}
	b.rowBuf = b.rowBuf[:0]
	b.spanBuf = b.spanBuf[:0]
	for _, l := range lines[2:] {
		b.rowBuf = append(b.rowBuf, b.splitRowInto(&b.spanBuf, l, cols, false))
	}
	t.Rows = b.rowBuf
	b.table(t)
}

// tableAt finds where a table starts in the lines of a paragraph, as goldmark's table
// extension does: at the first delimiter row, when the line before it is a header with no
// more cells than the delimiter row has columns. raw returns a line as goldmark holds it
// (see delimiterCols). It returns the delimiter row's index (0 when there is no table), the
// header and the number of columns.
func (b *builder) tableAt(lines []lineSpan, raw func(lineSpan) []byte) (int, Row, int) {
	for i := 1; i < len(lines); i++ {
		cols := delimiterCols(raw(lines[i]))
		if cols == 0 {
			continue
		}
		// goldmark pads a short header with empty cells, so only a longer one is refused.
		header, ok := b.splitRow(lines[i-1], cols, true)
		if !ok {
			return 0, Row{}, 0
		}
		return i, header, cols
	}
	return 0, Row{}, 0
}

// delimiterCols returns the number of columns of a GFM delimiter row, or 0 if raw is not
// one. raw is the line as goldmark's paragraph holds it: with its indentation, and with its
// line ending when it has one. It follows goldmark's isTableDelim and parseDelimiter.
func delimiterCols(raw []byte) int {
	width := 0 // of the indentation, a tab reaching the next multiple of four
	for _, c := range raw {
		if c == ' ' {
			width++
		} else if c == '\t' {
			width += 4 - width%4
		} else {
			break
		}
	}
	if width > 3 {
		return 0
	}
	// goldmark refuses raw made of dashes only: with its line ending counted, only a file's
	// last line can be. (Elsewhere such a line is a setext underline, and never reaches a
	// paragraph's table.)
	allDash := true
	for _, c := range raw {
		if c != '-' {
			allDash = false
		}
		if !(isSpace(c) || c == '-' || c == '|' || c == ':') {
			return 0
		}
	}
	if allDash {
		return 0
	}
	// Split on '|', dropping a blank first and a blank last part.
	n := 0
	parts := bytes.Count(raw, []byte{'|'}) + 1
	for i, rest := 0, raw; i < parts; i++ {
		col := rest
		if k := bytes.IndexByte(rest, '|'); k >= 0 {
			col, rest = rest[:k], rest[k+1:]
		}
		if (i == 0 || i == parts-1) && isBlank(col) {
			continue
		}
		c := trimSpace(col)
		if len(c) > 0 && c[0] == ':' {
			c = c[1:]
		}
		if len(c) > 0 && c[len(c)-1] == ':' {
			c = c[:len(c)-1]
		}
		if len(c) == 0 {
			return 0
		}
		for _, x := range c {
			if x != '-' {
				return 0
			}
		}
		n++
	}
	return n
}

// withEOL returns line l as goldmark's paragraph holds it before it is closed: with its line
// ending.
func (b *builder) withEOL(l lineSpan) []byte {
	src := b.d.Src
	e := l.end
	if e < len(src) && src[e] == '\r' {
		e++
	}
	if e < len(src) && src[e] == '\n' {
		e++
	}
	return src[l.start:e]
}

// splitRow splits a table line into cells as goldmark's parseRow does: a leading and a
// trailing pipe are dropped, a pipe after a backslash does not split, and a data row keeps at
// most cols cells. It reports false for a header with more cells than cols.
func (b *builder) splitRow(l lineSpan, cols int, header bool) (Row, bool) {
	row := b.splitRowInto(&b.span, l, cols, header)
	return row, !header || row.Raw <= cols
}

// splitRowInto splits a table line, appending its cells to *arena.
func (b *builder) splitRowInto(arena *[]Span, l lineSpan, cols int, header bool) Row {
	src := b.d.Src
	s, e := l.start, l.end
	for s < e && isSpace(src[s]) {
		s++
	}
	for e > s && isSpace(src[e-1]) {
		e--
	}
	row := Row{Line: l.line, Start: l.start, End: l.end}
	pos, limit := s, e
	if pos < limit && src[pos] == '|' {
		pos++
	}
	if e > s && src[limit-1] == '|' {
		limit--
	}
	lo := len(*arena)
	for pos < limit {
		closure := pos
		for closure < limit {
			if src[closure] == '|' && (closure == s || src[closure-1] != '\\') {
				break
			}
			closure++
		}
		row.Raw++
		if row.Raw <= cols || header {
			cs, ce := pos, closure
			for cs < ce && isSpace(src[cs]) {
				cs++
			}
			for ce > cs && isSpace(src[ce-1]) {
				ce--
			}
			*arena = append(*arena, Span{cs, ce})
		}
		pos = closure + 1
	}
	row.Cells = (*arena)[lo:len(*arena):len(*arena)]
	return row
}

// prose records the bold-label lines (`**Dependencies:** TASK-1`) of a paragraph.
func (b *builder) prose(lines []lineSpan) {
	if b.cur < 0 || !b.keeping {
		return
	}
	src := b.d.Src
	for _, l := range lines {
		s := l.start
		for s < l.end && isSpace(src[s]) {
			s++
		}
		line := src[s:l.end]
		if len(line) < 6 || line[0] != '*' || line[1] != '*' {
			continue
		}
		k := bytes.Index(line[2:], []byte(":**"))
		if k <= 0 {
			continue
		}
		name := trimSpan(src, Span{s + 2, s + 2 + k})
		if name.Stop == name.Start || bytes.IndexByte(name.Bytes(src), '*') >= 0 {
			continue
		}
		val := trimSpan(src, Span{s + 2 + k + 3, l.end})
		b.d.prose = append(b.d.prose, newField(name, val, l.line, src))
	}
}

// table records a top-level table. The rows of a record's field table become fields and are
// not kept as rows; other tables keep their rows (copied out of the caller's buffers).
func (b *builder) table(t Table) {
	d := b.d
	if b.cur >= 0 && isFieldHeader(d.Src, t.Header) {
		b.fieldTable(t)
		for _, row := range t.Rows {
			b.fieldRow(row)
		}
		return
	}
	lo := len(b.rows)
	for _, row := range t.Rows {
		c := len(b.span)
		b.span = append(b.span, row.Cells...)
		row.Cells = b.span[c:len(b.span):len(b.span)]
		b.rows = append(b.rows, row)
	}
	t.Rows = b.rows[lo:len(b.rows):len(b.rows)]
	d.Tables = append(d.Tables, t)
}

// fieldTable records that the open record has the field table t, whose rows become fields
// (see fieldRow). The Doc keeps nothing of a record it does not keep.
func (b *builder) fieldTable(t Table) {
	b.hasFT = true
	if b.keeping {
		t.Rows = nil
		b.d.Tables = append(b.d.Tables, t)
	}
}

// fieldRow turns a row of the open record's field table into a field.
func (b *builder) fieldRow(row Row) {
	d := b.d
	src := d.Src
	rec := &d.Records[b.cur]
	if row.Raw != 2 || len(row.Cells) != 2 {
		b.errorf(row.Line, rec.ID, "malformed field row: %d cells, want 2 (Field | Value)", row.Raw)
		return
	}
	name := row.Cells[0]
	if name.Start == name.Stop {
		b.errorf(row.Line, rec.ID, "malformed field row: the field name is empty")
		return
	}
	f := newField(name, row.Cells[1], row.Line, src)
	seen := b.scratch
	if b.keeping {
		seen = d.fields[rec.fields[0]:]
	}
	if bit := keyBit(f.key); b.keyBits&bit == 0 {
		b.keyBits |= bit
		seen = nil // no earlier name has this key
	}
	for _, g := range seen {
		if g.key == f.key && normalizeName(string(g.Name().Bytes(src))) == normalizeName(string(name.Bytes(src))) {
			b.errorf(row.Line, rec.ID, "field %q repeated (first at line %d)", name.Bytes(src), g.Line())
			break
		}
	}
	if b.keeping {
		d.fields = append(d.fields, f)
	} else {
		b.scratch = append(b.scratch, f)
	}
}

// sibling returns a builder for src[from:] of the same source.
func (b *builder) sibling(from int) *builder {
	d := &Doc{Path: b.d.Path, Src: b.d.Src, Kind: b.d.Kind, Partial: b.d.Partial}
	n := newBuilder(d)
	n.keep = b.keep
	b.presizeSplit(n, from)
	return n
}

// merge appends what b2 found in src[split:] to what b found before it.
func (b *builder) merge(b2 *builder, split int) {
	b.end(split)
	b2.end(len(b2.d.Src))
	d, d2 := b.d, b2.d
	nt := len(d.Tables)
	w := b.whole
	if w == nil {
		w = &whole{}
	}
	d.Headings = join(w.headings, d.Headings, d2.Headings)
	d.Tables = join(w.tables, d.Tables, d2.Tables)
	var nf, np int
	d.fields, nf = joinGap(w.fields, d.fields, d2.fields)
	d.prose, np = joinGap(w.prose, d.prose, d2.prose)
	for i := range d2.Records {
		r := &d2.Records[i]
		r.tables[0] += nt
		r.tables[1] += nt
		r.fields[0] += nf
		r.fields[1] += nf
		r.prose[0] += np
		r.prose[1] += np
	}
	d.Records = join(w.records, d.Records, d2.Records)
	b.errs = append(b.errs, b2.errs...)
}

// end closes the record open at offset at, if any.
func (b *builder) end(at int) {
	if b.cur >= 0 {
		b.closeRecord(at)
	}
}

func (b *builder) finish() {
	b.end(len(b.d.Src))
	d := b.d
	d.index = make(map[string]int, len(d.Records))
	for i := range d.Records {
		r := &d.Records[i]
		if first, dup := d.index[r.ID]; dup {
			b.errorf(r.Line, r.ID, "duplicate ID (first at line %d)", d.Records[first].Line)
		} else {
			d.index[r.ID] = i
		}
	}
}

func (b *builder) errorf(line int, id, format string, args ...any) {
	b.errs = append(b.errs, &ParseError{Path: b.d.Path, Line: line, ID: id, Msg: fmt.Sprintf(format, args...)})
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func trimSpan(src []byte, s Span) Span {
	for s.Start < s.Stop && isSpace(src[s.Start]) {
		s.Start++
	}
	for s.Stop > s.Start && isSpace(src[s.Stop-1]) {
		s.Stop--
	}
	return s
}
