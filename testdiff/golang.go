package testdiff

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseGo reads the tests of a Go file: its Test functions (func TestX(t *testing.T)), and
// the Test methods of suites (func (s *Suite) TestX()), named Suite.TestX; its helpers (the
// other functions and methods, by name, and its package-level variables, read as tables);
// init as a helper of every test; the skip markers of TestMain; and its build constraint.
// A file that does not parse gives nil: its syntax error is the runner's to report.
func parseGo(src []byte) *parsed {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil
	}
	p := &parsed{tests: map[string]*unit{}, helpers: map[string][]*unit{}, scopeSkips: map[string]int{}}
	imports := ImportNames(f)
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				p.constraint = strings.TrimSpace(strings.TrimPrefix(c.Text, "//go:build "))
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			d.Doc = nil
			b := &goBuilder{ranged: rangedNames(d.Body), testers: testerNames(d), imports: imports, locals: localNames(d)}
			n := b.funcDecl(d)
			u := &unit{name: d.Name.Name, line: fset.Position(d.Pos()).Line, node: n, body: bodyKey(d)}
			switch {
			case isGoTest(d):
				if d.Recv != nil {
					u.name = recvName(d) + "." + d.Name.Name
				}
				p.tests[u.name] = u
				p.order = append(p.order, u.name)
			case d.Recv == nil && d.Name.Name == "TestMain":
				p.scopeSkips[""] += n.Skips
			case d.Recv == nil && d.Name.Name == "init":
				u.implicit = true
				p.helpers["init"] = append(p.helpers["init"], u)
			default:
				if d.Recv != nil {
					u.recv = recvName(d)
				}
				p.helpers[d.Name.Name] = append(p.helpers[d.Name.Name], u)
			}
		case *ast.GenDecl:
			// Package-level variables and constants: a test that reads one (a table, a
			// tolerance) is changed by its change.
			if d.Tok != token.VAR && d.Tok != token.CONST {
				continue
			}
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					var v ast.Expr
					if i < len(vs.Values) {
						v = vs.Values[i]
					}
					b := &goBuilder{imports: imports, testers: testerNames(vs), locals: localNames(vs)}
					n := &node{Head: d.Tok.String() + " " + name.Name + " " + goText(vs.Type)}
					n.Text = n.Head + " = " + goText(v)
					if v != nil {
						n.Kids = []*node{b.expr(v, true)}
					}
					b.refs(n, vs)
					if v != nil {
						// A function held by a variable checks as a helper does.
						n.Checks, n.Via = b.checks(v)
					}
					// A blank variable cannot be named, but its value is computed at init,
					// before every test: it is a helper of them all, as init is.
					u := &unit{name: name.Name, line: fset.Position(name.Pos()).Line, node: n, implicit: name.Name == "_" && d.Tok == token.VAR}
					p.helpers[name.Name] = append(p.helpers[name.Name], u)
				}
			}
		}
	}
	return p
}

// isGoTest reports whether a function is a test the go tool runs (TestX(t *testing.T),
// X not starting with a lower-case letter), or a Test method of a suite.
func isGoTest(d *ast.FuncDecl) bool {
	name := d.Name.Name
	if !strings.HasPrefix(name, "Test") || name == "TestMain" {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(name[len("Test"):]); unicode.IsLower(r) {
		return false
	}
	if d.Recv != nil {
		return true
	}
	params := d.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// recvName returns the type name of a method's receiver.
func recvName(d *ast.FuncDecl) string {
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return goText(t)
		}
	}
}

// bodyKey is what a moved test keeps: its signature without name or receiver, and its body.
func bodyKey(d *ast.FuncDecl) string {
	return goText(d.Type) + goText(d.Body)
}

// goText prints a node in gofmt's form, without comments ("" for nil).
func goText(n ast.Node) string {
	if n == nil || isNilNode(n) {
		return ""
	}
	var b bytes.Buffer
	if err := printer.Fprint(&b, token.NewFileSet(), n); err != nil {
		return fmt.Sprintf("%T", n)
	}
	return b.String()
}

// isNilNode reports whether n holds a nil pointer (an absent part of a statement).
func isNilNode(n ast.Node) bool {
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// rangedNames returns the names a function ranges over: the variables that hold its
// tables, whose literal's elements are rows.
func rangedNames(body *ast.BlockStmt) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok {
			if id, ok := r.X.(*ast.Ident); ok {
				names[id.Name] = true
			}
		}
		return true
	})
	return names
}

