package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCommitLeavesOutOwnLinks: in a project whose .gitignore says "node_modules/" (folders
// only), the orchestrator's own link to the person's node_modules is not part of a
// candidate; whatever the agent put in its place is judged as any file is.
func TestCommitLeavesOutOwnLinks(t *testing.T) {
	ctx := context.Background()
	shared := t.TempDir() // the person's node_modules
	elsewhere := t.TempDir()
	tests := []struct {
		name string
		// link is where the orchestrator's link is, in a project folder of the
		// repository or at its root.
		link string
		// agent is what the agent does to the link, after writing its test file.
		agent func(t *testing.T, p string)
		// own is whether Commit is told of the link (without, as before the fix).
		own bool
		// ignore is the project's .gitignore line, "node_modules/" unless it says.
		ignore string
		want   string // the candidate's change at the link's path: "" for none
	}{
		{name: "the link as made", link: "node_modules", agent: func(*testing.T, string) {}, own: true},
		{name: "the link as made, in a project folder", link: "web/node_modules", agent: func(*testing.T, string) {}, own: true},
		{name: "the link as made, in a project that ignores links too", link: "node_modules", agent: func(*testing.T, string) {}, own: true, ignore: "node_modules"},
		{name: "the link as made, in a project that ignores nothing of it", link: "node_modules", agent: func(*testing.T, string) {}, own: true, ignore: "-"},
		{name: "the link not named (control)", link: "node_modules", agent: func(*testing.T, string) {}, want: "A 120000"},
		{name: "replaced by a link elsewhere", link: "node_modules", agent: func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
		}, own: true, want: "A 120000"},
		{name: "replaced by a folder, which .gitignore ignores", link: "node_modules", agent: func(t *testing.T, p string) {
			os.Remove(p)
			write(t, p, "left-pad/index.js", "module.exports = 1\n")
		}, own: true},
		{name: "put where base tracks a folder", link: "vendor", agent: func(t *testing.T, p string) {
			os.RemoveAll(p)
			if err := os.Symlink(shared, p); err != nil {
				t.Fatal(err)
			}
		}, own: true, want: "A 120000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, r := newGitRepo(t)
			ignore := tt.ignore
			switch ignore {
			case "":
				ignore = "node_modules/"
			case "-":
				ignore = ""
			}
			write(t, dir, ".gitignore", "*.log\n"+ignore+"\n")
			write(t, dir, "web/package.json", "{}\n")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "ignore node_modules/")
			head, _ := r.Head(ctx)
			s := resetSlot(t, r, "job-1", head)
			p := filepath.Join(s.Dir, filepath.FromSlash(tt.link))
			if _, err := os.Lstat(p); err != nil {
				// As the orchestrator links it (watch's linkShared): only where nothing is.
				if err := os.Symlink(shared, p); err != nil {
					t.Fatal(err)
				}
			}
			write(t, s.Dir, "add_test.go", "package calc\n")
			tt.agent(t, p)
			var own []Link
			if tt.own {
				own = []Link{{Path: tt.link, Target: shared}}
			}
			cand, err := s.Commit(ctx, head, "", "candidate", own...)
			if err != nil {
				t.Fatal(err)
			}
			changes, err := r.Diff(ctx, head, cand)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range changes {
				got[c.Path] = c.Status + " " + c.NewMode
			}
			if got["add_test.go"] != "A 100644" {
				t.Errorf("the test file: %q, want it added (changes %v)", got["add_test.go"], got)
			}
			if got[tt.link] != tt.want {
				t.Errorf("%s: %q, want %q (changes %v)", tt.link, got[tt.link], tt.want, got)
			}
			if tt.link == "vendor" && got["vendor/dep/dep.go"] != "D 000000" {
				t.Errorf("the tracked folder the link replaced: %q, want it deleted (changes %v)", got["vendor/dep/dep.go"], got)
			}
		})
	}
}
