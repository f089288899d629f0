package workers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/ownproc"
	"github.com/orchestrator/orchestrator/worktree"
)

// safeGit are the settings every git command of this package runs with, as package
// worktree's: no hook, no fsmonitor, no automatic gc, no line-ending conversion, so that
// nothing an agent wrote in a repository runs as the worker or the authority.
var safeGit = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.autocrlf=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.detachedHead=false",
}

// A gitRepo runs git on one repository: the authority's (dir is its folder) or a
// worker's cache (gitDir is its bare repository, workTree a job's checkout).
type gitRepo struct {
	dir      string // -C
	gitDir   string // --git-dir, "" for none
	workTree string // --work-tree, "" for none
	env      []string
	format   string // the object format, once known (objectFormat)
}

// objectFormat returns the repository's object format (sha1, sha256), asking git unless
// g knows it.
func (g gitRepo) objectFormat(ctx context.Context) (string, error) {
	if g.format != "" {
		return g.format, nil
	}
	out, err := g.run(ctx, nil, "rev-parse", "--show-object-format")
	return strings.TrimSpace(out), err
}

// cmd returns the git command for args.
func (g gitRepo) cmd(ctx context.Context, args ...string) *exec.Cmd {
	pre := slices.Clone(safeGit)
	if g.gitDir != "" {
		pre = append(pre, "--git-dir="+g.gitDir)
	}
	if g.workTree != "" {
		pre = append(pre, "--work-tree="+g.workTree)
	}
	c := exec.CommandContext(ctx, "git", append(pre, args...)...)
	c.Dir = g.dir
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") || name == "LC_ALL" {
			continue // nothing sends git to another repository, index or work tree
		}
		env = append(env, kv)
	}
	c.Env = append(env, g.env...)
	return c
}

