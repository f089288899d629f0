package gate

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/internal/python3"
	"github.com/orchestrator/orchestrator/testdiff"
)

// Runner tampering (SPEC §7.6). The gate runs the candidate's code, and that code runs
// inside the test runner: an init function, an imported module or a plugin can rewrite
// what the runner reports. Before any test command runs, the gate reads every file the
// change added or changed, with each language's own parser where it has one, and refuses
// two kinds of code as test_tampered, naming the file and the line:
//
//   - implementation code (not the harness) that reaches into the test runner: Go that
//     imports "testing", reads the test binary's -test. flags or tells a test binary by
//     its name, replaces os.Stdout, os.Stderr or os.Args, or runs its own executable
//     again while its package initializes (the test binary under a filter of its
//     output); Python that imports or looks
//     up pytest, its plugins or unittest's internals, reads the runner's environment or
//     report path, rewrites files at exit or patches builtins; JavaScript and TypeScript
//     that import the runner (vitest, jest) or replace process.stdout.write;
//   - harness that rewrites outcomes instead of testing anything: a pytest hook that sets a
//     report's outcome or forces a hook's result, a Go TestMain that exits with a code that
//     is not m.Run()'s or redirects os.Stdout.
//
// A reading is not a proof: code that hides better still runs, and the canaries and the
// runner's structured report are what catch it. This check names the plain forms early,
// with the line, instead of a forged report later.

// A Tampering is a place in a changed file where code reaches into the test runner, or
// where harness rewrites what the runner reports.
type Tampering struct {
	File string // slash-separated, relative to the project
	Line int
	What string
	// Harness: the file is part of the harness (test files and test support), so the
	// finding is an outcome rewritten, not a runner reached from implementation code.
	Harness bool
}

func (t Tampering) String() string {
	return fmt.Sprintf("%s:%d: %s", t.File, t.Line, t.What)
}

// Tamperings returns the runner tampering in the changed files, as they are under root
// (changed are slash-separated and relative to root; a deleted file has none), sorted by
// file and line. It reads Python through python3 (tamper.py), and fails only when Python
// files need reading and there is no python3 to read them.
func (h Harness) Tamperings(ctx context.Context, root string, changed []string) ([]Tampering, error) {
	var out []Tampering
	var py []pyFile
	for _, p := range changed {
		p = strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "./")
		full := filepath.Join(root, filepath.FromSlash(p))
		st, err := os.Stat(full)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !st.Mode().IsRegular() {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("runner tampering: %w", err)
		}
		src, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("runner tampering: %w", err)
		}
		harness := h.IsHarness(p, src)
		switch ext := path.Ext(p); {
		case ext == ".go":
			if slices.Contains(strings.Split(path.Dir(p), "/"), "testdata") {
				continue // not compiled
			}
			if harness || strings.HasSuffix(p, "_test.go") {
				out = append(out, goHarness(p, src)...)
			} else {
				out = append(out, goReach(p, src)...)
			}
		case ext == ".py":
			mode := "impl"
			if harness {
				mode = "harness"
			}
			py = append(py, pyFile{Path: full, Name: p, Mode: mode})
		case cExts[ext] && !slices.Contains(strings.Split(path.Dir(p), "/"), "testdata"):
			out = append(out, cReach(p, string(src), 1)...)
		case ext == ".rs" && !harness && !strings.HasSuffix(p, "_test.rs"):
			out = append(out, rsReach(p, string(src))...)
		case ext == ".syso" && sysoLinked(p):
			out = append(out, Tampering{File: p, Line: 1, What: "an object file linked into the package (.syso), whose code the gate cannot read"})
		case jsExts[ext] && !jsDeclaration(p):
			if !harness {
				out = append(out, jsReach(p, src)...)
			}
		}
	}
	found, err := pyTamperings(ctx, py)
	if err != nil {
		return nil, err
	}
	out = append(out, found...)
	slices.SortStableFunc(out, func(a, b Tampering) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return out, nil
}

