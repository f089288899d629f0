package tdd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// TestSource returns the source of the tests of file (its content src) whose names are in
// names (bare test names: TestAC_STE_1, test_ac_ste_1, a JavaScript test's title), in file
// order and separated by blank lines, with the doc comment or decorators just above each:
// what the implementer of one acceptance criterion is shown of the test files, and nothing
// of the other criteria's tests. Go is read with go/parser; Python by indentation;
// JavaScript and TypeScript from the test() or it() call to its closing parenthesis. It
// returns "" when none is found.
func TestSource(file, src string, names []string) string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var parts []string
	switch path.Ext(file) {
	case ".go":
		parts = goTests(src, want)
	case ".py":
		parts = pyTests(src, want)
	default:
		parts = jsTests(src, want)
	}
	return strings.Join(parts, "\n\n")
}

func goTests(src string, want map[string]bool) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if f == nil {
		return nil
	}
	_ = err // what could be read of a broken file is still shown
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !want[fn.Name.Name] {
			continue
		}
		start := fn.Pos()
		if fn.Doc != nil {
			start = fn.Doc.Pos()
		}
		s, e := fset.Position(start).Offset, fset.Position(fn.End()).Offset
		if s >= 0 && e <= len(src) && s < e {
			out = append(out, src[s:e])
		}
	}
	return out
}

var pyDef = lazyre.New(`^([ \t]*)(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

func pyTests(src string, want map[string]bool) []string {
	lines := strings.Split(src, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		m := pyDef().FindStringSubmatch(lines[i])
		if m == nil || !want[m[2]] {
			continue
		}
		indent := len(m[1])
		start := i
		for start > 0 && strings.HasPrefix(strings.TrimSpace(lines[start-1]), "@") {
			start--
		}
		end := i + 1
		for end < len(lines) {
			l := lines[end]
			if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " \t")) <= indent {
				break
			}
			end++
		}
		for end > i+1 && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
		out = append(out, strings.Join(lines[start:end], "\n"))
		i = end - 1
	}
	return out
}

var jsCall = lazyre.New(`\b(?:test|it)(?:\.only|\.skip)?\s*\(\s*(['"` + "`" + `])`)

func jsTests(src string, want map[string]bool) []string {
	var out []string
	for _, loc := range jsCall().FindAllStringSubmatchIndex(src, -1) {
		q := src[loc[2]:loc[3]]
		rest := src[loc[3]:]
		end := strings.Index(rest, q)
		if end < 0 || !want[rest[:end]] {
			continue
		}
		// From the call to the parenthesis that closes it.
		depth := 0
		for j := loc[0]; j < len(src); j++ {
			switch src[j] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					stop := j + 1
					if stop < len(src) && src[stop] == ';' {
						stop++
					}
					out = append(out, src[loc[0]:stop])
					j = len(src)
				}
			}
		}
	}
	return out
}
