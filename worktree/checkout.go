package worktree

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// checkout makes the slot's working tree and the orchestrator's index of it commit's, as
// `git reset --hard` followed by `git clean -ffdx` would, without a git process (SPEC §7.7
// git overhead: this is on the path from an agent's marker to its task's status, twice).
//
// A file whose stat data is what the index recorded when it was written, and older than
// the index, is taken as holding its blob, as git takes it (the change time, which a
// program cannot set back, is among what is compared); a racy one is read and hashed. Any
// other file that the commit tracks is written from its blob, through folders that are
// real folders (clean has removed every symbolic link and file where commit has a
// folder). The index is written anew, with the commit's tree names in its cache, so that
// git, and writeTree, find the folders nothing has changed since.
//
// A file is kept only with one name (a hard link would let whoever holds its other name
// change it later) and with the permissions a file written now gets (a candidate's tests
// may take them away, for the next candidate's run to fail on); a file of another size
// than its blob is not read.
//
// It reports false, having changed nothing or not all, for what it leaves to git: an
// index it does not read, a commit with submodules or attributes (which can make the
// bytes git writes differ from the blob's), a tree no git command makes (a name twice, a
// name with a slash), paths git refuses, settings that change what a checkout writes or
// what git compares.
func (s *Slot) checkout(ctx context.Context, commit string) (bool, error) {
	r := s.repo
	size, err := r.idSize(ctx)
	if err != nil {
		return false, err
	}
	if !r.plainCheckout(ctx, s.Dir, s.env(s.index)) {
		return false, nil
	}
	idx, err := readIndex(s.index, size)
	if err != nil {
		return false, nil
	}
	commit, _, _, err = r.object(ctx, commit+"^{commit}", false)
	if err != nil {
		return false, nil
	}
	l, err := r.listShape(ctx, commit)
	if err != nil {
		return false, err
	}
	if !wellFormed(l) {
		return false, nil
	}
	for _, f := range l.files {
		if f.kind != "blob" || path.Base(f.path) == ".gitattributes" || !plainPath(f.path) {
			return false, nil
		}
	}
	if !s.clean(ctx, commit) {
		return false, nil
	}
	format, err := r.objectFormat(ctx)
	if err != nil {
		return false, err
	}
	old := make(map[string]*indexEntry, len(idx.entries))
	for i := range idx.entries {
		old[idx.entries[i].path] = &idx.entries[i]
	}
	// The files side by side, as git's own checkout looks at them from several threads:
	// each is a file of its own, and most are an lstat that finds them as they were.
	entries := make([]indexEntry, len(l.files))
	errs := make([]error, len(l.files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(checkoutWorkers, len(l.files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(l.files) || ctx.Err() != nil {
					return
				}
				f := l.files[i]
				entries[i], errs[i] = s.checkoutFile(ctx, format, f, old[f.path], idx)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return false, err
	}
	// An entry whose file was modified in the last moments may be changed again within
	// the same tick of the file system's clock, its stat data the same: its size is set to
	// 0, which git and checkoutFile take as "compare the content" (git's smudging).
	soon := time.Now().Add(-racyWindow)
	for i := range entries {
		m := time.Unix(int64(entries[i].mtimeSec), int64(entries[i].mtimeNsec))
		c := time.Unix(int64(entries[i].ctimeSec), int64(entries[i].ctimeNsec))
		if !m.Before(soon) || !c.Before(soon) {
			entries[i].size = 0
		}
	}
	out := &gitIndex{entries: entries, tree: cacheTreeOf(l)}
	b, err := out.encode(size)
	if err != nil {
		return false, err
	}
	// Each file is written only when it changes: the index (whose time is the one its
	// entries are racy against), the slot's HEAD, detached at commit as git's reset leaves
	// it (the agent's git compares its index with it).
	if !bytes.Equal(b, idx.raw) {
		if err := replaceFile(s.index, b); err != nil {
			return false, err
		}
	}
	head := filepath.Join(s.admin, "HEAD")
	if was, err := os.ReadFile(head); err != nil || string(was) != commit+"\n" {
		if err := replaceFile(head, []byte(commit+"\n")); err != nil {
			return false, err
		}
	}
	return true, nil
}

// checkoutWorkers is how many files checkout looks at side by side.
const checkoutWorkers = 8

// replaceFile writes b to a new file renamed over the one at p.
func replaceFile(p string, b []byte) error {
	tmp := p + ".tmp"
	os.Remove(tmp)
	if err := writeNew(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// checkoutFile makes the file of f in the slot hold f's blob, with f's mode, and returns its
// index entry. was is the entry the index had for the path (nil for none).
func (s *Slot) checkoutFile(ctx context.Context, format string, f treeFile, was *indexEntry, idx *gitIndex) (indexEntry, error) {
	p := filepath.Join(s.Dir, filepath.FromSlash(f.path))
	mode := modeBits(f.mode)
	if fi, err := os.Lstat(p); err == nil {
		now, ok := statOf(fi)
		switch {
		case !ok || now.mode != mode || (mode != 0o120000 && fi.Mode()&modeBitsMask != freshPerm(mode)):
			// Another kind of file, the executable bit changed, or permissions a file
			// written now would not have (a candidate's tests made it read-only or
			// unreadable for the next one's): written again.
		case was != nil && was.id == f.id && was.sameStat(now) && now.size != 0 && !idx.racy(was):
			return *was, nil
		case nlink(fi) == 1 && s.holds(ctx, format, p, fi, f.id):
			now.id, now.path = f.id, f.path
			return now, nil
		}
		if err := os.Remove(p); err != nil {
			return indexEntry{}, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return indexEntry{}, err
	}
	_, _, body, err := s.repo.object(ctx, f.id, true)
	if err != nil {
		return indexEntry{}, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return indexEntry{}, err
	}
	if mode == 0o120000 {
		err = os.Symlink(string(body), p)
	} else {
		perm := os.FileMode(0o666)
		if mode == 0o100755 {
			perm = 0o777
		}
		err = writeNew(p, body, perm)
	}
	if err != nil {
		return indexEntry{}, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return indexEntry{}, err
	}
	e, ok := statOf(fi)
	if !ok {
		return indexEntry{}, errors.New(p + ": not the file written")
	}
	e.id, e.path = f.id, f.path
	return e, nil
}

// holds reports whether the file at p (fi its Lstat) holds the blob id: its bytes, or the
// link's target, hashed as git hashes a blob. A file larger than hashLimit (a sparse file
// of a terabyte costs its maker nothing) is compared with the blob itself, and not read
// when their sizes differ.
func (s *Slot) holds(ctx context.Context, format, p string, fi os.FileInfo, id string) bool {
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		return err == nil && blobHash(format, []byte(target)) == id
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi.Size() <= hashLimit {
		data, err := io.ReadAll(io.LimitReader(f, hashLimit+1))
		return err == nil && blobHash(format, data) == id
	}
	_, _, body, err := s.repo.object(ctx, id, true)
	if err != nil || int64(len(body)) != fi.Size() {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(len(body))+1))
	return err == nil && bytes.Equal(data, body)
}

// hashLimit is the size up to which holds reads a file to hash it.
const hashLimit = 64 << 20

// modeBitsMask are the bits of a file's mode a checkout sets: permissions, set-user-ID,
// set-group-ID, sticky.
const modeBitsMask = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// freshPerm returns the permissions a file of the index's mode gets when it is written
// now: 0666, or 0777 for an executable, less the process's umask; 0777 less it for 0 (a
// folder).
func freshPerm(mode uint32) os.FileMode {
	perm := os.FileMode(0o666)
	if mode == 0o100755 || mode == 0 {
		perm = 0o777
	}
	return perm &^ umask()
}

// umask returns the process's file mode creation mask, read once (022 where the kernel
// does not say).
var umask = sync.OnceValue(func() os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022
})

// nlink returns the number of names the file fi describes has.
func nlink(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// wellFormed reports whether l is a tree git makes: every file and folder in a folder of
// the tree, no name twice.
func wellFormed(l listing) bool {
	dirs := map[string]bool{".": true}
	for _, d := range l.dirs {
		if dirs[d.path] || !dirs[path.Dir(d.path)] {
			return false
		}
		dirs[d.path] = true
	}
	seen := make(map[string]bool, len(l.files))
	for _, f := range l.files {
		if seen[f.path] || dirs[f.path] || !dirs[path.Dir(f.path)] {
			return false
		}
		seen[f.path] = true
	}
	return true
}

// writeNew creates the file at p, which must not exist, holding body.
func writeNew(p string, body []byte, perm os.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// modeBits returns the index's mode of a tree's mode ("100644", "100755", "120000").
func modeBits(m string) uint32 {
	switch m {
	case "100755":
		return 0o100755
	case "120000":
		return 0o120000
	}
	return 0o100644
}

// cacheTreeOf returns the TREE extension of an index holding exactly l's files: every
// folder valid, with its tree's name and the number of files under it.
func cacheTreeOf(l listing) *cacheTree {
	root := &cacheTree{name: "", id: l.tree}
	nodes := map[string]*cacheTree{"": root}
	for _, d := range l.dirs { // parents before children
		parent, name := "", d.path
		if i := strings.LastIndexByte(d.path, '/'); i >= 0 {
			parent, name = d.path[:i], d.path[i+1:]
		}
		n := &cacheTree{name: name, id: d.id}
		nodes[d.path] = n
		nodes[parent].subs = append(nodes[parent].subs, n)
	}
	for _, f := range l.files {
		root.count++
		for d := path.Dir(f.path); d != "."; d = path.Dir(d) {
			nodes[d].count++
		}
	}
	return root
}

// plainCheckout reports whether a checkout with env in dir writes the blobs' bytes and
// git compares files as checkout does: no attributes file of the person's or the
// repository's (eol, ident, working-tree-encoding change the bytes), and none of the
// settings that change what a checkout writes or where.
func (r *Repo) plainCheckout(ctx context.Context, dir string, env []string) bool {
	entries, err := readConfig(ctx, dir, env)
	if err != nil {
		return false
	}
	if _, left := plainSettings(entries); left != "" {
		return false
	}
	config, _, left := configHome()
	if left != "" {
		return false
	}
	places := []string{filepath.Join(r.Common, "info", "attributes")}
	if config != "" {
		places = append(places, filepath.Join(config, "git", "attributes"))
	}
	for _, p := range places {
		if _, err := os.Lstat(p); err == nil {
			return false
		}
	}
	return true
}

// plainPath reports whether git would check a tree's path out as it is: no component
// empty, "." or "..", nor ".git" in any case (git refuses those; the orchestrator's own
// writing leaves them to it).
func plainPath(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}