// checkTampering refuses runner tampering in the change (SPEC §7.6) as test_tampered,
// naming the first place and the file, before any test runs. A change a judge is to rule
// on (in.ReviewTestChange, SPEC §11.2) is logged instead.
func (v *Verdict) checkTampering(ctx context.Context, in Input) (*Verdict, error) {
	found, err := in.harness().Tamperings(ctx, in.Root, in.Changed)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		fmt.Fprintf(&v.Log, "runner tampering: none\n")
		return nil, nil
	}
	for _, t := range found {
		fmt.Fprintf(&v.Log, "runner tampering: %s\n", t)
	}
	t := found[0]
	rule := "implementation code may not reach into the test runner"
	if t.Harness {
		rule = "test support may set tests up, not rewrite what the runner reports"
	}
	more := ""
	if len(found) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(found)-1)
	}
	reason := fmt.Sprintf("test_tampered: %s; %s%s", t, rule, more)
	if in.ReviewTestChange {
		fmt.Fprintf(&v.Log, "for the judge to rule on: %s\n", reason)
		return nil, nil
	}
	v.File = t.File
	return v.fail(TypeTampered, "%s", reason), nil
}

// Go.

// goImports returns the local names of a file's imports, by name, as testdiff reads them
// (ImportNames), with a dot import filed under "." (the paths it brings in scope joined by
// spaces).
func goImports(f *ast.File) map[string]string {
	names := testdiff.ImportNames(f)
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && imp.Name != nil && imp.Name.Name == "." {
			names["."] += " " + p
		}
	}
	return names
}

// A goFile is a parsed Go file with its imports, for the readings below.
type goFile struct {
	name  string
	fset  *token.FileSet
	file  *ast.File
	names map[string]string
	out   []Tampering
	seen  map[string]bool
}

func parseGo(name string, src []byte) *goFile {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil // the compiler's to report
	}
	return &goFile{name: name, fset: fset, file: f, names: goImports(f), seen: map[string]bool{}}
}

func (g *goFile) add(pos token.Pos, harness bool, format string, args ...any) {
	t := Tampering{File: g.name, Line: g.fset.Position(pos).Line, What: fmt.Sprintf(format, args...), Harness: harness}
	if k := t.String(); !g.seen[k] {
		g.seen[k] = true
		g.out = append(g.out, t)
	}
}

// pkgSel reports whether e is pkg.name, pkg being the import path of a package (or name
// alone, where pkg is dot-imported).
func (g *goFile) pkgSel(e ast.Expr, pkg, name string) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && e.Sel.Name == name && g.names[x.Name] == pkg
	case *ast.Ident:
		return e.Name == name && slices.Contains(strings.Fields(g.names["."]), pkg)
	}
	return false
}

// stdVar returns "os.Stdout", "os.Stderr" or "os.Args" when e is one of them, an element
// of os.Args, or what one of them points at; else "".
func (g *goFile) stdVar(e ast.Expr) string {
	e = ast.Unparen(e)
	switch x := e.(type) {
	case *ast.StarExpr:
		return g.stdVar(x.X)
	case *ast.IndexExpr:
		if v := g.stdVar(x.X); v == "os.Args" {
			return v
		}
		return ""
	case *ast.SliceExpr:
		if v := g.stdVar(x.X); v == "os.Args" {
			return v
		}
		return ""
	}
	for _, name := range []string{"Stdout", "Stderr", "Args"} {
		if g.pkgSel(e, "os", name) {
			return "os." + name
		}
	}
	return ""
}

// goString returns the value of a string constant expression: a literal, or literals
// joined with +.
func goString(n ast.Node) (string, bool) {
	if e, ok := n.(ast.Expr); ok {
		n = ast.Unparen(e)
	}
	switch e := n.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := goString(e.X)
		b, ok2 := goString(e.Y)
		return a + b, ok1 && ok2
	}
	return "", false
}

// testFlagRE matches the name of a flag of a test binary: -test.v, test.run=…, a bare
// "-test." prefix. "test.example.com" does not match: a flag name is followed by the end
// or "=".
var testFlagRE = lazyre.New(`^-{1,2}test\.|^test\.$|^test\.(?:v|run|skip|count|timeout|short|failfast|bench|benchtime|benchmem|cpu|parallel|list|shuffle|fullpath|paniconexit0|testlogfile|gocoverdir|coverprofile|coverprofilemode|outputdir|cpuprofile|memprofile|memprofilerate|blockprofile|blockprofilerate|mutexprofile|mutexprofilefraction|trace|fuzz|fuzztime|fuzzminimizetime|fuzzcachedir|fuzzworker|artifacts)(?:=|$)`)

