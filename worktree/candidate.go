package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// A Change is one path that differs between two commits, as git reports it.
type Change struct {
	// Status is git's letter: A added, M modified, D deleted, R renamed, T type changed
	// (a file became a symlink, say), C copied.
	Status string `json:"status"`
	// Path is the path in the newer commit (the old one for a deletion).
	Path string `json:"path"`
	// From is the old path of a rename or copy.
	From string `json:"from,omitempty"`
	// OldMode and NewMode are the octal git modes ("100644", "100755", "120000" for a
	// symlink; "000000" where the path does not exist).
	OldMode string `json:"old_mode"`
	NewMode string `json:"new_mode"`
}

// Paths returns every path a change touches: both sides of a rename.
func Paths(changes []Change) []string {
	var out []string
	for _, c := range changes {
		if c.From != "" {
			out = append(out, c.From)
		}
		out = append(out, c.Path)
	}
	return out
}

// A Link is a symbolic link the orchestrator itself puts in a slot (a JavaScript project's
// node_modules, linked to the person's): Path is where, slash-separated from the slot's
// root; Target is the path the link names, as the orchestrator wrote it.
type Link struct {
	Path   string
	Target string
}

// Commit records what is in the slot's working tree now as a commit whose parent is base,
// under ref, with message, and returns it. Files that .gitignore ignores are not part of
// it, nor the orchestrator's own links (ownLinks) that are still there as it made them.
// When the tree is base's own, nothing changed: it returns base itself and makes no
// commit (ref is still set, to base).
func (s *Slot) Commit(ctx context.Context, base, ref, message string, ownLinks ...Link) (string, error) {
	if err := s.made(); err != nil {
		return "", err
	}
	own, err := s.ownLinksAt(ctx, base, ownLinks)
	if err != nil {
		return "", err
	}
	tree, err := s.stagedTree(ctx, own)
	if err != nil {
		return "", err
	}
	commit := base
	baseTree, err := s.repo.Tree(ctx, base)
	if err != nil {
		return "", err
	}
	if baseTree != tree {
		if commit, err = s.repo.commitTree(ctx, tree, base, message); err != nil {
			return "", err
		}
	}
	if ref != "" {
		if err := s.repo.updateRef(ctx, ref, commit, ""); err != nil {
			return "", err
		}
	}
	return commit, nil
}

// stagedTree returns the tree of what is in the slot's working tree now, as `git add -A`
// would stage it from the slot's index, less the paths of own: staged by the orchestrator
// where it can (stageTree), by git otherwise.
func (s *Slot) stagedTree(ctx context.Context, own []string) (string, error) {
	if tree, left, err := s.stageTree(ctx, s.index, own); left == "" || err != nil {
		return tree, err
	}
	return s.gitStagedTree(ctx, own)
}

// gitStagedTree is stagedTree done by git.
func (s *Slot) gitStagedTree(ctx context.Context, own []string) (string, error) {
	// The orchestrator's index under another name, so that the slot's stays the
	// checkout's (Reset relies on its file times): a second link to it, since git never
	// writes an index in place (it writes a new file and renames it over the old).
	tmp := s.index + ".candidate"
	os.Remove(tmp)
	if err := os.Link(s.index, tmp); err != nil {
		if err := copyFile(s.index, tmp); err != nil {
			return "", err
		}
	}
	defer os.Remove(tmp)
	env := s.env(tmp)
	if _, err := s.repo.git(ctx, s.Dir, env, "add", "-A", "--ignore-errors", "--", "."); err != nil {
		return "", err
	}
	if len(own) > 0 {
		// Taken out of the index after `git add`, not left out of it by an exclude
		// pathspec: git add fails on a pathspec that names a path .gitignore ignores (a
		// project whose .gitignore says "node_modules", which matches the link too).
		if _, err := s.repo.git(ctx, s.Dir, env, append([]string{"update-index", "--force-remove", "--"}, own...)...); err != nil {
			return "", err
		}
	}
	tree, ok, err := s.repo.writeTree(ctx, s.Dir, tmp, env)
	if err != nil || ok {
		return tree, err
	}
	tree, err = s.repo.git(ctx, s.Dir, env, "write-tree")
	return strings.TrimSpace(tree), err
}

// ownLinksAt returns the paths of links that are in the slot as the orchestrator made
// them: a symbolic link naming its Target, where base tracks nothing. A .gitignore line
// "node_modules/" ignores folders only, so `git add` stages such a link as if it were the
// agent's change. Anything else there is the agent's, and git's rules apply to it as to
// any file: a real folder (ignored or not, as .gitignore says), a link that names another
// place, a link put in place of what base tracks there.
func (s *Slot) ownLinksAt(ctx context.Context, base string, links []Link) ([]string, error) {
	var own []string
	for _, l := range links {
		target, err := os.Readlink(filepath.Join(s.Dir, filepath.FromSlash(l.Path)))
		if err != nil || target != l.Target {
			continue
		}
		_, _, _, err = s.repo.object(ctx, base+":"+l.Path, false)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrMissing) {
			return nil, err
		}
		own = append(own, l.Path)
	}
	return own, nil
}