// A goBuilder reads one Go function into nodes.
type goBuilder struct {
	ranged map[string]bool
	// testers are the names the function gives its *testing.T, *testing.B, *testing.F and
	// testing.TB (its own and its function literals'): a call given one of them reports
	// failures through it.
	testers map[string]bool
	// imports are the names the file gives the packages it imports (fmt, calc, yaml), each
	// with its import path; locals the names the function declares itself (its parameters,
	// its variables), which are never the package's.
	imports map[string]string
	locals  map[string]bool
}

// checks counts the calls in a node that report a failure: the failure methods (Error,
// Errorf, Fatal, Fatalf, Fail, FailNow) on the test's T, panic, and a call of another
// package's function or of a method given the test's *testing.T (assert.Equal(t, ...)). A
// call of a function of the package given it (check(t, ...)) is returned in via: it is a
// check when that function checks (see checkers).
func (b *goBuilder) checks(n ast.Node) (count int, via []string) {
	ast.Inspect(n, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch f := c.Fun.(type) {
		case *ast.SelectorExpr:
			switch f.Sel.Name {
			case "Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow":
				// On the test's T, or on what is not a plain name (s.T(), tt.t): not
				// fmt.Errorf, not err.Error().
				if id, ok := f.X.(*ast.Ident); !ok || b.testers[id.Name] {
					count++
					return true
				}
			}
		case *ast.Ident:
			if f.Name == "panic" {
				count++
				return true
			}
		}
		given := slices.ContainsFunc(c.Args, func(a ast.Expr) bool {
			id, ok := a.(*ast.Ident)
			return ok && b.testers[id.Name]
		})
		switch f := c.Fun.(type) {
		case *ast.Ident:
			// A function of the package: a check when it checks, given t or not (it may
			// panic, or hold a T of its own).
			via = append(via, f.Name)
		case *ast.SelectorExpr:
			path, isPkg := "", false
			if id, ok := f.X.(*ast.Ident); ok {
				path, isPkg = b.imports[id.Name]
			}
			switch {
			case isPkg:
				// Another package's function given t: an assertion library's
				// (assert.Equal(t, ...)); the standard library has none (fmt.Sprint(t)).
				if given && !isStd(path) {
					count++
				}
			case given:
				count++ // a method given t (suite.Require(t), ...)
			default:
				via = append(via, f.Sel.Name) // a checker's method (c.eq(got, want))
			}
		}
		return true
	})
	return count, via
}

// testerNames returns the names a function's parameters (its own and its function
// literals') give a *testing.T, *testing.B, *testing.F or testing.TB.
func testerNames(d ast.Node) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(d, func(n ast.Node) bool {
		ft, ok := n.(*ast.FuncType)
		if !ok || ft.Params == nil {
			return true
		}
		for _, p := range ft.Params.List {
			t := p.Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			sel, ok := t.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "testing" {
				continue
			}
			switch sel.Sel.Name {
			case "T", "B", "F", "TB":
				for _, name := range p.Names {
					names[name.Name] = true
				}
			}
		}
		return true
	})
	return names
}

func (b *goBuilder) funcDecl(d *ast.FuncDecl) *node {
	sig := *d
	sig.Body = nil
	n := &node{Head: goText(&sig), Text: goText(d)}
	n.Kids = []*node{b.stmt(d.Body)}
	n.Skips = goSkips(d)
	b.refs(n, d)
	n.Checks, n.Via = b.checks(d)
	return n
}

func leaf(text string) *node { return &node{Text: text, Head: text} }