// binaryNameRE matches what a test binary's name ends with.
var binaryNameRE = lazyre.New(`^[.-]test(?:\.exe)?$`)

// selfPathRE matches the paths of /proc by which a process reads its own command line or
// runs its own executable again.
var selfPathRE = lazyre.New(`^/proc/(?:self|thread-self)/(?:exe|cmdline)$`)

// processStarters are the calls that start a process.
var processStarters = [][2]string{
	{"os/exec", "Command"}, {"os/exec", "CommandContext"}, {"os", "StartProcess"},
	{"syscall", "Exec"}, {"syscall", "ForkExec"}, {"syscall", "StartProcess"},
	{"golang.org/x/sys/unix", "Exec"},
}

// goReach returns where a Go file of implementation code reaches into the test runner:
// it imports "testing", names a -test. flag, tells a test binary by its name, replaces
// os.Stdout, os.Stderr or os.Args (or duplicates a file onto descriptor 1 or 2), or runs
// its own executable again while the package initializes (reexecs).
func goReach(name string, src []byte) []Tampering {
	g := parseGo(name, src)
	if g == nil {
		return nil
	}
	for _, imp := range g.file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "testing" {
			g.add(imp.Pos(), false, `imports "testing", the test runner's package, in code that is not a test`)
		}
	}
	// A file that reads its own command line or executable may look for a test binary's
	// name in it.
	readsArgs := false
	ast.Inspect(g.file, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && (g.pkgSel(e, "os", "Args") || g.pkgSel(e, "os", "Executable")) {
			readsArgs = true
		}
		return !readsArgs
	})
	// A name without its dash ("test.v", "test.") is a test flag's only where the file
	// reads the command line or looks flags up; elsewhere it is a host or a setting's key.
	readsFlags := readsArgs
	for _, p := range g.names {
		readsFlags = readsFlags || p == "flag"
	}
	ast.Inspect(g.file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if g.pkgSel(n.Fun, "testing", "Testing") {
				g.add(n.Pos(), false, "calls testing.Testing()")
			}
		case *ast.BasicLit, *ast.BinaryExpr:
			if s, ok := goString(n); ok {
				switch {
				case testFlagRE().MatchString(s) && (readsFlags || strings.HasPrefix(s, "-")):
					g.add(n.Pos(), false, "names the test binary's flag %q", s)
				case readsArgs && binaryNameRE().MatchString(s):
					g.add(n.Pos(), false, "tells a test binary by its name (%q) from os.Args", s)
				}
				return false
			}
		}
		return true
	})
	g.reexecs()
	g.redirects(g.file, false)
	g.cgoPreambles()
	return g.out
}

// reexecs adds where the code that runs while the package initializes (its init
// functions and package-level initializers, and the functions of the file they call)
// starts the running program's own executable again (os.Executable, /proc/self/exe,
// os.Args[0]): in a test binary, the tests run as a child whose report the parent can
// rewrite on its way out, one test at a time, which no canary sees. Honest code that runs
// itself again does so from main or when called (a daemon, docker's reexec), not while
// its package initializes. Code that runs itself again when called, and reads what the
// child reports (its output captured, not left on the parent's standard output), is the
// same relay started later, from the function a test calls: it is refused too.
func (g *goFile) reexecs() {
	funcs := map[string]*ast.FuncDecl{}
	var roots []ast.Node
	for _, d := range g.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Body != nil {
				funcs[d.Name.Name] = d
				if d.Name.Name == "init" {
					roots = append(roots, d.Body)
				}
			}
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				roots = append(roots, d)
			}
		}
	}
	if self, starts, _ := g.startsSelf(roots, funcs); self {
		for _, c := range starts {
			g.add(c.Pos(), false, "runs its own executable again while the package initializes")
		}
	}
	for _, d := range g.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || fd.Name.Name == "init" {
			continue
		}
		if self, starts, captures := g.startsSelf([]ast.Node{fd.Body}, funcs); self && captures {
			for _, c := range starts {
				g.add(c.Pos(), false, "runs its own executable again and reads what it reports (a test binary's report, rewritten on its way out)")
			}
		}
	}
}

