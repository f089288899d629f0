package gate

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/testdiff"
)

// A test writer may add tests and test support, but a test that was already there is not
// its to weaken (SPEC §7.2). Go and Python tests are compared by package testdiff, with
// their languages' own parsers (checkExisting); for the other languages, read here, an
// existing test file may only gain tests. existingTests
// compares a test file before and after the change and says, for each test that was there,
// whether it was deleted, changed or skipped; and whether the file as a whole was skipped
// (a module-level pytestmark, a describe.skip). Tests are read as declared() reads them: Go
// Test functions, Python test_ functions and methods, JavaScript it() and test() calls, Rust
// #[test] functions.

// testUnits returns the tests a file declares, each with the text that makes it (its
// decorators or attributes, signature and body, in a form where reformatting changes
// nothing), and how many skip markers the file holds outside its tests.
func testUnits(file string, src []byte) (map[string]string, int) {
	switch path.Ext(file) {
	case ".go":
		return goUnits(src)
	case ".py":
		return pyUnits(src)
	case ".js", ".ts", ".jsx", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		return jsUnits(string(src))
	case ".rs":
		return rsUnits(string(src))
	}
	return nil, 0
}

// existingTests returns what the change did to the tests a file held before it: one line
// per test deleted, changed or skipped, and one for skip markers added around them.
func existingTests(file string, before, after []byte) []string {
	return existingLost(file, before, after, func(string, map[string]string) bool { return false })
}

// existingUnits is existingTests with the tests the change changed (not deleted, not
// skipped) apart, as tests a run can judge (checkChanged: a changed test that fails at the
// base states new behaviour).
//
// A JavaScript test is judged by its title, which its runner reports after the titles of
// the blocks around it: a title used twice in the file (jsUnits names the second "#2"), or
// with the runner's " > " in it, would name more than one test, so such a changed test may
// not change, as before.
func existingUnits(file string, before, after []byte) (lost []string, changed []testdiff.Test) {
	js := jsExts[path.Ext(file)]
	lost = existingLost(file, before, after, func(name string, now map[string]string) bool {
		if _, twice := now[name+"#2"]; js && (twice || jsNumbered().MatchString(name) || strings.Contains(name, " > ")) {
			return false
		}
		changed = append(changed, testdiff.Test{File: file, Name: name, Kind: testdiff.Changed})
		return true
	})
	return lost, changed
}

// jsNumbered matches the name jsUnits gives a title's second and later tests.
var jsNumbered = lazyre.New(`#\d+$`)

// existingLost lists what the change did to the tests the file held before it; a test it
// changed is listed unless took, given its name and the tests the file holds now, takes it.
func existingLost(file string, before, after []byte, took func(name string, now map[string]string) bool) []string {
	if before == nil {
		return nil
	}
	was, wasSkips := testUnits(file, before)
	now, nowSkips := testUnits(file, after)
	var out []string
	for _, name := range sortedKeys(was) {
		text, ok := now[name]
		switch {
		case !ok && after == nil:
			out = append(out, fmt.Sprintf("%s: %s deleted (the file was deleted)", file, name))
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s deleted or skipped", file, name))
		case text == was[name]:
		case skipRE().MatchString(text) && !skipRE().MatchString(was[name]) || len(skipRE().FindAllString(text, -1)) > len(skipRE().FindAllString(was[name], -1)):
			out = append(out, fmt.Sprintf("%s: %s skipped", file, name))
		default:
			if !took(name, now) {
				out = append(out, fmt.Sprintf("%s: %s changed", file, name))
			}
		}
	}
	if len(was) > 0 && nowSkips > wasSkips {
		out = append(out, fmt.Sprintf("%s: a skip marker added for the file's tests", file))
	}
	return out
}

// skipRE matches the ways of skipping a test: Go's t.Skip, pytest's skip and xfail marks and
// calls, unittest's skip decorators and skipTest, the JS runners' skip, todo and x-prefixed
// forms, Rust's #[ignore].
var skipRE = lazyre.New(`\.Skip(?:f|Now)?\(|\bpytest\.(?:mark\.)?(?:skip|skipif|xfail)\b|\bpytest\.importorskip\(|\bunittest\.skip\w*|\.skipTest\(|\b(?:it|test|describe|suite)\.(?:skip|todo)\b|\bx(?:it|test|describe)\s*\(|#\[ignore\b`)

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// goUnits reads the Test functions of a Go file, each printed without its comments (so that
// gofmt and comments change nothing). Skip markers outside tests are those of TestMain and
// init.
func goUnits(src []byte) (map[string]string, int) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.SkipObjectResolution)
	if f == nil {
		return nil, 0
	}
	_ = err // what parses is read
	units := map[string]string{}
	skips := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil {
			continue
		}
		fn.Doc = nil
		var b bytes.Buffer
		_ = printer.Fprint(&b, token.NewFileSet(), fn)
		text := b.String()
		if strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" && fn.Type.Params != nil {
			if p := fn.Type.Params.List; len(p) == 1 && len(p[0].Names) <= 1 && isTestingT(p[0].Type) {
				units[fn.Name.Name] = text
				continue
			}
		}
		if fn.Name.Name == "TestMain" || fn.Name.Name == "init" {
			skips += len(skipRE().FindAllString(text, -1))
		}
	}
	return units, skips
}

