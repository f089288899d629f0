package worktree

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// objects reads the repository's objects and resolves names through one long-lived
// `git cat-file --batch-command` (SPEC §7.7 git overhead): a file of a commit, a commit's
// tree or parent, whether a commit is there, each a line written and a line (and the
// object's bytes) read, where each used to be a git process of its own. The process starts
// on first use and ends with Close, or with the orchestrator (its input closes).
type objects struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// ErrMissing is the error of a read of a name that names no object (a file a commit does
// not hold, among them).
var ErrMissing = errors.New("no such object")

// object asks for name: its id and type, and its bytes when contents. A name git cannot
// take on one line is asked of a git process of its own.
func (r *Repo) object(ctx context.Context, name string, contents bool) (id, kind string, body []byte, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", nil, err
	}
	if strings.ContainsAny(name, "\n\r") {
		// The reader takes one name a line: a path with a line break (which git stores like
		// any other) is resolved to its object's id by a git process of its own.
		out, err := r.git(ctx, r.Root, nil, "rev-parse", "--verify", "-q", "--end-of-options", name)
		if err != nil {
			return "", "", nil, fmt.Errorf("%q: %w", name, ErrMissing)
		}
		name = strings.TrimSpace(out)
	}
	o := &r.objects
	o.mu.Lock()
	defer o.mu.Unlock()
	for try := 0; ; try++ {
		id, kind, body, err = o.ask(r.Root, name, contents)
		if err == nil || errors.Is(err, ErrMissing) || try == 1 {
			return id, kind, body, err
		}
		o.stop() // the process died or answered out of turn: start again, once
	}
}

