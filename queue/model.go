package queue

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// A Span holds a byte range [Start, Stop) into a document's source.
type Span struct {
	Start, Stop int
}

// Bytes returns the bytes of s in src.
func (s Span) Bytes(src []byte) []byte { return src[s.Start:s.Stop] }

// A Heading is a top-level markdown heading.
type Heading struct {
	Level int
	Line  int  // 1-based line of the heading
	Start int  // offset of the heading's first line
	Text  Span // the heading's raw text, without the # marks
}

// A Row is one line of a table.
type Row struct {
	Line       int
	Start, End int    // the line, without its line ending
	Cells      []Span // trimmed cell contents, at most one per column of the table
	Raw        int    // how many cells the line itself has
}

// A Table is a top-level GFM table.
type Table struct {
	Header Row
	Rows   []Row // data rows, after the delimiter row
	Start  int   // offset of the header line
	End    int   // end of the last row, without its line ending
}

// A Field is one `| Name | Value |` row of a record's field table, or one `**Name:** value`
// prose line. It is small (24 bytes), as a queue has one for nearly every line: its
// positions are 32-bit, and Parse refuses a file of 2 GiB or more.
type Field struct {
	name, value span32
	line        int32
	key         uint32 // fieldKey of the name
}

type span32 struct{ start, stop int32 }

func newField(name, value Span, line int, src []byte) Field {
	return Field{
		name:  span32{int32(name.Start), int32(name.Stop)},
		value: span32{int32(value.Start), int32(value.Stop)},
		line:  int32(line),
		key:   fieldKey(name.Bytes(src)),
	}
}

// Name returns the span of the field's name, trimmed.
func (f Field) Name() Span { return Span{int(f.name.start), int(f.name.stop)} }

// Value returns the span of the field's value, trimmed and still escaped.
func (f Field) Value() Span { return Span{int(f.value.start), int(f.value.stop)} }

// Line returns the field's 1-based line.
func (f Field) Line() int { return int(f.line) }

// RowSpan returns the whole line that holds field f, without its line ending.
func (d *Doc) RowSpan(f Field) Span {
	s := bytes.LastIndexByte(d.Src[:f.Name().Start], '\n') + 1
	e := bytes.IndexByte(d.Src[f.Name().Start:], '\n')
	if e < 0 {
		e = len(d.Src)
	} else {
		e += f.Name().Start
	}
	if e > s && d.Src[e-1] == '\r' {
		e--
	}
	return Span{s, e}
}

// A Record is a heading whose text begins with an ID, and the content up to the next heading
// of the same or a higher level (SPEC §3.1).
type Record struct {
	ID     string
	Level  int
	Line   int
	Start  int // offset of the heading line
	End    int // offset where the next record or section begins (or len(src))
	Title  Span
	tables [2]int // [lo, hi) into Doc.Tables: the record's field tables
	fields [2]int // [lo, hi) into Doc.fields
	prose  [2]int // [lo, hi) into Doc.prose
}

// A Doc is a parsed queue file. It keeps the source bytes; every position in it refers to
// them.
type Doc struct {
	Path     string
	Src      []byte
	Kind     Kind
	Headings []Heading
	Tables   []Table
	Records  []Record
	fields   []Field
	prose    []Field
	index    map[string]int

	// Fast reports whether the line scanner read the file (true) or goldmark did.
	Fast bool
	// Partial reports that only some records kept their fields (see ParseOnly).
	Partial bool
}

// Kind says which queue a file is, and so which statuses are valid in it.
type Kind int

const (
	// Tasks is .orchestrator/task_queue.md.
	Tasks Kind = iota
	// Issues is .orchestrator/issue_queue.md.
	Issues
)

