package testdiff

import (
	"fmt"
	"strings"
)

// A test changed against an implementation that does not exist yet cannot run at the base
// (Go's package does not build; Python's test stops at the import), so the run cannot say
// whether its change states new behaviour or only weakens it and names a missing function
// somewhere: a check emptied into `_ = Mul`. Such a test is judged by what it lost: each
// part of the old test (or of a helper it uses) that the new version does not keep must be
// replaced by code that depends on what is missing, and that code must set what the lost
// part set and check at least as much as it checked.

// A loss is a run of parts of an old test or helper that the new version does not keep
// (old), with the new parts between the same kept neighbours (by; none when removed).
type loss struct {
	where string // "" for the test itself, else "its helper NAME"
	old   []*node
	by    []*node
}

// changes returns what of old the new version does not keep, and the statements it added
// that write what the old statements after them read (each a loss of nothing, by it).
func (c *comparer) changes(old, new *node) []loss {
	out := c.losses(old, new)
	if g := c.extends(old, new, true); g.ok && g.writer != nil {
		out = append(out, loss{by: []*node{g.writer}})
	}
	return out
}

// losses returns what of old the new version does not keep: where both have the same
// head, the losses of their kids and sequences; else old whole, replaced by new.
func (c *comparer) losses(old, new *node) []loss {
	switch {
	case old == nil:
		return nil
	case new == nil:
		return []loss{{old: []*node{old}}}
	case old.Text == new.Text:
		return nil
	case !sameShape(old, new):
		return []loss{{old: []*node{old}, by: []*node{new}}}
	}
	var out []loss
	for i := range old.Kids {
		out = append(out, c.losses(old.Kids[i], new.Kids[i])...)
	}
	for i := range old.Seqs {
		out = append(out, c.seqLosses(old.Seqs[i], new.Seqs[i])...)
	}
	return out
}

func sameShape(a, b *node) bool {
	return a.Head == b.Head && len(a.Kids) == len(b.Kids) && len(a.Seqs) == len(b.Seqs)
}

// seqLosses matches the old items of a sequence, in order, to the new items that are them
// or extend them, as grows does; each run of old items left unmatched is a loss, replaced by
// the new items between the same matched neighbours (one item in place of one of the same
// head: the losses inside it).
func (c *comparer) seqLosses(old, new seq) []loss {
	at := make([]int, len(old.Items))
	j := 0
	for i, o := range old.Items {
		at[i] = -1
		for k := j; k < len(new.Items); k++ {
			n := new.Items[k]
			if o.Text == n.Text || o.Head == n.Head && c.extends(o, n, false).ok {
				at[i], j = k, k+1
				break
			}
		}
	}
	var out []loss
	prev := -1
	for i := 0; i < len(old.Items); {
		if at[i] >= 0 {
			prev = at[i]
			i++
			continue
		}
		start := i
		for i < len(old.Items) && at[i] < 0 {
			i++
		}
		next := len(new.Items)
		if i < len(old.Items) {
			next = at[i]
		}
		gone, in := old.Items[start:i], new.Items[prev+1:next]
		if len(gone) == 1 && len(in) == 1 && gone[0] != nil && in[0] != nil && sameShape(gone[0], in[0]) {
			out = append(out, c.losses(gone[0], in[0])...)
			continue
		}
		out = append(out, loss{old: gone, by: in})
	}
	return out
}

// Unaccounted says what the test lost that is not made up for by code depending on a
// missing name (missing reports whether a name is one), "" when each loss is. A lost part
// is made up for when the parts in its place name what is missing (or what such parts
// bind), set every name it set, and hold at least its checks, each of them in such a part:
// a check moved onto what exists already, or dropped, is not.
func (t Test) Unaccounted(missing func(string) bool) string {
	for _, l := range t.losses {
		if why := l.unaccounted(missing); why != "" {
			if l.where != "" {
				return l.where + ": " + why
			}
			return why
		}
	}
	return ""
}

func (l loss) unaccounted(missing func(string) bool) string {
	gone := shows(l.old)
	depends := map[string]bool{}
	uses := func(n *node) bool {
		for _, r := range n.Refs {
			if missing(r) || depends[r] {
				return true
			}
		}
		return false
	}
	set := map[string]bool{}
	checks, named := 0, false
	for _, n := range l.by {
		if n == nil {
			continue
		}
		if !uses(n) {
			if n.Checks > 0 {
				return fmt.Sprintf("%s replaced by %s, which checks without what is missing", gone, n.show())
			}
			continue
		}
		named = true
		checks += n.Checks
		for _, b := range append(n.Binds, n.Writes...) {
			depends[b], set[b] = true, true
		}
	}
	if !named {
		switch {
		case len(l.by) == 0:
			return gone + " removed"
		case len(l.old) == 0:
			return shows(l.by) + " added, which names nothing that is missing"
		}
		return fmt.Sprintf("%s replaced by %s, which names nothing that is missing", gone, shows(l.by))
	}
	lost := 0
	for _, o := range l.old {
		if o == nil {
			continue
		}
		lost += o.Checks
		for _, b := range append(o.Binds, o.Writes...) {
			if !set[b] {
				return fmt.Sprintf("%s replaced by %s, which does not set %s from what is missing", gone, shows(l.by), b)
			}
		}
	}
	if checks < lost {
		return fmt.Sprintf("%s replaced by %s, which checks less (%d checks in place of %d)", gone, shows(l.by), checks, lost)
	}
	return ""
}

// shows returns how parts read in a message, joined.
func shows(ns []*node) string {
	var out []string
	for _, n := range ns {
		if n != nil {
			out = append(out, n.show())
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}
