package queue

import (
	"bytes"
	"fmt"
	"os"
)

// Parse reads a queue file's bytes. It returns the Doc even when it also returns
// ParseErrors, so that callers such as validate can report more.
func Parse(path string, src []byte, kind Kind) (*Doc, error) {
	d, b := newDoc(path, src, kind)
	if scanFast(src, b) {
		d.Fast = true
	} else {
		d, b = newDoc(path, src, kind)
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
	d, b := newDoc(path, src, kind)
	scanGoldmark(src, b)
	b.finish()
	if len(b.errs) > 0 {
		return d, b.errs.sorted()
	}
	return d, nil
}

func newDoc(path string, src []byte, kind Kind) (*Doc, *builder) {
	// Size the arenas from the file, so that they do not grow: a queue is mostly table
	// rows, and its headings are mostly records.
	// (Counting single bytes is fast; counting "\n|" is not.)
	rows := bytes.Count(src, []byte{'\n'})*2/3 + 8
	heads := bytes.Count(src, []byte{'#'})/3 + 8
	d := &Doc{
		Path:     path,
		Src:      src,
		Kind:     kind,
		fields:   make([]Field, 0, rows),
		Headings: make([]Heading, 0, heads),
		Records:  make([]Record, 0, heads),
	}
	b := newBuilder(d)
	b.rows = make([]Row, 0, rows)
	b.span = make([]Span, 0, 2*rows)
	d.prose = make([]Field, 0, heads*2)
	d.Tables = make([]Table, 0, heads+8)
	return d, b
}

// Load reads and parses a queue file.
func Load(path string) (*Doc, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return Parse(path, src, KindOf(path))
}
