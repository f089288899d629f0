package testdiff

import (
	"fmt"
	"slices"
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
	rows  bool   // old and by are rows of a table
	old   []*node
	by    []*node
	reads map[string]bool // the names the old test or helper mentions
	// newReads are the names its new version mentions: a name the lost part set need be
	// set again only when the new version still reads it.
	newReads map[string]bool
	// wasCheck and nowCheck are the helpers that check, before and after the change: a
	// call of one (Via) is a check.
	wasCheck, nowCheck map[string]bool
}

// checksOf counts the checks of a node: its own, and its calls of helpers that check.
func checksOf(n *node, checkers map[string]bool) int {
	count := n.Checks
	for _, v := range n.Via {
		if checkers[v] {
			count++
		}
	}
	return count
}

// changes returns what of old the new version does not keep, and the statements it added
// that write what the old statements after them read (each a loss of nothing, by it).
func (c *comparer) changes(old, new *node) []loss {
	out := c.losses(old, new)
	if g := c.extends(old, new, true); g.ok && g.writer != nil {
		out = append(out, loss{by: []*node{g.writer}, reads: c.oldRefs, newReads: c.newRefs})
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
		return []loss{{old: []*node{old}, reads: c.oldRefs, newReads: c.newRefs}}
	case old.Text == new.Text:
		return nil
	case !sameShape(old, new):
		return []loss{{old: []*node{old}, by: []*node{new}, reads: c.oldRefs, newReads: c.newRefs}}
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
	gap := map[int]bool{}
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
		for k := prev + 1; k < next; k++ {
			gap[k] = true
		}
		if len(gone) == 1 && len(in) == 1 && gone[0] != nil && in[0] != nil && sameShape(gone[0], in[0]) {
			out = append(out, c.losses(gone[0], in[0])...)
			continue
		}
		out = append(out, loss{old: gone, by: in, reads: c.oldRefs, newReads: c.newRefs, rows: old.Rows})
	}
	if old.Rows {
		return out
	}
	// A statement added between kept ones loses nothing itself, but one that leaves
	// early, or writes what the old statements read, takes from those after it.
	kept := map[int]bool{}
	for _, k := range at {
		kept[k] = true
	}
	for k, n := range new.Items {
		if n == nil || kept[k] || gap[k] {
			continue
		}
		if n.Exit != "" || c.overwrites(n) {
			out = append(out, loss{by: []*node{n}, reads: c.oldRefs, newReads: c.newRefs})
		}
	}
	return out
}

// overwrites reports whether an added statement writes, or binds anew, a name the old
// test reads.
func (c *comparer) overwrites(n *node) bool {
	for _, w := range append(slices.Clone(n.Writes), n.Binds...) {
		if c.oldRefs[w] {
			return true
		}
	}
	return false
}

// Unaccounted says what the test lost that is not made up for by code depending on a
// missing name (missing reports whether a name is one), "" when each loss is. A lost part
// is made up for when the parts in its place name what is missing (or what such parts,
// here or in an earlier loss, bind or assign), mention every name it set, and hold at
// least its checks, each of them in such a part; none of them may leave the test early.
// A statement added between kept ones that leaves early, or overwrites what they read
// with a value that does not depend on what is missing, is not made up for either.
func (t Test) Unaccounted(missing func(string) bool) string {
	// A helper that names what is missing, or calls one that does, uses it: so does a
	// call of it.
	depends := map[string]bool{}
	for grew := true; grew; {
		grew = false
		for h, names := range t.helperNames {
			if !depends[h] && slices.ContainsFunc(names, func(n string) bool { return missing(n) || depends[n] }) {
				depends[h], grew = true, true
			}
		}
	}
	for _, l := range t.losses {
		if why := l.unaccounted(missing, depends); why != "" {
			if l.where != "" {
				return l.where + ": " + why
			}
			return why
		}
	}
	return ""
}

// Reaches returns a name the test mentions, or one of the helpers it calls (and theirs)
// mentions, for which missing holds; "" when none does.
func (t Test) Reaches(missing func(string) bool) string {
	seen := map[string]bool{}
	todo := slices.Clone(t.Refs)
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if missing(name) {
			return name
		}
		todo = append(todo, t.helperNames[name]...)
	}
	return ""
}

func (l loss) unaccounted(missing func(string) bool, depends map[string]bool) string {
	gone := shows(l.old)
	uses := func(n *node) bool {
		reads := n.names()
		if n.Assign {
			reads = n.Reads
		}
		for _, r := range reads {
			// What such code bound is read by its name, whatever owns it here.
			if missing(r) || depends[r[strings.LastIndexByte(r, '.')+1:]] {
				return true
			}
		}
		return false
	}
	exited := false // a lost part left early itself (a helper's return)
	for _, o := range l.old {
		exited = exited || o != nil && o.Exit != ""
	}
	set := map[string]bool{}
	checks, named := 0, false
	for _, n := range l.by {
		if n == nil {
			continue
		}
		if n.Exit != "" && !exited {
			if len(l.old) == 0 {
				return fmt.Sprintf("%s added, which leaves the test (%s) before what follows it", n.show(), n.Exit)
			}
			return fmt.Sprintf("%s replaced by %s, which leaves the test (%s)", gone, n.show(), n.Exit)
		}
		if !uses(n) {
			if checksOf(n, l.nowCheck) > 0 {
				return fmt.Sprintf("%s replaced by %s, which checks without what is missing", gone, n.show())
			}
			for _, w := range n.Writes {
				if !l.reads[w] {
					continue
				}
				if len(l.old) == 0 {
					return fmt.Sprintf("%s added, which assigns %s without what is missing", n.show(), w)
				}
				return fmt.Sprintf("%s replaced by %s, which assigns %s without what is missing", gone, n.show(), w)
			}
			continue
		}
		named = true
		checks += checksOf(n, l.nowCheck)
		for _, b := range append(slices.Clone(n.Binds), n.Writes...) {
			depends[b] = true
		}
		for _, r := range n.Refs {
			set[r] = true
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
		lost += checksOf(o, l.wasCheck)
		for _, b := range append(slices.Clone(o.Binds), o.Writes...) {
			if !set[b] && l.newReads[b] {
				return fmt.Sprintf("%s replaced by %s, which does not set %s from what is missing", gone, shows(l.by), b)
			}
		}
	}
	if checks < lost {
		return fmt.Sprintf("%s replaced by %s, which checks less (%d checks in place of %d)", gone, shows(l.by), checks, lost)
	}
	if l.rows {
		// A row holds no check: the test checks each row, so rows of what exists
		// replaced by fewer rows of what is missing check less.
		was, now := 0, 0
		for _, o := range l.old {
			if o != nil {
				was++
			}
		}
		for _, n := range l.by {
			if n != nil && uses(n) {
				now++
			}
		}
		if now < was {
			return fmt.Sprintf("%s replaced by %s, which checks less (%d rows that use what is missing in place of %d)", gone, shows(l.by), now, was)
		}
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
