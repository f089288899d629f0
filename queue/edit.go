package queue

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Sentinel errors of edits.
var (
	// ErrConflict means a compare-and-set found another value than the one expected.
	ErrConflict = errors.New("value changed")
	// ErrNotFound means an edit named a record the file does not have.
	ErrNotFound = errors.New("no such record")
	// ErrExists means an append named a record the file already has.
	ErrExists = errors.New("record already exists")
)

// A ConflictError reports a compare-and-set that declined. It matches ErrConflict.
type ConflictError struct {
	ID, Field, Want, Got string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %s is %q, not %q", e.ID, e.Field, e.Got, e.Want)
}

// Is makes a ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// An Op is one edit of a queue file (SPEC §3.5). Ops are computed against a parsed Doc and
// applied to its bytes; nothing is re-rendered.
type Op interface {
	splices(d *Doc) ([]splice, error)
}

// A splice replaces src[start:end] with text.
type splice struct {
	start, end int
	text       string
	seq        int
}

// SetField sets a field of a record: it splices the cell of an existing row, or adds a row at
// the end of the record's first field table.
type SetField struct {
	ID, Field, Value string
}

// CompareAndSet sets a field only if its current value is Expect. Statuses are compared in
// their canonical form; an empty Expect matches an empty or missing field.
type CompareAndSet struct {
	ID, Field, Expect, Value string
}

// Expect changes nothing: it fails with a ConflictError unless the field holds Value now.
// Put it before other ops to make them conditional.
type Expect struct {
	ID, Field, Value string
}

func (op Expect) splices(d *Doc) ([]splice, error) {
	r, ok := d.Record(op.ID)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %s", d.Path, ErrNotFound, op.ID)
	}
	if got := d.Get(r, op.Field); !sameValue(d.Kind, op.Field, got, op.Value) {
		return nil, &ConflictError{ID: op.ID, Field: op.Field, Want: op.Value, Got: got}
	}
	return nil, nil
}

// AppendRecord adds a record (markdown text starting with its heading) at the end of the
// file, or before the coverage matrix section where there is one, or after the records that
// follow the IssuesMarker line where there is one. A record whose ID the file already has is
// refused with ErrExists, so that appending twice cannot make a duplicate.
type AppendRecord struct {
	Text string
}

// ReplaceSection replaces the top-level section whose heading text is Title with Text (which
// starts with the heading line), keeping the blank lines that follow it. The section ends
// before any record under its heading: records are never replaced. A missing section is
// appended at the end of the file.
type ReplaceSection struct {
	Title, Text string
}

// CoverageTitle is the heading of the coverage matrix section (SPEC §5.2).
const CoverageTitle = "Test Coverage Matrix"

// IssuesMarker is the line of claudestrator's issue queue below which issues are appended
// (SPEC §3.5).
const IssuesMarker = "<!-- Issues are appended below this line -->"

// Apply computes ops against d and returns the edited bytes. When nothing changes, it
// returns d.Src itself.
func Apply(d *Doc, ops ...Op) ([]byte, error) {
	p, err := patch(d, ops)
	if err != nil || p == nil {
		return d.Src, err
	}
	return p.Bytes(), nil
}

// A patched file is its source with splices applied, kept as pieces so that a large file
// can be written without building a second copy of it.
type patched struct {
	src     []byte
	splices []splice
}

// Bytes returns the patched file.
func (p *patched) Bytes() []byte {
	var b bytes.Buffer
	b.Grow(len(p.src) + 256)
	p.each(func(piece []byte) { b.Write(piece) })
	return b.Bytes()
}

// each calls fn with the pieces of the patched file in order.
func (p *patched) each(fn func([]byte)) {
	last := 0
	for _, s := range p.splices {
		fn(p.src[last:s.start])
		fn([]byte(s.text))
		last = s.end
	}
	fn(p.src[last:])
}