// stmt reads a statement: its kids and sequences, and, as added code would be, its early
// exits, skips, binds and writes.
func (b *goBuilder) stmt(s ast.Stmt) *node {
	if s == nil || isNilNode(s) {
		return nil
	}
	n := &node{Text: goText(s)}
	switch s := s.(type) {
	case *ast.BlockStmt:
		n.Head = "{}"
		var items []*node
		for _, x := range s.List {
			items = append(items, b.stmt(x))
		}
		n.Seqs = []seq{{Items: items}}
	case *ast.ExprStmt:
		n.Head = "expr"
		n.Kids = []*node{b.expr(s.X, false)}
	case *ast.AssignStmt:
		var lhs []string
		for _, l := range s.Lhs {
			lhs = append(lhs, goText(l))
		}
		n.Assign = true
		for _, l := range s.Lhs {
			if _, ok := l.(*ast.Ident); !ok {
				n.Reads = append(n.Reads, b.names(l)...)
			}
		}
		for _, r := range s.Rhs {
			n.Reads = append(n.Reads, b.names(r)...)
		}
		n.Head = fmt.Sprintf("%s %s %d", strings.Join(lhs, ", "), s.Tok, len(s.Rhs))
		for i, r := range s.Rhs {
			// A table: ranged over here, or one whose value reads as one (a helper's).
			lit, rows := r.(*ast.CompositeLit)
			rows = rows && isRowsLit(lit)
			if len(s.Lhs) == len(s.Rhs) {
				if id, ok := s.Lhs[i].(*ast.Ident); ok && b.ranged[id.Name] {
					rows = true
				}
			}
			n.Kids = append(n.Kids, b.expr(r, rows))
		}
	case *ast.DeclStmt:
		gd, ok := s.Decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			n.Head = n.Text
			break
		}
		var head []string
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, name := range vs.Names {
				head = append(head, name.Name+" "+goText(vs.Type))
				if i < len(vs.Values) {
					n.Kids = append(n.Kids, b.expr(vs.Values[i], b.ranged[name.Name]))
				}
			}
		}
		n.Head = "var " + strings.Join(head, ", ")
	case *ast.IfStmt:
		n.Head = fmt.Sprintf("if %s; %s else=%v", goText(s.Init), goText(s.Cond), s.Else != nil)
		n.Kids = []*node{b.stmt(s.Body)}
		if s.Else != nil {
			n.Kids = append(n.Kids, b.stmt(s.Else))
		}
	case *ast.ForStmt:
		n.Head = fmt.Sprintf("for %s; %s; %s", goText(s.Init), goText(s.Cond), goText(s.Post))
		n.Kids = []*node{b.stmt(s.Body)}
		n.Loop = true
	case *ast.RangeStmt:
		n.Head = fmt.Sprintf("for %s, %s %s range", goText(s.Key), goText(s.Value), s.Tok)
		n.Kids = []*node{b.expr(s.X, true), b.stmt(s.Body)}
		n.Loop = true
	case *ast.SwitchStmt:
		n.Head = fmt.Sprintf("switch %s; %s", goText(s.Init), goText(s.Tag))
		b.clauses(n, s.Body)
	case *ast.TypeSwitchStmt:
		n.Head = fmt.Sprintf("switch %s; %s", goText(s.Init), goText(s.Assign))
		b.clauses(n, s.Body)
	case *ast.SelectStmt:
		n.Head = "select"
		b.clauses(n, s.Body)
	case *ast.LabeledStmt:
		n.Head = s.Label.Name + ":"
		n.Kids = []*node{b.stmt(s.Stmt)}
	case *ast.GoStmt:
		n.Head = "go"
		n.Kids = []*node{b.expr(s.Call, false)}
	case *ast.DeferStmt:
		n.Head = "defer"
		n.Kids = []*node{b.expr(s.Call, false)}
	default:
		n.Head = n.Text
	}
	n.Exit = goExit(s)
	n.Skips = goSkips(s)
	n.Binds = goBinds(s)
	n.Writes = goWrites(s)
	b.refs(n, s)
	n.Checks, n.Via = b.checks(s)
	return n
}

// clauses reads the clauses of a switch or select: a fixed list (a clause added takes
// values from the others), each of whose bodies may grow.
func (b *goBuilder) clauses(n *node, body *ast.BlockStmt) {
	for _, c := range body.List {
		k := &node{Text: goText(c)}
		var stmts []ast.Stmt
		switch c := c.(type) {
		case *ast.CaseClause:
			var list []string
			for _, e := range c.List {
				list = append(list, goText(e))
			}
			k.Head = "case " + strings.Join(list, ", ")
			if c.List == nil {
				k.Head = "default"
			}
			stmts = c.Body
		case *ast.CommClause:
			k.Head = "case " + goText(c.Comm)
			stmts = c.Body
		}
		var items []*node
		for _, x := range stmts {
			items = append(items, b.stmt(x))
		}
		k.Seqs = []seq{{Items: items}}
		n.Kids = append(n.Kids, k)
	}
}

// expr reads an expression. A composite literal that is a table (rows: ranged over, or
// held by a variable that is) may gain rows, and its row type fields; a function literal's
// body may grow; a call's arguments may each grow. Anything else is compared whole.
func (b *goBuilder) expr(e ast.Expr, rows bool) *node {
	n := b.exprNode(e, rows)
	if n != nil {
		b.refs(n, e)
		n.Checks, n.Via = b.checks(e)
	}
	return n
}

