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
	p.index = make(map[string]int, len(p.tests))
	var errs ParseErrors
	for i, t := range p.tests {
		if j, dup := p.index[t.ID]; dup {
			first := p.tests[j]
			errs = append(errs, &ParseError{Path: path, Line: t.Line, ID: t.ID,
				Msg: fmt.Sprintf("duplicate test ID (in %s; first at line %d, in %s)",
					p.Categories[t.cat].Name, first.Line, p.Categories[first.cat].Name)})
			continue
		}
		p.index[t.ID] = i
	}
	if errs != nil {
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
// members it needs.
type planReader struct {
	src  []byte
	pos  int
	path string

	// The line at lineAt: lines are counted forward as the reader goes, so that finding the
	// line of every ID costs one pass over the file.
	line, lineAt int
}

func (r *planReader) lineOf(off int) int {
	if off < r.lineAt {
		r.line, r.lineAt = 1, 0
	}
	for _, c := range r.src[r.lineAt:off] {
		if c == '\n' {
			r.line++
		}
	}
	r.lineAt = off
	return r.line
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

func (r *planReader) ws() {
	for r.pos < len(r.src) {
		switch r.src[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *planReader) peek() byte {
	r.ws()
	if r.pos < len(r.src) {
		return r.src[r.pos]
	}
	return 0
}

func (r *planReader) expect(c byte) error {
	if r.peek() != c {
		return r.syntax()
	}
	r.pos++
	return nil
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
	err := r.object(func(key jsonString, keyAt int) error {
		if !r.is(key, "tests") {
			return r.skip()
		}
		if r.peek() != '{' {
			if err := r.skip(); err != nil {
				return err
			}
			return r.errorf(keyAt, "\"tests\" is not an object of categories")
		}
		p = &Plan{} // a repeated member wins, as in encoding/json
		return r.categories(p)
	})
	if err != nil {
		return nil, err
	}
	if r.ws(); r.pos < len(r.src) {
		return nil, r.errorf(r.pos, "invalid JSON: %q after the top-level value", r.src[r.pos])
	}
	if p == nil {
		return nil, r.errorf(0, "no \"tests\" member: a test plan is {\"tests\": {\"unit\": [{\"id\": ...}], ...}}")
	}
	return p, nil
}

func (r *planReader) categories(p *Plan) error {
	seen := map[string]int{}
	return r.object(func(key jsonString, keyAt int) error {
		name, err := r.text(key)
		if err != nil {
			return err
		}
		line := r.lineOf(keyAt)
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "\r\n") {
			return r.errorf(keyAt, "category name %q cannot be written in the coverage matrix", name)
		}
		if first, dup := seen[name]; dup {
			return r.errorf(keyAt, "category %q repeated (first at line %d)", name, first)
		}
		seen[name] = line
		ci := len(p.Categories)
		p.Categories = append(p.Categories, PlanCategory{Name: name, Line: line})
		switch r.peek() {
		case 'n':
			return r.literal("null") // no tests, as encoding/json reads it
		case '[':
		default:
			if err := r.skip(); err != nil {
				return err
			}
			return r.errorf(keyAt, "category %q is not an array of tests", name)
		}
		before := len(p.tests)
		err = r.array(func(at int) error {
			if r.peek() != '{' {
				if err := r.skip(); err != nil {
					return err
				}
				return r.errorf(at, "a test in %q is not an object", name)
			}
			// A repeated "id" member wins, as in encoding/json.
			id, idAt := "", -1
			var idErr error
			err := r.object(func(key jsonString, keyAt int) error {
				if !r.is(key, "id") {
					return r.skip()
				}
				if r.peek() != '"' {
					idErr = r.errorf(keyAt, "the \"id\" of a test in %q is not a string", name)
					return r.skip()
				}
				s, err := r.str()
				id, idAt, idErr = s, keyAt, nil
				return err
			})
			if err != nil {
				return err
			}
			if idErr != nil {
				return idErr
			}
			if idAt < 0 {
				return r.errorf(at, "a test in %q has no \"id\"", name)
			}
			if id = strings.TrimSpace(id); id == "" || strings.ContainsAny(id, ",\r\n") {
				return r.errorf(idAt, "test ID %q in %q cannot be written in a Test IDs list", id, name)
			}
			p.tests = append(p.tests, PlanTest{ID: id, Line: r.lineOf(idAt), cat: ci})
			return nil
		})
		p.Categories[ci].Tests = p.tests[before:len(p.tests):len(p.tests)]
		return err
	})
}

// object reads an object, calling member with each key when the reader is at its value; it
// must read the value.
func (r *planReader) object(member func(key jsonString, keyAt int) error) error {
	if err := r.expect('{'); err != nil {
		return err
	}
	if r.peek() == '}' {
		r.pos++
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.syntax()
		}
		at := r.pos
		key, err := r.scanString()
		if err != nil {
			return err
		}
		if err := r.expect(':'); err != nil {
			return err
		}
		if err := member(key, at); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.pos++
		case '}':
			r.pos++
			return nil
		default:
			return r.syntax()
		}
	}
}

// array reads an array, calling elem at each element; it must read the element.
func (r *planReader) array(elem func(at int) error) error {
	if err := r.expect('['); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.pos++
		return nil
	}
	for {
		r.ws()
		if err := elem(r.pos); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.pos++
		case ']':
			r.pos++
			return nil
		default:
			return r.syntax()
		}
	}
}

