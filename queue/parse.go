package queue

import (
	"bytes"
	"fmt"
	"os"
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
	d, b := newDoc(path, src, kind, keep)
	if scanFast(src, b) {
		d.Fast = true
	} else {
		d, b = newDoc(path, src, kind, keep)
		scanGoldmark(src, b)
	}
	b.finish()
	if len(b.errs) > 0 {
		return d, b.errs.sorted()
	}
	return d, nil
}

// parseGoldmark parses with goldmark only; tests compare it with Parse.
func parseGoldmark(path string, src []byte, kind Kind) (*Doc, error) {
	d, b := newDoc(path, src, kind, nil)
	scanGoldmark(src, b)
	b.finish()
	if len(b.errs) > 0 {
		return d, b.errs.sorted()
	}
	return d, nil
}

func newDoc(path string, src []byte, kind Kind, keep func(string) bool) (*Doc, *builder) {
	d := &Doc{Path: path, Src: src, Kind: kind, Partial: keep != nil}
	b := newBuilder(d)
	b.keep = keep
	b.presize(src)
	return d, b
}

// presize sizes the Doc's arrays for part of its source, so that they do not grow while it
// is read: a queue is mostly table rows, and its headings are mostly records. (Counting
// single bytes is fast; counting "\n|" is not.)
func (b *builder) presize(part []byte) {
	rows := bytes.Count(part, []byte{'|'})/3 + 8
	heads := bytes.Count(part, []byte{'#'})/3 + 8
	prose, tables := heads*2, heads+8
	if b.keep != nil {
		// Only the kept records' fields, prose and tables are stored.
		rows, prose, tables = 64, 64, 64
	}
	d := b.d
	d.Headings = make([]Heading, 0, heads)
	d.Records = make([]Record, 0, heads)
	d.fields = make([]Field, 0, rows)
	d.prose = make([]Field, 0, prose)
	d.Tables = make([]Table, 0, tables)
}

// Load reads and parses a queue file.
func Load(path string) (*Doc, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return Parse(path, src, KindOf(path))
}

// LoadOnly reads and parses a queue file keeping only the named records' fields (see
// ParseOnly).
func LoadOnly(path string, ids ...string) (*Doc, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return ParseOnly(path, src, KindOf(path), ids...)
}
