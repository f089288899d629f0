package workers

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// TestIgnoredFilesRefused: the job's own worker (its proof holds) sends a candidate that
// adds files its own .gitignore files ignore, which a worker's `git add -A` never takes and
// a local agent's candidate never holds (SPEC §7.1): a file the root .gitignore ignores, a
// folder a .gitignore added in the same candidate ignores. Each is refused, on the base,
// with no ref set and the files named. The honest twins are accepted: a plain new file, a
// file the candidate's .gitignore no longer ignores (git add takes it), and an edit of a
// file the base tracks although a pattern matches it (tracked files stay tracked).
func TestIgnoredFilesRefused(t *testing.T) {
	srv := serve(t)
	repo, _ := newRepo(t, map[string]string{"README.md": "hello\n"})
	// The base tracks a file its .gitignore (*.tmp) matches, added by force.
	writeAll(t, repo, map[string]string{"kept.tmp": "tracked\n"})
	git(t, repo, "add", "-f", "kept.tmp")
	git(t, repo, "commit", "-q", "-m", "a tracked file a pattern matches")
	base := git(t, repo, "rev-parse", "HEAD")
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	results := resultsOf(t, srv)
	for i, tt := range []struct {
		name    string
		files   map[string]string
		ignored string // the files named in the refusal; "" for an honest candidate
	}{
		{"a new file", map[string]string{"work.txt": "work\n"}, ""},
		{"a file the root .gitignore ignores", map[string]string{"work.txt": "work\n", "cache.tmp": "forged\n"}, "cache.tmp"},
		{"a folder its own new .gitignore ignores", map[string]string{"pkg/.gitignore": "gen/\n", "pkg/gen/out.go": "package gen\n"}, "pkg/gen/out.go"},
		{"a file its .gitignore no longer ignores", map[string]string{".gitignore": "", "now.tmp": "kept\n"}, ""},
		{"an edit of a tracked file a pattern matches", map[string]string{"kept.tmp": "edited\n"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := AttemptID{fmt.Sprintf("TASK-%03d", i+1), 1}
			// The worker's tree, written by force: what git add -A would have left out.
			clone := filepath.Join(t.TempDir(), "clone")
			git(t, repo, "clone", "-q", repo, clone)
			writeAll(t, clone, tt.files)
			for name := range tt.files {
				git(t, clone, "add", "-f", name)
			}
			git(t, clone, "commit", "-q", "-m", "work")
			cand := git(t, clone, "rev-parse", "HEAD")
			o := sendCandidate(t, srv, d, results, a, base, cand, func(wr io.Writer) error {
				return gitRepo{dir: clone}.writeBundle(context.Background(), wr, cand, base)
			})
			checkTaken(t, repo, ev, a, o, base, cand, tt.ignored != "", ".gitignore ignores", tt.ignored)
		})
	}
}
