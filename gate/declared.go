package gate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
	"unicode"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// declared returns the names of the test functions declared in the source of a test file,
// in order: Go Test functions (read with go/parser), Python test_ functions, the titles of
// JavaScript and TypeScript it() and test() calls, Rust #[test] functions. Only
// declarations count: a name in a comment or a string is not a test. A file whose language
// is not known by its extension is read with every language's rule but Go's.
func declared(file, src string) []string {
	switch ext := path.Ext(file); ext {
	case ".go":
		return goDeclared(src)
	case ".py":
		return pyDeclared(src)
	case ".js", ".ts", ".jsx", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		return jsDeclared(src)
	case ".rs":
		return rsDeclared(src)
	}
	return append(append(pyDeclared(src), jsDeclared(src)...), rsDeclared(src)...)
}

// goDeclared lists the functions func TestX(t *testing.T) of a Go file. A file that does not
// parse declares what go/parser could read of it.
func goDeclared(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "x_test.go", src, parser.SkipObjectResolution)
	if err != nil && (f == nil || len(f.Decls) == 0) {
		// A fragment without its package clause is still read for its functions.
		f, _ = parser.ParseFile(token.NewFileSet(), "x_test.go", "package p;"+src, parser.SkipObjectResolution)
	}
	if f == nil {
		return nil
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Type.Params == nil {
			continue
		}
		if p := fn.Type.Params.List; len(p) == 1 && len(p[0].Names) <= 1 && isTestingT(p[0].Type) {
			out = append(out, fn.Name.Name)
		}
	}
	return out
}

// isTestingT reports whether a parameter's type is *testing.T (or *T of another import name).
func isTestingT(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// pyDefRE matches a test function's declaration at the start of a line of code.
var pyDefRE = lazyre.New(`(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(`)

// pyDeclared lists the test_ functions and methods of a Python file, its comments and
// strings blanked first.
func pyDeclared(src string) []string {
	var out []string
	for _, m := range pyDefRE().FindAllStringSubmatch(blankPython(src), -1) {
		out = append(out, m[1])
	}
	return out
}

// blankPython replaces the comments and string literals of Python source with spaces,
// keeping line breaks, so that what is left is code.
func blankPython(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '#':
			for i < len(b) && b[i] != '\n' {
				b[i] = ' '
				i++
			}
		case c == '\'' || c == '"':
			q := string(c)
			if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
				q = strings.Repeat(q, 3)
			}
			end := len(b)
			for j := i + len(q); j < len(b); j++ {
				if b[j] == '\\' {
					j++
					continue
				}
				if len(q) == 1 && b[j] == '\n' {
					end = j // an unterminated string ends at its line
					break
				}
				if strings.HasPrefix(string(b[j:min(j+len(q), len(b))]), q) {
					end = j + len(q)
					break
				}
			}
			blank(b, i, end)
			i = end
		default:
			i++
		}
	}
	return string(b)
}

// blank replaces b[start:end] with spaces, keeping line breaks.
func blank(b []byte, start, end int) {
	for k := start; k < end && k < len(b); k++ {
		if b[k] != '\n' {
			b[k] = ' '
		}
	}
}

// jsDeclared lists the titles of the it() and test() calls of a JavaScript or TypeScript
// file (it.only, test.concurrent and the like included; skip and todo are not tests that
// run), outside comments and strings.
func jsDeclared(src string) []string {
	var out []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "//"):
			i = indexFrom(src, i, "\n")
		case strings.HasPrefix(src[i:], "/*"):
			i = indexFrom(src, i+2, "*/") + 2
		case c == '\'' || c == '"' || c == '`':
			_, i = jsString(src, i)
		case isIdentStart(c) && (i == 0 || !isIdent(src[i-1]) && src[i-1] != '.'):
			j := i
			for j < len(src) && (isIdent(src[j]) || src[j] == '.') {
				j++
			}
			callee := src[i:j]
			i = j
			if !jsTestCallee(callee) {
				continue
			}
			k := skipSpace(src, j)
			if k >= len(src) || src[k] != '(' {
				continue
			}
			k = skipSpace(src, k+1)
			if k < len(src) && (src[k] == '\'' || src[k] == '"' || src[k] == '`') {
				title, end := jsString(src, k)
				out = append(out, title)
				i = end
			}
		default:
			i++
		}
	}
	return out
}

// jsTestCallee reports whether a callee declares a test that runs: it, test, and their
// only, concurrent, sequential and fails forms.
func jsTestCallee(c string) bool {
	head, mods, _ := strings.Cut(c, ".")
	if head != "it" && head != "test" {
		return false
	}
	for _, m := range strings.Split(mods, ".") {
		switch m {
		case "", "only", "concurrent", "sequential", "fails":
		default:
			return false
		}
	}
	return true
}

// jsString reads the string literal that starts at src[i], and returns its text (escapes
// kept as written) and the index after it.
func jsString(src string, i int) (string, int) {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return src[i+1 : j], j + 1
		case '\n':
			if q != '`' {
				return src[i+1 : j], j
			}
		}
	}
	return src[i+1:], len(src)
}

