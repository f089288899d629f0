package testdiff

import (
	"fmt"
	"slices"
	"strings"
)

// A node is a part of a test as both languages are read: a statement, an expression, a
// block. Go builds it from go/ast (golang.go), Python's ast through python.py, which
// writes the same JSON.
type node struct {
	// Text is the node's canonical form (no positions, no comments, no formatting): two
	// nodes with equal Text are the same code.
	Text string `json:"t"`
	// Head is the canonical form without Kids and Seqs: what must stay equal for the node
	// to be the old one grown.
	Head string `json:"h"`
	// Show is the node as a person reads it, one line, for messages.
	Show string `json:"d,omitempty"`
	// Kids are parts that may grow themselves (the body of a function literal passed to
	// t.Run, the table of a range statement), in order, a fixed number.
	Kids []*node `json:"k,omitempty"`
	// Seqs are the sequences that may gain items: statement lists (Rows false) and table
	// rows (Rows true).
	Seqs []seq `json:"s,omitempty"`
	// Loop: the node runs its body more than once, so a statement added at the end of the
	// body runs before the old ones of the next round.
	Loop bool `json:"l,omitempty"`
	// Exit says how the node, taken as added code, leaves the test (or its block) early or
	// skips it: "return", "t.Skip", "pytest.skip", "break". "" when it does not.
	Exit string `json:"x,omitempty"`
	// Skips counts the skip markers in the node (calls, decorators, raised SkipTest).
	Skips int `json:"n,omitempty"`
	// Binds are the names the node binds at its own level (Go :=, var; Python names
	// stored anywhere in the same function), Writes the roots of the places it assigns
	// that it does not bind itself (a package variable, a field of an outer value, a
	// patched attribute), Refs every name it mentions.
	Binds  []string `json:"b,omitempty"`
	Writes []string `json:"w,omitempty"`
	Refs   []string `json:"r,omitempty"`
	// Owned are the names among Refs that the node mentions only as members of an
	// imported package or module, with it: "bytes.Equal", "operator.mul" (a Python name
	// imported from a module is its member too: "mul" of "from operator import mul").
	Owned []string `json:"o,omitempty"`
	// Checks counts the checks in the node: the calls that report a failure (t.Errorf,
	// t.Fatal, a helper or assertion library given the test's t; Python's assert
	// statements, self.assert..., pytest.raises, pytest.fail).
	Checks int `json:"c,omitempty"`
	// Via are the functions of the test's own package or file that the node calls (Go:
	// given the test's T): each is a check when that function checks (checkers).
	Via []string `json:"v,omitempty"`
	// Assign marks an assignment, whose Reads are the names it reads: its values', and
	// those of the places it assigns that are not plain names (the name it overwrites is
	// not read).
	Assign bool     `json:"as,omitempty"`
	Reads  []string `json:"rd,omitempty"`
}

// A seq is a sequence of a node that may gain items.
type seq struct {
	Rows  bool    `json:"rows,omitempty"`
	Items []*node `json:"i"`
}