// startsSelf reads the code under roots, and the functions of the file it calls: whether
// it names its own executable, the calls that start a process, and whether it captures a
// process's output (Output, CombinedOutput, a pipe, or Stdout set to anything but the
// parent's own).
func (g *goFile) startsSelf(roots []ast.Node, funcs map[string]*ast.FuncDecl) (self bool, starts []*ast.CallExpr, captures bool) {
	seen := map[*ast.FuncDecl]bool{}
	for len(roots) > 0 {
		n := roots[0]
		roots = roots[1:]
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok && funcs[id.Name] != nil && !seen[funcs[id.Name]] && id.Name != "init" {
					seen[funcs[id.Name]] = true
					roots = append(roots, funcs[id.Name].Body)
				}
				if g.pkgSel(n.Fun, "os", "Executable") {
					self = true
				}
				for _, ps := range processStarters {
					if g.pkgSel(n.Fun, ps[0], ps[1]) {
						starts = append(starts, n)
					}
				}
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
					switch sel.Sel.Name {
					case "Output", "CombinedOutput", "StdoutPipe", "StderrPipe":
						captures = true
					}
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					sel, ok := lhs.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Stdout" && sel.Sel.Name != "Stderr" || i >= len(n.Rhs) {
						continue
					}
					if v := g.stdVar(n.Rhs[i]); v != "os.Stdout" && v != "os.Stderr" {
						captures = true
					}
				}
			case *ast.IndexExpr:
				if g.pkgSel(n.X, "os", "Args") {
					if lit, ok := n.Index.(*ast.BasicLit); ok && lit.Value == "0" {
						self = true
					}
				}
			case *ast.BasicLit, *ast.BinaryExpr:
				if s, ok := goString(n); ok {
					self = self || selfPathRE().MatchString(s)
					return false
				}
			}
			return true
		})
	}
	return self, starts, captures
}

// redirects adds where the code under n replaces os.Stdout, os.Stderr or os.Args, takes
// one's address, or duplicates a file onto descriptor 1 or 2.
func (g *goFile) redirects(n ast.Node, harness bool) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				break
			}
			for _, lhs := range n.Lhs {
				if v := g.stdVar(lhs); v != "" {
					g.add(lhs.Pos(), harness, "replaces %s", v)
				}
			}
		case *ast.IncDecStmt:
			if v := g.stdVar(n.X); v != "" {
				g.add(n.Pos(), harness, "replaces %s", v)
			}
		case *ast.UnaryExpr:
			if v := g.stdVar(n.X); n.Op == token.AND && v != "" {
				g.add(n.Pos(), harness, "takes the address of %s", v)
			}
		case *ast.CallExpr:
			for _, pkg := range []string{"syscall", "golang.org/x/sys/unix"} {
				for _, fn := range []string{"Dup2", "Dup3"} {
					if g.pkgSel(n.Fun, pkg, fn) && len(n.Args) >= 2 && stdFD(n.Args[1]) {
						g.add(n.Pos(), harness, "duplicates a file onto standard output or error (%s.%s)", path.Base(pkg), fn)
					}
				}
				// Closing a descriptor held in a variable is everyday systems code: only the
				// constants 1 and 2 count.
				if g.pkgSel(n.Fun, pkg, "Close") && len(n.Args) == 1 && constFD(n.Args[0]) {
					g.add(n.Pos(), harness, "closes standard output or error (%s.Close), so that the next file it opens takes its place", path.Base(pkg))
				}
				if g.pkgSel(n.Fun, pkg, "FcntlInt") && len(n.Args) == 3 && (g.pkgSel(n.Args[1], pkg, "F_DUPFD") || g.pkgSel(n.Args[1], pkg, "F_DUPFD_CLOEXEC")) && stdFD(n.Args[2]) {
					g.add(n.Pos(), harness, "duplicates a file onto standard output or error (%s.FcntlInt with F_DUPFD)", path.Base(pkg))
				}
				for _, fn := range []string{"Syscall", "Syscall6", "RawSyscall", "RawSyscall6", "RawSyscallNoError"} {
					if g.pkgSel(n.Fun, pkg, fn) && len(n.Args) > 0 {
						if trap := g.rawTrap(n.Args[0], pkg); trap != "" {
							g.add(n.Pos(), harness, "makes %s itself (%s.%s), which can put another file on standard output or start the test binary again", trap, path.Base(pkg), fn)
						}
					}
				}
			}
		}
		return true
	})
}