func indexFrom(s string, i int, sub string) int {
	if i >= len(s) {
		return len(s)
	}
	if k := strings.Index(s[i:], sub); k >= 0 {
		return i + k
	}
	return len(s)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// rsTestRE matches a Rust test function: #[test], other attributes, fn name.
var rsTestRE = lazyre.New(`(?m)^\s*#\[test\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)`)

func rsDeclared(src string) []string {
	var out []string
	for _, m := range rsTestRE().FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

// namedBy reports whether a test name names a Test ID (SPEC §7.2): the ID's letters and
// digits, with every other character read as "_", appear in the name compared the same way
// and case-insensitively, on word boundaries. A boundary is the start or end of the name, a
// character that is not a letter or digit, or a change from a lower-case letter to an
// upper-case one: UNIT-001 is named by TestAdd_UNIT_001, test_unit_001_adds and
// TestUNIT_001, not by test_unit_0010 or testunit_001.
func namedBy(name, id string) bool {
	tok := []rune(idToken(id))
	if len(tok) == 0 {
		return false
	}
	orig := []rune(name)
	low := []rune(idToken(name))
	for i := 0; i+len(tok) <= len(low); i++ {
		if string(low[i:i+len(tok)]) != string(tok) {
			continue
		}
		if boundary(orig, i) && boundary(orig, i+len(tok)) {
			return true
		}
	}
	return false
}

// boundary reports whether there is a word boundary before r[i].
func boundary(r []rune, i int) bool {
	if i == 0 || i == len(r) {
		return true
	}
	a, b := r[i-1], r[i]
	alnum := func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }
	return !alnum(a) || !alnum(b) || unicode.IsLower(a) && unicode.IsUpper(b)
}

// shortName returns the part of a runner's test ID that is the test's name, without the
// package or file that holds it: "example.com/calc.TestAdd/case" gives "TestAdd/case",
// "tests/test_x.py::TestC::test_y" gives "TestC::test_y", "src/a.test.ts > adds > one" gives
// "adds > one".
func shortName(id string) string {
	if _, rest, ok := strings.Cut(id, "::"); ok {
		return rest
	}
	if _, rest, ok := strings.Cut(id, " > "); ok {
		return rest
	}
	if m := goNameRE().FindStringIndex(id); m != nil {
		return id[m[0]+1:]
	}
	return id
}

// goNameRE finds where the test name of a Go test ID starts: the dot before Test, Fuzz or
// Example after the import path.
var goNameRE = lazyre.New(`\.(?:Test|Fuzz|Example)[\p{L}\p{N}_]*(?:/|$)`)

// topName returns the test function or title a test ID stands for, which is what a test
// file declares: "example.com/calc.TestAdd/case" gives "TestAdd", "tests/t.py::C::test_y[1]"
// gives "test_y", "src/a.test.ts > adds > one" gives "one".
func topName(id string) string {
	switch {
	case strings.Contains(id, " > "):
		return id[strings.LastIndex(id, " > ")+3:]
	case strings.Contains(id, "::"):
		name := id[strings.LastIndex(id, "::")+2:]
		if i := strings.IndexByte(name, '['); i > 0 {
			name = name[:i] // a parametrized case
		}
		return name
	}
	name := shortName(id)
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i] // a subtest
	}
	return name
}

// Declared returns the names of the tests declared in a test file's source (see declared).
func Declared(file, src string) []string { return declared(file, src) }

// NamedBy reports whether a test's name names a Test ID (SPEC §7.2; see namedBy).
func NamedBy(name, id string) bool { return namedBy(name, id) }

// IDToken is a Test ID as names are compared with it: lower case, every character other
// than a letter or digit read as "_".
func IDToken(id string) string {
	var b strings.Builder // one allocation, and String copies nothing
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 0x80:
			return idToken(id)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// NameSpans returns the parts of a test's name, compared as IDs are (IDToken), that start
// and end on word boundaries: NamedBy(name, id) holds exactly when IDToken(id) is one of
// them. With it, a plan's IDs are matched to many tests by lookup instead of by trying
// every pair. It returns nil for a name whose lower case has another number of runes.
func NameSpans(name string) []string {
	var out []string
	if !EachNameSpan(name, func(s string) { out = append(out, s) }) {
		return nil
	}
	return out
}

// EachNameSpan calls fn with each span NameSpans returns, without making the list; it
// reports false, calling nothing, where NameSpans returns nil.
func EachNameSpan(name string, fn func(span string)) bool {
	var buf [64]int
	at := buf[:0]
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			ascii = false
			break
		}
	}
	var low string
	if ascii {
		var b strings.Builder
		b.Grow(len(name))
		for i := 0; i < len(name); i++ {
			c := name[i]
			isLower, isUpper := c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z'
			alnum := isLower || isUpper || c >= '0' && c <= '9'
			if i == 0 {
				at = append(at, 0)
			} else {
				p := name[i-1]
				pAlnum := p >= 'a' && p <= 'z' || p >= 'A' && p <= 'Z' || p >= '0' && p <= '9'
				if !alnum || !pAlnum || p >= 'a' && p <= 'z' && isUpper {
					at = append(at, i)
				}
			}
			switch {
			case isUpper:
				b.WriteByte(c + 'a' - 'A')
			case !alnum:
				b.WriteByte('_')
			default:
				b.WriteByte(c)
			}
		}
		at = append(at, len(name))
		low = b.String()
	} else {
		orig := []rune(name)
		low = idToken(name)
		off := make([]int, 0, len(orig)+1)
		for i := range low {
			off = append(off, i)
		}
		if len(off) != len(orig) {
			return false
		}
		off = append(off, len(low))
		for i := 0; i <= len(orig); i++ {
			if boundary(orig, i) {
				at = append(at, off[i])
			}
		}
	}
	for a := 0; a < len(at); a++ {
		for b := a + 1; b < len(at); b++ {
			fn(low[at[a]:at[b]])
		}
	}
	return true
}
