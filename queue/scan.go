package queue

import (
	"bytes"
)

// This file holds the fast path: a line scanner that finds the top-level headings,
// paragraphs and tables of the shapes queue files use. It follows CommonMark for those shapes
// and gives up (returns false) on anything it is not sure of: block quotes, HTML other than
// comments, setext headings, link reference definitions, tabs in indentation, loose list
// items. Parse then reads the file with goldmark. FuzzFastAgreesWithGoldmark checks that
// whenever the scanner does not give up, it finds what goldmark finds.

type lineSpan struct {
	line       int
	start, end int // without the line ending
}

type scanState int

const (
	stNone scanState = iota
	stPara
	stFence
	stIndented
	stHTML
	stList
)

type scanner struct {
	src    []byte
	b      *builder
	state  scanState
	para   []lineSpan
	lineNo int

	fenceChar byte
	fenceLen  int

	// List state: the content column of the current item, the marker kind, and whether the
	// last line in the list was paragraph text (so that a lazy continuation line belongs to
	// the list).
	listW        int
	listMarker   byte // '-', '*', '+' for bullets; '.' or ')' for ordered lists
	listParaOpen bool
	listBlank    bool
}

// scanFast runs the fast path. It reports false when the file needs goldmark.
//
// A large file is scanned in two halves at once, split at a heading that ends any record
// (a record heading, or a level 1 or 2 heading). The second half is kept only if the first
// ends outside any fenced code or HTML block, where that heading is a real heading, so the
// result is the same as one scan.
func scanFast(src []byte, b *builder) bool {
	if !plainBytes(src) {
		return false
	}
	split := -1
	if len(src) >= parallelMin {
		split = splitPoint(src, b)
	}
	if split < 0 {
		b.presize(src)
		return scanRange(src, 0, len(src), 1, b) != nil
	}
	b2 := b.sibling(split)
	var second *scanner
	done := make(chan struct{})
	go func() {
		defer close(done)
		second = scanRange(src, split, len(src), bytes.Count(src[:split], []byte{'\n'})+1, b2)
	}()
	first := scanRangeOpen(src, 0, split, 1, b)
	<-done
	if first == nil {
		return false
	}
	if first.state == stFence || first.state == stHTML || second == nil {
		// The second half's start is not what it took it for (or it gave up): scan on
		// from the split with the first scanner instead.
		if scanRangeFrom(first, split, len(src)) == nil {
			return false
		}
		first.closePara()
		return true
	}
	first.closePara()
	b.merge(b2, split)
	return true
}

// parallelMin is the file size from which scanFast scans two halves at once.
const parallelMin = 512 << 10

// splitPoint finds a line near the middle of src that is an ATX heading ending any record.
func splitPoint(src []byte, b *builder) int {
	for pos := len(src) / 2; pos < len(src); {
		i := bytes.Index(src[pos:], []byte("\n#"))
		if i < 0 {
			return -1
		}
		start := pos + i + 1
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src) - start
		}
		ls := lineSpan{start: start, end: start + end}
		if ls.end > ls.start && src[ls.end-1] == '\r' {
			ls.end--
		}
		li := classify(src, ls, start)
		if li.kind == lkATX && (li.level <= 2 || b.recordHeading(li.level, li.text)) {
			return start
		}
		pos = start
	}
	return -1
}

// scanRange scans src[from:to], whose first line is number line, to its end. It returns nil
// when the file needs goldmark.
func scanRange(src []byte, from, to, line int, b *builder) *scanner {
	s := scanRangeOpen(src, from, to, line, b)
	if s == nil {
		return nil
	}
	s.closePara()
	return s
}

// scanRangeOpen scans like scanRange but leaves the last block open.
func scanRangeOpen(src []byte, from, to, line int, b *builder) *scanner {
	s := &scanner{src: src, b: b, para: make([]lineSpan, 0, 32), lineNo: line - 1}
	return scanRangeFrom(s, from, to)
}