// commitTree makes a commit of tree with parent and message: written by the orchestrator
// where it knows what git would write (writeCommit), by `git commit-tree` otherwise.
func (r *Repo) commitTree(ctx context.Context, tree, parent, message string) (string, error) {
	if id, ok, err := r.writeCommit(ctx, tree, parent, message, time.Now()); ok || err != nil {
		return id, err
	}
	out, err := run(ctx, r.Root, r.identity, []byte(message), "commit-tree", tree, "-p", parent, "-F", "-")
	return strings.TrimSpace(out), err
}

// DiffPatch is Diff and Patch in one git command: what changed from commit a to commit b,
// and the change as a patch.
func (r *Repo) DiffPatch(ctx context.Context, a, b string) ([]Change, string, error) {
	out, err := r.git(ctx, r.Root, nil, "diff-tree", "-r", "-z", "--raw", "-p", "--binary", "-M", "--no-ext-diff", "--no-textconv", a, b)
	if err != nil {
		return nil, "", err
	}
	// The raw records end with an empty one; the patch follows. A path is never empty.
	raw, patch, _ := strings.Cut(out, "\x00\x00")
	changes, err := parseRaw(raw)
	return changes, patch, err
}

// parseRaw reads `git diff-tree -z --raw`: ":old new oldsha newsha status\0path\0" (two
// paths for a rename or copy).
func parseRaw(out string) ([]Change, error) {
	fields := strings.Split(out, "\x00")
	var changes []Change
	for i := 0; i < len(fields); i++ {
		meta := fields[i]
		if meta == "" {
			continue
		}
		if !strings.HasPrefix(meta, ":") {
			return nil, fmt.Errorf("git diff-tree: unexpected %q", meta)
		}
		parts := strings.Fields(meta[1:])
		if len(parts) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("git diff-tree: unexpected %q", meta)
		}
		c := Change{OldMode: parts[0], NewMode: parts[1], Status: parts[4][:1]}
		i++
		c.Path = fields[i]
		if c.Status == "R" || c.Status == "C" {
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("git diff-tree: %s without its new path", c.Path)
			}
			i++
			c.From, c.Path = c.Path, fields[i]
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// Patch returns the change from a to b as a patch, binary files included.
func (r *Repo) Patch(ctx context.Context, a, b string) (string, error) {
	return r.git(ctx, r.Root, nil, "diff", "--no-ext-diff", "--no-textconv", "--binary", "-M", a, b)
}

// Show returns the file at path in commit (a blob's bytes).
func (r *Repo) Show(ctx context.Context, commit, path string) ([]byte, error) {
	_, kind, body, err := r.object(ctx, commit+":"+filepath.ToSlash(path), true)
	if err == nil && kind != "blob" {
		return nil, fmt.Errorf("%s:%s is a %s, not a file", commit, path, kind)
	}
	return body, err
}

// Tree returns the tree of commit.
func (r *Repo) Tree(ctx context.Context, commit string) (string, error) {
	id, _, _, err := r.object(ctx, commit+"^{tree}", false)
	return id, err
}

// SetRef points ref at commit; DeleteRef removes it. Refs under refs/orchestrator/ keep
// candidates and evidence reachable (so that gc keeps them) and findable after a crash.
func (r *Repo) SetRef(ctx context.Context, ref, commit string) error {
	return r.updateRef(ctx, ref, commit, "")
}

// Ref returns the commit ref points at, or "" when there is no such ref.
func (r *Repo) Ref(ctx context.Context, ref string) string {
	id, _, _, err := r.object(ctx, ref+"^{commit}", false)
	if err != nil {
		return ""
	}
	return id
}

// Untracked lists the files under dir (a folder of the repository, slash-separated) in the
// slot's working tree that commit, the candidate Commit made of it, does not hold: files
// .gitignore kept out of it. Reset leaves none, so any there was made by the attempt. As
// `git ls-files --others`, read without a git process: the commit's folder through the
// long-lived reader, the working tree from the disk (symbolic links not followed).
func (s *Slot) Untracked(ctx context.Context, commit, dir string) ([]string, error) {
	if err := s.made(); err != nil {
		return nil, err
	}
	dir = strings.TrimSuffix(path.Clean(dir), "/")
	tracked := map[string]bool{}
	files, err := s.repo.listTreeAt(ctx, commit+":"+dir, dir+"/")
	if err != nil && !errors.Is(err, ErrMissing) {
		return nil, err
	}
	for _, f := range files {
		tracked[f.path] = true
	}
	var paths []string
	root := filepath.Join(s.Dir, filepath.FromSlash(dir))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(s.Dir, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !tracked[rel] {
			paths = append(paths, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return paths, nil
}