// skip reads one value of any kind. Nested values are tracked on a stack rather than by
// recursion, so that no input can exhaust the Go stack.
func (r *planReader) skip() error {
	var stack []byte
	for {
		// A value.
		switch r.peek() {
		case '{':
			r.pos++
			if r.peek() == '}' {
				r.pos++
				break
			}
			if err := r.key(); err != nil {
				return err
			}
			stack = append(stack, '}')
			continue
		case '[':
			r.pos++
			if r.peek() == ']' {
				r.pos++
				break
			}
			stack = append(stack, ']')
			continue
		case '"':
			if _, err := r.scanString(); err != nil {
				return err
			}
		case 't':
			if err := r.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := r.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := r.literal("null"); err != nil {
				return err
			}
		default:
			if err := r.number(); err != nil {
				return err
			}
		}
		// After a value: close what ends here, then go on to the next element or member.
		for {
			if len(stack) == 0 {
				return nil
			}
			c := r.peek()
			if c == stack[len(stack)-1] {
				r.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return r.syntax()
			}
			r.pos++
			if stack[len(stack)-1] == '}' {
				if err := r.key(); err != nil {
					return err
				}
			}
			break
		}
	}
}

// key reads `"key":`.
func (r *planReader) key() error {
	if r.peek() != '"' {
		return r.syntax()
	}
	if _, err := r.scanString(); err != nil {
		return err
	}
	return r.expect(':')
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

// A jsonString is a string of the file, as written: the bytes between its quotes.
type jsonString struct {
	raw     []byte
	at      int  // offset of the opening quote
	escaped bool // it has escapes (or bytes that are not UTF-8), so raw is not its value
}

// str reads a string and returns its value.
func (r *planReader) str() (string, error) {
	s, err := r.scanString()
	if err != nil {
		return "", err
	}
	return r.text(s)
}

// text returns the value of s.
func (r *planReader) text(s jsonString) (string, error) {
	if !s.escaped {
		return string(s.raw), nil
	}
	var v string
	if err := json.Unmarshal(r.src[s.at:s.at+len(s.raw)+2], &v); err != nil {
		return "", r.errorf(s.at, "invalid JSON string: %v", err)
	}
	return v, nil
}

// is reports whether s is the string want, without allocating in the usual case.
func (r *planReader) is(s jsonString, want string) bool {
	if !s.escaped {
		return string(s.raw) == want
	}
	v, err := r.text(s)
	return err == nil && v == want
}

// scanString reads a string at the reader's position (which holds its opening quote),
// checking it as JSON does.
func (r *planReader) scanString() (jsonString, error) {
	src := r.src
	start := r.pos
	i := start + 1
	escaped, ascii := false, true
	for {
		for i < len(src) && src[i] >= 0x20 && src[i] < 0x80 && src[i] != '"' && src[i] != '\\' {
			i++
		}
		if i >= len(src) {
			r.pos = i
			return jsonString{}, r.syntax()
		}
		c := src[i]
		switch {
		case c == '"':
			r.pos = i + 1
			raw := src[start+1 : i]
			return jsonString{raw: raw, at: start, escaped: escaped || !ascii && !utf8.Valid(raw)}, nil
		case c >= 0x80:
			ascii = false
			i++
		case c < 0x20:
			r.pos = i
			return jsonString{}, r.errorf(i, "invalid JSON: control character %q in a string", c)
		case c == '\\':
			escaped = true
			if i+1 >= len(src) {
				r.pos = i + 1
				return jsonString{}, r.syntax()
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := 2; k < 6; k++ {
					if i+k >= len(src) || !isHex(src[i+k]) {
						r.pos = min(i+k, len(src))
						return jsonString{}, r.syntax()
					}
				}
				i += 6
			default:
				r.pos = i + 1
				return jsonString{}, r.errorf(i, "invalid JSON: bad escape \\%c in a string", src[i+1])
			}
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
