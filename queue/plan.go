package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// A Plan is a test plan (SPEC §5.1): the test IDs a project must have, grouped in categories,
// in the order of the file. It is read from projectspec/test-plan-output.json, whose shape is
// claudestrator's:
//
//	{"tests": {"unit": [{"id": "UNIT-001", "name": "...", ...}], "integration": [], ...}}
//
// Only the categories (the keys of "tests") and the tests' "id" members matter here; every
// other member is skipped.
type Plan struct {
	Path       string
	Categories []PlanCategory

	tests []PlanTest     // every test, in file order; the categories' Tests are sub-slices
	index map[string]int // ID -> position in tests
}

// A PlanCategory is one key of the plan's "tests" object and its tests, in file order.
type PlanCategory struct {
	Name  string
	Line  int
	Tests []PlanTest
}

// A PlanTest is one test of the plan: its ID, and the line of the ID in the file.
type PlanTest struct {
	ID   string
	Line int
	cat  int // index of its category
}

// Len returns the number of tests in the plan.
func (p *Plan) Len() int { return len(p.tests) }

// Test returns the test with the given ID and its category's name.
func (p *Plan) Test(id string) (PlanTest, string, bool) {
	i, ok := p.index[id]
	if !ok {
		return PlanTest{}, "", false
	}
	t := p.tests[i]
	return t, p.Categories[t.cat].Name, true
}

// Tests returns every test of the plan, in file order.
func (p *Plan) Tests() []PlanTest { return p.tests }

// LoadPlan reads and parses the test plan at path. Its errors name the file.
func LoadPlan(path string) (*Plan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read test plan: %w", err)
	}
	return ParsePlan(path, src)
}

// ParsePlan parses a test plan's bytes. Bad JSON, a "tests" member that is missing or not an
// object of arrays, a test without an "id", a category named twice and a test ID that occurs
// twice are errors; they come as ParseErrors (path:line: message), one for each duplicate ID.
//
// The file is read by a small scanner rather than by encoding/json, because the scanner keeps
// the order of the categories and the line of every ID, and is several times faster on a plan
// of ten thousand tests. FuzzParsePlan checks it against encoding/json.
func ParsePlan(path string, src []byte) (*Plan, error) {
	r := &planReader{src: src, path: path, line: 1}
	p, err := r.plan()
	if err != nil {
		return nil, err
	}
	p.Path = path
	// The tests go into the index from the last, so that the first of each ID stays: that is
	// one map operation for each test, and only when the index is smaller than the plan are
	// there duplicates to look for.
	p.index = make(map[string]int, len(p.tests))
	for i := len(p.tests) - 1; i >= 0; i-- {
		p.index[p.tests[i].ID] = i
	}
	if len(p.index) < len(p.tests) {
		var errs ParseErrors
		for i, t := range p.tests {
			if j := p.index[t.ID]; j != i {
				first := p.tests[j]
				errs = append(errs, &ParseError{Path: path, Line: t.Line, ID: t.ID,
					Msg: fmt.Sprintf("duplicate test ID (in %s; first at line %d, in %s)",
						p.Categories[t.cat].Name, first.Line, p.Categories[first.cat].Name)})
			}
		}
		return nil, errs
	}
	// The categories' Tests share the flat array.
	at := 0
	for i := range p.Categories {
		n := len(p.Categories[i].Tests)
		p.Categories[i].Tests = p.tests[at : at+n : at+n]
		at += n
	}
	return p, nil
}

// A planReader reads a test plan. It checks the whole file as strict JSON while it reads the
// members it needs. The members it reads have a loop each (plan, categories, tests, test)
// rather than callbacks, and every other value goes to skip.
type planReader struct {
	src  []byte
	pos  int
	path string

	// The line of pos. Only ws steps over newlines (JSON allows them nowhere else), so
	// counting them there gives every key its line for free.
	line int

	ids strings.Builder // the block intern is filling
}

// lineOf counts the line of off from the start of the file: it is for errors, which end the
// parse.
func (r *planReader) lineOf(off int) int {
	return 1 + bytes.Count(r.src[:off], []byte{'\n'})
}

func (r *planReader) errorf(off int, format string, args ...any) error {
	if off > len(r.src) {
		off = len(r.src)
	}
	return &ParseError{Path: r.path, Line: r.lineOf(off), Msg: fmt.Sprintf(format, args...)}
}