// pyDefLineRE reads a def line of blanked Python source: its indentation and name.
var pyDefLineRE = lazyre.New(`^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(`)

// pyClassLineRE reads a class line.
var pyClassLineRE = lazyre.New(`^([ \t]*)class[ \t]+(\w+)`)

// pyUnits reads the test_ functions and methods of a Python file: each with its decorators
// and body (the lines indented below its def), trailing spaces and blank lines dropped. A
// method is named Class.test_x. Skip markers outside tests are module-level ones
// (pytestmark, pytest.skip(allow_module_level=True)) and those of classes.
func pyUnits(src []byte) (map[string]string, int) {
	raw := strings.Split(string(src), "\n")
	code := strings.Split(blankPython(string(src)), "\n")
	units := map[string]string{}
	inUnit := make([]bool, len(code))
	type class struct {
		indent int
		name   string
	}
	var classes []class
	for i := 0; i < len(code); i++ {
		line := code[i]
		if strings.TrimSpace(line) == "" {
			continue
		}
		ind := indentOf(line)
		for len(classes) > 0 && classes[len(classes)-1].indent >= ind {
			classes = classes[:len(classes)-1]
		}
		if m := pyClassLineRE().FindStringSubmatch(line); m != nil {
			classes = append(classes, class{ind, m[2]})
			continue
		}
		m := pyDefLineRE().FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(m[2], "test") {
			continue
		}
		name := m[2]
		if len(classes) > 0 {
			name = classes[len(classes)-1].name + "." + name
		}
		start := i
		for start > 0 && strings.HasPrefix(strings.TrimSpace(code[start-1]), "@") && indentOf(code[start-1]) == ind {
			start--
		}
		end := i + 1
		for end < len(code) && (strings.TrimSpace(code[end]) == "" || indentOf(code[end]) > ind) {
			end++
		}
		var b strings.Builder
		for k := start; k < end; k++ {
			inUnit[k] = true
			if l := strings.TrimRight(raw[k], " \t\r"); l != "" {
				b.WriteString(l + "\n")
			}
		}
		units[name] = b.String()
		i = end - 1
	}
	skips := 0
	for k, line := range code {
		if !inUnit[k] {
			skips += len(skipRE().FindAllString(line, -1))
		}
	}
	return units, skips
}

func indentOf(line string) int {
	n := 0
	for _, c := range line {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 8
		default:
			return n
		}
	}
	return n
}

// jsUnits reads the it() and test() calls of a JavaScript or TypeScript file, each from its
// callee to its closing parenthesis, by title (a title used twice gets #2). Skip markers
// outside tests are describe.skip, xdescribe and the like.
func jsUnits(src string) (map[string]string, int) {
	units := map[string]string{}
	skips := 0
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
			start, j := i, i
			for j < len(src) && (isIdent(src[j]) || src[j] == '.') {
				j++
			}
			callee := src[i:j]
			i = j
			k := skipSpace(src, j)
			if k >= len(src) || src[k] != '(' {
				continue
			}
			if !jsTestCallee(callee) {
				if head, _, _ := strings.Cut(callee, "."); skipRE().MatchString(callee+"(") && head != "it" && head != "test" {
					skips++ // describe.skip, xdescribe: the tests in it
				}
				continue
			}
			t := skipSpace(src, k+1)
			if t >= len(src) || (src[t] != '\'' && src[t] != '"' && src[t] != '`') {
				continue
			}
			title, _ := jsString(src, t)
			end := jsCallEnd(src, k)
			name := title
			for n := 2; units[name] != ""; n++ {
				name = fmt.Sprintf("%s#%d", title, n)
			}
			units[name] = normalizeLines(src[start:end])
			i = end
		default:
			i++
		}
	}
	return units, skips
}

// jsCallEnd returns the index after the parenthesis that closes the one at src[open],
// skipping strings and comments.
func jsCallEnd(src string, open int) int {
	depth := 0
	for i := open; i < len(src); {
		switch c := src[i]; {
		case strings.HasPrefix(src[i:], "//"):
			i = indexFrom(src, i, "\n")
		case strings.HasPrefix(src[i:], "/*"):
			i = indexFrom(src, i+2, "*/") + 2
		case c == '\'' || c == '"' || c == '`':
			_, i = jsString(src, i)
		case c == '(' || c == '{' || c == '[':
			depth++
			i++
		case c == ')' || c == '}' || c == ']':
			depth--
			i++
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(src)
}

// rsTestStartRE finds a Rust test: #[test], more attributes, fn name.
var rsTestStartRE = lazyre.New(`(?m)^[ \t]*#\[test\][\s\S]*?fn\s+(\w+)`)

// rsUnits reads the #[test] functions of a Rust file, with their attributes and bodies.
func rsUnits(src string) (map[string]string, int) {
	units := map[string]string{}
	for _, m := range rsTestStartRE().FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		open := strings.IndexByte(src[m[1]:], '{')
		if open < 0 {
			continue
		}
		end := jsCallEnd(src, m[1]+open)
		units[name] = normalizeLines(src[m[0]:end])
	}
	return units, 0
}

// normalizeLines drops the white space of s (so that reformatting changes nothing; a change
// of white space inside a string goes unseen).
func normalizeLines(s string) string {
	return strings.Join(strings.Fields(s), "")
}