// show returns how a node reads in a message: its Show, else its Text, clipped.
func (n *node) show() string {
	s := n.Show
	if s == "" {
		s = n.Text
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return "`" + s + "`"
}

// A growth is what extends found: whether new is old grown, and if not, what old lost;
// and whether something added exits or skips early.
type growth struct {
	ok   bool
	lost string // what of old is not in new, when !ok
	exit string // an early exit or skip that new added, when ok
	// write names a place the added code writes that old statements read after it.
	write  string
	writer *node // the added statement that writes it
}

// A comparer compares one old test with its new version.
type comparer struct {
	oldRefs map[string]bool // every name the old test mentions
	newRefs map[string]bool // every name the new test mentions
	newOnly map[string]bool // names the new test binds that the old one did not
}

func newComparer(old, new *node) *comparer {
	c := &comparer{oldRefs: map[string]bool{}, newRefs: map[string]bool{}, newOnly: map[string]bool{}}
	for _, r := range old.Refs {
		c.oldRefs[r] = true
	}
	for _, r := range new.Refs {
		c.newRefs[r] = true
	}
	oldBinds := map[string]bool{}
	walk(old, func(n *node) {
		for _, b := range n.Binds {
			oldBinds[b] = true
		}
	})
	walk(new, func(n *node) {
		for _, b := range n.Binds {
			if !oldBinds[b] {
				c.newOnly[b] = true
			}
		}
	})
	return c
}

func walk(n *node, f func(*node)) {
	if n == nil {
		return
	}
	f(n)
	for _, k := range n.Kids {
		walk(k, f)
	}
	for _, s := range n.Seqs {
		for _, it := range s.Items {
			walk(it, f)
		}
	}
}

// extends reports whether new is old grown: equal, or with the same head, kids that each
// extend, and sequences that hold the old items in order with items added. tail says that
// no old statement runs after this node (it is the last of its function, at every level,
// and no loop repeats it): what it adds at its end cannot change what the old statements
// see.
func (c *comparer) extends(old, new *node, tail bool) growth {
	switch {
	case old == nil && new == nil:
		return growth{ok: true}
	case old == nil || new == nil:
		if old != nil {
			return growth{lost: old.show() + " removed"}
		}
		return growth{lost: "a part added where there was none: " + new.show()}
	case old.Text == new.Text:
		return growth{ok: true}
	case old.Head != new.Head || len(old.Kids) != len(new.Kids) || len(old.Seqs) != len(new.Seqs):
		return growth{lost: old.show() + " changed into " + new.show()}
	}
	var g growth
	g.ok = true
	inner := tail && !old.Loop
	for i := range old.Kids {
		k := c.extends(old.Kids[i], new.Kids[i], inner && i == len(old.Kids)-1 && len(old.Seqs) == 0)
		if !k.ok {
			return k
		}
		g = merge(g, k)
	}
	for i := range old.Seqs {
		s := c.grows(old.Seqs[i], new.Seqs[i], inner && i == len(old.Seqs)-1)
		if !s.ok {
			return s
		}
		g = merge(g, s)
	}
	return g
}

func merge(a, b growth) growth {
	if a.exit == "" {
		a.exit = b.exit
	}
	if a.write == "" {
		a.write, a.writer = b.write, b.writer
	}
	return a
}

// grows matches the old items of a sequence, in order, to new items that extend them; the
// new items left over are the ones added, and must not exit early or write what old
// statements read (table rows are data: they are not checked).
func (c *comparer) grows(old, new seq, tail bool) growth {
	if old.Rows != new.Rows && len(old.Items) > 0 {
		return growth{lost: "a table changed"}
	}
	matched := make([]bool, len(new.Items))
	j := 0
	var g growth
	g.ok = true
	last := -1
	for i, o := range old.Items {
		found := -1
		var fg growth
		for k := j; k < len(new.Items); k++ {
			if o.Text == new.Items[k].Text {
				found, fg = k, growth{ok: true}
				break
			}
			if o.Head != new.Items[k].Head {
				continue
			}
			if e := c.extends(o, new.Items[k], tail && i == len(old.Items)-1); e.ok {
				found, fg = k, e
				break
			}
		}
		if found < 0 {
			// Say what was lost as deep as it can be found: in the item at the place
			// where o was expected, when that one has o's head.
			if j < len(new.Items) && new.Items[j].Head == o.Head {
				if e := c.extends(o, new.Items[j], false); !e.ok {
					return e
				}
			}
			return growth{lost: o.show() + " removed or changed"}
		}
		matched[found] = true
		g = merge(g, fg)
		j, last = found+1, found
	}
	if old.Rows {
		return g
	}
	for k, it := range new.Items {
		if matched[k] {
			continue
		}
		if it.Exit != "" && g.exit == "" {
			g.exit = fmt.Sprintf("%s added (%s)", it.Exit, it.show())
		}
		if tail && k > last || g.write != "" {
			continue
		}
		for _, w := range it.Writes {
			if !c.newOnly[w] || c.oldRefs[w] {
				g.write, g.writer = fmt.Sprintf("%s assigns %s, which the old statements after it may read", it.show(), w), it
				break
			}
		}
		if g.write != "" {
			continue
		}
		for _, b := range it.Binds {
			if c.oldRefs[b] {
				g.write, g.writer = fmt.Sprintf("%s binds %s, which the old statements after it read", it.show(), b), it
				break
			}
		}
	}
	return g
}

// refsOf returns the names a node mentions, sorted, without repeats, as they are judged
// against what is missing: with their package where the node mentions them only as its
// members (ownedNames).
func refsOf(n *node) []string {
	r := n.names()
	slices.Sort(r)
	return slices.Compact(r)
}

// names returns the names a node mentions, each alone or, where Owned has it, as the
// members of packages it is mentioned as.
func (n *node) names() []string {
	return ownedNames(n.Refs, n.Owned)
}

// ownedNames returns refs with each name that owned qualifies ("calc.Mul" for Mul)
// replaced by its qualified forms.
func ownedNames(refs, owned []string) []string {
	if len(owned) == 0 {
		return slices.Clone(refs)
	}
	var out []string
	for _, r := range refs {
		n := len(out)
		for _, q := range owned {
			if strings.HasSuffix(q, "."+r) {
				out = append(out, q)
			}
		}
		if len(out) == n {
			out = append(out, r)
		}
	}
	return out
}
