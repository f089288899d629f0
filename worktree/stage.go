package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// stageTree returns the tree that `git add -A` then `git write-tree` would make of the
// slot's working tree with the index at index, less the paths of leave (the orchestrator's
// own links), without a git process: a candidate's commit is most of the time between an
// agent's end and its task's status, and a git process costs more than the work (SPEC §7.7
// git overhead). left, when not "", says why it leaves the staging to git, which the caller
// then asks: git decides something the orchestrator does not. That is attributes that may
// convert content, settings that change how files are read, compared or named
// (plainSettings), submodules and nested repositories, special files where the index has a
// file, names git may refuse, files it cannot read, and what readIndex and the tree writer
// leave to git. Ignore rules are git's: the .gitignore files, info/exclude and
// core.excludesFile, matched with git's wildmatch.
func (s *Slot) stageTree(ctx context.Context, index string, leave []string) (tree, left string, err error) {
	size, err := s.repo.idSize(ctx)
	if err != nil {
		return "", "", err
	}
	cfg, err := readConfig(ctx, s.Dir, s.env(index))
	if err != nil {
		return "", "the configuration: " + err.Error(), nil // git says what is wrong
	}
	excludes, left := s.stageable(cfg)
	if left != "" {
		return "", left, nil
	}
	idx, err := readIndex(index, size)
	if err != nil {
		return "", "the index: " + err.Error(), nil
	}
	st := &stager{slot: s, ctx: ctx, size: size, idx: idx, dirs: map[string]bool{"": true}}
	var global []*ignoreList
	for _, f := range excludes { // info/exclude first: it takes precedence
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return "", f + " cannot be read", nil
		}
		l := parseIgnore("", b)
		global = append(global, &l)
	}
	if left, err := st.tracked(); left != "" || err != nil {
		return "", left, err
	}
	if left, err := st.untracked("", s.Dir, global); left != "" || err != nil {
		return "", left, err
	}
	for _, p := range leave {
		st.remove(p)
	}
	entries := st.entries()
	w := &treeWriter{r: s.repo, ctx: ctx, size: size, entries: entries}
	tree, err = w.build("", 0, len(entries), idx.tree)
	if errors.Is(err, errUnhandled) {
		return "", "a tree git makes", nil
	}
	return tree, "", err
}

// stageable returns the files of ignore patterns besides the .gitignore files, the first
// taking precedence (info/exclude, then core.excludesFile), or why the configuration cfg
// leaves staging to git.
func (s *Slot) stageable(cfg []configEntry) (excludes []string, left string) {
	last, left := plainSettings(cfg, "core.sharedrepository", "extensions.compatobjectformat")
	if left != "" {
		return nil, left
	}
	if v, set := last["core.protecthfs"]; set && gitBool(v) != "false" {
		return nil, "core.protectHFS = " + v // names git refuses that plainName lets by
	}
	if os.Getenv("GIT_ATTR_SOURCE") != "" {
		return nil, "GIT_ATTR_SOURCE is set"
	}
	config, home, left := configHome()
	if left != "" {
		return nil, left
	}
	// Attributes from anywhere but the working tree (where stageTree looks for them).
	attributes := []string{filepath.Join(s.repo.Common, "info", "attributes"), "/etc/gitattributes", "/usr/local/etc/gitattributes"}
	if config != "" {
		attributes = append(attributes, filepath.Join(config, "git", "attributes"))
	}
	for _, f := range attributes {
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			return nil, "attributes in " + f
		}
	}
	excludes = []string{filepath.Join(s.repo.Common, "info", "exclude")}
	switch f, set := last["core.excludesfile"]; {
	case set && strings.HasPrefix(f, "~/") && home != "":
		excludes = append(excludes, filepath.Join(home, f[2:]))
	case set && filepath.IsAbs(f):
		excludes = append(excludes, f)
	case set:
		return nil, "core.excludesFile = " + f // a path git resolves
	case config != "":
		excludes = append(excludes, filepath.Join(config, "git", "ignore"))
	}
	return excludes, ""
}

// A stager stages one working tree: the index's entries as the tree now has them, and the
// untracked files that are not ignored.
type stager struct {
	slot *Slot
	ctx  context.Context
	size int
	idx  *gitIndex
	// now are the entries staged, by path; inIndex the paths of the index as read.
	now     map[string]indexEntry
	inIndex map[string]bool
	// dirs caches whether each folder (slash-separated) of the tree is a folder, not a
	// symbolic link or a file, and so are its parents; attributes says why the
	// .gitattributes of one of them leaves staging to git.
	dirs       map[string]bool
	attributes string
}

