package queue

import (
	"sort"
	"sync"

	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// gmParser is goldmark's CommonMark block parser, made when a file first needs it. Instead
// of goldmark's table extension, which the fallback does not need the rest of, tableSplitter
// splits off the lines of a table, and the builder finds the table in them. (Tests compare
// the result with goldmark's table extension.)
var gmParser = sync.OnceValue(func() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithParagraphTransformers(append(parser.DefaultParagraphTransformers(),
			util.Prioritized(tableSplitter{}, 200))...), // the table extension's priority
	)
})

// tableSplitter moves the lines of a table at the end of a top-level paragraph into a
// tableLines node, where goldmark's table extension would make them a table node: what
// goldmark does next depends on it (a setext underline after a table, say, is not a
// heading's). It decides on the lines as goldmark holds them: before the paragraph is
// closed, with their indentation and line endings; when a setext underline closed it first,
// trimmed.
type tableSplitter struct{}

func (tableSplitter) Transform(node *gast.Paragraph, reader text.Reader, pc parser.Context) {
	segs := node.Lines()
	parent := node.Parent()
	if _, top := parent.(*gast.Document); !top || segs.Len() < 2 {
		return
	}
	src := reader.Source()
	lines := make([]lineSpan, segs.Len())
	for i := range lines {
		lines[i] = lineSpan{start: segs.At(i).Start, end: segs.At(i).Stop}
	}
	raw := func(l lineSpan) []byte { return src[l.start:l.end] }
	i, _, cols := newBuilder(&Doc{Src: src}).tableAt(lines, raw)
	if i == 0 {
		return
	}
	table := &tableLines{cols: cols}
	table.Lines().AppendAll(segs.Sliced(i-1, segs.Len()))
	segs.SetSliced(0, i-1)
	parent.InsertAfter(parent, node, table)
	if segs.Len() == 0 {
		parent.RemoveChild(parent, node)
	}
}

// tableLines holds the lines of a table of cols columns (see tableSplitter).
type tableLines struct {
	gast.BaseBlock
	cols int
}

var kindTableLines = gast.NewNodeKind("TableLines")

func (n *tableLines) Kind() gast.NodeKind           { return kindTableLines }
func (n *tableLines) Dump(source []byte, level int) { gast.DumpHelper(n, source, level, nil, nil) }

// scanGoldmark reads src with goldmark and feeds its top-level blocks to b: the fallback for
// the files the line scanner leaves (see scanFast).
func scanGoldmark(src []byte, b *builder) { walkGoldmark(gmParser(), src, b, nil) }

// walkGoldmark parses src with p and feeds its top-level headings, paragraphs and tables to
// b. other, when not nil, is given every other top-level block (tests read goldmark's own
// table nodes with it).
func walkGoldmark(p parser.Parser, src []byte, b *builder, other func(n gast.Node, lineAt func(int) lineSpan)) {
	root := p.Parse(text.NewReader(src))
	lineAt := lineFinder(src)
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *gast.Heading:
			var sp Span
			if n.Lines().Len() > 0 {
				seg := n.Lines().At(0)
				sp = trimSpan(src, Span{seg.Start, seg.Stop})
			}
			l := lineAt(n.Pos())
			b.heading(n.Level, l.line, l.start, sp)
		case *gast.Paragraph:
			b.prose(gmLines(n, lineAt))
		case *tableLines:
			lines := gmLines(n, lineAt)
			header, _ := b.splitRow(lines[0], n.cols, true)
			b.tableLines(header, lines, n.cols)
		default:
			if other != nil {
				other(n, lineAt)
			}
		}
	}
}

// gmLines returns the whole lines of a goldmark block.
func gmLines(n gast.Node, lineAt func(int) lineSpan) []lineSpan {
	lines := make([]lineSpan, n.Lines().Len())
	for i := range lines {
		lines[i] = lineAt(n.Lines().At(i).Start)
	}
	return lines
}

// lineFinder returns a function that finds the line holding an offset of src.
func lineFinder(src []byte) func(off int) lineSpan {
	starts := lineStarts(src)
	return func(off int) lineSpan {
		n := sort.Search(len(starts), func(i int) bool { return starts[i] > off })
		s := starts[n-1]
		e := len(src)
		if n < len(starts) {
			e = starts[n] - 1
		} else if e > s && src[e-1] == '\n' {
			e--
		}
		if e > s && src[e-1] == '\r' {
			e--
		}
		return lineSpan{line: n, start: s, end: e}
	}
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' && i+1 <= len(src) {
			starts = append(starts, i+1)
		}
	}
	if len(src) > 0 && src[len(src)-1] == '\n' {
		starts = starts[:len(starts)-1]
	}
	return starts
}
