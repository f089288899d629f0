package queue

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"unicode/utf8"
)

// Parse reads a queue file's bytes. It returns the Doc even when it also returns
// ParseErrors, so that callers such as validate can report more.
func Parse(path string, src []byte, kind Kind) (*Doc, error) {
	return parse(path, src, kind, nil)
}

// ParseOnly parses like Parse and checks every record, but keeps the fields of only the
// records named by ids: the others have no fields in the returned Doc (Doc.Partial is set).
// Editing one record of a large file needs no more.
func ParseOnly(path string, src []byte, kind Kind, ids ...string) (*Doc, error) {
	return parse(path, src, kind, func(id string) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	})
}

func parse(path string, src []byte, kind Kind, keep func(string) bool) (*Doc, error) {
	if len(src) > maxSize {
		return nil, ParseErrors{{Path: path, Line: 1, Msg: fmt.Sprintf("%d bytes: a queue file must be smaller than 2 GiB", len(src))}}
	}
	if err := checkText(path, src); err != nil {
		d, _ := newDoc(path, src, kind, keep)
		return d, err
	}
	d, b := newDoc(path, src, kind, keep)
	if scanFast(src, b) {
		d.Fast = true
	} else {
		d, b = newDoc(path, src, kind, keep)
		b.presize(src)
		scanGoldmark(src, b)
	}
	b.finish()
	if len(b.errs) > 0 {
		return d, b.errs.sorted()
	}
	return d, nil
}

// checkText refuses a file that is not UTF-8 text: a binary file, or one saved in another
// encoding, has no headings a reader would see, and read as markdown it would pass as a
// queue of no tasks. The error names the line of the first bad byte. (Both checks run at
// several GB/s: about 0.5 ms of a 13 ms parse of 10,000 tasks.)
func checkText(path string, src []byte) error {
	bad, what := bytes.IndexByte(src, 0), "a NUL byte"
	if !utf8.Valid(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		if bad < 0 || i < bad {
			bad, what = i, "invalid UTF-8"
		}
	}
	if bad < 0 {
		return nil
	}
	line := bytes.Count(src[:bad], []byte{'\n'}) + 1
	return ParseErrors{{Path: path, Line: line, Msg: "not a text file (" + what + ")"}}
}

// maxSize is the largest queue file: positions in fields are 32-bit (see Field).
const maxSize = math.MaxInt32

func newDoc(path string, src []byte, kind Kind, keep func(string) bool) (*Doc, *builder) {
	d := &Doc{Path: path, Src: src, Kind: kind, Partial: keep != nil}
	b := newBuilder(d)
	b.keep = keep
	return d, b
}

// presize sizes the Doc's arrays for part of its source, so that they do not grow while it
// is read: a queue is mostly table rows, and its headings are mostly records. (Counting
// single bytes is fast; counting "\n|" is not.)
func (b *builder) presize(part []byte) {
	c := b.estimate(part)
	d := b.d
	d.Headings = make([]Heading, 0, c.heads)
	d.Records = make([]Record, 0, c.heads)
	d.fields = make([]Field, 0, c.rows)
	d.prose = make([]Field, 0, c.prose)
	d.Tables = make([]Table, 0, c.tables)
	b.span = make([]Span, 0, 2*c.tables) // mostly the headers' two cells
}

// sizes are the estimated lengths of a Doc's arrays.
type sizes struct{ rows, heads, prose, tables int }

func (b *builder) estimate(part []byte) sizes {
	c := sizes{rows: bytes.Count(part, []byte{'|'})/3 + 8, heads: bytes.Count(part, []byte{'#'})/3 + 8}
	c.prose, c.tables = c.heads*2, c.heads+8
	if b.keep != nil {
		// Only the kept records' fields, prose and tables are stored.
		c.rows, c.prose, c.tables = 64, 64, 64
	}
	return c
}

