package testdiff

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// A Kind says what a change did to a test that existed before it.
type Kind string

// The kinds of SPEC §7.2.
const (
	Unchanged Kind = "unchanged"
	// AddedTo: the old body survives with only statements, rows or subtests added, and
	// nothing added exits or skips early or writes what the old statements read.
	AddedTo Kind = "added to"
	// Moved: the same body, under another name or in another file.
	Moved   Kind = "moved"
	Deleted Kind = "deleted"
	// Skipped: a skip or an early exit added, in the test or around it (its class, its
	// module, its file's build constraint).
	Skipped Kind = "skipped"
	// Changed: any other change, to the test or to a helper it uses.
	Changed Kind = "changed"
)

// A File is a test file before and after a change (nil: not there).
type File struct {
	Path          string // slash-separated, relative to the project
	Before, After []byte
}

// A Test is what a change did to one test that existed before it.
type Test struct {
	File string // the file that held it, slash-separated
	// Name is the test as its file declares it: TestX, Suite.TestX (a suite's method),
	// test_x, TestClass.test_x.
	Name string
	Line int // its line in the new version (in the old one when it is gone)
	Kind Kind
	// What says what it lost, or where it moved: "`if got != want {...}` removed or
	// changed", "t.Skip added", "moved to b_test.go as TestY".
	What string
	// Refs are the names its new version mentions (its calls, its fields), sorted: a test
	// changed against a missing implementation names what is missing.
	Refs []string
	// losses are what a Changed test, and the helpers it uses, lost (losses.go);
	// helperNames the names each helper it may call mentions now, by helper (a call of one
	// that uses what is missing uses it).
	losses      []loss
	helperNames map[string][]string
}

func (t Test) String() string {
	s := fmt.Sprintf("%s: %s %s", t.File, t.Name, t.Kind)
	if t.What != "" {
		s += ": " + t.What
	}
	return s
}

// A unit is one test or helper of a file as read.
type unit struct {
	name     string
	line     int
	scope    string // Python: the class that holds it ("" for the module); Go: ""
	node     *node
	body     string // what a move keeps: the canonical form without the name
	implicit bool   // a helper the runner calls around every test of its scope
	recv     string // Go: a method's receiver type, which tells same-named methods apart
}

// parsed is a test file as read: its tests by name (in order), its helpers by name, and
// the skip markers around its tests by scope ("" for the module or file).
type parsed struct {
	tests      map[string]*unit
	order      []string
	helpers    map[string][]*unit
	scopeSkips map[string]int
	constraint string              // Go: the //go:build line
	imports    []string            // Python: the modules it imports from (.helpers: relatively)
	aliases    map[string]string   // Python: names it imports under another name, to theirs
	bases      map[string][]string // Python: the base classes of its classes, by name
}

// Compare returns what the change did to each test that files held before it, in the
// order of files and of the tests in each. Go is read with go/ast, Python with Python's
// own ast (python3 run isolated, which never imports the files); other files have no
// tests here. A file whose new version does not parse gives no verdicts: its syntax
// error is the runner's to report. It fails only when Python must be read and cannot.
func Compare(ctx context.Context, files []File) ([]Test, error) {
	before := make([]*parsed, len(files))
	after := make([]*parsed, len(files))
	var pyIdx []int
	var pySrc [][]byte
	for i, f := range files {
		switch path.Ext(f.Path) {
		case ".go":
			if f.Before != nil {
				before[i] = parseGo(f.Before)
			}
			if f.After != nil {
				after[i] = parseGo(f.After)
			}
		case ".py":
			pyIdx = append(pyIdx, i)
			pySrc = append(pySrc, f.Before, f.After)
		}
	}
	if len(pyIdx) > 0 {
		read, err := parsePython(ctx, pySrc)
		if err != nil {
			return nil, err
		}
		for k, i := range pyIdx {
			before[i], after[i] = read[2*k], read[2*k+1]
			for _, p := range []*parsed{before[i], after[i]} {
				p.resolveRelative(files[i].Path)
			}
		}
	}
	c := &comparison{files: files, before: before, after: after, claimed: map[*unit]bool{}, checking: map[string]map[string]bool{},
		packages: map[int][]int{}, named: map[int]map[string][]string{}}
	return c.run(), nil
}

