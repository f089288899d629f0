package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/templates"
	"github.com/orchestrator/orchestrator/worktree"
	"github.com/spf13/cobra"
)

// initOptions are the options of `orchestrator init`.
type initOptions struct {
	*globalOptions
}

func newInitCommand(g *globalOptions) *cobra.Command {
	opts := &initOptions{globalOptions: g}
	return &cobra.Command{
		Use:   "init",
		Short: "Create .orchestrator/ with empty queues, session state and a commented config",
		Long: `Create .orchestrator/ in the repository root (the git root, or --dir) with an empty task
queue, issue queue, session state, a commented config.yaml and a .gitignore. Files that exist
are kept as they are, so running init again is safe.

Commit the queues and the config (git add .orchestrator takes exactly those): they are the
project's plan and its record, and watch edits them in place. The .gitignore keeps out what
stays on this machine: attempt folders (runs/), markers (complete/), reports/, the
baseline's readable copy, session counters and locks. init names what a .gitignore kept
from an earlier version lacks.

config.yaml names the agent that init finds on PATH: claude, else codex; when neither is
installed, an exec agent, my-agent, whose program ./scripts/agent.sh you write (it reads the
prompt on standard input and ends its output with a tdd-result block). The task queue holds
an example TEST task and its BUILD task in a comment: nothing runs until you write a task.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			return runInit(c.Context(), opts)
		},
	}
}

func runInit(_ context.Context, opts *initOptions) error {
	root := opts.Dir
	if root == "" {
		root = os.Getenv("ORCHESTRATOR_DIR")
	}
	if root == "" {
		root = gitRoot()
	}
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		root = wd
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		return usageErrorf("--dir %s: not a folder", root)
	}
	l := queue.Layout{Root: root}
	for _, d := range []string{l.Dir(), l.Markers(), l.Runs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, name := range templates.Names {
		dst := filepath.Join(l.Dir(), name)
		rel, _ := filepath.Rel(root, dst)
		if _, err := os.Stat(dst); err == nil {
			fmt.Fprintf(opts.Stdout, "kept    %s\n", rel)
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		var data []byte
		var err error
		if name == "config.yaml" {
			data, err = templates.Config(agentPrograms())
		} else {
			data, err = fs.ReadFile(templates.Files(), templates.Source(name))
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(opts.Stdout, "created %s\n", rel)
	}
	if missing := unignored(filepath.Join(l.Dir(), ".gitignore")); len(missing) > 0 {
		rel, _ := filepath.Rel(root, filepath.Join(l.Dir(), ".gitignore"))
		fmt.Fprintf(opts.Stdout, "note: %s does not keep out %s, which stay on this machine: add them\n", rel, strings.Join(missing, " "))
	}
	// watch lands verified work as commits: say now if it cannot (the note says how to
	// make the first commit, which takes .orchestrator/ too).
	if _, err := worktree.Open(context.Background(), root); err != nil {
		fmt.Fprintf(opts.Stdout, "note: %v\n", err)
		return nil
	}
	// What to commit: the queues and the config are the project's plan and record; the
	// rest stays here, and the .gitignore keeps it out of `git add`.
	q := shellQuote(root)
	fmt.Fprintf(opts.Stdout, "commit the queues and the config (the .gitignore keeps out what stays here):\n  git -C %s add %s && git -C %s commit -m 'orchestrator: queues and config'\n", q, queue.DirName, q)
	return nil
}

// unignored returns the patterns of init's .gitignore that the file at path (a .gitignore
// kept from an earlier init, or written by hand) lacks: what of .orchestrator/ it lets
// `git add` take although it belongs to this machine only.
func unignored(path string) []string {
	have, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	want, err := fs.ReadFile(templates.Files(), templates.Source(".gitignore"))
	if err != nil {
		return nil
	}
	lines := map[string]bool{}
	for _, line := range strings.Split(string(have), "\n") {
		lines[strings.TrimPrefix(strings.TrimSpace(line), "/")] = true
	}
	var missing []string
	for _, line := range strings.Split(string(want), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || lines[strings.TrimPrefix(line, "/")] {
			continue
		}
		missing = append(missing, line)
	}
	return missing
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// agentPrograms returns the agent programs among claude and codex that are on PATH, for the
// agent that init's config.yaml names.
func agentPrograms() []string {
	var found []string
	for _, p := range []string{"claude", "codex"} {
		if _, err := exec.LookPath(p); err == nil {
			found = append(found, p)
		}
	}
	return found
}

// gitRoot returns the top of the git work tree around the working directory, or "".
func gitRoot() string {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