func (b *goBuilder) exprNode(e ast.Expr, rows bool) *node {
	if e == nil {
		return nil
	}
	text := goText(e)
	switch e := e.(type) {
	case *ast.CompositeLit:
		if !rows || isStructLit(e) {
			return leaf(text)
		}
		n := &node{Text: text, Head: "composite"}
		n.Kids = []*node{b.typ(e.Type)}
		var items []*node
		for _, x := range e.Elts {
			row := leaf(goText(x))
			b.refs(row, x)
			items = append(items, row)
		}
		n.Seqs = []seq{{Rows: true, Items: items}}
		return n
	case *ast.FuncLit:
		return &node{Text: text, Head: "func" + goText(e.Type), Kids: []*node{b.stmt(e.Body)}}
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
			if lit, ok := sel.X.(*ast.CompositeLit); ok && isRowsLit(lit) {
				// A table whose own method runs its rows (testList{…}.validate(t)): it
				// may gain rows as a ranged one does.
				n := &node{Text: text, Head: fmt.Sprintf("rows.%s(%d%v)", sel.Sel.Name, len(e.Args), e.Ellipsis.IsValid())}
				n.Kids = append(n.Kids, b.expr(lit, true))
				for _, a := range e.Args {
					n.Kids = append(n.Kids, b.expr(a, false))
				}
				return n
			}
		}
		n := &node{Text: text, Head: fmt.Sprintf("%s(%d%v)", goText(e.Fun), len(e.Args), e.Ellipsis.IsValid())}
		for _, a := range e.Args {
			// A table given to a call (checkAdds(t, []addCase{{1, 2, 3}, ...})) is rows.
			lit, ok := a.(*ast.CompositeLit)
			n.Kids = append(n.Kids, b.expr(a, ok && isRowsLit(lit)))
		}
		return n
	case *ast.UnaryExpr:
		return &node{Text: text, Head: e.Op.String(), Kids: []*node{b.expr(e.X, rows)}}
	case *ast.ParenExpr:
		return &node{Text: text, Head: "()", Kids: []*node{b.expr(e.X, rows)}}
	}
	return leaf(text)
}

// typ reads the type of a table: the fields of its row struct may grow (an old row has
// the new field's zero value).
func (b *goBuilder) typ(t ast.Expr) *node {
	if t == nil {
		return nil
	}
	text := goText(t)
	switch t := t.(type) {
	case *ast.ArrayType:
		return &node{Text: text, Head: "[" + goText(t.Len) + "]", Kids: []*node{b.typ(t.Elt)}}
	case *ast.MapType:
		return &node{Text: text, Head: "map[" + goText(t.Key) + "]", Kids: []*node{b.typ(t.Value)}}
	case *ast.StarExpr:
		return &node{Text: text, Head: "*", Kids: []*node{b.typ(t.X)}}
	case *ast.StructType:
		var items []*node
		for _, f := range t.Fields.List {
			items = append(items, leaf(goText(&ast.StructType{Fields: &ast.FieldList{List: []*ast.Field{f}}})))
		}
		return &node{Text: text, Head: "struct", Seqs: []seq{{Rows: true, Items: items}}}
	}
	return leaf(text)
}

// isRowsLit reports whether a literal is a list of rows: not a struct value, and each of
// its elements a literal of its own (a case), so that a new element is a new case, not a
// new value allowed in a comparison.
func isRowsLit(e *ast.CompositeLit) bool {
	if isStructLit(e) || len(e.Elts) == 0 {
		return false
	}
	for _, x := range e.Elts {
		if kv, ok := x.(*ast.KeyValueExpr); ok {
			x = kv.Value
		}
		if _, ok := x.(*ast.CompositeLit); !ok {
			return false
		}
	}
	return true
}

// isStructLit reports whether a literal names its elements by field (a struct value, whose
// new field changes what it says), not by key.
func isStructLit(e *ast.CompositeLit) bool {
	for _, x := range e.Elts {
		if kv, ok := x.(*ast.KeyValueExpr); ok {
			if _, ok := kv.Key.(*ast.Ident); ok {
				return true
			}
		}
	}
	if _, ok := e.Type.(*ast.StructType); ok {
		return true
	}
	return false
}