// resolveRelative rewrites the names a Python file imports relatively ("^1:fakes.mul", from
// .fakes import mul) as the modules they are from the file's folder (tests.fakes.mul for
// tests/test_add.py).
func (p *parsed) resolveRelative(file string) {
	if p == nil {
		return
	}
	resolve := func(names []string) {
		for k, o := range names {
			rest, ok := strings.CutPrefix(o, "^")
			if !ok {
				continue
			}
			level, name, _ := strings.Cut(rest, ":")
			dir := path.Dir(file)
			for l, _ := strconv.Atoi(level); l > 1; l-- {
				dir = path.Dir(dir)
			}
			if dir != "." {
				name = strings.ReplaceAll(dir, "/", ".") + "." + name
			}
			names[k] = name
		}
	}
	fix := func(n *node) {
		resolve(n.Owned)
		resolve(n.Reads)
	}
	for _, units := range []map[string][]*unit{p.helpers, {"": slices.Collect(maps.Values(p.tests))}} {
		for _, us := range units {
			for _, u := range us {
				walk(u.node, fix)
			}
		}
	}
}

// A comparison classifies the tests of one change.
type comparison struct {
	files         []File
	before, after []*parsed
	claimed       map[*unit]bool // new tests that an old one moved to
	// checking remembers checkers' answer by package folder and side: every changed
	// test of a package asks the same; packages package_'s and named helperNames' by
	// file, which every test of a file, and each of its helpers, asks again.
	checking map[string]map[string]bool
	packages map[int][]int
	named    map[int]map[string][]string
}

func (c *comparison) run() []Test {
	var out []Test
	type gone struct {
		i int
		u *unit
	}
	var missing []gone
	for i, f := range c.files {
		old, now := c.before[i], c.after[i]
		if old == nil || f.After != nil && now == nil {
			continue // new, or does not parse now
		}
		for _, name := range old.order {
			u := old.tests[name]
			if now == nil || now.tests[name] == nil {
				missing = append(missing, gone{i, u})
				continue
			}
			out = append(out, c.same(i, u, now.tests[name]))
		}
	}
	// A test gone from its place may be found, with the same body, among the new tests.
	for _, g := range missing {
		out = append(out, c.gone(g.i, g.u))
	}
	slices.SortStableFunc(out, func(a, b Test) int {
		return cmp.Or(cmp.Compare(c.index(a.File), c.index(b.File)), cmp.Compare(a.Line, b.Line))
	})
	return out
}

func (c *comparison) index(file string) int {
	return slices.IndexFunc(c.files, func(f File) bool { return f.Path == file })
}

// same classifies a test found under its name in its file.
func (c *comparison) same(i int, old, new *unit) Test {
	f := c.files[i]
	t := Test{File: f.Path, Name: new.name, Line: new.line, Refs: refsOf(new.node)}
	g := newComparer(old.node, new.node).extends(old.node, new.node, true)
	switch {
	case old.node.Text == new.node.Text:
		t.Kind = Unchanged
	case g.ok && g.exit != "":
		t.Kind, t.What = Skipped, g.exit
	case g.ok && g.write != "":
		t.Kind, t.What = Changed, g.write
	case g.ok:
		t.Kind = AddedTo
	case new.node.Skips > old.node.Skips:
		t.Kind, t.What = Skipped, "a skip marker added"
	default:
		t.Kind, t.What = Changed, g.lost
	}
	if t.Kind == Changed {
		t.losses = newComparer(old.node, new.node).changes(old.node, new.node)
	}
	if t.Kind == Unchanged || t.Kind == AddedTo {
		if why := c.around(i, old, new); why != "" {
			t.Kind, t.What = Skipped, why
		} else if why, grew, through := c.helpers(i, old, new); why != "" {
			// Changed through its helper: what the helper now names, the test names
			// (a name of the implementation that does not exist yet, say).
			t.Kind, t.What = Changed, why
			t.Refs = slices.Compact(slices.Sorted(slices.Values(append(t.Refs, through...))))
		} else if grew {
			t.Kind, t.What = AddedTo, "a table or helper it uses grew"
		}
	}
	if t.Kind == Changed {
		t.losses = append(t.losses, c.helperLosses(i, old, new)...)
		t.helperNames = c.helperNames(i)
		was, now := c.checkers(i, false), c.checkers(i, true)
		for k := range t.losses {
			t.losses[k].wasCheck, t.losses[k].nowCheck = was, now
		}
	}
	return t
}

