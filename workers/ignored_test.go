package workers

import (
	"context"
	"fmt"
	"io"
	"os"
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
// file the base tracks although a pattern matches it (tracked files stay tracked). Git's
// own rules decide, read from the candidate's files: a pattern a later line negates, a
// folder a .gitignore deeper down ignores, a pattern anchored to its own folder, a file
// moved into an ignored folder (a rename adds its new path), a .gitignore that ignores
// itself, a folder whose name has a line break (which the long-lived reader cannot be
// asked for), and a .gitignore that is a symbolic link, which git add does not read (so its
// target's patterns ignore nothing).
func TestIgnoredFilesRefused(t *testing.T) {
	srv := serve(t)
	repo, _ := newRepo(t, map[string]string{"README.md": "hello\n"})
	// The base tracks a file its .gitignore (*.tmp) matches, added by force.
	writeAll(t, repo, map[string]string{"kept.tmp": "tracked\n", "docs/notes.txt": "moved later\n"})
	git(t, repo, "add", "-f", "kept.tmp", "docs/notes.txt")
	git(t, repo, "commit", "-q", "-m", "a tracked file a pattern matches")
	base := git(t, repo, "rev-parse", "HEAD")
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	results := resultsOf(t, srv)
	for i, tt := range []struct {
		name    string
		files   map[string]string
		ignored string // the files named in the refusal; "" for an honest candidate
		moved   [2]string
		link    [2]string // a symbolic link and its target
	}{
		{"a new file", map[string]string{"work.txt": "work\n"}, "", [2]string{}, [2]string{}},
		{"a file the root .gitignore ignores", map[string]string{"work.txt": "work\n", "cache.tmp": "forged\n"}, "cache.tmp", [2]string{}, [2]string{}},
		{"a folder its own new .gitignore ignores", map[string]string{"pkg/.gitignore": "gen/\n", "pkg/gen/out.go": "package gen\n"}, "pkg/gen/out.go", [2]string{}, [2]string{}},
		{"a file its .gitignore no longer ignores", map[string]string{".gitignore": "", "now.tmp": "kept\n"}, "", [2]string{}, [2]string{}},
		{"an edit of a tracked file a pattern matches", map[string]string{"kept.tmp": "edited\n"}, "", [2]string{}, [2]string{}},
		{"a file a later line negates", map[string]string{"logs/.gitignore": "*.log\n!keep.log\n", "logs/keep.log": "k\n"}, "", [2]string{}, [2]string{}},
		{"a file a pattern ignores beside one a later line negates", map[string]string{"logs/.gitignore": "*.log\n!keep.log\n", "logs/keep.log": "k\n", "logs/run.log": "r\n"}, "logs/run.log", [2]string{}, [2]string{}},
		{"a folder a deeper .gitignore ignores", map[string]string{"a/b/.gitignore": "build/\n", "a/b/build/c/out.bin": "o\n", "a/b/src.go": "package b\n"}, "a/b/build/c/out.bin", [2]string{}, [2]string{}},
		{"a pattern anchored to its folder, elsewhere", map[string]string{"a/.gitignore": "/gen.go\n", "gen.go": "package x\n", "a/sub/gen.go": "package sub\n"}, "", [2]string{}, [2]string{}},
		{"a pattern anchored to its folder, there", map[string]string{"a/.gitignore": "/gen.go\n", "a/gen.go": "package a\n"}, "a/gen.go", [2]string{}, [2]string{}},
		{"a tracked file moved into an ignored folder", map[string]string{".gitignore": "*.tmp\nout/\n"}, "out/notes.txt", [2]string{"docs/notes.txt", "out/notes.txt"}, [2]string{}},
		{"a .gitignore that ignores itself", map[string]string{"x/.gitignore": "*\n", "x/data": "d\n"}, "x/.gitignore, x/data", [2]string{}, [2]string{}},
		{"a file a pattern ignores in a folder whose name has a line break", map[string]string{"odd\nname/.gitignore": "*.bin\n", "odd\nname/out.bin": "b\n", "odd\nname/src.go": "package odd\n"}, "odd\nname/out.bin", [2]string{}, [2]string{}},
		{"a folder whose name has a line break", map[string]string{"odd\nname/.gitignore": "*.bin\n", "odd\nname/src.go": "package odd\n"}, "", [2]string{}, [2]string{}},
		{"a .gitignore that is a symbolic link", map[string]string{"y/rules": "*.bin\n", "y/out.bin": "b\n"}, "", [2]string{}, [2]string{"y/.gitignore", "rules"}},
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
			if tt.moved[0] != "" {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(clone, tt.moved[1])), 0o755); err != nil {
					t.Fatal(err)
				}
				git(t, clone, "mv", tt.moved[0], tt.moved[1])
				git(t, clone, "add", "-f", tt.moved[1])
			}
			if tt.link[0] != "" {
				if err := os.Symlink(tt.link[1], filepath.Join(clone, tt.link[0])); err != nil {
					t.Fatal(err)
				}
				git(t, clone, "add", "-f", tt.link[0])
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