// rawTrap says which system call e, the trap of a raw system call of pkg, is, when it is
// one that duplicates descriptors or starts processes ("the system call SYS_DUP3"), or
// when e is not a constant of pkg; else "".
func (g *goFile) rawTrap(e ast.Expr, pkg string) string {
	for _, name := range []string{"SYS_DUP", "SYS_DUP2", "SYS_DUP3", "SYS_FCNTL", "SYS_CLOSE", "SYS_CLOSE_RANGE", "SYS_EXECVE", "SYS_EXECVEAT", "SYS_CLONE", "SYS_CLONE3", "SYS_FORK", "SYS_VFORK"} {
		if g.pkgSel(e, pkg, name) {
			return "the system call " + name
		}
	}
	if sel, ok := ast.Unparen(e).(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "SYS_") {
		return ""
	}
	return "a system call by a number the gate cannot read"
}

// constFD reports whether a file descriptor argument is the constant 1 or 2.
func constFD(e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	return ok && lit.Kind == token.INT && (lit.Value == "1" || lit.Value == "2")
}

// stdFD reports whether a file descriptor argument may be 1 or 2: it is, or it is not a
// constant the gate can read.
func stdFD(e ast.Expr) bool {
	if lit, ok := ast.Unparen(e).(*ast.BasicLit); ok && lit.Kind == token.INT {
		n, err := strconv.ParseInt(lit.Value, 0, 64)
		return err != nil || n == 1 || n == 2
	}
	return true
}

// goHarness returns where a Go test file rewrites what the test binary reports: its
// TestMain exits with a code that is not m.Run()'s, or TestMain, an init function or a
// package-level value redirects os.Stdout, os.Stderr or os.Args, or names a -test. flag.
func goHarness(name string, src []byte) []Tampering {
	g := parseGo(name, src)
	if g == nil {
		return nil
	}
	funcs := map[string]*ast.FuncDecl{}
	var main *ast.FuncDecl
	for _, d := range g.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil || d.Body == nil {
				continue
			}
			funcs[d.Name.Name] = d
			switch d.Name.Name {
			case "TestMain":
				main = d
			case "init":
				g.redirects(d.Body, true)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					for _, e := range vs.Values {
						g.redirects(e, true)
					}
				}
			}
		}
	}
	if main == nil {
		return g.out
	}
	// TestMain and the functions of the file it calls.
	scope := []*ast.FuncDecl{main}
	seen := map[*ast.FuncDecl]bool{main: true}
	for i := 0; i < len(scope); i++ {
		ast.Inspect(scope[i].Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && funcs[id.Name] != nil && !seen[funcs[id.Name]] {
					seen[funcs[id.Name]] = true
					scope = append(scope, funcs[id.Name])
				}
			}
			return true
		})
	}
	for _, fn := range scope {
		g.redirects(fn.Body, true)
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if s, ok := goString(n); ok && testFlagRE().MatchString(s) {
				g.add(n.Pos(), true, "TestMain sets or reads the test binary's flag %q", s)
				return false
			}
			c, ok := n.(*ast.CallExpr)
			if !ok || !g.pkgSel(c.Fun, "os", "Exit") && !g.pkgSel(c.Fun, "syscall", "Exit") {
				return true
			}
			if len(c.Args) == 1 && !g.exitCode(c.Args[0], fn, funcs, map[*ast.FuncDecl]bool{}) {
				g.add(c.Pos(), true, "TestMain exits with %s, not the code m.Run() returned", g.text(c.Args[0]))
			}
			return true
		})
	}
	return g.out
}