// around says what skips a test from outside it: a skip marker added to its class or
// module, a build constraint added to its file.
func (c *comparison) around(i int, old, new *unit) string {
	was, now := c.before[i], c.after[i]
	if was.constraint != now.constraint {
		return fmt.Sprintf("its file's build constraint changed from %q to %q", was.constraint, now.constraint)
	}
	for _, scope := range scopes(new.scope) {
		if now.scopeSkips[scope] > was.scopeSkips[scope] {
			if scope == "" {
				return "a skip marker added to its file"
			}
			return "a skip marker added to its class " + scope
		}
	}
	return ""
}

// scopes returns a scope and the scopes around it: "A.B" gives "A.B", "A", "".
// classes returns the scopes whose setUp and autouse fixtures run around a test of scope
// (scopes), with the base classes of its class and theirs (by name, among the files
// whose helpers the test sees): unittest runs a base class's setUp for its subclasses.
func (c *comparison) classes(i int, scope string) []string {
	out := scopes(scope)
	for k := 0; k < len(out); k++ {
		name := out[k][strings.LastIndexByte(out[k], '.')+1:]
		for _, j := range c.package_(i) {
			for _, p := range []*parsed{c.before[j], c.after[j]} {
				if p == nil {
					continue
				}
				for class, bases := range p.bases {
					if class[strings.LastIndexByte(class, '.')+1:] != name {
						continue
					}
					for _, b := range bases {
						if !slices.Contains(out, b) {
							out = append(out, b)
						}
					}
				}
			}
		}
	}
	return out
}

// visible reports whether a helper of scope (a class, "" for the module) is one a test of
// the scope test may use: of its own class or one around it, or a method of a class that is
// not a test class (a Checker whose check any test may call).
func visible(scope, test string) bool {
	if slices.Contains(scopes(test), scope) {
		return true
	}
	last := scope[strings.LastIndexByte(scope, '.')+1:]
	return !strings.HasPrefix(last, "Test")
}

func scopes(s string) []string {
	out := []string{s}
	for s != "" {
		if k := strings.LastIndexByte(s, '.'); k >= 0 {
			s = s[:k]
		} else {
			s = ""
		}
		out = append(out, s)
	}
	return out
}

// helpers says which helper of a test changed in a way that is not an addition: one it
// names, or one the runner calls around it (init, setUp, an autouse fixture); and whether
// one only grew; and the names the changed helper's new version mentions, which the test
// mentions through it. Go helpers are looked for in every changed file of the test's folder
// (its package), Python ones in its own file.
func (c *comparison) helpers(i int, old, new *unit) (why string, grew bool, through []string) {
	c.eachHelper(i, old, new, func(name string, h, to *unit, direct bool) bool {
		if to == nil {
			why = fmt.Sprintf("its helper %s was deleted", name)
			return false
		}
		if h.node.Text == to.node.Text {
			return true
		}
		g := newComparer(h.node, to.node).extends(h.node, to.node, true)
		switch {
		case !g.ok:
			why = fmt.Sprintf("its helper %s changed: %s", name, g.lost)
		case g.exit != "":
			why = fmt.Sprintf("its helper %s changed: %s", name, g.exit)
		case g.write != "" && direct:
			// A helper's helper that writes what its old statements read (a table
			// transformed once more) is taken as grown: only what it lost, or an early
			// exit, reaches the tests through the helpers that call it.
			why = fmt.Sprintf("its helper %s changed: %s", name, g.write)
		default:
			grew = true
			return true
		}
		through = refsOf(to.node)
		return false
	})
	return why, grew, through
}

// helperLosses returns what the helpers of a test lost (see losses.go): all of them, each
// deleted helper whole.
func (c *comparison) helperLosses(i int, old, new *unit) []loss {
	var out []loss
	c.eachHelper(i, old, new, func(name string, h, to *unit, direct bool) bool {
		where := "its helper " + name
		if to == nil {
			out = append(out, loss{where: where, old: []*node{h.node}})
			return true
		}
		cmp := newComparer(h.node, to.node)
		found := cmp.losses(h.node, to.node)
		if direct {
			found = cmp.changes(h.node, to.node)
		}
		for _, l := range found {
			l.where = where
			out = append(out, l)
		}
		return true
	})
	return out
}

// helperNames returns, for each helper a test of file i sees after the change, the names it
// mentions (as they are judged against what is missing).
func (c *comparison) helperNames(i int) map[string][]string {
	if out, ok := c.named[i]; ok {
		return out
	}
	out := map[string][]string{}
	c.named[i] = out
	for _, j := range c.package_(i) {
		if p := c.after[j]; p != nil {
			for name, units := range p.helpers {
				for _, u := range units {
					out[name] = append(out[name], u.node.names()...)
				}
			}
		}
	}
	return out
}