// patch computes ops against d. It returns nil when they change nothing.
func patch(d *Doc, ops []Op) (*patched, error) {
	var all []splice
	for i, op := range ops {
		ss, err := op.splices(d)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			s.seq = i
			all = append(all, s)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].start < all[j].start })
	// Two edits of the same bytes: the later one wins. Edits that change nothing go.
	out := all[:0]
	for _, s := range all {
		if n := len(out); n > 0 && out[n-1].start == s.start && out[n-1].end == s.end && s.end > s.start {
			if s.seq >= out[n-1].seq {
				out[n-1] = s
			}
			continue
		}
		if n := len(out); n > 0 && s.start < out[n-1].end {
			return nil, fmt.Errorf("%s: overlapping edits", d.Path)
		}
		out = append(out, s)
	}
	kept := out[:0]
	for _, s := range out {
		if string(d.Src[s.start:s.end]) != s.text {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return &patched{src: d.Src, splices: kept}, nil
}

func (op SetField) splices(d *Doc) ([]splice, error) {
	r, ok := d.Record(op.ID)
	if !ok {
		return nil, fmt.Errorf("%s: %w: %s", d.Path, ErrNotFound, op.ID)
	}
	if err := CheckFieldName(op.Field); err != nil {
		return nil, err
	}
	if err := CheckValue(d.Kind, op.Field, op.Value); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", d.Path, op.ID, err)
	}
	value := EscapeCell(strings.TrimSpace(op.Value))
	for _, f := range d.Fields(r) {
		if SameName(d.Name(f), op.Field) {
			return d.spliceCell(f, value), nil
		}
	}
	return d.addRow(r, CanonicalName(op.Field), value)
}

func (op CompareAndSet) splices(d *Doc) ([]splice, error) {
	if _, err := (Expect{ID: op.ID, Field: op.Field, Value: op.Expect}).splices(d); err != nil {
		return nil, err
	}
	return SetField{ID: op.ID, Field: op.Field, Value: op.Value}.splices(d)
}

func sameValue(k Kind, field, a, b string) bool {
	if IsEmpty(a) || IsEmpty(b) {
		return IsEmpty(a) && IsEmpty(b)
	}
	if SameName(field, "status") {
		na, oka := NormalizeStatus(k, a)
		nb, okb := NormalizeStatus(k, b)
		if oka && okb {
			return na == nb
		}
	}
	return strings.TrimSpace(a) == strings.TrimSpace(b)
}