// goExit returns how a statement, added to a test, leaves it or its block early or skips
// it: a return not inside a function literal of its own, a break or continue not inside a
// loop (or switch) of its own, a goto, t.Skip, os.Exit, runtime.Goexit; or recovers from a
// panic the test would fail by.
func goExit(s ast.Stmt) string {
	var walk func(n ast.Node, fn, loop, sw bool) string
	walk = func(root ast.Node, fn, loop, sw bool) string {
		found := ""
		ast.Inspect(root, func(n ast.Node) bool {
			if found != "" || n == nil {
				return false
			}
			if n != root {
				switch x := n.(type) {
				case *ast.FuncLit:
					found = walk(x.Body, true, false, false)
					return false
				case *ast.ForStmt, *ast.RangeStmt:
					found = walk(x, fn, true, sw)
					return false
				case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
					found = walk(x, fn, loop, true)
					return false
				}
			}
			switch x := n.(type) {
			case *ast.ReturnStmt:
				if !fn {
					found = "an early return"
				}
			case *ast.BranchStmt:
				switch {
				case x.Tok == token.GOTO || x.Label != nil:
					found = "a " + x.Tok.String()
				case x.Tok == token.BREAK && !loop && !sw, x.Tok == token.CONTINUE && !loop:
					found = "a " + x.Tok.String()
				}
			case *ast.CallExpr:
				found = goExitCall(x)
			}
			return true
		})
		return found
	}
	return walk(s, false, false, false)
}

// goExitCall names a call that skips or ends a test, or recovers from its panic.
func goExitCall(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.SelectorExpr:
		switch f.Sel.Name {
		case "Skip", "Skipf", "SkipNow":
			return goText(f)
		case "Exit", "Goexit":
			if id, ok := f.X.(*ast.Ident); ok && (id.Name == "os" || id.Name == "runtime" || id.Name == "syscall") {
				return goText(f)
			}
		}
	case *ast.Ident:
		if f.Name == "recover" {
			return "recover()"
		}
	}
	return ""
}

// goSkips counts the calls of Skip, Skipf and SkipNow in a node.
func goSkips(n ast.Node) int {
	count := 0
	ast.Inspect(n, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "Skip", "Skipf", "SkipNow":
					count++
				}
			}
		}
		return true
	})
	return count
}

// goBinds returns the names a statement declares in its own block (:=, var).
func goBinds(s ast.Stmt) []string {
	var out []string
	switch s := s.(type) {
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			for _, l := range s.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					out = append(out, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok {
			for _, sp := range gd.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						out = append(out, id.Name)
					}
				case *ast.TypeSpec:
					out = append(out, sp.Name.Name)
				}
			}
		}
	case *ast.LabeledStmt:
		return goBinds(s.Stmt)
	}
	return out
}

// goWrites returns the roots of the places a statement assigns (=, op=, ++, --) that it
// does not declare itself: names of outer scopes, fields and elements of outer values,
// package variables.
func goWrites(s ast.Stmt) []string {
	inside := map[string]bool{}
	var roots []string
	ast.Inspect(s, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				if x.Tok == token.DEFINE {
					if id, ok := l.(*ast.Ident); ok {
						inside[id.Name] = true
					}
					continue
				}
				roots = append(roots, goRoot(l))
			}
		case *ast.RangeStmt:
			for _, l := range []ast.Expr{x.Key, x.Value} {
				if l == nil {
					continue
				}
				if x.Tok == token.DEFINE {
					if id, ok := l.(*ast.Ident); ok {
						inside[id.Name] = true
					}
				} else {
					roots = append(roots, goRoot(l))
				}
			}
		case *ast.IncDecStmt:
			roots = append(roots, goRoot(x.X))
		case *ast.ValueSpec:
			for _, id := range x.Names {
				inside[id.Name] = true
			}
		case *ast.FuncLit:
			for _, f := range x.Type.Params.List {
				for _, id := range f.Names {
					inside[id.Name] = true
				}
			}
		}
		return true
	})
	var out []string
	for _, r := range roots {
		if r != "" && r != "_" && !inside[r] {
			out = append(out, r)
		}
	}
	return out
}

// goRoot returns the variable an assigned expression belongs to: x for x, x.f, x[i], *x.
func goRoot(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return ""
		}
	}
}