// checkers returns the names of the helpers a test of file i sees (before the change, or
// after it) that check: with a check of their own, or calling one that does.
func (c *comparison) checkers(i int, after bool) map[string]bool {
	key := fmt.Sprintf("%s %v", path.Dir(c.files[i].Path), after)
	if path.Ext(c.files[i].Path) != ".go" {
		key = fmt.Sprintf("%s %v", c.files[i].Path, after) // Python: its own file
	}
	if m, ok := c.checking[key]; ok {
		return m
	}
	var units []*unit
	for _, j := range c.package_(i) {
		p := c.before[j]
		if after {
			p = c.after[j]
		}
		if p == nil {
			continue
		}
		for _, name := range sortedNames(p.helpers) {
			units = append(units, p.helpers[name]...)
		}
	}
	out := map[string]bool{}
	for grew := true; grew; {
		grew = false
		for _, u := range units {
			if out[u.name] {
				continue
			}
			ok := u.node.Checks > 0
			for _, v := range u.node.Via {
				ok = ok || out[v]
			}
			if ok {
				out[u.name], grew = true, true
			}
		}
	}
	c.checking[key] = out
	return out
}

// reach returns the names a test mentions, old and new (true), and those its helpers
// mention, in turn (false): a helper's helper (check calling eq) weakened weakens the test.
func (c *comparison) reach(i int, old, new *unit) map[string]bool {
	refs := map[string]bool{}
	var todo []string
	add := func(names []string, direct bool) {
		for _, r := range names {
			if _, ok := refs[r]; !ok {
				refs[r] = direct
				todo = append(todo, r)
			}
		}
	}
	add(new.node.Refs, true)
	add(old.node.Refs, true)
	for _, p := range []*parsed{c.before[i], c.after[i]} {
		if p == nil {
			continue
		}
		for local, name := range p.aliases {
			if _, ok := refs[local]; ok {
				add([]string{name}, true) // from tests.helpers import check as verify
			}
		}
	}
	files := c.package_(i)
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, j := range files {
			for _, p := range []*parsed{c.before[j], c.after[j]} {
				if p == nil {
					continue
				}
				for _, h := range p.helpers[name] {
					if visible(h.scope, new.scope) {
						add(h.node.Refs, false)
					}
				}
			}
		}
	}
	return refs
}

// eachHelper calls f with each helper of the old test (h, named name) and its counterpart
// in the new version (to; nil when deleted), until f returns false; direct says the test
// names it (or the runner calls it around the test), not only a helper of its.
func (c *comparison) eachHelper(i int, old, new *unit, f func(name string, h, to *unit, direct bool) bool) {
	refs := c.reach(i, old, new)
	for _, j := range c.package_(i) {
		was, now := c.before[j], c.after[j]
		if was == nil {
			continue
		}
		for _, name := range sortedNames(was.helpers) {
			for _, h := range was.helpers[name] {
				direct, reached := refs[name]
				if h.implicit && !slices.Contains(c.classes(i, new.scope), h.scope) || !h.implicit && (!reached || !visible(h.scope, new.scope)) {
					continue
				}
				if h.implicit && j != i && path.Ext(c.files[j].Path) == ".py" {
					continue // another module's setup_module and autouse fixtures are its own
				}
				var to *unit
				if now != nil {
					to = counterpart(h, was.helpers[name], now.helpers[name])
				}
				if !f(name, h, to, direct || h.implicit) {
					return
				}
			}
		}
	}
}

// counterpart returns the helper of the new version that is h of the old one, among the
// helpers of its name (was before, now after; nil if none): of the same scope and receiver,
// one the change left as it was, else the only one, else the one at h's place among them
// (Go's blank variables, var _ = ..., which run at init, share their name "_"). A test's
// helpers are known by name: a method changed on one type is a changed helper of every
// test that calls a method of that name.
func counterpart(h *unit, was, now []*unit) *unit {
	same := func(list []*unit) []*unit {
		var out []*unit
		for _, u := range list {
			if u.scope == h.scope && u.recv == h.recv {
				out = append(out, u)
			}
		}
		return out
	}
	before, after := same(was), same(now)
	for _, n := range after {
		if n.node.Text == h.node.Text {
			return n
		}
	}
	switch {
	case len(after) == 0:
		return nil
	case len(after) == 1:
		return after[0]
	}
	if i := slices.Index(before, h); i >= 0 && i < len(after) {
		return after[i]
	}
	return after[len(after)-1]
}