// scanRangeFrom goes on scanning with s from offset from; it returns nil when the file needs
// goldmark.
func scanRangeFrom(s *scanner, from, to int) *scanner {
	src := s.src[:to]
	for pos := from; pos < len(src); {
		s.lineNo++
		nl := bytes.IndexByte(src[pos:], '\n')
		next := len(src)
		end := len(src)
		if nl >= 0 {
			end = pos + nl
			next = end + 1
		}
		if end > pos && src[end-1] == '\r' {
			end--
		}
		if !s.line(lineSpan{s.lineNo, pos, end}) {
			return nil
		}
		pos = next
	}
	return s
}

// plainBytes reports whether src has none of the bytes whose handling differs between
// parsers in ways the scanner does not model: NUL, a CR that does not end a line, a
// byte-order mark.
func plainBytes(src []byte) bool {
	if bytes.IndexByte(src, 0) >= 0 || bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		return false
	}
	for i := bytes.IndexByte(src, '\r'); i >= 0; {
		if i+1 >= len(src) || src[i+1] != '\n' {
			return false
		}
		j := bytes.IndexByte(src[i+1:], '\r')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return true
}

// lineKind classifies a line as a block start, the way CommonMark does at the start of a
// container.
type lineKind int

const (
	lkText lineKind = iota
	lkBlank
	lkIndented // four or more spaces of indentation
	lkATX
	lkFence
	lkHTMLComment
	lkThematic
	lkSetextish // a run of '=' or '-' only: a setext underline after a paragraph
	lkBullet
	lkOrdered
	lkUnsure // a shape the scanner does not handle
)

type lineInfo struct {
	kind   lineKind
	indent int
	// For lkATX: level and text. For lkFence: char and length. For list items: marker char,
	// content column (relative to the line start), start number, and whether the item is
	// empty.
	level     int
	text      Span
	fenceChar byte
	fenceLen  int
	marker    byte
	contentW  int
	startOne  bool
}

func classify(src []byte, ls lineSpan, from int) lineInfo {
	b := src[from:ls.end]
	n := 0
	for n < len(b) && b[n] == ' ' {
		n++
	}
	if n == len(b) {
		if bytes.IndexByte(b, '\t') >= 0 {
			return lineInfo{kind: lkUnsure}
		}
		return lineInfo{kind: lkBlank}
	}
	if b[n] == '\t' {
		// Tabs in indentation expand to tab stops; leave that to goldmark. A line of only
		// spaces and tabs is blank either way.
		for _, c := range b[n:] {
			if c != ' ' && c != '\t' {
				return lineInfo{kind: lkUnsure}
			}
		}
		return lineInfo{kind: lkBlank}
	}
	li := lineInfo{indent: n}
	if n >= 4 {
		li.kind = lkIndented
		return li
	}
	rest := b[n:]
	switch c := rest[0]; c {
	case '#':
		k := 0
		for k < len(rest) && rest[k] == '#' {
			k++
		}
		if k > 6 || (k < len(rest) && rest[k] != ' ') {
			if k <= 6 && k < len(rest) && rest[k] == '\t' {
				li.kind = lkUnsure
				return li
			}
			li.kind = lkText
			return li
		}
		li.kind = lkATX
		li.level = k
		li.text = atxText(src, from+n+k, ls.end)
		return li
	case '`', '~':
		k := 0
		for k < len(rest) && rest[k] == c {
			k++
		}
		if k >= 3 && (c == '~' || bytes.IndexByte(rest[k:], '`') < 0) {
			li.kind = lkFence
			li.fenceChar = c
			li.fenceLen = k
			return li
		}
		li.kind = lkText
		return li
	case '>':
		li.kind = lkUnsure
		return li
	case '<':
		if bytes.HasPrefix(rest, []byte("<!--")) {
			li.kind = lkHTMLComment
			return li
		}
		li.kind = lkUnsure
		return li
	case '[':
		// Possibly a link reference definition; those change what a paragraph holds.
		if bytes.Contains(rest, []byte("]:")) || bytes.IndexByte(rest, ']') < 0 {
			li.kind = lkUnsure
			return li
		}
		li.kind = lkText
		return li
	case '-', '*', '_', '+', '=':
		if c != '+' && c != '=' && isThematic(rest, c) {
			li.kind = lkThematic
			return li
		}
		if (c == '-' || c == '*' || c == '+') && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '\t') {
			return listItem(li, rest, 1, c, n)
		}
		if (c == '-' || c == '=') && isSetextBar(rest, c) {
			li.kind = lkSetextish
			return li
		}
		if bytes.IndexByte(rest, '\t') >= 0 && (c == '_' || c == '=') {
			li.kind = lkUnsure
			return li
		}
		li.kind = lkText
		return li
	default:
		if isDigit(c) {
			k := 0
			for k < len(rest) && isDigit(rest[k]) {
				k++
			}
			if k <= 9 && k < len(rest) && (rest[k] == '.' || rest[k] == ')') {
				li.startOne = k == 1 && rest[0] == '1'
				return listItem(li, rest, k+1, rest[k], n)
			}
		}
		li.kind = lkText
		return li
	}
}

