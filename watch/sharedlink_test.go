package watch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedLinkIsNotTheAgents: in a TypeScript project whose .gitignore says
// "node_modules/" (git then ignores folders of that name, not a symbolic link), the link
// to the person's node_modules that the orchestrator puts in each slot is not the test
// writer's change: an honest TEST task and BUILD task land, and neither candidate nor the
// branch holds the link.
func TestSharedLinkIsNotTheAgents(t *testing.T) {
	t.Parallel()
	l := loadLang(t, "ts")
	if why := l.available(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	r := matrixRepo(t, l, scenarios[0])
	// The person's node_modules is a folder, which .gitignore keeps out of their commits;
	// its packages are the runner tests' fixture's.
	nm := filepath.Join(r.root, "node_modules")
	if err := os.Remove(nm); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(nm, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(tsModules())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(tsModules(), e.Name()), filepath.Join(nm, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	r.write(".gitignore", "node_modules/\n")

	code, out := r.run("watch", "--once")
	if got := r.git("ls-files", "node_modules"); got != "" {
		t.Fatalf("the person's node_modules was committed by the test's setup: %q", got)
	}
	st := r.statuses()
	for _, id := range []string{"TASK-T01", "TASK-001"} {
		log := r.read(filepath.Join(".orchestrator/runs", id, "1", "gate.log"))
		if st[id] != "completed" {
			t.Errorf("%s is %q, want completed (exit %d)\n%s\n%s", id, st[id], code, log, out)
		}
		for _, line := range strings.Split(log, "\n") {
			if strings.HasPrefix(line, "changed files:") && strings.Contains(line, "node_modules") {
				t.Errorf("%s's gate.log names the orchestrator's link as a change: %s", id, line)
			}
		}
	}
	if got := r.git("ls-tree", "--name-only", "main", "node_modules"); got != "" {
		t.Errorf("the branch holds %q, want no node_modules", got)
	}
}
