package worktree

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Diff lists what changed from commit a to commit b, renames found (git's default
// similarity), in git's order: the list `git diff-tree -r -M --raw` makes.
//
// It is read without a git process of its own where the answer cannot hold a rename:
// the two trees are walked side by side through the long-lived reader, folders whose
// trees are the same skipped, as diff-tree walks them. Only a change that adds a path
// and deletes another may be a rename, and only git knows its similarity: such a change,
// and one that touches a submodule (whose changes git's configuration may hide), is
// asked of git.
func (r *Repo) Diff(ctx context.Context, a, b string) ([]Change, error) {
	changes, ok, err := r.treeDiff(ctx, a, b)
	if err != nil || ok {
		return changes, err
	}
	return r.gitDiff(ctx, a, b)
}

// gitDiff is Diff as a git process: `git diff-tree -r -M --raw`.
func (r *Repo) gitDiff(ctx context.Context, a, b string) ([]Change, error) {
	out, err := r.git(ctx, r.Root, nil, "diff-tree", "-r", "-z", "--raw", "-M", "--no-ext-diff", "--no-textconv", a, b)
	if err != nil {
		return nil, err
	}
	return parseRaw(out)
}

// treeDiff walks the trees of commits a and b. ok is false where git must answer: a
// possible rename, a submodule, a tree git would read otherwise than this walk.
func (r *Repo) treeDiff(ctx context.Context, a, b string) (changes []Change, ok bool, err error) {
	if a == b {
		return nil, true, nil
	}
	ta, err := r.Tree(ctx, a)
	if err != nil {
		return nil, false, err
	}
	tb, err := r.Tree(ctx, b)
	if err != nil {
		return nil, false, err
	}
	size, err := r.idSize(ctx)
	if err != nil {
		return nil, false, err
	}
	w := &treeWalk{r: r, ctx: ctx, size: size, ok: true}
	if err := w.diff(ta, tb, ""); err != nil || !w.ok {
		return nil, false, err
	}
	var added, deleted bool
	for _, c := range w.changes {
		added = added || c.Status == "A"
		deleted = deleted || c.Status == "D"
	}
	if added && deleted {
		return nil, false, nil // a rename, maybe: git's similarity decides
	}
	return w.changes, true, nil
}

// idSize returns the length in bytes of the repository's object names.
func (r *Repo) idSize(ctx context.Context) (int, error) {
	format, err := r.objectFormat(ctx)
	if err != nil {
		return 0, err
	}
	if format == "sha256" {
		return 32, nil
	}
	return 20, nil
}

// A treeWalk is one walk of two trees side by side (treeDiff).
type treeWalk struct {
	r       *Repo
	ctx     context.Context
	size    int
	changes []Change
	ok      bool // false once the walk met what git must answer
}

// A treeEntry is one entry of a tree object: its mode as git canonicalizes it, its name
// and its object.
type treeEntry struct {
	mode uint32
	name string
	id   string
}

// Git's file modes.
const (
	modeType    = 0o170000
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// key is the entry's place in git's order of a tree: a folder sorts as its name with a
// slash after it (git's base_name_compare).
func (e treeEntry) key() string {
	if e.mode == modeDir {
		return e.name + "/"
	}
	return e.name
}

// canonMode is git's canon_mode: any regular file is 100644 or 100755, by its owner's
// execute bit.
func canonMode(m uint32) uint32 {
	switch m & modeType {
	case modeFile:
		if m&0o100 != 0 {
			return modeFile | 0o755
		}
		return modeFile | 0o644
	case modeSymlink, modeDir:
		return m & modeType
	}
	return modeGitlink
}

// entries reads tree id ("" for none). A tree whose entries are not in git's order, or
// twice there, is git's to read (w.ok false).
func (w *treeWalk) entries(id string) ([]treeEntry, error) {
	if id == "" {
		return nil, nil
	}
	_, kind, body, err := w.r.object(w.ctx, id, true)
	if err != nil {
		return nil, err
	}
	if kind != "tree" {
		return nil, fmt.Errorf("%s is a %s, not a tree", id, kind)
	}
	var out []treeEntry
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		nul := bytes.IndexByte(body, 0)
		if sp < 0 || nul < sp || len(body) < nul+1+w.size {
			return nil, fmt.Errorf("tree %s: unreadable entry", id)
		}
		mode, err := strconv.ParseUint(string(body[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree %s: unreadable mode %q", id, body[:sp])
		}
		e := treeEntry{mode: canonMode(uint32(mode)), name: string(body[sp+1 : nul]), id: hex.EncodeToString(body[nul+1 : nul+1+w.size])}
		if n := len(out); n > 0 && out[n-1].key() >= e.key() {
			w.ok = false
		}
		out = append(out, e)
		body = body[nul+1+w.size:]
	}
	return out, nil
}

// diff walks trees a and b (either "" for none) under prefix, as diff-tree -r does.
func (w *treeWalk) diff(a, b, prefix string) error {
	ea, err := w.entries(a)
	if err != nil {
		return err
	}
	eb, err := w.entries(b)
	if err != nil {
		return err
	}
	for len(ea) > 0 || len(eb) > 0 {
		if !w.ok {
			return nil
		}
		switch {
		case len(eb) == 0 || len(ea) > 0 && ea[0].key() < eb[0].key():
			if err := w.one(ea[0], prefix, "D"); err != nil {
				return err
			}
			ea = ea[1:]
		case len(ea) == 0 || eb[0].key() < ea[0].key():
			if err := w.one(eb[0], prefix, "A"); err != nil {
				return err
			}
			eb = eb[1:]
		default:
			x, y := ea[0], eb[0]
			ea, eb = ea[1:], eb[1:]
			if x.id == y.id && x.mode == y.mode {
				continue
			}
			if x.mode == modeDir {
				if err := w.diff(x.id, y.id, prefix+x.name+"/"); err != nil {
					return err
				}
				continue
			}
			if x.mode == modeGitlink || y.mode == modeGitlink {
				w.ok = false
				return nil
			}
			status := "M"
			if x.mode&modeType != y.mode&modeType {
				status = "T"
			}
			w.changes = append(w.changes, Change{Status: status, Path: prefix + x.name, OldMode: modeString(x.mode), NewMode: modeString(y.mode)})
		}
	}
	return nil
}

// one records entry e, on one side only, as added or deleted (status A or D): a folder
// as every file under it.
func (w *treeWalk) one(e treeEntry, prefix, status string) error {
	switch {
	case e.mode == modeDir && status == "D":
		return w.diff(e.id, "", prefix+e.name+"/")
	case e.mode == modeDir:
		return w.diff("", e.id, prefix+e.name+"/")
	case e.mode == modeGitlink:
		w.ok = false
		return nil
	}
	c := Change{Status: status, Path: prefix + e.name, OldMode: "000000", NewMode: modeString(e.mode)}
	if status == "D" {
		c.OldMode, c.NewMode = c.NewMode, c.OldMode
	}
	w.changes = append(w.changes, c)
	return nil
}

// modeString writes a mode as diff-tree's raw output does: six octal digits.
func modeString(m uint32) string { return fmt.Sprintf("%06o", m) }
