package workers

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// packBundle returns a writer of a bundle whose header lines (after the signature line)
// are lines and whose pack git pack-objects makes in dir from input: revisions with
// revs, else object names one a line. A worker's bundle is whatever the worker writes;
// this writes what writeBundle would not.
func packBundle(dir string, lines []string, revs bool, input string) func(io.Writer) error {
	return func(w io.Writer) error {
		if _, err := io.WriteString(w, "# v2 git bundle\n"+strings.Join(lines, "\n")+"\n\n"); err != nil {
			return err
		}
		args := []string{"pack-objects", "--stdout", "-q"}
		if revs {
			args = append(args, "--revs", "--thin")
		}
		c := exec.Command("git", args...)
		var errb strings.Builder
		c.Dir, c.Stdin, c.Stdout, c.Stderr = dir, strings.NewReader(input), w, &errb
		if err := c.Run(); err != nil {
			return fmt.Errorf("git pack-objects: %v: %s", err, errb.String())
		}
		return nil
	}
}

// TestCandidateIsOneCommitOnBase: the job's own worker (its proof holds) names as its
// candidate something else than the full name of one commit whose one parent is the base,
// and sends a bundle that says so. The authority takes the candidate as fetched, and every
// later stage names it by what the outcome said: the name must be a commit's own, never a
// name that git reads as a ref (the integration branch, whose head is a commit on the base
// once another task landed), an option (`--output=FILE`, which git rev-list takes and obeys
// before it fails: an empty file wherever the authority may write), an abbreviation, or a
// tag. Each is refused, on the base, with no ref set and nothing written. The honest twin,
// a bundle that also lists refs of the authority (which an unbundle would not move either),
// is accepted, and those refs stay where they were.
func TestCandidateIsOneCommitOnBase(t *testing.T) {
	srv := serve(t)
	repo, base := newRepo(t, map[string]string{"README.md": "hello\n"})
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, repo, "clone", "-q", repo, clone)
	// The worker's work, and a commit of the authority on the base: another task's landing.
	cand := commitFiles(t, clone, map[string]string{"work.txt": "work\n"})
	landed := commitFiles(t, repo, map[string]string{"landed.txt": "another task's\n"})
	side := git(t, clone, "commit-tree", base+"^{tree}", "-p", base, "-m", "side")
	tree := git(t, clone, "rev-parse", cand+"^{tree}")
	git(t, clone, "tag", "-a", "-m", "tag", "cand-tag", cand)
	tag := git(t, clone, "rev-parse", "cand-tag")
	merge := git(t, clone, "commit-tree", tree, "-p", base, "-p", side, "-m", "two parents")
	onSide := git(t, clone, "commit-tree", tree, "-p", side, "-m", "on the side")
	// A blob no repository holds: a tree that names it is not whole.
	c := exec.Command("git", "hash-object", "--stdin")
	c.Dir, c.Stdin = clone, strings.NewReader("nowhere\n")
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	lost := rawTree(t, clone, treeEntry{"100644", "README.md", git(t, clone, "rev-parse", base+":README.md")}, treeEntry{"100644", "lost.txt", strings.TrimSpace(string(out))})
	holed := git(t, clone, "commit-tree", lost, "-p", base, "-m", "holed")

	precious := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(precious, []byte("the person's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tipLine := func(name string) []string { return []string{name + " " + bundleRef} }
	// The authority's refs but the attempts'.
	refs := func() string {
		var out []string
		for _, l := range strings.Split(git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
			if !strings.HasPrefix(l, "refs/orchestrator/attempts/") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	before := refs()

	results := resultsOf(t, srv)
	for i, tt := range []struct {
		name      string
		candidate string
		bundle    func(io.Writer) error
		refused   bool
	}{
		{"honest, its bundle listing refs of the authority", cand, packBundle(clone, []string{
			cand + " refs/heads/main", cand + " HEAD", cand + " refs/orchestrator/attempts/TASK-099/1", cand + " " + bundleRef,
		}, true, cand+"\n^"+base+"\n"), false},
		{"the integration branch by its name", "refs/heads/main", packBundle(clone, tipLine("refs/heads/main"), true, cand+"\n^"+base+"\n"), true},
		{"HEAD", "HEAD", packBundle(clone, tipLine("HEAD"), true, cand+"\n^"+base+"\n"), true},
		{"an option of git rev-list", "--output=" + precious, packBundle(clone, tipLine("--output="+precious), true, cand+"\n^"+base+"\n"), true},
		{"an abbreviation", cand[:12], packBundle(clone, tipLine(cand[:12]), true, cand+"\n^"+base+"\n"), true},
		{"upper case", strings.ToUpper(cand), packBundle(clone, tipLine(strings.ToUpper(cand)), true, cand+"\n^"+base+"\n"), true},
		{"a tag of a commit on the base", tag, packBundle(clone, tipLine(tag), true, tag+"\n^"+base+"\n"), true},
		{"a tree", tree, packBundle(clone, tipLine(tree), true, cand+"\n^"+base+"\n"), true},
		{"two parents, the base first", merge, packBundle(clone, tipLine(merge), true, merge+"\n^"+base+"\n"), true},
		{"a commit on another commit on the base", onSide, packBundle(clone, tipLine(onSide), true, onSide+"\n^"+base+"\n"), true},
		{"a tree naming a blob nobody has", holed, packBundle(clone, tipLine(holed), false, holed+"\n"+lost+"\n"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := AttemptID{fmt.Sprintf("TASK-%03d", i+1), 1}
			o := sendCandidate(t, srv, d, results, a, base, tt.candidate, tt.bundle)
			if b, err := os.ReadFile(precious); err != nil || string(b) != "the person's\n" {
				t.Errorf("a file of the authority's machine is now %q (%v)", b, err)
			}
			if got := refs(); got != before {
				t.Errorf("refs:\n%s\nwant, beside the attempts':\n%s", got, before)
			}
			checkTaken(t, repo, ev, a, o, base, cand, tt.refused)
		})
	}
	if got := git(t, repo, "rev-parse", "refs/heads/main"); got != landed {
		t.Errorf("the integration branch moved to %s", got)
	}
}
