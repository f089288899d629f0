package worktree

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// writeTree writes the trees of the index file at index, as `git write-tree` does, and
// returns the name of its root; ok is false for an index or a repository it leaves to git
// (readIndex's, a shared repository, entries that make no tree). A folder the index's cache
// of tree names holds valid is taken from it, as git takes it; the others are made and
// written, each one only when the repository does not hold it yet.
func (r *Repo) writeTree(ctx context.Context, dir, index string, env []string) (tree string, ok bool, err error) {
	size, err := r.idSize(ctx)
	if err != nil {
		return "", false, err
	}
	entries, err := readConfig(ctx, dir, env)
	if err != nil {
		return "", false, err
	}
	for _, e := range entries {
		switch strings.ToLower(e.key) {
		case "core.sharedrepository", "extensions.compatobjectformat":
			return "", false, nil
		}
	}
	idx, err := readIndex(index, size)
	if err != nil {
		return "", false, nil
	}
	w := &treeWriter{r: r, ctx: ctx, size: size, entries: idx.entries}
	id, err := w.build("", 0, len(idx.entries), idx.tree)
	if errors.Is(err, errUnhandled) {
		return "", false, nil
	}
	return id, err == nil, err
}

// A treeWriter makes the trees of one index's entries.
type treeWriter struct {
	r       *Repo
	ctx     context.Context
	size    int
	entries []indexEntry
}

// build returns the tree of entries[lo:hi], the entries under the folder prefix ("" or
// ending in "/"), whose node in the cache of tree names is node (nil for none).
func (w *treeWriter) build(prefix string, lo, hi int, node *cacheTree) (string, error) {
	if node != nil && node.count == hi-lo && node.id != "" {
		return node.id, nil
	}
	type item struct {
		mode, name, id string
	}
	var items []item
	for i := lo; i < hi; {
		e := w.entries[i]
		name := e.path[len(prefix):]
		slash := strings.IndexByte(name, '/')
		if slash < 0 {
			mode := strconv.FormatUint(uint64(e.mode), 8)
			switch mode {
			case "100644", "100755", "120000", "160000":
			default:
				return "", errUnhandled
			}
			items = append(items, item{mode, name, e.id})
			i++
			continue
		}
		sub := name[:slash]
		under := prefix + sub + "/"
		j := i + 1
		for j < hi && strings.HasPrefix(w.entries[j].path, under) {
			j++
		}
		var child *cacheTree
		if node != nil {
			for _, c := range node.subs {
				if c.name == sub {
					child = c
					break
				}
			}
		}
		id, err := w.build(under, i, j, child)
		if err != nil {
			return "", err
		}
		items = append(items, item{"40000", sub, id})
		i = j
	}
	// Git's order: names byte by byte, a folder's as if it ended in "/".
	key := func(it item) string {
		if it.mode == "40000" {
			return it.name + "/"
		}
		return it.name
	}
	sort.Slice(items, func(a, b int) bool { return key(items[a]) < key(items[b]) })
	var body bytes.Buffer
	for k, it := range items {
		if k > 0 && items[k-1].name == it.name {
			return "", errUnhandled // a file and a folder of one name: git's to refuse
		}
		id, err := hexID(it.id, w.size)
		if err != nil {
			return "", err
		}
		body.WriteString(it.mode + " " + it.name + "\x00")
		body.Write(id)
	}
	return w.r.writeObject(w.ctx, "tree", body.Bytes(), w.size)
}