// listItem finishes classifying a line whose text, after its indentation, begins with a list
// marker of width w.
func listItem(li lineInfo, rest []byte, w int, marker byte, indent int) lineInfo {
	if w == len(rest) {
		li.kind = lkUnsure // an empty item: it cannot interrupt a paragraph, and may be setext
		return li
	}
	switch rest[w] {
	case ' ':
	case '\t':
		li.kind = lkUnsure
		return li
	default:
		li.kind = lkText
		return li
	}
	sp := 0
	for w+sp < len(rest) && rest[w+sp] == ' ' {
		sp++
	}
	if w+sp == len(rest) || sp > 4 || rest[w+sp] == '\t' {
		li.kind = lkUnsure // blank item, item starting with indented code, or a tab
		return li
	}
	li.kind = lkBullet
	if marker == '.' || marker == ')' {
		li.kind = lkOrdered
	}
	li.marker = marker
	li.contentW = indent + w + sp
	return li
}

func isThematic(b []byte, c byte) bool {
	k := 0
	for _, x := range b {
		switch x {
		case c:
			k++
		case ' ':
		default:
			return false
		}
	}
	return k >= 3
}

func isSetextBar(b []byte, c byte) bool {
	i := 0
	for i < len(b) && b[i] == c {
		i++
	}
	for ; i < len(b); i++ {
		if b[i] != ' ' && b[i] != '\t' {
			return false
		}
	}
	return true
}

// atxText returns the text of an ATX heading whose marks end at from, without the optional
// closing sequence, as CommonMark defines it.
func atxText(src []byte, from, end int) Span {
	s, e := from, end
	for s < e && (src[s] == ' ' || src[s] == '\t') {
		s++
	}
	for e > s && (src[e-1] == ' ' || src[e-1] == '\t') {
		e--
	}
	// A closing sequence of #s, preceded by a space (or making up the whole text).
	k := e
	for k > s && src[k-1] == '#' {
		k--
	}
	if k < e && (k == s || src[k-1] == ' ' || src[k-1] == '\t') {
		e = k
		for e > s && (src[e-1] == ' ' || src[e-1] == '\t') {
			e--
		}
	}
	return Span{s, e}
}

func (s *scanner) line(ls lineSpan) bool {
	switch s.state {
	case stFence:
		return s.fenceLine(ls)
	case stIndented:
		li := classify(s.src, ls, ls.start)
		if li.kind == lkUnsure {
			return false
		}
		if li.kind == lkBlank || li.kind == lkIndented {
			return true
		}
		s.state = stNone
	case stHTML:
		if bytes.Contains(s.src[ls.start:ls.end], []byte("-->")) {
			s.state = stNone
		}
		return true
	case stList:
		done, ok := s.listLine(ls)
		if !ok {
			return false
		}
		if !done {
			return true
		}
		s.state = stNone
	}
	return s.blockLine(ls)
}