// syntax reports a JSON syntax error at the reader's position.
func (r *planReader) syntax() error {
	if r.pos >= len(r.src) {
		return r.errorf(r.pos, "invalid JSON: unexpected end of file")
	}
	return r.errorf(r.pos, "invalid JSON: unexpected %q", r.src[r.pos])
}

// ws skips whitespace, counting lines.
func (r *planReader) ws() {
	for r.pos < len(r.src) {
		switch r.src[r.pos] {
		case '\n':
			r.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		r.pos++
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end of the file.
func (r *planReader) peek() byte {
	if r.pos < len(r.src) && r.src[r.pos] > ' ' {
		return r.src[r.pos] // no whitespace, as between most tokens
	}
	r.ws()
	if r.pos < len(r.src) {
		return r.src[r.pos]
	}
	return 0
}

// enter steps into the object or array at the reader's position and reports whether it has a
// member or an element; when it has none, the reader is past its end.
func (r *planReader) enter(end byte) bool {
	r.pos++
	if r.peek() == end {
		r.pos++
		return false
	}
	return true
}

// next steps over what follows a member or an element: a comma, for which it reports true, or
// the end of the object or array.
func (r *planReader) next(end byte) (bool, error) {
	switch r.peek() {
	case ',':
		r.pos++
		return true, nil
	case end:
		r.pos++
		return false, nil
	}
	return false, r.syntax()
}

// key reads a member's key and the colon after it.
func (r *planReader) key() (jsonString, error) {
	if r.peek() != '"' {
		return jsonString{}, r.syntax()
	}
	key := jsonString{at: r.pos, line: r.line} // as str does, without the call
	var err error
	if key.escaped, err = r.scanString(); err != nil {
		return jsonString{}, err
	}
	key.end = r.pos - 1
	if r.peek() != ':' {
		return jsonString{}, r.syntax()
	}
	r.pos++
	return key, nil
}

// plan reads the whole file.
func (r *planReader) plan() (*Plan, error) {
	if r.peek() != '{' {
		if r.pos < len(r.src) {
			return nil, r.errorf(r.pos, "a test plan is a JSON object with a \"tests\" member")
		}
		return nil, r.syntax()
	}
	var p *Plan
	for more := r.enter('}'); more; {
		key, err := r.key()
		if err != nil {
			return nil, err
		}
		switch {
		case !r.is(key, "tests"):
			err = r.skip()
		case r.peek() != '{':
			if err := r.skip(); err != nil {
				return nil, err
			}
			return nil, r.errorf(key.at, "\"tests\" is not an object of categories")
		default:
			p = &Plan{} // a repeated member wins, as in encoding/json
			err = r.categories(p)
		}
		if err != nil {
			return nil, err
		}
		if more, err = r.next('}'); err != nil {
			return nil, err
		}
	}
	if r.ws(); r.pos < len(r.src) {
		return nil, r.errorf(r.pos, "invalid JSON: %q after the top-level value", r.src[r.pos])
	}
	if p == nil {
		return nil, r.errorf(0, "no \"tests\" member: a test plan is {\"tests\": {\"unit\": [{\"id\": ...}], ...}}")
	}
	return p, nil
}

// categories reads the object of "tests": the reader is at its '{'.
func (r *planReader) categories(p *Plan) error {
	seen := map[string]int{}
	for more := r.enter('}'); more; {
		key, err := r.key()
		if err != nil {
			return err
		}
		name, err := r.text(key)
		if err != nil {
			return err
		}
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "\r\n") {
			return r.errorf(key.at, "category name %q cannot be written in the coverage matrix", name)
		}
		if first, dup := seen[name]; dup {
			return r.errorf(key.at, "category %q repeated (first at line %d)", name, first)
		}
		seen[name] = key.line
		ci := len(p.Categories)
		p.Categories = append(p.Categories, PlanCategory{Name: name, Line: key.line})
		switch r.peek() {
		case 'n':
			err = r.literal("null") // no tests, as encoding/json reads it
		case '[':
			before := len(p.tests)
			err = r.tests(p, name, ci)
			p.Categories[ci].Tests = p.tests[before:len(p.tests):len(p.tests)]
		default:
			if err := r.skip(); err != nil {
				return err
			}
			return r.errorf(key.at, "category %q is not an array of tests", name)
		}
		if err != nil {
			return err
		}
		if more, err = r.next('}'); err != nil {
			return err
		}
	}
	return nil
}

// tests reads the array of tests of category ci: the reader is at its '['.
func (r *planReader) tests(p *Plan, name string, ci int) error {
	for more := r.enter(']'); more; {
		if r.peek() != '{' {
			at := r.pos
			if err := r.skip(); err != nil {
				return err
			}
			return r.errorf(at, "a test in %q is not an object", name)
		}
		if err := r.test(p, name, ci); err != nil {
			return err
		}
		var err error
		if more, err = r.next(']'); err != nil {
			return err
		}
	}
	return nil
}

// test reads a test and appends it to p.tests: the reader is at its '{'.
func (r *planReader) test(p *Plan, name string, ci int) error {
	at := r.pos
	// The last "id" member wins, as in encoding/json, even when it is not a string; idKey.at
	// is -1 until there is one.
	idKey, idIsString := jsonString{at: -1}, false
	var id []byte
	for more := r.enter('}'); more; {
		key, err := r.key()
		if err != nil {
			return err
		}
		// A key with escapes is never "id" as written, so only those need a call to is.
		isID := string(r.raw(key)) == "id" || key.escaped && r.is(key, "id")
		switch {
		case !isID:
			err = r.skip()
		case r.peek() != '"':
			idKey, idIsString = key, false
			err = r.skip()
		default:
			idKey, idIsString = key, true
			id, err = r.strBytes()
		}
		if err != nil {
			return err
		}
		if more, err = r.next('}'); err != nil {
			return err
		}
	}
	switch {
	case idKey.at < 0:
		return r.errorf(at, "a test in %q has no \"id\"", name)
	case !idIsString:
		return r.errorf(idKey.at, "the \"id\" of a test in %q is not a string", name)
	}
	if id = bytes.TrimSpace(id); !listable(id) {
		return r.errorf(idKey.at, "test ID %q in %q cannot be written in a Test IDs list", string(id), name)
	}
	if p.tests == nil {
		// Every test is an object of 9 bytes or more ({"id":""}), so both the '{'s from here
		// and a ninth of the bytes bound the number of tests. Counting the '{'s takes a
		// hundredth of the parse, much less than growing the slice as it goes; objects inside
		// the tests make the slice longer than needed, 32 bytes for each.
		rest := r.src[at:]
		p.tests = make([]PlanTest, 0, min(bytes.Count(rest, []byte{'{'}), len(rest)/9))
	}
	p.tests = append(p.tests, PlanTest{ID: r.intern(id), Line: idKey.line, cat: ci})
	return nil
}

// listable reports whether a test ID can be written in a Test IDs list: it is not empty, and
// has no comma and no line break.
func listable(id []byte) bool {
	for _, c := range id {
		if c == ',' || c == '\r' || c == '\n' {
			return false
		}
	}
	return len(id) > 0
}

// intern returns id as a string. The IDs are copied into shared blocks of a few kilobytes, which
// cost an allocation each, rather than one allocation for every ID.
func (r *planReader) intern(id []byte) string {
	const block = 8 << 10
	if r.ids.Cap()-r.ids.Len() < len(id) {
		// The strings returned so far keep the old block: a strings.Builder never changes
		// the bytes it has written.
		r.ids = strings.Builder{}
		r.ids.Grow(max(block, len(id)))
	}
	start := r.ids.Len()
	r.ids.Write(id)
	return r.ids.String()[start:]
}

// skip reads one value of any kind. Nested values are tracked on a stack rather than by
// recursion, so that no input can exhaust the Go stack.
func (r *planReader) skip() error {
	switch c := r.peek(); c {
	case '"':
		_, err := r.scanString() // the usual value, and no stack needed
		return err
	case '{', '[':
	default:
		return r.scalar(c)
	}
	var buf [32]byte // deep enough for most files, without an allocation
	stack := buf[:0]
	for {
		// A value.
		switch c := r.peek(); c {
		case '{':
			if !r.enter('}') {
				break
			}
			if _, err := r.key(); err != nil {
				return err
			}
			stack = append(stack, '}')
			continue
		case '[':
			if !r.enter(']') {
				break
			}
			stack = append(stack, ']')
			continue
		default:
			if err := r.scalar(c); err != nil {
				return err
			}
		}
		// After a value: close what ends here, then go on to the next element or member.
		for {
			if len(stack) == 0 {
				return nil
			}
			more, err := r.next(stack[len(stack)-1])
			if err != nil {
				return err
			}
			if !more {
				stack = stack[:len(stack)-1]
				continue
			}
			if stack[len(stack)-1] == '}' {
				if _, err := r.key(); err != nil {
					return err
				}
			}
			break
		}
	}
}

// scalar reads a value that is not an object or an array, whose first byte is c.
func (r *planReader) scalar(c byte) error {
	switch c {
	case '"':
		_, err := r.scanString()
		return err
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.literal("null")
	}
	return r.number()
}

func (r *planReader) literal(word string) error {
	r.ws()
	if !bytes.HasPrefix(r.src[r.pos:], []byte(word)) {
		return r.syntax()
	}
	r.pos += len(word)
	return nil
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *planReader) number() error {
	r.ws()
	src, i := r.src, r.pos
	digits := func() bool {
		j := i
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		digits()
	default:
		r.pos = i
		return r.syntax()
	}
	if i < len(src) && src[i] == '.' {
		i++
		if !digits() {
			r.pos = i
			return r.syntax()
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if !digits() {
			r.pos = i
			return r.syntax()
		}
	}
	r.pos = i
	return nil
}

// A jsonString is a string of the file, as written. It is kept to four words, so that the
// compiler can keep it in registers rather than copy it through memory.
type jsonString struct {
	at      int  // offset of the opening quote
	end     int  // offset of the closing quote
	line    int  // line of the string
	escaped bool // it has escapes (or bytes that are not UTF-8), so its bytes are not its value
}

// raw returns the bytes between the quotes of s.
func (r *planReader) raw(s jsonString) []byte { return r.src[s.at+1 : s.end] }

// strBytes reads a string and returns its value, which is in the file when it has no escapes.
func (r *planReader) strBytes() ([]byte, error) {
	s, err := r.str()
	if err != nil {
		return nil, err
	}
	if !s.escaped {
		return r.raw(s), nil
	}
	v, err := r.text(s)
	return []byte(v), err
}

// text returns the value of s.
func (r *planReader) text(s jsonString) (string, error) {
	if !s.escaped {
		return string(r.raw(s)), nil
	}
	var v string
	if err := json.Unmarshal(r.src[s.at:s.end+1], &v); err != nil {
		return "", r.errorf(s.at, "invalid JSON string: %v", err)
	}
	return v, nil
}

// is reports whether s is the string want, without allocating in the usual case.
func (r *planReader) is(s jsonString, want string) bool {
	if !s.escaped {
		return string(r.raw(s)) == want
	}
	v, err := r.text(s)
	return err == nil && v == want
}

// str reads a string at the reader's position (which holds its opening quote).
func (r *planReader) str() (jsonString, error) {
	s := jsonString{at: r.pos, line: r.line}
	var err error
	s.escaped, err = r.scanString()
	s.end = r.pos - 1
	return s, err
}

// scanString reads a string at the reader's position (which holds its opening quote), checking
// it as JSON does, and reports whether it has escapes or bytes that are not UTF-8.
func (r *planReader) scanString() (escaped bool, err error) {
	// The usual string, ASCII without escapes, is one tight loop.
	src, i := r.src, r.pos+1
	for i < len(src) && plainInString[src[i]] {
		i++
	}
	if i < len(src) && src[i] == '"' {
		r.pos = i + 1
		return false, nil
	}
	return r.scanStringFrom(i)
}

// scanStringFrom is scanString for the other strings, from offset i where the plain ASCII
// stops.
func (r *planReader) scanStringFrom(i int) (escaped bool, err error) {
	src := r.src
	start := r.pos
	ascii := true
	for {
		for i < len(src) && plainInString[src[i]] {
			i++
		}
		if i >= len(src) {
			r.pos = i
			return false, r.syntax()
		}
		c := src[i]
		switch {
		case c == '"':
			r.pos = i + 1
			return escaped || !ascii && !utf8.Valid(src[start+1:i]), nil
		case c >= 0x80:
			ascii = false
			i++
		case c < 0x20:
			r.pos = i
			return false, r.errorf(i, "invalid JSON: control character %q in a string", c)
		case c == '\\':
			escaped = true
			if i+1 >= len(src) {
				r.pos = i + 1
				return false, r.syntax()
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := 2; k < 6; k++ {
					if i+k >= len(src) || !isHex(src[i+k]) {
						r.pos = min(i+k, len(src))
						return false, r.syntax()
					}
				}
				i += 6
			default:
				r.pos = i + 1
				return false, r.errorf(i, "invalid JSON: bad escape \\%c in a string", src[i+1])
			}
		default:
			i++
		}
	}
}

// plainInString marks the bytes a string holds as they are: all but the quote, the backslash,
// the control characters and the bytes of multi-byte UTF-8 characters, which scanString looks
// at one by one. A table makes its inner loop one test a byte.
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
