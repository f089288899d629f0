package spotcheck

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/internal/python3"
)

// A Mutant is one small change to a source file: the bytes [Start, End) of File replaced by
// Replacement. Line is the line it changes; Op says what it does ("+ -> -").
type Mutant struct {
	File        string `json:"file"`
	Line        int    `json:"line"`
	Op          string `json:"op"`
	Start       int    `json:"-"`
	End         int    `json:"-"`
	Replacement string `json:"-"`
}

func (m Mutant) String() string { return fmt.Sprintf("%s:%d: %s", m.File, m.Line, m.Op) }

// Apply returns src with the mutant applied.
func (m Mutant) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.Replacement))
	out = append(out, src[:m.Start]...)
	out = append(out, m.Replacement...)
	return append(out, src[m.End:]...)
}

// flips are the operator mutations: arithmetic and comparison operators flipped, and
// && and || swapped.
var flips = map[string]string{
	"+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
	"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "==",
	"&&": "||", "||": "&&", "===": "!==", "!==": "===",
}

// Mutants returns the mutants of a file's lines (nil lines: every line), in the order of
// the source, for Go, Python, JavaScript and TypeScript files; none for other files.
func Mutants(ctx context.Context, file string, src []byte, lines map[int]bool) ([]Mutant, error) {
	var ms []Mutant
	var err error
	switch path.Ext(file) {
	case ".go":
		ms, err = goMutants(src, lines)
	case ".py":
		ms, err = pyMutants(ctx, src, lines)
	case ".js", ".ts", ".jsx", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		ms = jsMutants(src, lines)
	}
	for i := range ms {
		ms[i].File = file
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Start < ms[j].Start })
	return ms, err
}

// goMutants makes mutants on the syntax tree: binary operators flipped, if conditions
// negated, returned values replaced by their zero values (*new(T) of the function's result
// types), expression and assignment statements dropped.
func goMutants(src []byte, lines map[int]bool) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	line := func(p token.Pos) int { return fset.Position(p).Line }
	text := func(n ast.Node) string { return string(src[off(n.Pos()):off(n.End())]) }
	in := func(p token.Pos) bool { return lines == nil || lines[line(p)] }
	var out []Mutant
	var results []*ast.FieldList // the enclosing functions' result lists
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			results = append(results, n.Type.Results)
			if n.Body != nil {
				ast.Inspect(n.Body, visit)
			}
			results = results[:len(results)-1]
			return false
		case *ast.FuncLit:
			results = append(results, n.Type.Results)
			ast.Inspect(n.Body, visit)
			results = results[:len(results)-1]
			return false
		case *ast.BinaryExpr:
			op := n.Op.String()
			if to, ok := flips[op]; ok && in(n.OpPos) {
				out = append(out, Mutant{Line: line(n.OpPos), Op: op + " -> " + to, Start: off(n.OpPos), End: off(n.OpPos) + len(op), Replacement: to})
			}
		case *ast.IfStmt:
			if in(n.Cond.Pos()) {
				out = append(out, Mutant{Line: line(n.Cond.Pos()), Op: "negate condition " + oneLine(text(n.Cond)),
					Start: off(n.Cond.Pos()), End: off(n.Cond.End()), Replacement: "!(" + text(n.Cond) + ")"})
			}
		case *ast.ReturnStmt:
			if len(n.Results) == 0 || !in(n.Pos()) || len(results) == 0 || results[len(results)-1] == nil {
				break
			}
			var types []string
			for _, fld := range results[len(results)-1].List {
				k := max(len(fld.Names), 1)
				for range k {
					types = append(types, text(fld.Type))
				}
			}
			if len(types) != len(n.Results) {
				break
			}
			zeros := make([]string, len(types))
			same := true
			for i, t := range types {
				zeros[i] = "*new(" + t + ")"
				if text(n.Results[i]) != "nil" {
					same = false
				}
			}
			if !same {
				out = append(out, Mutant{Line: line(n.Pos()), Op: "return zero values instead of " + oneLine(text(n.Results[0])),
					Start: off(n.Results[0].Pos()), End: off(n.Results[len(n.Results)-1].End()), Replacement: strings.Join(zeros, ", ")})
			}
		case *ast.ExprStmt:
			if in(n.Pos()) {
				out = append(out, Mutant{Line: line(n.Pos()), Op: "drop " + oneLine(text(n)), Start: off(n.Pos()), End: off(n.End()), Replacement: "{}"})
			}
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE && in(n.Pos()) {
				out = append(out, Mutant{Line: line(n.Pos()), Op: "drop " + oneLine(text(n)), Start: off(n.Pos()), End: off(n.End()), Replacement: "{}"})
			}
		case *ast.IncDecStmt:
			if in(n.Pos()) {
				out = append(out, Mutant{Line: line(n.Pos()), Op: "drop " + oneLine(text(n)), Start: off(n.Pos()), End: off(n.End()), Replacement: "{}"})
			}
		}
		return true
	}
	for _, d := range f.Decls {
		ast.Inspect(d, visit)
	}
	return out, nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