// text returns the source of an expression, short.
func (g *goFile) text(e ast.Expr) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, g.fset, e); err != nil || b.Len() > 60 {
		return "another code"
	}
	return b.String()
}

// exitCode reports whether e, the code a TestMain (or a function of the file it calls,
// fn) exits or returns with, is the one m.Run() returned: m.Run() itself, a variable set
// from it (and, after that, only from m.Run() or to a code that fails), a constant that
// fails (a set-up that failed), or what a function of the file returns that itself
// returns only such codes.
func (g *goFile) exitCode(e ast.Expr, fn *ast.FuncDecl, funcs map[string]*ast.FuncDecl, visiting map[*ast.FuncDecl]bool) bool {
	e = ast.Unparen(e)
	if failingCode(e) || isRun(e) {
		return true
	}
	switch e := e.(type) {
	case *ast.Ident:
		return codeVar(fn, e.Name)
	case *ast.CallExpr:
		id, ok := e.Fun.(*ast.Ident)
		callee := funcs[id.Name]
		if !ok || callee == nil || visiting[callee] || callee.Type.Results == nil {
			return false
		}
		visiting[callee] = true
		ok = true
		returns := 0
		ast.Inspect(callee.Body, func(n ast.Node) bool {
			if _, lit := n.(*ast.FuncLit); lit {
				return false
			}
			if r, isRet := n.(*ast.ReturnStmt); isRet {
				returns++
				ok = ok && len(r.Results) == 1 && g.exitCode(r.Results[0], callee, funcs, visiting)
			}
			return true
		})
		return ok && returns > 0
	}
	return false
}

// isRun reports whether e is a call X.Run() with no arguments: m.Run(), the only Run a
// TestMain has at hand.
func isRun(e ast.Expr) bool {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(c.Args) > 0 {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Run"
}

// failingCode reports whether e is an integer constant other than 0.
func failingCode(e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return false
	}
	n, err := strconv.ParseInt(lit.Value, 0, 64)
	return err == nil && n != 0
}

// codeVar reports whether the variable name holds m.Run()'s code in fn: it is set from
// m.Run(), and after the first time only from m.Run() again or to a code that fails.
func codeVar(fn *ast.FuncDecl, name string) bool {
	first := token.NoPos
	ok := true
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		var lhs, rhs []ast.Expr
		switch n := n.(type) {
		case *ast.AssignStmt:
			lhs, rhs = n.Lhs, n.Rhs
		case *ast.ValueSpec:
			for _, id := range n.Names {
				lhs = append(lhs, id)
			}
			rhs = n.Values
		case *ast.IncDecStmt:
			if id, isID := n.X.(*ast.Ident); isID && id.Name == name && first.IsValid() {
				ok = false
			}
			return true
		default:
			return true
		}
		for i, l := range lhs {
			id, isID := l.(*ast.Ident)
			if !isID || id.Name != name {
				continue
			}
			var r ast.Expr
			if len(rhs) == len(lhs) {
				r = rhs[i]
			}
			switch {
			case r != nil && isRun(r):
				if !first.IsValid() {
					first = id.Pos()
				}
			case !first.IsValid():
			case r == nil || !failingCode(r):
				ok = false
			}
		}
		return true
	})
	return first.IsValid() && ok
}

// JavaScript and TypeScript.

var jsExts = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".jsx": true, ".ts": true, ".mts": true, ".cts": true, ".tsx": true}