// ask writes one request and reads its answer; o.mu is held.
func (o *objects) ask(dir, name string, contents bool) (id, kind string, body []byte, err error) {
	if o.cmd == nil {
		if err := o.start(dir); err != nil {
			return "", "", nil, err
		}
	}
	verb := "info"
	if contents {
		verb = "contents"
	}
	if _, err := io.WriteString(o.in, verb+" "+name+"\n"); err != nil {
		return "", "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	head, err := o.out.ReadString('\n')
	if err != nil {
		return "", "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	head = strings.TrimSuffix(head, "\n")
	if strings.HasSuffix(head, " missing") || strings.HasSuffix(head, " ambiguous") {
		return "", "", nil, fmt.Errorf("%s: %w", name, ErrMissing)
	}
	f := strings.Fields(head)
	if len(f) != 3 {
		return "", "", nil, fmt.Errorf("git cat-file: unexpected answer %q", head)
	}
	size, err := strconv.Atoi(f[2])
	if err != nil {
		return "", "", nil, fmt.Errorf("git cat-file: unexpected answer %q", head)
	}
	if contents {
		body = make([]byte, size+1)
		if _, err := io.ReadFull(o.out, body); err != nil {
			return "", "", nil, fmt.Errorf("git cat-file: %w", err)
		}
		body = body[:size]
	}
	return f[0], f[1], body, nil
}

func (o *objects) start(dir string) error {
	cmd, in, out, err := startHelper(dir, nil, "cat-file", "--batch-command")
	if err != nil {
		return err
	}
	o.cmd, o.in, o.out = cmd, in, bufio.NewReaderSize(out, 64<<10)
	return nil
}

// startHelper starts a long-lived git process in dir (the reader of objects, the writer
// of refs), its standard error to stderr (nil: none), and returns it with its input and
// output.
func startHelper(dir string, stderr io.Writer, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command("git", append(slices.Clone(safe), args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv(nil)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	return cmd, in, out, nil
}

// stop ends the process, if there is one; o.mu is held.
func (o *objects) stop() {
	if o.cmd == nil {
		return
	}
	stopHelper(o.cmd, o.in)
	o.cmd, o.in, o.out = nil, nil, nil
}

// stopHelper ends a long-lived git process of startHelper: its input closed, git reads
// no more commands (a transaction it was given halfway is aborted) and exits; it is
// waited for.
func stopHelper(cmd *exec.Cmd, in io.Closer) {
	in.Close()
	_ = cmd.Wait()
}

// Helpers returns the process IDs of the repository's long-lived git processes (the reader
// of objects, the writer of refs): children of the orchestrator that are not an agent's
// orphans.
func (r *Repo) Helpers() []int {
	if r == nil {
		return nil
	}
	var pids []int
	r.objects.mu.Lock()
	if r.objects.cmd != nil {
		pids = append(pids, r.objects.cmd.Process.Pid)
	}
	r.objects.mu.Unlock()
	if pid := r.refs.pid(); pid != 0 {
		pids = append(pids, pid)
	}
	return pids
}

// Close ends the repository's long-lived git processes. The repository stays usable: the
// next read or write starts them again.
func (r *Repo) Close() {
	r.objects.mu.Lock()
	r.objects.stop()
	r.objects.mu.Unlock()
	r.refs.mu.Lock()
	r.refs.stop()
	r.refs.mu.Unlock()
}

// A treeFile is a file of a commit's tree, as `git ls-tree -r` lists it: its mode, its
// kind (blob, or commit for a submodule), its object and its path.
type treeFile struct {
	mode, kind, id, path string
}

// listTree lists the files of commit's tree, subtrees walked, through the long-lived
// reader: as `git ls-tree -r --full-tree`, without a process of its own.
func (r *Repo) listTree(ctx context.Context, commit string) ([]treeFile, error) {
	l, err := r.listShape(ctx, commit)
	return l.files, err
}

// listShape lists the files and the folders of commit's tree (listTree).
//
// The last few listings are kept by tree: a candidate's tree is listed by the reset of
// the gate's checkout and again by the check of its bytes.
func (r *Repo) listShape(ctx context.Context, commit string) (listing, error) {
	tree, err := r.Tree(ctx, commit)
	if err != nil {
		return listing{}, err
	}
	r.listings.mu.Lock()
	for _, l := range r.listings.kept {
		if l.tree == tree {
			r.listings.mu.Unlock()
			return l, nil
		}
	}
	r.listings.mu.Unlock()
	l := listing{tree: tree}
	l.files, err = r.walkTree(ctx, tree, "", func(path, id string) {
		l.dirs = append(l.dirs, treeDir{path: path, id: id})
	})
	if err != nil {
		return listing{}, err
	}
	r.listings.mu.Lock()
	defer r.listings.mu.Unlock()
	r.listings.kept = append(r.listings.kept, l)
	if len(r.listings.kept) > 4 {
		r.listings.kept = r.listings.kept[1:]
	}
	return l, nil
}

// listings are the last tree listings of listShape (never changed once made: a tree's
// files are its name's).
type listings struct {
	mu   sync.Mutex
	kept []listing
}

// A listing is a tree's files and folders, in the order of a walk of the tree (which is
// the order of their paths, byte by byte).
type listing struct {
	tree  string
	files []treeFile
	dirs  []treeDir
}

// A treeDir is a folder of a tree: its path and its tree's object.
type treeDir struct {
	path, id string
}

// listTreeAt lists the files of the tree name (a tree, or commit:folder), their paths
// under prefix.
func (r *Repo) listTreeAt(ctx context.Context, name, prefix string) ([]treeFile, error) {
	return r.walkTree(ctx, name, prefix, nil)
}

// walkTree lists the files of the tree name, their paths under prefix, and calls dir (when
// not nil) with each folder's path and tree, before its files.
func (r *Repo) walkTree(ctx context.Context, name, prefix string, dir func(path, id string)) ([]treeFile, error) {
	format, err := r.objectFormat(ctx)
	if err != nil {
		return nil, err
	}
	size := 20
	if format == "sha256" {
		size = 32
	}
	var out []treeFile
	var walk func(name, prefix string) error
	walk = func(name, prefix string) error {
		_, kind, body, err := r.object(ctx, name, true)
		if err != nil {
			return err
		}
		if kind != "tree" {
			return fmt.Errorf("%s is a %s, not a tree", name, kind)
		}
		for len(body) > 0 {
			sp := bytes.IndexByte(body, ' ')
			nul := bytes.IndexByte(body, 0)
			if sp < 0 || nul < sp || len(body) < nul+1+size {
				return fmt.Errorf("tree %s: unreadable entry", name)
			}
			mode, file := string(body[:sp]), string(body[sp+1:nul])
			id := hex.EncodeToString(body[nul+1 : nul+1+size])
			body = body[nul+1+size:]
			path := prefix + file
			switch mode {
			case "40000":
				if dir != nil {
					dir(path, id)
				}
				if err := walk(id, path+"/"); err != nil {
					return err
				}
			case "160000":
				out = append(out, treeFile{mode: mode, kind: "commit", id: id, path: path})
			default:
				out = append(out, treeFile{mode: mode, kind: "blob", id: id, path: path})
			}
		}
		return nil
	}
	return out, walk(name, prefix)
}

// Commit returns the parents of the commit named id, as its own header lists them; ok is
// false when the repository has no commit of that name: no object, or an object of
// another type (a tag of a commit among them: an object read as its type is never
// peeled). Read through the long-lived reader.
func (r *Repo) Commit(ctx context.Context, id string) (parents []string, ok bool, err error) {
	got, kind, body, err := r.object(ctx, id, true)
	if errors.Is(err, ErrMissing) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if got != id || kind != "commit" {
		return nil, false, nil
	}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" {
			break // the header ends; the message follows
		}
		if p, found := strings.CutPrefix(line, "parent "); found {
			parents = append(parents, p)
		}
	}
	return parents, true, nil
}

// File returns the mode ("100644", "100755", "120000" for a symlink, "160000" for a
// submodule) and, for a blob, the bytes of the entry at path (slash-separated) in commit's
// tree; ErrMissing when the tree has no entry there. Read through the long-lived reader:
// the entry from its folder's tree, then its blob.
func (r *Repo) File(ctx context.Context, commit, path string) (mode string, body []byte, err error) {
	size, err := r.idSize(ctx)
	if err != nil {
		return "", nil, err
	}
	dir, name := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, name = path[:i], path[i+1:]
	}
	_, kind, tree, err := r.object(ctx, commit+":"+dir, true)
	if err != nil {
		return "", nil, err
	}
	if kind != "tree" {
		return "", nil, fmt.Errorf("%s:%s: %w", commit, path, ErrMissing) // a file where a folder would be
	}
	for len(tree) > 0 {
		sp := bytes.IndexByte(tree, ' ')
		nul := bytes.IndexByte(tree, 0)
		if sp < 0 || nul < sp || len(tree) < nul+1+size {
			return "", nil, fmt.Errorf("tree %s:%s: unreadable entry", commit, dir)
		}
		m, file, id := string(tree[:sp]), string(tree[sp+1:nul]), hex.EncodeToString(tree[nul+1:nul+1+size])
		tree = tree[nul+1+size:]
		if file != name {
			continue
		}
		if m == "40000" || m == "160000" {
			return m, nil, nil
		}
		_, _, body, err := r.object(ctx, id, true)
		return m, body, err
	}
	return "", nil, fmt.Errorf("%s:%s: %w", commit, path, ErrMissing)
}