// tracked brings the index's entries up to date with the working tree, as git's
// add_files_to_cache does: a file gone, or under a folder that is now a symbolic link or
// a file, is removed; a file whose stat data or kind changed, or that git cannot trust
// (racily clean, or an entry of size 0), is read and its blob written.
func (st *stager) tracked() (left string, err error) {
	st.now = make(map[string]indexEntry, len(st.idx.entries))
	st.inIndex = make(map[string]bool, len(st.idx.entries))
	for _, e := range st.idx.entries {
		st.inIndex[e.path] = true
		if e.mode == 0o160000 || strings.Contains("/"+e.path+"/", "/.git/") {
			return "a submodule: " + e.path, nil
		}
		dirOK := st.isDir(path.Dir(e.path))
		full := filepath.Join(st.slot.Dir, filepath.FromSlash(e.path))
		if path.Base(e.path) == ".gitattributes" {
			// Gone from the tree, git reads the index's.
			if fi, err := os.Lstat(full); !dirOK || err != nil || !fi.Mode().IsRegular() {
				return "attributes git reads from the index: " + e.path, nil
			}
		}
		if !dirOK {
			continue // removed
		}
		fi, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return err.Error(), nil
		}
		if fi.IsDir() {
			continue // a file made a folder: what it holds is untracked
		}
		now, ok := statOf(fi)
		if !ok {
			return "a special file where the index has a file: " + e.path, nil
		}
		if e.sameStat(now) && e.size != 0 && !st.idx.racy(&e) {
			st.now[e.path] = e
			continue
		}
		id, left, err := st.blob(full, fi, e.id)
		if left != "" || err != nil {
			return left, err
		}
		now.id, now.path = id, e.path
		if id != e.id || now.mode != e.mode {
			st.changed(e.path)
		}
		st.now[e.path] = now
	}
	if st.attributes != "" {
		return st.attributes, nil
	}
	for _, e := range st.idx.entries {
		if _, kept := st.now[e.path]; !kept {
			st.changed(e.path)
		}
	}
	return "", nil
}

// untracked adds the files under the folder rel (at full) that the index does not have
// and the ignore rules do not ignore, as git's fill_directory finds them: a folder that is
// ignored is not looked into. lists are the ignore rules of the folders above it, the
// deepest first, then info/exclude and core.excludesFile.
func (st *stager) untracked(rel, full string, lists []*ignoreList) (left string, err error) {
	entries, err := os.ReadDir(full)
	if err != nil {
		return err.Error(), nil
	}
	for _, e := range entries {
		switch {
		case e.Name() == ".git" && rel == "":
			continue // the slot's own
		case e.Name() == ".git":
			return "a nested repository: " + rel, nil
		case e.Name() == ".gitattributes":
			if left := attributesIn(rel, full); left != "" {
				return left, nil
			}
			continue
		case e.Name() != ".gitignore":
			continue
		}
		if !e.Type().IsRegular() {
			return "a .gitignore that is not a file: " + path.Join(rel, e.Name()), nil // git does not follow a link here
		}
		b, err := os.ReadFile(filepath.Join(full, ".gitignore"))
		if err != nil {
			return err.Error(), nil
		}
		base := ""
		if rel != "" {
			base = rel + "/"
		}
		l := parseIgnore(base, b)
		lists = append([]*ignoreList{&l}, lists...)
	}
	for _, e := range entries {
		name := e.Name()
		if name == ".git" {
			continue
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		kind := e.Type()
		if st.inIndex[p] && !kind.IsDir() {
			continue // the index's: tracked() has it
		}
		if !kind.IsDir() && !kind.IsRegular() && kind&fs.ModeSymlink == 0 {
			continue // sockets, pipes, devices: git passes them by
		}
		if ignored(lists, p, kind.IsDir()) {
			continue
		}
		if !plainName(name) || kind&fs.ModeSymlink != 0 && strings.Contains(name, "~") {
			// A link may not be named as .gitmodules is on NTFS ("gi7eba~1", "gitmod~2").
			return "a name git may refuse: " + p, nil
		}
		at := filepath.Join(full, name)
		if kind.IsDir() {
			if left, err := st.untracked(p, at, lists); left != "" || err != nil {
				return left, err
			}
			continue
		}
		fi, err := os.Lstat(at)
		if err != nil {
			return err.Error(), nil
		}
		now, ok := statOf(fi)
		if !ok {
			return "a special file: " + p, nil // changed since the folder was read
		}
		id, left, err := st.blob(at, fi, "")
		if left != "" || err != nil {
			return left, err
		}
		now.id, now.path = id, p
		st.now[p] = now
		st.changed(p)
	}
	return "", nil
}

// blob returns the name of the blob of the file at full, writing it unless it is was.
func (st *stager) blob(full string, fi os.FileInfo, was string) (id, left string, err error) {
	if fi.Size() > maxStaged {
		return "", "a file larger than the orchestrator reads whole: " + full, nil
	}
	var body []byte
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(full)
		if err != nil {
			return "", err.Error(), nil
		}
		body = []byte(target)
	} else if body, err = readRegular(full); err != nil {
		return "", err.Error(), nil // unreadable: git's --ignore-errors decides
	}
	if id = objectName(st.size, "blob", body); id == was {
		return id, "", nil
	}
	id, err = st.slot.repo.writeObject(st.ctx, "blob", body, st.size)
	return id, "", err
}