// run runs git and returns its standard output; stdin may be nil.
func (g gitRepo) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	c := g.cmd(ctx, args...)
	c.Stdin = stdin
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := ownproc.Run(c); err != nil {
		return out.String(), fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// commit returns the full name of commit rev, or "" when the repository has no such
// commit.
func (g gitRepo) commit(ctx context.Context, rev string) string {
	out, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", rev+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// commitTree returns the full names of commit rev and of its tree, or "" when the
// repository has no such commit.
func (g gitRepo) commitTree(ctx context.Context, rev string) (commit, tree string) {
	if strings.HasPrefix(rev, "-") {
		return "", "" // an option, not a name
	}
	out, err := g.run(ctx, nil, "rev-parse", rev+"^{commit}", rev+"^{tree}", "--")
	if f := strings.Fields(out); err == nil && len(f) == 3 {
		return f[0], f[1]
	}
	return "", ""
}

// parents returns the parents of commit c, named by its full object name, as its own
// header lists them; ok is false when the repository has no commit of that name (an
// object of another type, a tag of a commit among them, is none). One git process reads
// the type and the header: an object read as its type is never peeled.
func (g gitRepo) parents(ctx context.Context, c string) (parents []string, ok bool, err error) {
	out, err := g.run(ctx, strings.NewReader(c+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, false, err
	}
	head, body, _ := strings.Cut(out, "\n")
	if f := strings.Fields(head); len(f) != 3 || f[0] != c || f[1] != "commit" {
		return nil, false, nil
	}
	for _, line := range strings.Split(body, "\n") {
		if line == "" {
			break // the header ends; the message follows
		}
		if p, found := strings.CutPrefix(line, "parent "); found {
			parents = append(parents, p)
		}
	}
	return parents, true, nil
}

// isAncestor reports whether commit a is an ancestor of commit b (or b itself).
func (g gitRepo) isAncestor(ctx context.Context, a, b string) bool {
	_, err := g.run(ctx, nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// bundleRef is the one ref a bundle of this package names: its tip.
const bundleRef = "refs/orchestrator/bundle"

// writeBundle writes to w a git bundle of tip, without what prereq (a commit, "" for
// none) already holds: the bundle names prereq as its prerequisite, and its pack is thin
// against it. It is git's own format (git bundle verify and unbundle read it); it is
// written here because git bundle create wants a ref for its tip, and the authority's
// refs are not ours to add to.
func (g gitRepo) writeBundle(ctx context.Context, w io.Writer, tip, prereq string) error {
	format, err := g.objectFormat(ctx)
	if err != nil {
		return err
	}
	var head strings.Builder
	if format == "sha1" {
		head.WriteString("# v2 git bundle\n")
	} else {
		head.WriteString("# v3 git bundle\n@object-format=" + format + "\n")
	}
	revs := tip + "\n"
	if prereq != "" {
		head.WriteString("-" + prereq + "\n")
		revs += "^" + prereq + "\n"
	}
	head.WriteString(tip + " " + bundleRef + "\n\n")
	if _, err := io.WriteString(w, head.String()); err != nil {
		return err
	}
	c := g.cmd(ctx, "pack-objects", "--revs", "--thin", "--stdout", "--delta-base-offset", "-q")
	c.Stdin = strings.NewReader(revs)
	c.Stdout = w
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := ownproc.Run(c); err != nil {
		return fmt.Errorf("git pack-objects: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return nil
}

// unbundleChecked adds the objects of a bundle a worker wrote (candidate ^base, as
// writeBundle writes it) to the repository, with git's strict object checks, and returns
// the tip it names. No ref is changed.
//
// The candidate is taken as it is, never checked out and committed again, so git's
// checks are what stands between a worker's objects and the stages that read them: a
// tree whose entries are not ones git writes (".git", "..", a name with a slash, two
// entries of one name, entries out of order, a mode git does not write), which a checkout
// would refuse or read otherwise than the diff, is refused here (`git index-pack
// --strict`, as `git fetch` with fetch.fsckObjects), and so is a pack whose objects
// name objects the repository lacks. `git bundle unbundle` does neither.
func (g gitRepo) unbundleChecked(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 4096)
	tip := ""
	for n := 0; ; n++ {
		line, err := r.ReadSlice('\n')
		if err != nil || n > 16 {
			return "", fmt.Errorf("bundle %s: not a bundle of a candidate", path)
		}
		text := strings.TrimSuffix(string(line), "\n")
		switch {
		case n == 0:
			if text != "# v2 git bundle" && text != "# v3 git bundle" {
				return "", fmt.Errorf("bundle %s: not a git bundle", path)
			}
		case text == "":
			if tip == "" {
				return "", fmt.Errorf("bundle %s: no %s", path, bundleRef)
			}
			// A bad file mode (40755, 120755, 100664, 644) is only noted by fsck, even
			// with --strict: git reads it as its canonical mode, a reader of the tree's
			// bytes as written. Git never writes one.
			c := g.cmd(ctx, "index-pack", "--stdin", "--fix-thin", "--strict=badFilemode=error")
			c.Stdin = r
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := ownproc.Run(c); err != nil {
				return "", fmt.Errorf("git index-pack: %v: %s", err, strings.TrimSpace(errb.String()))
			}
			return tip, nil
		default:
			if sha, ref, ok := strings.Cut(text, " "); ok && ref == bundleRef && !strings.HasPrefix(sha, "-") {
				tip = sha
			}
		}
	}
}

// unbundle adds the objects of the bundle file at path to the repository (its
// prerequisites must be there) and returns the tip it names. No ref is changed.
func (g gitRepo) unbundle(ctx context.Context, path string) (string, error) {
	out, err := g.run(ctx, nil, "bundle", "unbundle", path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if sha, ref, ok := strings.Cut(strings.TrimSpace(line), " "); ok && ref == bundleRef {
			return sha, nil
		}
	}
	return "", fmt.Errorf("bundle %s: no %s", path, bundleRef)
}

// ignoredAdded returns the paths commit cand adds to base that cand's own .gitignore files
// ignore (SPEC §7.1: what .gitignore ignores is never part of a change). A worker makes its
// candidate with `git add -A`, which never takes such a file: only a worker that wrote its
// tree by other means sends one, to reach the gate with what a local agent's candidate
// never holds (a compiled module beside its source, a build's output). Only the tree's
// .gitignore files count, not the authority's or the worker's own excludes: a worker's
// may leave out more files, never fewer. Files the base tracks stay tracked, as they do
// for git add; a .gitignore that is a symbolic link is not read, as git add does not read
// one.
//
// The added paths, and the .gitignore files of their folders, are read through the
// repository's long-lived reader (repo). Git rules only where such a file is there to
// rule: `git ls-files --others --ignored` over a scratch tree of those .gitignore files
// and an empty file for each added path, with no pattern file but theirs.
func ignoredAdded(ctx context.Context, repo *worktree.Repo, g gitRepo, base, cand string) ([]string, error) {
	changes, err := repo.Diff(ctx, base, cand)
	if err != nil {
		return nil, err
	}
	var added []string
	for _, c := range changes {
		if c.Status == "A" || c.Status == "R" || c.Status == "C" { // a rename's new path is added
			added = append(added, c.Path)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	// The .gitignore files that can rule on an added path: one in each of its folders.
	rules := map[string][]byte{}
	looked := map[string]bool{}
	for _, p := range added {
		for dir := path.Dir(p); ; dir = path.Dir(dir) {
			name := path.Join(dir, ".gitignore")
			if !looked[name] {
				looked[name] = true
				mode, body, err := repo.File(ctx, cand, name)
				switch {
				case errors.Is(err, worktree.ErrMissing):
				case err != nil:
					return nil, err
				case mode == "100644" || mode == "100755":
					rules[name] = body
				}
			}
			if dir == "." {
				break
			}
		}
	}
	if len(rules) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "orchestrator-ignored-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	write := func(name string, body []byte) error {
		if !filepath.IsLocal(name) {
			return fmt.Errorf("candidate %s: path %q", cand, name)
		}
		p := filepath.Join(dir, "tree", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		return os.WriteFile(p, body, 0o600)
	}
	for name, body := range rules {
		if err := write(name, body); err != nil {
			return nil, err
		}
	}
	for _, p := range added {
		if _, ok := rules[p]; !ok {
			if err := write(p, nil); err != nil {
				return nil, err
			}
		}
	}
	s := g
	s.workTree = filepath.Join(dir, "tree")
	s.env = append(slices.Clone(g.env), "GIT_INDEX_FILE="+filepath.Join(dir, "index")) // none: every file is another
	out, err := s.run(ctx, nil, "ls-files", "-z", "--others", "--ignored", "--exclude-per-directory=.gitignore")
	if err != nil {
		return nil, err
	}
	isAdded := map[string]bool{}
	for _, p := range added {
		isAdded[p] = true
	}
	var ignored []string
	for _, p := range strings.Split(out, "\x00") {
		if isAdded[p] {
			ignored = append(ignored, p)
		}
	}
	return ignored, nil
}