var fieldNameOK = func(s string) bool {
	if s == "" || !(s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || c == ' ' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// CheckFieldName checks that a field name can be written as a table row's name: letters,
// digits, spaces, '-' and '_', starting with a letter.
func CheckFieldName(name string) error {
	if !fieldNameOK(strings.TrimSpace(name)) {
		return fmt.Errorf("bad field name %q: use letters, digits, spaces, '-' and '_'", name)
	}
	return nil
}

// spliceCell replaces the value cell of field f, keeping the cell's padding (SPEC §3.5).
func (d *Doc) spliceCell(f Field, value string) []splice {
	src := d.Src
	if string(f.Value().Bytes(src)) == value {
		return nil
	}
	row := d.RowSpan(f)
	// The cell's interior runs from the pipe after the name to the next pipe or the line end.
	in := bytes.IndexByte(src[f.Name().Stop:row.Stop], '|')
	if in < 0 {
		return nil // not reachable for a well-formed row
	}
	inStart := f.Name().Stop + in + 1
	inEnd := row.Stop
	if k := bytes.IndexByte(src[f.Value().Stop:row.Stop], '|'); k >= 0 {
		inEnd = f.Value().Stop + k
	}
	left := string(src[inStart:f.Value().Start])
	right := string(src[f.Value().Stop:inEnd])
	if f.Value().Start == f.Value().Stop {
		left, right = " ", " "
	}
	text := left + value + right
	if width, ok := d.columnWidth(row, inStart, inEnd); ok {
		// In an aligned table, a value that fits keeps the column's width; a longer one
		// is written as ` value `.
		if need := utf8.RuneCountInString(left) + utf8.RuneCountInString(value) + 1; need <= width {
			text = left + value + strings.Repeat(" ", width-need+1)
		} else {
			text = " " + value + " "
		}
	}
	if strings.HasSuffix(value, `\`) && inEnd < row.Stop && !strings.HasSuffix(text, " ") {
		text += " " // a trailing backslash would escape the pipe
	}
	switch {
	case value == "" && inEnd < row.Stop && text == "":
		// An empty last cell must still be there when the row is read again: `|Notes||`
		// reads as one cell, `|Notes| |` as two.
		text = " "
	case inEnd == row.Stop && (value == "" || strings.HasSuffix(value, "|")):
		// A row without a closing pipe loses a last pipe to the row (`| Notes |` is one
		// cell; `| Notes | a \|` reads as "a \"): close the row.
		text = strings.TrimRight(text, " \t") + " |"
	}
	return []splice{{start: inStart, end: inEnd, text: text}}
}

// columnWidth returns the width of the value column of an aligned table, for the row
// spanning row whose value cell's interior is src[inStart:inEnd]: the row's value cell must
// start at the column's left pipe and have a closing pipe of its own. A row that outgrew the
// column, or this row itself, may end at another column.
func (d *Doc) columnWidth(row Span, inStart, inEnd int) (int, bool) {
	if inEnd >= row.Stop {
		return 0, false
	}
	t := d.tableAt(row.Start)
	if t == nil {
		return 0, false
	}
	grid := d.grid(t)
	open := utf8.RuneCount(d.Src[row.Start : inStart-1])
	for j := 0; j+1 < len(grid); j++ {
		if grid[j] == open {
			return grid[j+1] - grid[j] - 1, true
		}
	}
	return 0, false
}

// tableAt returns the table holding the line that starts at off, or nil.
func (d *Doc) tableAt(off int) *Table {
	// Tables are in the order of the file: the last one starting at or before off.
	i := sort.Search(len(d.Tables), func(i int) bool { return d.Tables[i].Start > off }) - 1
	if i >= 0 && off <= d.Tables[i].End {
		return &d.Tables[i]
	}
	return nil
}

// grid returns the columns of the pipes of table t when t is aligned, or nil. A table is
// aligned when its header's pipes stand at the same columns as those of at least half of its
// data rows (or, when it has none, as those of its delimiter row): a row that outgrew its
// column (a longer value written into the table) does not keep the others from being
// aligned, nor does a short delimiter row such as `|---|---|`. Columns are counted in
// characters.
func (d *Doc) grid(t *Table) []int {
	src := d.Src
	var header, cols []int
	rows, same, delimiter := 0, 0, false
	for i, off := 0, t.Start; off <= t.End; i++ {
		end := t.End
		if e := bytes.IndexByte(src[off:t.End], '\n'); e >= 0 {
			end = off + e
		}
		cols = pipeColumns(src[off:end], cols[:0])
		switch i {
		case 0:
			header = append([]int(nil), cols...)
		case 1:
			delimiter = slices.Equal(cols, header)
		default:
			rows++
			if slices.Equal(cols, header) {
				same++
			}
		}
		off = end + 1
	}
	if len(header) < 2 || rows == 0 && !delimiter || 2*same < rows {
		return nil
	}
	return header
}

// pipeColumns appends to cols the columns of the pipes of line that separate cells (not
// those escaped as `\|`), counted in characters from the line's start.
func pipeColumns(line []byte, cols []int) []int {
	c := 0
	for i := 0; i < len(line); c++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			cols = append(cols, c)
		}
		_, n := utf8.DecodeRune(line[i:])
		i += n
	}
	return cols
}

// addRow adds `| name | value |` at the end of r's first field table, in the table's style.
func (d *Doc) addRow(r *Record, name, value string) ([]splice, error) {
	ts := d.FieldTables(r)
	if len(ts) == 0 {
		return nil, fmt.Errorf("%s:%d: %s: record has no field table", d.Path, r.Line, r.ID)
	}
	t := &d.Tables[ts[0]]
	src := d.Src
	header := src[t.Header.Start:t.Header.End]
	lead := len(bytes.TrimLeft(header, " ")) > 0 && bytes.TrimLeft(header, " ")[0] == '|'
	trail := bytes.HasSuffix(bytes.TrimRight(header, " \t"), []byte("|"))
	nameCell, valueCell := " "+name+" ", " "+value+" "
	if g := d.grid(t); len(g) == 3 && utf8.RuneCountInString(name)+2 <= g[1]-g[0]-1 {
		// Padding the value keeps the table aligned only if the name fits its column.
		nameCell = padCell(name, g[1]-g[0]-1)
		valueCell = padCell(value, g[2]-g[1]-1)
	} else if d.compactHeader(t) {
		nameCell, valueCell = name, value
	}
	var b strings.Builder
	b.WriteString(d.eol())
	if lead {
		b.WriteByte('|')
	}
	b.WriteString(nameCell)
	b.WriteByte('|')
	b.WriteString(valueCell)
	if trail {
		b.WriteByte('|')
	}
	return []splice{{start: t.End, end: t.End, text: strings.TrimRight(b.String(), " ")}}, nil
}

// compactHeader reports whether t's header is written without spaces around its cells, as
// in `|Field|Value|`; rows added to it are written the same way.
func (d *Doc) compactHeader(t *Table) bool {
	for _, c := range t.Header.Cells {
		if c.Start == c.Stop || c.Start == t.Header.Start || d.Src[c.Start-1] != '|' || (c.Stop < t.Header.End && d.Src[c.Stop] != '|') {
			return false
		}
	}
	return true
}

func padCell(v string, width int) string {
	n := utf8.RuneCountInString(v) + 2
	if n >= width {
		return " " + v + " "
	}
	return " " + v + strings.Repeat(" ", width-n+1)
}

// eol returns the file's line ending: CRLF when its first line ends so.
func (d *Doc) eol() string {
	if i := bytes.IndexByte(d.Src, '\n'); i > 0 && d.Src[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// withEOL converts text's line endings to the file's and makes it end with one.
func (d *Doc) withEOL(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if d.eol() == "\r\n" {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	return text
}

func (op AppendRecord) splices(d *Doc) ([]splice, error) {
	text := d.withEOL(strings.TrimLeft(op.Text, "\r\n"))
	if id := headingID(text); id != "" {
		if _, ok := d.Record(id); ok {
			return nil, fmt.Errorf("%s: %w: %s", d.Path, ErrExists, id)
		}
	}
	at, ok := d.afterIssuesMarker()
	if !ok {
		if sp, _, found := d.Section(CoverageTitle); found {
			at, ok = sp.Start, true
		}
	}
	if ok && at < len(d.Src) {
		prefix := ""
		if !endsWithBlankLine(d.Src[:at]) {
			prefix = d.eol()
		}
		return []splice{{start: at, end: at, text: prefix + text + d.eol()}}, nil
	}
	return []splice{d.appendAtEnd(text)}, nil
}

// headingID returns the ID of a record heading on text's first line, or "".
func headingID(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level < 2 || level > 4 || !strings.HasPrefix(line[level:], " ") {
		return ""
	}
	t := []byte(strings.TrimSpace(line[level:]))
	n, _ := matchID(t)
	return string(t[:n])
}

// afterIssuesMarker returns where a record appended below the IssuesMarker line goes: after
// the records that follow the line (the last such line, if the file has several). It reports
// false when the file has no such line.
func (d *Doc) afterIssuesMarker() (int, bool) {
	src := d.Src
	if !bytes.Contains(src, []byte(IssuesMarker)) {
		return 0, false
	}
	pos := -1
	for i := 0; i < len(src); {
		e := bytes.IndexByte(src[i:], '\n')
		next := len(src)
		if e >= 0 {
			next = i + e + 1
		}
		if string(bytes.TrimSpace(src[i:next])) == IssuesMarker {
			pos = next
		}
		i = next
	}
	if pos < 0 {
		return 0, false
	}
	for _, r := range d.Records {
		if r.Start < pos {
			continue
		}
		for pos < r.Start {
			e := bytes.IndexByte(src[pos:], '\n')
			if e < 0 || !isBlank(src[pos:pos+e]) {
				break
			}
			pos += e + 1
		}
		if pos != r.Start {
			break
		}
		pos = r.End
	}
	if isBlank(src[pos:]) {
		return len(src), true
	}
	for {
		e := bytes.IndexByte(src[pos:], '\n')
		if e < 0 || !isBlank(src[pos:pos+e]) {
			return pos, true
		}
		pos += e + 1
	}
}

// appendAtEnd adds text (ending with a line ending) after a blank line at the end of the file;
// a file without a final newline keeps having none.
func (d *Doc) appendAtEnd(text string) splice {
	src, eol := d.Src, d.eol()
	n := len(src)
	switch {
	case n == 0:
		return splice{start: 0, end: 0, text: text}
	case src[n-1] != '\n':
		return splice{start: n, end: n, text: eol + eol + strings.TrimSuffix(text, eol)}
	case endsWithBlankLine(src):
		return splice{start: n, end: n, text: text}
	}
	return splice{start: n, end: n, text: eol + text}
}

func endsWithBlankLine(b []byte) bool {
	b = bytes.TrimRight(b, " \t")
	if len(b) == 0 {
		return true
	}
	if b[len(b)-1] != '\n' {
		return false
	}
	b = bytes.TrimRight(b[:len(b)-1], " \t\r")
	return len(b) == 0 || b[len(b)-1] == '\n'
}

func (op ReplaceSection) splices(d *Doc) ([]splice, error) {
	text := d.withEOL(op.Text)
	sp, ok := d.SectionBody(op.Title)
	if !ok {
		return []splice{d.appendAtEnd(text)}, nil
	}
	if sp.Stop == len(d.Src) && !bytes.HasSuffix(d.Src, []byte("\n")) {
		text = strings.TrimSuffix(text, d.eol())
	}
	if string(d.Src[sp.Start:sp.Stop]) == text {
		return nil, nil
	}
	return []splice{{start: sp.Start, end: sp.Stop, text: text}}, nil
}

// SectionBody returns the part of the section titled title that ReplaceSection replaces:
// from its heading to the first record under it (people and agents append tasks at the end
// of the file, after the coverage matrix), without the blank lines that separate it from
// what follows.
func (d *Doc) SectionBody(title string) (Span, bool) {
	sp, _, ok := d.Section(title)
	if !ok {
		return Span{}, false
	}
	if i := sort.Search(len(d.Records), func(i int) bool { return d.Records[i].Start > sp.Start }); i < len(d.Records) && d.Records[i].Start < sp.Stop {
		sp.Stop = d.Records[i].Start
	}
	end := sp.Stop
	for end > sp.Start {
		i := bytes.LastIndexByte(d.Src[sp.Start:end-1], '\n')
		if i < 0 {
			break
		}
		if !isBlank(d.Src[sp.Start+i+1 : end]) {
			break
		}
		end = sp.Start + i + 1
	}
	return Span{sp.Start, end}, true
}

// SectionFieldTable returns the first `Field | Value` table in the SectionBody of the
// section titled title.
func (d *Doc) SectionFieldTable(title string) (*Table, bool) {
	sp, ok := d.SectionBody(title)
	if !ok {
		return nil, false
	}
	for i := range d.Tables {
		if t := &d.Tables[i]; t.Start >= sp.Start && t.Start < sp.Stop && isFieldHeader(d.Src, t.Header) {
			return t, true
		}
	}
	return nil, false
}
