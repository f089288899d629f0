package gate

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/testrun"
)

// A Go test that calls an implementation that does not exist yet does not build, so RED
// never sees it run: a test that fails in its own code before the call (a write to a nil
// map) would pass RED as missing_implementation, though it says nothing of the
// implementation (SPEC §7.2). probeMissing runs such tests as far as they go: in each of
// the agent's Go test files, the first statement of each block that names a missing
// name, and everything after it in the block, is replaced by a panic with probeSentinel.
// The files are given to go through an overlay (-overlay in GOFLAGS): the checkout keeps
// the agent's files. A test that reaches the sentinel calls the implementation first
// thing; one that panics in its own code before it is a broken test.

// probeSentinel is the message of the panic that stands for the missing implementation.
const probeSentinel = "orchestrator probe: the missing implementation is called here"

// probeMissing judges, for a Go RED whose build failed for the missing implementation, the
// agent's tests run with the missing names cut out (see above): a test that fails by a
// panic raised in its own code before it reaches them is a broken test. It returns no
// verdict when there is nothing to probe, or when the probe does not build (the cut left
// something the compiler refuses): then the build's failure stands as today.
func (v *Verdict) probeMissing(ctx context.Context, in Input, res *testrun.Result, present []string, sources map[string]string) (*Verdict, error) {
	if res.Runner != testrun.Go {
		return nil, nil
	}
	missing := lastParts(missingNames(in, res))
	if len(missing) == 0 {
		return nil, nil
	}
	cut := map[string][]byte{}
	for _, f := range present {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		if out, ok := probeSource([]byte(sources[f]), missing); ok {
			cut[f] = out
		}
	}
	if len(cut) == 0 {
		return nil, nil
	}
	if len(v.Runs) > 0 && in.Restore != nil {
		if err := in.Restore(); err != nil {
			return nil, fmt.Errorf("restore the checkout before the probe: %w", err)
		}
		v.Log.WriteString("checkout: restored to the candidate's commit\n")
	}
	dir, err := os.MkdirTemp(in.Root, ".orchestrator-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	replace := map[string]string{}
	for _, f := range slices.Sorted(maps.Keys(cut)) {
		p := filepath.Join(dir, strconv.Itoa(len(replace))+"_test.go")
		if err := os.WriteFile(p, cut[f], 0o644); err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(filepath.Join(in.Root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		replace[abs] = p
	}
	overlay := filepath.Join(dir, "overlay.json")
	var b bytes.Buffer
	b.WriteString(`{"Replace":{`)
	for i, k := range slices.Sorted(maps.Keys(replace)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%s", strconv.Quote(k), strconv.Quote(replace[k]))
	}
	b.WriteString("}}\n")
	if err := os.WriteFile(overlay, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	probe := in
	probe.Restore = nil
	withOverlay := func(env []string) []string {
		if env == nil {
			env = os.Environ()
		}
		flags, _ := lookupEnv(env, "GOFLAGS")
		return setEnv(slices.Clone(env), "GOFLAGS", strings.TrimSpace(flags+" -overlay="+overlay))
	}
	if in.Jail != nil {
		j := *in.Jail
		j.Env = withOverlay(j.Env)
		probe.Jail = &j
	} else {
		probe.Env = withOverlay(in.Env)
	}
	fmt.Fprintf(&v.Log, "probe: the missing implementation (%s) cut out of %s, to see whether a test fails in its own code before it calls it\n",
		strings.Join(slices.Sorted(maps.Keys(missing)), ", "), strings.Join(slices.Sorted(maps.Keys(cut)), ", "))
	pres, err := v.run(ctx, probe, res.Command)
	if err != nil {
		if isSetup(err) {
			return nil, err
		}
		fmt.Fprintf(&v.Log, "probe: did not run (%v); the build's failure stands\n", err)
		return nil, nil
	}
	if len(pres.BuildErrors) > 0 || pres.Class == testrun.ClassMissingImplementation || pres.Class == testrun.ClassBrokenTest {
		fmt.Fprintf(&v.Log, "probe: does not build (%s); the build's failure stands\n", first(pres.BuildErrors, string(pres.Class)))
		return nil, nil
	}
	decl := map[string]bool{}
	for f := range cut {
		for _, name := range declared(f, sources[f]) {
			decl[name] = true
		}
	}
	globs := in.Globs
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	for _, t := range pres.Tests {
		if t.Status != testrun.Failed || !decl[topName(t.ID)] || strings.Contains(t.Output, "panic: "+probeSentinel) {
			continue
		}
		file, line, kind, ok := testrun.Origin(pres.Runner, t, in.Root)
		if !ok || !testrun.IsTestFile(file, globs) {
			continue
		}
		v.keepOutput(pres.Output)
		v.FailingTest, v.File = t.ID, file
		return v.fail(TypeBrokenTest, "false RED: %s fails by a %s raised in the test's own code (%s:%d) before it calls the missing implementation, not by an assertion or in the code under test", t.ID, kind, file, line), nil
	}
	v.Log.WriteString("probe: every test of the agent that fails reaches the missing implementation or fails on an assertion\n")
	return nil, nil
}

// probeSource returns src with, in every function body, the first statement of each block
// that names one of missing (outside the bodies of the blocks and function literals it
// holds, which are cut on their own) replaced, with the rest of its block, by a panic with
// probeSentinel; each variable in scope there is marked used (`_ = x`), and an import no
// longer used becomes a blank import. ok is false when nothing names a missing name.
func probeSource(src []byte, missing map[string]bool) ([]byte, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "probe_test.go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	p := &prober{fset: fset, missing: missing}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
			p.block(fn.Body.List, fn.Body.Rbrace, params(fn.Type))
		}
	}
	if len(p.edits) == 0 {
		return nil, false
	}
	out := applyOffsets(src, p.edits)
	// The imports the cut left unused: blank imports (their init still runs).
	g, err := parser.ParseFile(token.NewFileSet(), "probe_test.go", out, parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	used := map[string]bool{}
	ast.Inspect(g, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	var edits []probeEdit
	for _, imp := range g.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "_" || name == "." || used[name] {
			continue
		}
		if imp.Name != nil {
			edits = append(edits, probeEdit{int(imp.Name.Pos()) - 1, int(imp.Name.End()) - 1, "_"})
		} else {
			edits = append(edits, probeEdit{int(imp.Path.Pos()) - 1, int(imp.Path.Pos()) - 1, "_ "})
		}
	}
	return applyOffsets(out, edits), true
}

// A probeEdit replaces the bytes [start, end) of a source with text.
type probeEdit struct {
	start, end int
	text       string
}

type prober struct {
	fset    *token.FileSet
	missing map[string]bool
	edits   []probeEdit
}

// block cuts a statement list (closed by the brace at end) at its first statement that
// names a missing name itself, and cuts the blocks of the statements before it; visible
// are the variables declared around it.
func (p *prober) block(list []ast.Stmt, end token.Pos, visible []string) {
	inScope := slices.Clone(visible)
	for i, s := range list {
		if p.names(s) {
			var b strings.Builder
			for _, name := range inScope {
				fmt.Fprintf(&b, "_ = %s; ", name)
			}
			fmt.Fprintf(&b, "panic(%q)\n", probeSentinel)
			off := p.fset.Position(list[i].Pos()).Offset
			p.edits = append(p.edits, probeEdit{off, p.fset.Position(end).Offset, b.String()})
			return
		}
		p.nested(s, inScope)
		inScope = append(inScope, declares(s)...)
	}
}

// names reports whether a statement names a missing name outside the blocks and function
// literals it holds.
func (p *prober) names(s ast.Stmt) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt, *ast.FuncLit, *ast.CaseClause, *ast.CommClause:
			return false // cut on its own (nested)
		case *ast.Ident:
			if p.missing[n.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// nested cuts the blocks and function literals a statement holds.
func (p *prober) nested(s ast.Stmt, visible []string) {
	if b, ok := s.(*ast.BlockStmt); ok {
		p.block(b.List, b.Rbrace, visible)
		return
	}
	head := append(slices.Clone(visible), heads(s)...)
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			p.block(n.Body.List, n.Body.Rbrace, append(slices.Clone(head), params(n.Type)...))
			return false
		case *ast.BlockStmt:
			p.block(n.List, n.Rbrace, head)
			return false
		case *ast.CaseClause:
			p.block(n.Body, clauseEnd(n.Body, n.Colon), head)
			return false
		case *ast.CommClause:
			p.block(n.Body, clauseEnd(n.Body, n.Colon), head)
			return false
		}
		return true
	})
}

// clauseEnd is where a case's statements end: after its last one (or its colon).
func clauseEnd(body []ast.Stmt, colon token.Pos) token.Pos {
	if len(body) == 0 {
		return colon + 1
	}
	return body[len(body)-1].End()
}

// heads returns the variables a statement declares for its own blocks: an if's, for's or
// switch's init, a range's key and value.
func heads(s ast.Stmt) []string {
	switch s := s.(type) {
	case *ast.IfStmt:
		return declares(s.Init)
	case *ast.ForStmt:
		return declares(s.Init)
	case *ast.SwitchStmt:
		return declares(s.Init)
	case *ast.TypeSwitchStmt:
		return declares(s.Init)
	case *ast.RangeStmt:
		if s.Tok == token.DEFINE {
			return identNames(s.Key, s.Value)
		}
	case *ast.LabeledStmt:
		return heads(s.Stmt)
	}
	return nil
}

// declares returns the variables and constants a statement declares in its block.
func declares(s ast.Stmt) []string {
	switch s := s.(type) {
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			return identNames(s.Lhs...)
		}
	case *ast.DeclStmt:
		g, ok := s.Decl.(*ast.GenDecl)
		if !ok || g.Tok == token.TYPE || g.Tok == token.IMPORT {
			return nil
		}
		var out []string
		for _, spec := range g.Specs {
			if vs, ok := spec.(*ast.ValueSpec); ok {
				for _, n := range vs.Names {
					if n.Name != "_" {
						out = append(out, n.Name)
					}
				}
			}
		}
		return out
	}
	return nil
}

// params returns the named parameters and results of a function type.
func params(t *ast.FuncType) []string {
	var out []string
	for _, l := range []*ast.FieldList{t.Params, t.Results} {
		if l == nil {
			continue
		}
		for _, f := range l.List {
			for _, n := range f.Names {
				if n.Name != "_" {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}

func identNames(es ...ast.Expr) []string {
	var out []string
	for _, e := range es {
		if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
			out = append(out, id.Name)
		}
	}
	return out
}

// applyOffsets applies non-overlapping edits, from the last.
func applyOffsets(src []byte, edits []probeEdit) []byte {
	slices.SortFunc(edits, func(a, b probeEdit) int { return b.start - a.start })
	out := slices.Clone(src)
	for _, e := range edits {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}