// blockLine handles a line at the top level of the document, outside any open block but a
// paragraph.
func (s *scanner) blockLine(ls lineSpan) bool {
	inPara := s.state == stPara
	li := classify(s.src, ls, ls.start)
	switch li.kind {
	case lkUnsure:
		return false
	case lkBlank:
		s.closePara()
		return true
	case lkIndented:
		if inPara {
			s.para = append(s.para, ls)
			return true
		}
		s.state = stIndented
		return true
	case lkATX:
		s.closePara()
		s.b.heading(li.level, ls.line, ls.start, li.text)
		return true
	case lkFence:
		s.closePara()
		s.state = stFence
		s.fenceChar, s.fenceLen = li.fenceChar, li.fenceLen
		return true
	case lkHTMLComment:
		s.closePara()
		s.state = stHTML
		if bytes.Contains(s.src[ls.start:ls.end], []byte("-->")) {
			s.state = stNone
		}
		return true
	case lkThematic:
		if inPara {
			return false // may be a setext underline, or interrupt: leave it to goldmark
		}
		return true
	case lkSetextish:
		if inPara {
			return false
		}
		return s.textLine(ls, inPara) // "===" alone is a paragraph
	case lkBullet, lkOrdered:
		if inPara && li.kind == lkOrdered && !li.startOne {
			return false
		}
		s.closePara()
		s.state = stList
		s.listW = li.contentW
		s.listMarker = li.marker
		s.listBlank = false
		return s.itemContent(ls, ls.start+li.contentW)
	}
	return s.textLine(ls, inPara)
}

func (s *scanner) textLine(ls lineSpan, inPara bool) bool {
	if !inPara {
		s.state = stPara
		s.para = s.para[:0]
	}
	s.para = append(s.para, ls)
	return true
}

func (s *scanner) fenceLine(ls lineSpan) bool {
	b := s.src[ls.start:ls.end]
	n := 0
	for n < len(b) && b[n] == ' ' {
		n++
	}
	if n < len(b) && b[n] == '\t' {
		for _, c := range b[n:] {
			if c == '`' || c == '~' {
				return false
			}
		}
		return true
	}
	if n > 3 {
		return true
	}
	k := n
	for k < len(b) && b[k] == s.fenceChar {
		k++
	}
	if k-n < s.fenceLen {
		return true
	}
	for _, c := range b[k:] {
		if c != ' ' && c != '\t' {
			return true
		}
	}
	s.state = stNone
	return true
}

// itemContent classifies the text of a list item that starts at from, to know whether a
// paragraph is open in it.
func (s *scanner) itemContent(ls lineSpan, from int) bool {
	li := classify(s.src, ls, from)
	switch li.kind {
	case lkText:
		s.listParaOpen = true
	case lkATX:
		s.listParaOpen = false
	case lkBullet, lkOrdered:
		inner := classify(s.src, ls, from+li.contentW)
		if inner.kind != lkText {
			return false
		}
		s.listParaOpen = true
	default:
		return false
	}
	return true
}

// listLine handles a line while a top-level list is open. It reports done when the line is
// not part of the list and must be read at the top level.
func (s *scanner) listLine(ls lineSpan) (done, ok bool) {
	li := classify(s.src, ls, ls.start)
	switch li.kind {
	case lkUnsure:
		return false, false
	case lkBlank:
		s.listParaOpen = false
		s.listBlank = true
		return false, true
	}
	if li.indent >= s.listW {
		if s.listBlank {
			return false, false // a loose continuation: leave it to goldmark
		}
		inner := classify(s.src, ls, ls.start+s.listW)
		switch inner.kind {
		case lkIndented:
			if !s.listParaOpen {
				return false, false
			}
			return false, true
		case lkText:
			s.listParaOpen = true
			return false, true
		case lkATX:
			s.listParaOpen = false
			return false, true
		case lkBullet, lkOrdered:
			return false, s.itemContent(ls, ls.start+s.listW+inner.contentW)
		}
		return false, false
	}
	switch li.kind {
	case lkBullet, lkOrdered:
		if li.marker == s.listMarker {
			s.listW = li.contentW
			s.listBlank = false
			return false, s.itemContent(ls, ls.start+li.contentW)
		}
		if s.listParaOpen && li.kind == lkOrdered && !li.startOne {
			return false, false
		}
		return true, true
	case lkThematic, lkSetextish:
		return false, false
	case lkATX, lkFence, lkHTMLComment:
		return true, true
	}
	if s.listParaOpen && !s.listBlank {
		return false, true // lazy continuation of the item's paragraph
	}
	return true, true
}

func (s *scanner) closePara() {
	if s.state != stPara {
		return
	}
	s.state = stNone
	s.b.paragraph(s.para)
	s.para = s.para[:0]
}
