package testdiff

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/orchestrator/orchestrator/internal/python3"
)

//go:embed python.py
var pythonPy string

// pyUnit is a test or helper as python.py writes it.
type pyUnit struct {
	Name     string `json:"name"`
	Line     int    `json:"line"`
	Scope    string `json:"scope"`
	Node     *node  `json:"node"`
	Body     string `json:"body"`
	Implicit bool   `json:"implicit"`
}

// pyFile is a Python source as python.py writes it.
type pyFile struct {
	Tests   []pyUnit            `json:"tests"`
	Helpers []pyUnit            `json:"helpers"`
	Skips   map[string]int      `json:"skips"`
	Imports []string            `json:"imports"`
	Aliases map[string]string   `json:"aliases"`
	Bases   map[string][]string `json:"bases"`
}

// parsePython reads Python sources (nil: not there) with Python's own ast, through
// python.py, in one run of the interpreter: isolated (-I: no user site, no PYTHON*
// variables, no script folder on its path), writing no bytecode (-B), in the temporary
// folder. It parses the sources it is given on standard input and never imports them.
func parsePython(ctx context.Context, sources [][]byte) ([]*parsed, error) {
	python, err := python3.Path()
	if err != nil {
		return nil, fmt.Errorf("compare python tests: %w", err)
	}
	in := make([]*string, len(sources))
	for i, s := range sources {
		if s != nil {
			str := string(s)
			in[i] = &str
		}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", pythonPy)
	cmd.Dir = os.TempDir()
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("compare python tests: %s: %v: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	var files []*pyFile
	if err := json.Unmarshal(out, &files); err != nil {
		return nil, fmt.Errorf("compare python tests: read what python3 wrote: %w", err)
	}
	if len(files) != len(sources) {
		return nil, fmt.Errorf("compare python tests: %d sources read, %d given", len(files), len(sources))
	}
	res := make([]*parsed, len(files))
	for i, f := range files {
		if f == nil {
			continue
		}
		p := &parsed{tests: map[string]*unit{}, helpers: map[string][]*unit{}, scopeSkips: f.Skips, imports: f.Imports, aliases: f.Aliases, bases: f.Bases}
		if p.scopeSkips == nil {
			p.scopeSkips = map[string]int{}
		}
		for _, t := range f.Tests {
			u := &unit{name: t.Name, line: t.Line, scope: t.Scope, node: t.Node, body: t.Body}
			if p.tests[u.name] == nil {
				p.order = append(p.order, u.name)
			}
			p.tests[u.name] = u // a later def of the same name is the one that runs
		}
		for _, h := range f.Helpers {
			u := &unit{name: h.Name, line: h.Line, scope: h.Scope, node: h.Node, body: h.Body, implicit: h.Implicit}
			p.helpers[u.name] = append(p.helpers[u.name], u)
		}
		res[i] = p
	}
	return res, nil
}