// KindOf guesses a queue file's kind from its name.
func KindOf(path string) Kind {
	if strings.Contains(strings.ToLower(baseName(path)), "issue") {
		return Issues
	}
	return Tasks
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Record returns the record with the given ID.
func (d *Doc) Record(id string) (*Record, bool) {
	i, ok := d.index[id]
	if !ok {
		return nil, false
	}
	return &d.Records[i], true
}

// Fields returns the table fields of r, in file order.
func (d *Doc) Fields(r *Record) []Field { return d.fields[r.fields[0]:r.fields[1]] }

// Prose returns the bold-label prose fields of r, in file order.
func (d *Doc) Prose(r *Record) []Field { return d.prose[r.prose[0]:r.prose[1]] }

// FieldTables returns the indices of r's field tables.
func (d *Doc) FieldTables(r *Record) []int {
	out := make([]int, 0, r.tables[1]-r.tables[0])
	for i := r.tables[0]; i < r.tables[1]; i++ {
		if d.isFieldTable(i) {
			out = append(out, i)
		}
	}
	return out
}

// Lookup finds the field named name (matched as SPEC §3.1 says) in r's tables, then in its
// prose labels.
func (d *Doc) Lookup(r *Record, name string) (Field, bool) {
	k := fieldKey([]byte(trimASCII(name)))
	for _, f := range d.Fields(r) {
		if f.key == k && sameName(f.Name().Bytes(d.Src), name) {
			return f, true
		}
	}
	for _, f := range d.Prose(r) {
		if f.key == k && sameName(f.Name().Bytes(d.Src), name) {
			return f, true
		}
	}
	return Field{}, false
}

// Get returns the value of field name in r ("" when absent), with `\|` unescaped.
func (d *Doc) Get(r *Record, name string) string {
	f, ok := d.Lookup(r, name)
	if !ok {
		return ""
	}
	return d.Value(f)
}

// Value returns f's value with `\|` unescaped.
func (d *Doc) Value(f Field) string { return d.unescape(f.Value()) }

// unescape returns the text of a cell with `\|` unescaped.
func (d *Doc) unescape(s Span) string {
	v := s.Bytes(d.Src)
	if bytes.Contains(v, []byte(`\|`)) {
		return string(bytes.ReplaceAll(v, []byte(`\|`), []byte("|")))
	}
	return string(v)
}

// Name returns f's name as written.
func (d *Doc) Name(f Field) string { return string(f.Name().Bytes(d.Src)) }

// Body returns the record's text after its heading line.
func (d *Doc) Body(r *Record) string {
	i := bytes.IndexByte(d.Src[r.Start:r.End], '\n')
	if i < 0 {
		return ""
	}
	return string(d.Src[r.Start+i+1 : r.End])
}

// ProseText returns the record's text without its field tables' lines: its objective,
// criteria and notes, as a prompt shows them beside the fields.
func (d *Doc) ProseText(r *Record) string {
	var out []string
	for _, line := range strings.Split(d.Body(r), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		out = append(out, strings.TrimRight(line, "\r"))
	}
	return strings.Join(out, "\n")
}

// TitleText returns the record heading's text after the ID and its separator.
func (d *Doc) TitleText(r *Record) string { return string(r.Title.Bytes(d.Src)) }

// Section returns the span of the top-level section whose heading text is title (compared
// case-insensitively): from its heading to the next heading of the same or a higher level.
func (d *Doc) Section(title string) (Span, Heading, bool) {
	for i, h := range d.Headings {
		if !bytes.EqualFold(bytes.TrimSpace(h.Text.Bytes(d.Src)), []byte(title)) {
			continue
		}
		end := len(d.Src)
		for _, n := range d.Headings[i+1:] {
			if n.Level <= h.Level {
				end = n.Start
				break
			}
		}
		return Span{h.Start, end}, h, true
	}
	return Span{}, Heading{}, false
}

// SectionTable returns the first table in the section titled title whose header's first cell
// is first (case-insensitively).
func (d *Doc) SectionTable(title, first string) (*Table, bool) {
	sp, _, ok := d.Section(title)
	if !ok {
		return nil, false
	}
	for i := range d.Tables {
		t := &d.Tables[i]
		if t.Start < sp.Start || t.Start >= sp.Stop || len(t.Header.Cells) == 0 {
			continue
		}
		if strings.EqualFold(string(t.Header.Cells[0].Bytes(d.Src)), first) {
			return t, true
		}
	}
	return nil, false
}

// ProjectCommand returns the command of the row named name (Build, Test) of the task queue's
// Project Commands table, or "" when it has none or an empty one.
func (d *Doc) ProjectCommand(name string) string {
	t, ok := d.SectionTable("Project Commands", "Command")
	if !ok {
		return ""
	}
	for _, row := range t.Rows {
		if strings.EqualFold(d.CellText(row, 0), name) {
			if v := d.CellText(row, 1); !IsEmpty(v) {
				return v
			}
		}
	}
	return ""
}

// CellText returns the unescaped text of cell i of row, or "" when absent.
func (d *Doc) CellText(row Row, i int) string {
	if i >= len(row.Cells) {
		return ""
	}
	return d.unescape(row.Cells[i])
}

// LineOf returns the 1-based line number of offset off.
func (d *Doc) LineOf(off int) int { return bytes.Count(d.Src[:off], []byte{'\n'}) + 1 }

func (d *Doc) isFieldTable(i int) bool { return isFieldHeader(d.Src, d.Tables[i].Header) }

// isFieldHeader reports whether a table's header row is `Field | Value`.
func isFieldHeader(src []byte, h Row) bool {
	return len(h.Cells) == 2 && equalFoldASCII(h.Cells[0].Bytes(src), "field") &&
		equalFoldASCII(h.Cells[1].Bytes(src), "value")
}

// IDs returns the record IDs in file order.
func (d *Doc) IDs() []string {
	out := make([]string, len(d.Records))
	for i := range d.Records {
		out[i] = d.Records[i].ID
	}
	return out
}

// A ParseError reports input that is not a valid queue file, at a line.
type ParseError struct {
	Path string
	Line int
	ID   string // the record concerned, if any
	Msg  string
}

func (e *ParseError) Error() string {
	if e.ID != "" {
		return fmt.Sprintf("%s:%d: %s: %s", e.Path, e.Line, e.ID, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

// ParseErrors is every ParseError of one file, in line order.
type ParseErrors []*ParseError

func (es ParseErrors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (es ParseErrors) sorted() ParseErrors {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return es
}
