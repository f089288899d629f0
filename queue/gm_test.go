package queue

import (
	"bytes"

	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
)

// The reference parse that tests compare Parse with: goldmark with its GFM table extension,
// which finds the tables itself (Parse finds them in paragraphs, in the builder).
var gmTables = goldmark.New(goldmark.WithExtensions(extension.Table))

// parseGoldmark parses src with goldmark and its table extension only.
func parseGoldmark(path string, src []byte, kind Kind) (*Doc, error) {
	d, b := newDoc(path, src, kind, nil)
	b.presize(src)
	walkGoldmark(gmTables.Parser(), src, b, func(n gast.Node, lineAt func(int) lineSpan) {
		if t, ok := n.(*east.Table); ok {
			b.table(gmTable(t, src, lineAt))
		}
	})
	b.finish()
	if len(b.errs) > 0 {
		return d, b.errs.sorted()
	}
	return d, nil
}

func gmTable(t *east.Table, src []byte, lineAt func(int) lineSpan) Table {
	var out Table
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		row := gmRow(r, src, lineAt)
		if _, ok := r.(*east.TableHeader); ok {
			out.Header = row
			out.Start = row.Start
			continue
		}
		out.Rows = append(out.Rows, row)
	}
	out.End = out.Header.End
	if len(out.Rows) > 0 {
		out.End = out.Rows[len(out.Rows)-1].End
	} else {
		// The delimiter row is the line after the header.
		out.End = out.Header.End
		if nl := bytes.IndexByte(src[out.Header.End:], '\n'); nl >= 0 && out.Header.End+nl+1 < len(src) {
			out.End = lineAt(out.Header.End + nl + 1).end
		}
	}
	return out
}

func gmRow(r gast.Node, src []byte, lineAt func(int) lineSpan) Row {
	var pos int
	switch r := r.(type) {
	case *east.TableHeader:
		pos = r.Pos()
	case *east.TableRow:
		pos = r.Pos()
	}
	l := lineAt(pos)
	row := Row{Line: l.line, Start: l.start, End: l.end}
	for c := r.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Lines().Len() == 0 {
			continue
		}
		seg := c.Lines().At(0)
		row.Cells = append(row.Cells, Span{seg.Start, seg.Stop})
	}
	row.Raw = rawCells(src, l)
	return row
}

// rawCells counts the cells written on a table line, split as the fast path splits them.
func rawCells(src []byte, l lineSpan) int {
	b := &builder{d: &Doc{Src: src}}
	row, _ := b.splitRow(l, 1<<30, true)
	return row.Raw
}