// package_ returns the files whose helpers a test of file i sees: for Go the changed Go
// files of its folder, for Python its own and the Python files of the modules it imports
// (from tests.helpers import check: tests/helpers.py), and of those they import.
func (c *comparison) package_(i int) []int {
	if out, ok := c.packages[i]; ok {
		return out
	}
	out := c.packageOf(i)
	c.packages[i] = out
	return out
}

func (c *comparison) packageOf(i int) []int {
	f := c.files[i]
	if path.Ext(f.Path) != ".go" {
		// Its own file, the modules it imports, and theirs in turn.
		out := []int{i}
		for k := 0; k < len(out); k++ {
			for j, g := range c.files {
				if path.Ext(g.Path) == ".py" && !slices.Contains(out, j) && c.imports(out[k], g.Path) {
					out = append(out, j)
				}
			}
		}
		return out
	}
	var out []int
	for j, g := range c.files {
		if path.Ext(g.Path) == ".go" && path.Dir(g.Path) == path.Dir(f.Path) {
			out = append(out, j)
		}
	}
	return out
}

// imports reports whether the Python file i, before or after the change, imports the
// module of file: one whose dotted name is the file's path, or the end of it (a folder
// of the path that pytest or the project puts on sys.path); a relative import is read
// from file i's folder.
func (c *comparison) imports(i int, file string) bool {
	mod := strings.ReplaceAll(strings.TrimSuffix(strings.TrimSuffix(file, ".py"), "/__init__"), "/", ".")
	for _, p := range []*parsed{c.before[i], c.after[i]} {
		if p == nil {
			continue
		}
		for _, m := range p.imports {
			if rest, ok := strings.CutPrefix(m, "."); ok {
				dir := path.Dir(c.files[i].Path)
				for strings.HasPrefix(rest, ".") {
					rest, dir = rest[1:], path.Dir(dir)
				}
				m = strings.ReplaceAll(path.Join(dir, strings.ReplaceAll(rest, ".", "/")), "/", ".")
				if m == mod {
					return true
				}
				continue
			}
			if m == mod || strings.HasSuffix(mod, "."+m) {
				return true
			}
		}
	}
	return false
}

func sortedNames(m map[string][]*unit) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gone classifies a test whose name its file no longer holds: moved, when a new test (one
// whose name its file did not hold) has its body, in a file that runs as its did; else
// deleted, renamed away when a function that is not a test has its body.
func (c *comparison) gone(i int, old *unit) Test {
	f := c.files[i]
	t := Test{File: f.Path, Name: old.name, Line: old.line, Kind: Deleted}
	for j, g := range c.files {
		now := c.after[j]
		if now == nil || path.Ext(g.Path) != path.Ext(f.Path) {
			continue
		}
		for _, name := range now.order {
			u := now.tests[name]
			if c.claimed[u] || u.body != old.body {
				continue
			}
			if was := c.before[j]; was != nil && was.tests[name] != nil {
				continue // a test that was there already
			}
			if now.constraint != c.before[i].constraint || skipsAround(now, u.scope) > skipsAround(c.before[i], old.scope) {
				continue
			}
			c.claimed[u] = true
			t.Kind, t.Refs = Moved, refsOf(u.node)
			if g.Path == f.Path {
				t.What = "renamed " + u.name
			} else {
				t.What = fmt.Sprintf("moved to %s as %s", g.Path, u.name)
			}
			return t
		}
	}
	if c.after[i] == nil {
		t.What = "its file was deleted"
	}
	for j, g := range c.files {
		now := c.after[j]
		if now == nil || path.Ext(g.Path) != path.Ext(f.Path) {
			continue
		}
		for _, name := range sortedNames(now.helpers) {
			for _, h := range now.helpers[name] {
				if h.body == old.body {
					t.What = fmt.Sprintf("renamed to %s in %s, which the runner does not run as a test", name, g.Path)
					return t
				}
			}
		}
	}
	return t
}

// skipsAround counts the skip markers around a test of scope: its file's and its classes'.
func skipsAround(p *parsed, scope string) int {
	n := 0
	for _, s := range scopes(scope) {
		n += p.scopeSkips[s]
	}
	return n
}