//go:embed mutate.py
var pyScript string

// pyMutants makes mutants on Python's own syntax tree, with the python3 on PATH (the
// script is mutate.py): operators flipped, conditions negated, returned values replaced by
// None, statements dropped (replaced by pass).
func pyMutants(ctx context.Context, src []byte, lines map[int]bool) ([]Mutant, error) {
	python, err := python3.Path()
	if err != nil {
		return nil, fmt.Errorf("python mutants: %w", err)
	}
	cmd := exec.CommandContext(ctx, python, "-c", pyScript)
	cmd.Stdin = bytes.NewReader(src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("python3 mutants: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var raw []struct {
		Line        int    `json:"line"`
		Op          string `json:"op"`
		Start       int    `json:"start"`
		End         int    `json:"end"`
		Replacement string `json:"replacement"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("python3 mutants: %v", err)
	}
	var ms []Mutant
	for _, r := range raw {
		if lines == nil || lines[r.Line] {
			ms = append(ms, Mutant{Line: r.Line, Op: r.Op, Start: r.Start, End: r.End, Replacement: r.Replacement})
		}
	}
	return ms, nil
}

// jsOperator finds the operators of a line of JavaScript or TypeScript, outside strings.
var jsOperator = lazyre.New(`===|!==|==|!=|<=|>=|&&|\|\||[-+*/%<>]`)
var jsString = lazyre.New("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`(?:[^`\\\\]|\\\\.)*`|//[^\n]*")
var jsReturn = lazyre.New(`\breturn\s+([^;]+);`)

// jsMutants makes mutants at the token level: operators with a space on each side
// flipped, and a return's value replaced by undefined.
func jsMutants(src []byte, lines map[int]bool) []Mutant {
	var out []Mutant
	offset := 0
	for i, l := range strings.SplitAfter(string(src), "\n") {
		n := i + 1
		if lines == nil || lines[n] {
			masked := []byte(l)
			for _, m := range jsString().FindAllStringIndex(l, -1) {
				for k := m[0]; k < m[1]; k++ {
					masked[k] = ' '
				}
			}
			for _, m := range jsOperator().FindAllStringIndex(string(masked), -1) {
				op := l[m[0]:m[1]]
				to, ok := flips[op]
				// Binary operators only: a space on each side.
				if !ok || m[0] == 0 || m[1] >= len(l) || l[m[0]-1] != ' ' || l[m[1]] != ' ' {
					continue
				}
				out = append(out, Mutant{Line: n, Op: op + " -> " + to, Start: offset + m[0], End: offset + m[1], Replacement: to})
			}
			if m := jsReturn().FindStringSubmatchIndex(string(masked)); m != nil && strings.TrimSpace(l[m[2]:m[3]]) != "undefined" {
				out = append(out, Mutant{Line: n, Op: "return undefined instead of " + oneLine(l[m[2]:m[3]]), Start: offset + m[2], End: offset + m[3], Replacement: "undefined"})
			}
		}
		offset += len(l)
	}
	return out
}

// A MutationResult is what the mutants of one task's landed change did to its tests.
type MutationResult struct {
	Task      string   `json:"task"`
	Commit    string   `json:"commit"`
	Mutants   int      `json:"mutants"`
	Killed    int      `json:"killed"`
	Survivors []string `json:"survivors"` // file:line: mutation
	Decision  string   `json:"decision"`  // PASS, WARN (survivors), FAIL (none killed)
	Note      string   `json:"note,omitempty"`
}

// Summary is one line: "TASK-001: 6 mutants, 5 killed; surviving: ...".
func (m *MutationResult) Summary() string {
	s := fmt.Sprintf("%s: %d mutants of %.12s, %d killed", m.Task, m.Mutants, m.Commit, m.Killed)
	if len(m.Survivors) > 0 {
		s += "; surviving: " + strings.Join(m.Survivors, "; ")
	}
	if m.Note != "" {
		s += " (" + m.Note + ")"
	}
	return s
}

// MutateOptions say what to mutate and how to judge a mutant.
type MutateOptions struct {
	Task, Commit string
	// Dir is a scratch checkout of the commit; its files are changed one mutant at a time
	// and put back.
	Dir string
	// Lines are the changed lines by file (slash-separated, relative to Dir).
	Lines map[string]map[int]bool
	// Limit bounds the mutants (mutants_per_task).
	Limit int
	// Killed runs the task's tests in Dir and reports whether they failed.
	Killed func(ctx context.Context) (bool, error)
}

// Mutate applies each mutant of the changed lines in turn, in a deterministic order (file
// by file, in source order, the first Limit spread evenly), runs the tests, and puts the
// file back. A task whose tests kill none of its mutants FAILs; survivors are a WARN.
func Mutate(ctx context.Context, o MutateOptions) (*MutationResult, error) {
	res := &MutationResult{Task: o.Task, Commit: o.Commit, Survivors: []string{}}
	var all []Mutant
	for _, file := range sortedKeys(o.Lines) {
		src, err := os.ReadFile(filepath.Join(o.Dir, filepath.FromSlash(file)))
		if err != nil {
			continue // deleted by the change
		}
		ms, err := Mutants(ctx, file, src, o.Lines[file])
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	all = spread(all, o.Limit)
	for _, m := range all {
		if err := ctx.Err(); err != nil {
			res.Note = "stopped: " + err.Error()
			break
		}
		p := filepath.Join(o.Dir, filepath.FromSlash(m.File))
		orig, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, m.Apply(orig), 0o644); err != nil {
			return nil, err
		}
		killed, err := o.Killed(ctx)
		if werr := os.WriteFile(p, orig, 0o644); werr != nil {
			return nil, werr
		}
		if err != nil {
			return nil, err
		}
		res.Mutants++
		if killed {
			res.Killed++
		} else {
			res.Survivors = append(res.Survivors, m.String())
		}
	}
	switch {
	case res.Mutants == 0:
		res.Decision, res.Note = Pass, "no line to mutate"
	case res.Killed == 0:
		res.Decision = Fail
	case len(res.Survivors) > 0:
		res.Decision = Warn
	default:
		res.Decision = Pass
	}
	return res, nil
}

// spread keeps at most limit mutants, evenly spread over the list (limit <= 0: all).
func spread(ms []Mutant, limit int) []Mutant {
	if limit <= 0 || len(ms) <= limit {
		return ms
	}
	out := make([]Mutant, limit)
	for i := range limit {
		out[i] = ms[i*len(ms)/limit]
	}
	return out
}

// ChangedLines reads a `git diff -U0` patch: the lines each file has after it, by file.
func ChangedLines(patch string) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	file := ""
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "):
			file = ""
			if p := strings.TrimPrefix(l, "+++ "); strings.HasPrefix(p, "b/") {
				file = p[2:]
			}
		case strings.HasPrefix(l, "@@ ") && file != "":
			f := strings.Fields(l)
			if len(f) < 3 {
				continue
			}
			start, count := 0, 1
			r := strings.TrimPrefix(f[2], "+")
			if a, b, ok := strings.Cut(r, ","); ok {
				fmt.Sscan(a, &start)
				fmt.Sscan(b, &count)
			} else {
				fmt.Sscan(r, &start)
			}
			if out[file] == nil {
				out[file] = map[int]bool{}
			}
			for i := range count {
				out[file][start+i] = true
			}
		}
	}
	return out
}