// presizeSplit sizes the arrays of b (for src[:split]) and of b2 (for src[split:]) as two
// parts of one allocation each, so that merging the halves moves memory already touched
// instead of allocating it a third time.
func (b *builder) presizeSplit(b2 *builder, split int) {
	src := b.d.Src
	c1, c2 := b.estimate(src[:split]), b2.estimate(src[split:])
	d, d2 := b.d, b2.d
	w := &whole{}
	d.Headings, d2.Headings, w.headings = halves[Heading](c1.heads, c2.heads)
	d.Records, d2.Records, w.records = halves[Record](c1.heads, c2.heads)
	d.fields, d2.fields, w.fields = halves[Field](c1.rows, c2.rows)
	d.prose, d2.prose, w.prose = halves[Field](c1.prose, c2.prose)
	d.Tables, d2.Tables, w.tables = halves[Table](c1.tables, c2.tables)
	b.span, b2.span = make([]Span, 0, 2*c1.tables), make([]Span, 0, 2*c2.tables)
	b.whole = w
}

// whole holds the allocations that presizeSplit shared between two builders.
type whole struct {
	headings []Heading
	records  []Record
	fields   []Field
	prose    []Field
	tables   []Table
}

// halves allocates n1+n2 elements and returns an empty slice over the first n1 (its capacity
// capped there, so that growing it cannot overwrite the second), one over the next n2, and
// the whole.
func halves[T any](n1, n2 int) ([]T, []T, []T) {
	full := make([]T, n1+n2)
	return full[:0:n1], full[n1 : n1 : n1+n2], full
}

// join appends second to first. When both are still where halves put them in full, it
// moves second down in place.
func join[T any](full, first, second []T) []T {
	if len(second) == 0 {
		return first
	}
	if _, ok := inHalves(full, first, second); ok {
		n := copy(full[len(first):], second)
		return full[:len(first)+n]
	}
	return append(first, second...)
}

// joinGap joins first and second as join does, for arrays read only through index ranges:
// when both are still where halves put them in full, second stays where it is, after the
// unused end of first's part, instead of moving down (megabytes on a large queue). It
// returns the joined array and the index of second's first element in it.
func joinGap[T any](full, first, second []T) ([]T, int) {
	if n1, ok := inHalves(full, first, second); ok {
		return full[:n1+len(second)], n1
	}
	return join(full, first, second), len(first)
}

// inHalves reports whether first and second are still the two parts of full that halves
// made (neither has outgrown its part), and where second's part starts.
func inHalves[T any](full, first, second []T) (int, bool) {
	n1 := len(full) - cap(second)
	return n1, cap(first) > 0 && cap(second) > 0 && n1 >= 0 && n1 < len(full) &&
		&first[:cap(first)][0] == &full[0] && &second[:cap(second)][0] == &full[n1]
}

// Load reads and parses a queue file.
func Load(path string) (*Doc, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return parseCached(path, src, KindOf(path), nil)
}

// LoadOnly reads and parses a queue file keeping only the named records' fields (see
// ParseOnly).
func LoadOnly(path string, ids ...string) (*Doc, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return parseCached(path, src, KindOf(path), ids)
}

// ReadFile reads a whole queue file, as os.ReadFile does. A large one is read in two halves
// at once: in a fresh process most of the time goes into the kernel mapping the buffer's
// new pages, which two cores do in half the time.
func ReadFile(path string) ([]byte, error) {
	src, _, err := readStat(path)
	return src, err
}

// readStat is ReadFile that also returns the stat of the file it read, taken before reading.
func readStat(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size < parallelMin || int64(int(size)) != size {
		src, err := io.ReadAll(f)
		return src, st, err
	}
	buf := make([]byte, size+1)
	half := size / 2
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err2 = f.ReadAt(buf[half:size], half)
	}()
	_, err1 := f.ReadAt(buf[:half], 0)
	<-done
	// One byte more than the size says: if the file grew, or shrank (an EOF above), while it
	// was read, read it again as a whole.
	n, err3 := f.ReadAt(buf[size:], size)
	for _, err := range []error{err1, err2, err3} {
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
	}
	if err1 != nil || err2 != nil || n != 0 {
		src, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
		return src, st, err
	}
	return buf[:size], st, nil
}
