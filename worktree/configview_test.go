package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFiltersOffSeesLaterDrivers: the configuration the orchestrator's git commands read
// first is kept between commands (readConfig), and a filter driver added afterwards is
// still turned off, wherever it is written: .git/config, a file .git/config already
// includes (its own bytes only change), a global config the person had none of, a new
// included file, the slot's config.worktree. Each is written after a first checkout, and
// the next checkout holds the commit's bytes with no driver run.
func TestFiltersOffSeesLaterDrivers(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	dir, r := newGitRepo(t)
	head, _ := r.Head(ctx)
	ran := filepath.Join(t.TempDir(), "ran")
	smudge := func(name string) string {
		return "[filter \"" + name + "\"]\n\tsmudge = touch " + ran + "; sed s/Add/Evil/\n\trequired = true\n"
	}
	included := filepath.Join(t.TempDir(), "included.gitconfig")
	write(t, filepath.Dir(included), filepath.Base(included), "[core]\n\tquotepath = false\n")
	gitT(t, dir, "config", "include.path", included)
	s, err := r.Slot(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		write func()
	}{
		{"the repository's config", func() { gitT(t, dir, "config", "filter.a.smudge", "touch "+ran+"; sed s/Add/Evil/") }},
		{"an included file", func() {
			write(t, filepath.Dir(included), filepath.Base(included), "[core]\n\tquotepath = false\n"+smudge("b"))
		}},
		{"a new global config", func() { write(t, home, ".gitconfig", smudge("c")) }},
		{"the slot's config.worktree", func() {
			gitT(t, dir, "config", "extensions.worktreeConfig", "true")
			admin := strings.TrimSpace(gitT(t, s.Dir, "rev-parse", "--absolute-git-dir"))
			write(t, admin, "config.worktree", smudge("d"))
		}},
	}
	for i, step := range steps {
		if err := s.Reset(ctx, head); err != nil {
			t.Fatal(err)
		}
		step.write()
		// Every step's driver applies to calc.go from now on.
		write(t, dir, ".git/info/attributes", "*.go filter="+string(rune('a'+i))+"\n")
		os.Remove(filepath.Join(s.Dir, "calc.go"))
		if err := s.Reset(ctx, head); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := read(t, s.Dir, "calc.go"); !strings.Contains(got, "func Add") {
			t.Errorf("%s: the smudge filter ran: calc.go is\n%s", step.name, got)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%s: a filter driver ran as the orchestrator", step.name)
		}
	}
}