// jsDeclaration reports whether p is a TypeScript declaration file, which runs nothing.
func jsDeclaration(p string) bool {
	for _, s := range []string{".d.ts", ".d.mts", ".d.cts"} {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// jsRunnerRE matches the modules of the JavaScript test runners.
var jsRunnerRE = lazyre.New(`^(?:vitest|jest|jest-circus|jest-runner[\w-]*|jest-environment[\w-]*)(?:/.*)?$|^@(?:vitest|jest)/`)

// jsReach returns where a JavaScript or TypeScript module of implementation code reaches
// into the test runner: it imports or requires vitest or jest, or passes its name to any
// call (createRequire(…)('vitest')); a type-only import runs nothing, and is not one; replaces process.stdout.write or process.stderr.write, reads the runners'
// environment (VITEST…, JEST_WORKER_ID) or their globals (__vitest…).
func jsReach(name string, src []byte) []Tampering {
	toks := jsTokens(string(src))
	var out []Tampering
	add := func(t jsToken, format string, args ...any) {
		out = append(out, Tampering{File: name, Line: t.line, What: fmt.Sprintf(format, args...)})
	}
	is := func(i int, text string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind != jsStr && toks[i].text == text
	}
	for i, t := range toks {
		switch {
		case t.kind == jsStr && jsRunnerRE().MatchString(t.text):
			switch {
			case is(i-1, "from") && !jsTypeOnly(toks, i-1),
				is(i-1, "import"),
				is(i-1, "(") && !jsTypeArg(toks, i-1): // require(…), import(…), createRequire(…)(…)
				add(t, "imports %s, the test runner, in code that is not a test", t.text)
			}
		case t.kind == jsStr && strings.HasPrefix(t.text, "__vitest"),
			t.kind == jsIdent && strings.HasPrefix(t.text, "__vitest"):
			add(t, "uses %s, the test runner's own state", t.text)
		case t.kind != jsStr && t.text == "process" && is(i+1, ".") && (is(i+2, "stdout") || is(i+2, "stderr")):
			stream := toks[i+2].text
			if is(i+3, ".") && is(i+4, "write") && is(i+5, "=") {
				add(t, "replaces process.%s.write", stream)
			}
			if is(i-1, "(") && is(i-2, "defineProperty") || is(i-1, "(") && is(i-2, "assign") && is(i-4, "Object") {
				add(t, "redefines process.%s", stream)
			}
		case t.kind != jsStr && t.text == "env" && is(i-1, ".") && is(i-2, "process"):
			var key jsToken
			switch {
			case is(i+1, ".") && i+2 < len(toks):
				key = toks[i+2]
			case is(i+1, "[") && i+2 < len(toks) && toks[i+2].kind == jsStr:
				key = toks[i+2]
			}
			if strings.HasPrefix(key.text, "VITEST") || strings.HasPrefix(key.text, "JEST_") {
				add(t, "reads the test runner's environment (%s)", key.text)
			}
		}
	}
	return out
}

// jsTypeArg reports whether the parenthesis at toks[open] opens a TypeScript import type
// (typeof import('vitest')), which runs nothing.
func jsTypeArg(toks []jsToken, open int) bool {
	return open >= 2 && toks[open-1].text == "import" && toks[open-2].text == "typeof"
}

// jsTypeOnly reports whether the from at toks[i] ends an import or export of types only
// (import type {…} from, export type {…} from), which TypeScript erases.
func jsTypeOnly(toks []jsToken, from int) bool {
	for j := from - 1; j >= 0 && from-j < 200; j-- {
		if toks[j].kind == jsStr || toks[j].text != "import" && toks[j].text != "export" {
			continue
		}
		return j+2 < len(toks) && toks[j+1].text == "type" && toks[j+1].kind == jsIdent &&
			toks[j+2].text != "from" && toks[j+2].text != ","
	}
	return false
}

type jsKind int

const (
	jsIdent jsKind = iota // an identifier or keyword
	jsStr                 // a string, or a template's text without its substitutions
	jsPunct               // punctuation or an operator
	jsNum
)

// A jsToken is one token of JavaScript source, outside comments.
type jsToken struct {
	kind jsKind
	text string // a string's value, without quotes or escapes resolved beyond \x
	line int
}

// jsTokens splits JavaScript or TypeScript source into tokens, skipping comments and
// reading strings, template literals (with their substitutions tokenized as code) and
// regular expression literals whole. It never fails: what it cannot read it skips.
func jsTokens(src string) []jsToken {
	var out []jsToken
	line := 1
	var braces []int // for each template substitution open, the brace depth it opened at
	depth := 0
	regexOK := func() bool {
		if len(out) == 0 {
			return true
		}
		t := out[len(out)-1]
		switch t.kind {
		case jsIdent:
			switch t.text {
			case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await":
				return true
			}
			return false
		case jsStr, jsNum:
			return false
		}
		return t.text != ")" && t.text != "]" && t.text != "}"
	}
	i := 0
	// template reads a template literal's text from i (after ` or }) to its end or its
	// next substitution.
	template := func() {
		var b strings.Builder
		start := line
		for i < len(src) {
			c := src[i]
			switch {
			case c == '\\' && i+1 < len(src):
				if src[i+1] == '\n' {
					line++
				}
				b.WriteByte(src[i+1])
				i += 2
				continue
			case c == '`':
				i++
				out = append(out, jsToken{jsStr, b.String(), start})
				return
			case c == '$' && i+1 < len(src) && src[i+1] == '{':
				i += 2
				out = append(out, jsToken{jsStr, b.String(), start})
				braces = append(braces, depth)
				depth++
				return
			case c == '\n':
				line++
			}
			b.WriteByte(c)
			i++
		}
		out = append(out, jsToken{jsStr, b.String(), start})
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = len(src) - i - 2
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"' || c == '\'':
			var b strings.Builder
			start := line
			i++
			for i < len(src) && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) {
					if src[i+1] == '\n' {
						line++
					}
					b.WriteByte(src[i+1])
					i += 2
					continue
				}
				b.WriteByte(src[i])
				i++
			}
			i++
			out = append(out, jsToken{jsStr, b.String(), start})
		case c == '`':
			i++
			template()
		case c == '}' && len(braces) > 0 && braces[len(braces)-1] == depth-1:
			braces = braces[:len(braces)-1]
			depth--
			i++
			template()
		case c == '/' && regexOK():
			i++
			class := false
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' {
					i += 2
					continue
				}
				if src[i] == '[' {
					class = true
				} else if src[i] == ']' {
					class = false
				} else if src[i] == '/' && !class {
					break
				}
				i++
			}
			i++
			for i < len(src) && isIdent(src[i]) {
				i++ // flags
			}
			out = append(out, jsToken{jsPunct, "/regexp/", line})
		case isIdentStart(c) || c >= 0x80:
			j := i
			for j < len(src) && (isIdent(src[j]) || src[j] >= 0x80) {
				j++
			}
			out = append(out, jsToken{jsIdent, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isIdent(src[j]) || src[j] == '.') {
				j++
			}
			out = append(out, jsToken{jsNum, src[i:j], line})
			i = j
		default:
			j := i + 1
			if strings.ContainsRune("=!<>&|+-*%^?", rune(c)) {
				for j < len(src) && strings.ContainsRune("=>&|+-*%^?", rune(src[j])) && j-i < 4 {
					j++
				}
			}
			switch c {
			case '{':
				depth++
			case '}':
				depth--
			}
			out = append(out, jsToken{jsPunct, src[i:j], line})
			i = j
		}
	}
	return out
}

