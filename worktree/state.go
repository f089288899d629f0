package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A State is what git sees of a checkout: every path that differs from its commit,
// ignored files included, with its status, size and modification time, so that a change
// to any file shows in the next State.
type State map[string]string

// StateOf returns the state of the checkout at dir.
func StateOf(ctx context.Context, dir string) (State, error) {
	cmd, err := GitCommand(ctx, dir, "status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git status in %s: %w", dir, err)
	}
	state := State{}
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) < 4 {
			continue
		}
		path := e[3:]
		mark := e[:2]
		if fi, err := os.Lstat(filepath.Join(dir, path)); err == nil {
			mark += fmt.Sprintf(" %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
		state[path] = mark
	}
	return state, nil
}

// Changed lists the paths whose state differs between s and after (the first ten, then
// how many more), "" when none does.
func (s State) Changed(after State) string {
	var changed []string
	for p, st := range after {
		if s[p] != st {
			changed = append(changed, p)
		}
	}
	for p := range s {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	slices.Sort(changed)
	if len(changed) > 10 {
		changed = append(changed[:10], "and "+strconv.Itoa(len(changed)-10)+" more")
	}
	return strings.Join(changed, ", ")
}