// refs sets what a node mentions: every name (identifiers and selected names) in Refs,
// and in Owned each name it mentions only as a member of something, with it: of an
// imported package ("bytes.Equal": not the missing method Equal, nor calc.Mul the missing
// Mul of the test's own package), of a value (".Mul" of new(big.Int).Mul: not the missing
// function Mul), or a name the function declares itself ("(local).Mul").
func (b *goBuilder) refs(n *node, x ast.Node) {
	n.Refs, n.Owned = goRefs(x, b.imports, b.locals)
}

// names returns the names a node mentions as they are judged against what is missing: a
// name alone, or with its owner where it is mentioned only as its member (ownedNames).
func (b *goBuilder) names(x ast.Node) []string {
	return ownedNames(goRefs(x, b.imports, b.locals))
}

// localOwner is the owner goRefs gives a name a function declares itself.
const localOwner = "(local)"

// goRefs returns every name a node mentions, identifiers and selected names, and those it
// mentions only as a member of an imported package (one of imports) or of a value, or
// only as a name the function declares (one of locals), with that owner.
func goRefs(n ast.Node, imports map[string]string, locals map[string]bool) (refs, owned []string) {
	seen := map[string]bool{}
	members := map[*ast.Ident]string{} // a member or a field key: its qualified name, or ""
	alone := map[string]bool{}         // names mentioned otherwise
	var qualified []string
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			members[x.Sel] = "." + x.Sel.Name // a value's
			if id, ok := x.X.(*ast.Ident); ok && !locals[id.Name] {
				if path, ok := imports[id.Name]; ok {
					// By the package's path, whatever name the file gives it (calc
					// "math/bits" is not the missing calc.Mul).
					members[x.Sel] = path + "." + x.Sel.Name
				}
			}
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok {
				members[id] = "." + id.Name // a field's name in a literal (Config{Offset: 1})
			}
		case *ast.StructType:
			for _, f := range x.Fields.List {
				for _, id := range f.Names {
					members[id] = localOwner + "." + id.Name // a field the test declares
				}
			}
		case *ast.Ident:
			if !seen[x.Name] {
				seen[x.Name] = true
				refs = append(refs, x.Name)
			}
			q, ok := members[x]
			switch {
			case ok && q != "":
				qualified = append(qualified, q)
			case !ok && locals[x.Name]:
				qualified = append(qualified, localOwner+"."+x.Name)
			default:
				alone[x.Name] = true
			}
		}
		return true
	})
	for _, q := range qualified {
		if !alone[q[strings.LastIndexByte(q, '.')+1:]] && !slices.Contains(owned, q) {
			owned = append(owned, q)
		}
	}
	return refs, owned
}

// localNames returns the names a function declares: its parameters and results, and
// those of its function literals, and every variable and constant its body declares.
func localNames(fn ast.Node) map[string]bool {
	out := map[string]bool{}
	add := func(ids ...*ast.Ident) {
		for _, id := range ids {
			if id != nil && id.Name != "_" {
				out[id.Name] = true
			}
		}
	}
	fields := func(l *ast.FieldList) {
		if l != nil {
			for _, f := range l.List {
				add(f.Names...)
			}
		}
	}
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncType:
			fields(x.Params)
			fields(x.Results)
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.RangeStmt:
			if x.Tok == token.DEFINE {
				for _, e := range []ast.Expr{x.Key, x.Value} {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := x.Decl.(*ast.GenDecl); ok {
				for _, sp := range g.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						add(vs.Names...)
					}
				}
			}
		case *ast.FuncDecl:
			fields(x.Recv)
		}
		return true
	})
	return out
}

// ImportNames returns the names a Go file gives its imports, each with its path: the name
// it writes, or the package's name as its path suggests (the last element, without a
// version element or suffix, a "go-" prefix or a "-go" suffix).
func ImportNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		if spec.Name != nil {
			if spec.Name.Name != "_" && spec.Name.Name != "." {
				out[spec.Name.Name] = p
			}
			continue
		}
		parts := strings.Split(p, "/")
		name := parts[len(parts)-1]
		if len(parts) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
			name = parts[len(parts)-2]
		}
		name, _, _ = strings.Cut(name, ".")
		name = strings.TrimSuffix(strings.TrimPrefix(name, "go-"), "-go")
		out[strings.ReplaceAll(name, "-", "")] = p
	}
	return out
}

// GoImportNames returns the names a Go source gives its imports, each with its path
// (ImportNames); nil when it does not parse.
func GoImportNames(src []byte) map[string]string {
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.ImportsOnly)
	if err != nil {
		return nil
	}
	return ImportNames(f)
}

// isStd reports whether an import path is the standard library's: its first element has
// no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