// maxStaged is the size of the largest file the orchestrator stages itself, reading it
// whole: git streams a larger one (core.bigFileThreshold is 512 MiB).
const maxStaged = 64 << 20

// readRegular reads the regular file at full, never through a symbolic link put in its
// place since it was looked at, nor waiting on a pipe put there.
func readRegular(full string) ([]byte, error) {
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", full)
	}
	return io.ReadAll(f)
}

// isDir reports whether the folder dir ("." for the root) is a folder of the working tree,
// as are its parents: a symbolic link in their place hides what the index has under them.
func (st *stager) isDir(dir string) bool {
	if dir == "." {
		dir = ""
	}
	if ok, seen := st.dirs[dir]; seen {
		return ok
	}
	ok := st.isDir(path.Dir(dir))
	if ok {
		full := filepath.Join(st.slot.Dir, filepath.FromSlash(dir))
		fi, err := os.Lstat(full)
		ok = err == nil && fi.IsDir()
		if left := attributesIn(dir, full); ok && left != "" {
			st.attributes = left // in a folder the walk of untracked files may not look into
		}
	}
	st.dirs[dir] = ok
	return ok
}

// remove takes p out of what is staged.
func (st *stager) remove(p string) {
	if _, ok := st.now[p]; ok {
		delete(st.now, p)
		st.changed(p)
	}
}

// changed marks the folders above p as changed in the index's cache of tree names: their
// trees are made again.
func (st *stager) changed(p string) {
	node := st.idx.tree
	for node != nil {
		node.id = ""
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return
		}
		name := p[:i]
		p = p[i+1:]
		var next *cacheTree
		for _, c := range node.subs {
			if c.name == name {
				next = c
				break
			}
		}
		node = next
	}
}

// entries returns what is staged in the index's order.
func (st *stager) entries() []indexEntry {
	out := make([]indexEntry, 0, len(st.now))
	for _, e := range st.now {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// attributesIn returns why the .gitattributes of the folder rel (at full), if it has one,
// leaves staging to git: "" when it has none, or when what it sets leaves every file's
// content as it is (plainAttributes).
func attributesIn(rel, full string) string {
	p := filepath.Join(full, ".gitattributes")
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	where := path.Join(rel, ".gitattributes")
	if err != nil || !fi.Mode().IsRegular() {
		return "attributes git reads its own way: " + where
	}
	b, err := readRegular(p)
	if err != nil {
		return err.Error()
	}
	if !plainAttributes(b) {
		return "attributes that may change what is staged: " + where
	}
	return ""
}

// plainAttributes reports whether the attributes file b leaves what git stages as the files
// hold it: it sets none of text, eol, crlf, ident and working-tree-encoding (unset or
// unspecified, they are the defaults of the orchestrator's git, core.autocrlf false), and
// defines no macro. What else it sets (merge, diff, export-ignore, linguist's, binary)
// changes nothing staged, nor does a filter driver, which the orchestrator's git runs
// with none (filtersOff). A quoted pattern is left to git.
func plainAttributes(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "\x00") // git reads each line as a C string
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if strings.HasPrefix(fields[0], "\"") || strings.HasPrefix(fields[0], "[attr]") {
			return false
		}
		for _, a := range fields[1:] {
			if a[0] == '-' || a[0] == '!' {
				continue // unset or unspecified: no conversion
			}
			switch name, _, _ := strings.Cut(a, "="); name {
			case "text", "eol", "crlf", "ident", "working-tree-encoding":
				return false
			}
		}
	}
	return true
}

// plainName reports whether git takes a file of this name as it is: not a name its checks
// for other file systems refuse or treat apart (".git " and "git~1" on NTFS, .gitmodules),
// nor one with a backslash or a colon in it.
func plainName(name string) bool {
	l := strings.TrimRight(strings.ToLower(name), " .")
	switch {
	case l == ".git", strings.HasPrefix(l, "git~"), strings.HasPrefix(l, ".gitmodules"), strings.HasPrefix(l, "gitmod~"):
		return false
	}
	return !strings.ContainsAny(name, "\\:")
}