// Python.

//go:embed tamper.py
var tamperPy string

// A pyFile is a Python file for tamper.py to read: its path, the name to report, and
// "impl" or "harness".
type pyFile struct {
	Path, Name, Mode string
}

func (f pyFile) MarshalJSON() ([]byte, error) {
	return json.Marshal([]string{f.Path, f.Name, f.Mode})
}

// pyTamperings reads Python files with Python's own ast, through tamper.py. The
// interpreter runs isolated (-I: no user site, no PYTHON* variables, no script folder on
// its path) and writes no bytecode; it parses the files and never imports them.
func pyTamperings(ctx context.Context, files []pyFile) ([]Tampering, error) {
	if len(files) == 0 {
		return nil, nil
	}
	python, err := python3.Path()
	if err != nil {
		return nil, fmt.Errorf("runner tampering: %s cannot be read: %w", files[0].Name, err)
	}
	in, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", tamperPy)
	cmd.Dir = os.TempDir()
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("runner tampering: %s: %v: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	harness := map[string]bool{}
	for _, f := range files {
		harness[f.Name] = f.Mode == "harness"
	}
	var found []Tampering
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var t struct {
			File string `json:"file"`
			Line int    `json:"line"`
			What string `json:"what"`
		}
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("runner tampering: read what python3 found: %w", err)
		}
		found = append(found, Tampering{File: t.File, Line: t.Line, What: t.What, Harness: harness[t.File]})
	}
	return found, nil
}