// objectName returns git's name of an object of kind holding body, for names of size
// bytes: the hash of "<kind> <len>\0<body>".
func objectName(size int, kind string, body []byte) string {
	h := newHash(size)
	h.Write([]byte(kind + " " + strconv.Itoa(len(body)) + "\x00"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// writeObject writes an object of kind holding body into the repository's objects, as a
// loose object (zlib-compressed, read-only, under objects/xx/), unless the repository
// already holds it, and returns its name.
func (r *Repo) writeObject(ctx context.Context, kind string, body []byte, size int) (string, error) {
	head := kind + " " + strconv.Itoa(len(body)) + "\x00"
	id := objectName(size, kind, body)
	if _, _, _, err := r.object(ctx, id, false); err == nil {
		return id, nil
	} else if !errors.Is(err, ErrMissing) {
		return "", err
	}
	dir := filepath.Join(r.Common, "objects", id[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	z, err := zlib.NewWriterLevel(f, zlib.BestSpeed) // core.looseCompression's default
	if err != nil {
		f.Close()
		return "", err
	}
	_, err = z.Write([]byte(head))
	if err == nil {
		_, err = z.Write(body)
	}
	if cerr := z.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, id[2:]))
	}
	if err != nil {
		return "", fmt.Errorf("write %s %s: %w", kind, id, err)
	}
	return id, nil
}

// writeCommit writes the commit `git commit-tree tree -p parent` would make of message at
// now, as a loose object, and returns its name; ok is false where git decides something
// the orchestrator does not: an identity git would make up or clean up, dates or an
// encoding from the environment or the configuration, a signature.
func (r *Repo) writeCommit(ctx context.Context, tree, parent, message string, now time.Time) (id string, ok bool, err error) {
	size, err := r.idSize(ctx)
	if err != nil {
		return "", false, err
	}
	if len(tree) != 2*size || len(parent) != 2*size || !IsObjectID(tree) || !IsObjectID(parent) {
		return "", false, nil // a name git resolves
	}
	if _, kind, _, err := r.object(ctx, tree, false); err != nil || kind != "tree" {
		return "", false, nil // git says what is wrong
	}
	if _, kind, _, err := r.object(ctx, parent, false); err != nil || kind != "commit" {
		return "", false, nil
	}
	entries, err := readConfig(ctx, r.Root, nil)
	if err != nil {
		return "", false, err
	}
	config := map[string]string{}
	for _, e := range entries {
		key := strings.ToLower(e.key)
		switch key {
		case "commit.gpgsign":
			if gitBool(e.value) != "false" {
				return "", false, nil // signed, or a value git reads its own way
			}
		case "i18n.commitencoding":
			return "", false, nil
		}
		config[key] = e.value // the last one counts, as for git
	}
	env := map[string]string{}
	for _, kv := range gitEnv(r.identity) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v // the last one counts, as for exec
	}
	if env["GIT_AUTHOR_DATE"] != "" || env["GIT_COMMITTER_DATE"] != "" {
		return "", false, nil
	}
	// The first of the environment's variable, the role's setting and the user's that is
	// there (an empty one included: git refuses it, and so is asked).
	first := func(envKey, roleKey, userKey string) string {
		if v, ok := env[envKey]; ok {
			return v
		}
		if v, ok := config[roleKey]; ok {
			return v
		}
		return config[userKey]
	}
	who := func(role string) (string, bool) {
		name := first("GIT_"+strings.ToUpper(role)+"_NAME", role+".name", "user.name")
		email := first("GIT_"+strings.ToUpper(role)+"_EMAIL", role+".email", "user.email")
		if !plainIdent(name) || !plainIdent(email) {
			return "", false
		}
		return fmt.Sprintf("%s <%s> %d %s", name, email, now.Unix(), now.Format("-0700")), true
	}
	author, ok1 := who("author")
	committer, ok2 := who("committer")
	if !ok1 || !ok2 {
		return "", false, nil
	}
	body := "tree " + tree + "\nparent " + parent + "\nauthor " + author + "\ncommitter " + committer + "\n\n" + message
	id, err = r.writeObject(ctx, "commit", []byte(body), size)
	return id, err == nil, err
}

// plainIdent reports whether git takes a name or an address as it is: not empty, nothing
// it strips from its ends (spaces, control characters, '.', ',', ':', ';', quotes,
// backslashes, angle brackets) and no angle bracket or line break inside.
func plainIdent(s string) bool {
	crud := func(c byte) bool { return c <= ' ' || strings.IndexByte(".,:;<>\"\\'", c) >= 0 }
	return s != "" && !crud(s[0]) && !crud(s[len(s)-1]) && !strings.ContainsAny(s, "<>\n")
}
