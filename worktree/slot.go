package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A Slot is a git worktree of the repository that the orchestrator owns: an attempt's
// desk, or the gate's. It lives under the repository's git folder and is reused: Reset
// brings it to any commit, pristine.
//
// The slot's index, the one git would use in it, is the agent's to spoil: every command of
// the orchestrator in a slot uses its own index instead, kept in the state folder, whose
// file times were taken when the orchestrator itself wrote the files. An edit the agent
// makes changes a file's ctime, which it cannot put back, so git sees it even when the
// size and the modification time are the same.
type Slot struct {
	repo *Repo
	// Name names the slot: "job-1", "gate".
	Name string
	// Dir is the slot's working tree.
	Dir string
	// admin is the slot's folder in the git folder (worktrees/<name>).
	admin string
	// index is the orchestrator's index of the slot.
	index string
	// checked are the files CheckCheckout found holding their blob, with what their
	// status said then (guard.go).
	checked map[string]checkedFile
}

// slotsDir is the folder of the slots' working trees: in the user's cache, one folder per
// repository. Not under the repository's git folder, although that is outside the working
// tree too: agent programs refuse to edit files under a path with a .git folder in it
// (Claude Code denies its Write tool there).
func (r *Repo) slotsDir() string { return r.slots }

// Slot returns the slot called name, making its worktree if it does not exist yet. Reset
// it before use.
func (r *Repo) Slot(ctx context.Context, name string) (*Slot, error) {
	s := &Slot{repo: r, Name: name, Dir: filepath.Join(r.slotsDir(), name), index: filepath.Join(r.state, "index", name)}
	for _, d := range []string{filepath.Dir(s.index), r.slotsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	admin, err := r.adminOf(s.Dir)
	if err != nil {
		// A slot left half made: start it again.
		_ = r.removeSlot(ctx, s.Dir)
		if _, err := r.git(ctx, r.Root, nil, "worktree", "add", "--detach", "--no-checkout", "-f", s.Dir, "refs/heads/"+r.Branch); err != nil {
			return nil, err
		}
		if admin, err = r.adminOf(s.Dir); err != nil {
			return nil, err
		}
		if !r.unpark(name, s.Dir) {
			os.Remove(s.index)
		}
	}
	s.admin = admin
	return s, nil
}

// NamedSlot returns the slot called name without making or touching its worktree: the
// desk of an attempt whose agent works elsewhere (on a worker), which needs the slot's name
// for its record and nothing on the disk. Its methods that read or write the worktree
// fail with ErrNoWorktree.
func (r *Repo) NamedSlot(name string) *Slot {
	return &Slot{repo: r, Name: name, Dir: filepath.Join(r.slotsDir(), name), index: filepath.Join(r.state, "index", name)}
}

// ErrNoWorktree is the error of a slot of NamedSlot asked to read or write its worktree.
var ErrNoWorktree = errors.New("the slot has no worktree: its attempt's agent works elsewhere")

// made returns ErrNoWorktree for a slot of NamedSlot.
func (s *Slot) made() error {
	if s.admin == "" {
		return fmt.Errorf("slot %s: %w", s.Name, ErrNoWorktree)
	}
	return nil
}

// parkedDir is the folder of the parked slots (RemoveSlots): their files, kept between
// runs, that git no longer knows as worktrees.
func (r *Repo) parkedDir() string { return filepath.Join(r.slotsDir(), parked) }

// parked names parkedDir in the folder of the slots.
const parked = ".parked"

// unpark moves the files of the parked slot called name into dir, a new worktree without a
// checkout, and reports whether it did: the orchestrator's index of the slot, kept with
// them, then still describes them, and the slot's first Reset writes only the files that
// differ from the commit, not all of them. Whatever the parked files hold (an agent's
// leftovers), Reset makes the slot pristine, as between two attempts.
func (r *Repo) unpark(name, dir string) bool {
	from := filepath.Join(r.parkedDir(), name)
	entries, err := os.ReadDir(from)
	if err != nil {
		return false
	}
	ok := true
	for _, e := range entries {
		if e.Name() == ".git" {
			continue // the new worktree's own is there
		}
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			ok = false
		}
	}
	if err := os.RemoveAll(from); err != nil || !ok {
		// Some files were not moved: the index no longer describes the slot, and the
		// first Reset writes everything.
		return false
	}
	return true
}

// Index returns the path of the orchestrator's index of the slot: after Reset, the index
// of the commit it was reset to, with the times of the files as the checkout wrote them.
// The agent's own git folder starts from a copy (agents.OwnGit.Index).
func (s *Slot) Index() string { return s.index }

// HasSlot reports whether the slot called name exists, as a worktree git knows.
func (r *Repo) HasSlot(name string) bool {
	_, err := r.adminOf(filepath.Join(r.slotsDir(), name))
	return err == nil
}

// adminOf returns the admin folder that git keeps for the worktree at dir, from the
// repository's list (never from the .git file in dir, which an agent could rewrite).
func (r *Repo) adminOf(dir string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(r.Common, "worktrees"))
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		admin := filepath.Join(r.Common, "worktrees", e.Name())
		b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue
		}
		if filepath.Clean(strings.TrimSpace(string(b))) == filepath.Join(dir, ".git") {
			if _, err := os.Stat(dir); err != nil {
				return "", err
			}
			return admin, nil
		}
	}
	return "", fmt.Errorf("%s is not a worktree of %s: %w", dir, r.Root, fs.ErrNotExist)
}

// env is the environment of the orchestrator's git commands in the slot: its admin folder,
// its working tree and the orchestrator's index, whatever the slot's .git file says.
func (s *Slot) env(index string) []string {
	return []string{"GIT_DIR=" + s.admin, "GIT_WORK_TREE=" + s.Dir, "GIT_INDEX_FILE=" + index}
}

// WriteGitFile writes the .git file of the worktree dir, naming its git folder admin,
// whatever an agent left in its place: a new file renamed over it, since the agent may
// have made .git a symbolic link (to the baseline, into another repository), which a
// plain write would follow, or a folder, which is removed first.
func WriteGitFile(dir, admin string) error {
	gitFile := filepath.Join(dir, ".git")
	want := []byte("gitdir: " + admin + "\n")
	if fi, err := os.Lstat(gitFile); err == nil && fi.Mode().IsRegular() {
		if b, err := os.ReadFile(gitFile); err == nil && bytes.Equal(b, want) {
			return nil
		}
	}
	tmp := gitFile + ".orchestrator-tmp"
	os.Remove(tmp)
	if err := os.WriteFile(tmp, want, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, gitFile); err != nil {
		// A folder where the file was (rename cannot replace it): remove it first.
		if rmErr := os.RemoveAll(gitFile); rmErr != nil {
			return err
		}
		return os.Rename(tmp, gitFile)
	}
	return nil
}

// Reset makes the slot a pristine checkout of commit: tracked files as in commit, nothing
// else (untracked and ignored files removed). Only the files that differ are written.
func (s *Slot) Reset(ctx context.Context, commit string) error {
	if err := s.made(); err != nil {
		return err
	}
	// The .git file is git's way into the slot for the agent's own git commands; put it
	// back in case the agent changed or removed it.
	if err := WriteGitFile(s.Dir, s.admin); err != nil {
		return err
	}
	// The slot is its holder's alone: a lock left by a git command of an earlier holder
	// that was stopped (a gate cancelled when its result no longer mattered) is stale.
	os.Remove(s.index + ".lock")
	// Without a git process where the orchestrator's own checkout can (checkout.go); git's
	// own reset and clean otherwise, or after a checkout that stopped half way.
	if ok, err := s.checkout(ctx, commit); err == nil && ok {
		return copyFile(s.index, filepath.Join(s.admin, "index"))
	}
	env := s.env(s.index)
	if _, err := s.repo.git(ctx, s.Dir, env, "reset", "-q", "--no-recurse-submodules", "--hard", commit); err != nil {
		// An index that git cannot read (a crash while writing it): start again.
		os.Remove(s.index)
		if _, err := s.repo.git(ctx, s.Dir, env, "reset", "-q", "--hard", commit); err != nil {
			return err
		}
	}
	if !s.clean(ctx, commit) {
		if _, err := s.repo.git(ctx, s.Dir, env, "clean", "-ffdxq", "-e", "/.git"); err != nil {
			return err
		}
	}
	// The agent's git sees the same state (git status is fast and true in the slot).
	return copyFile(s.index, filepath.Join(s.admin, "index"))
}

// Remove deletes the slot's worktree and the orchestrator's index of it.
func (s *Slot) Remove(ctx context.Context) error {
	os.Remove(s.index)
	return s.repo.removeSlot(ctx, s.Dir)
}

func (r *Repo) removeSlot(ctx context.Context, dir string) error {
	_, err := r.git(ctx, r.Root, nil, "worktree", "remove", "--force", "--force", dir)
	if err != nil {
		// Not a worktree git knows (or a broken one): remove the files and let prune
		// forget it.
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return rmErr
		}
		_, err = r.git(ctx, r.Root, nil, "worktree", "prune")
	}
	return err
}

// RemoveSlots takes every slot but those named in keep out of git's worktrees: at the end
// of a run, and at the start of one, for the slots a crashed run left. Afterwards `git
// worktree list` shows only the person's trees (and the kept slots). A slot's files and the
// orchestrator's index of them are parked, not deleted (a folder of the user's cache, one
// per repository, that nothing but the orchestrator reads): the next run's slot of the
// same name starts from them, so that on a large repository a run does not check out
// every file of every slot again (SPEC §7.1: a slot is reset, not re-created).
func (r *Repo) RemoveSlots(ctx context.Context, keep ...string) error {
	entries, err := os.ReadDir(r.slotsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == parked || slices.Contains(keep, e.Name()) {
			continue
		}
		dir := filepath.Join(r.slotsDir(), e.Name())
		if err := r.park(e.Name(), dir); err != nil {
			os.Remove(filepath.Join(r.state, "index", e.Name()))
			if err := r.removeSlot(ctx, dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Git forgets the worktrees whose folders are gone.
	if _, err := r.git(ctx, r.Root, nil, "worktree", "prune"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// park moves the slot called name, whose working tree is dir, to the parked slots, in
// place of one parked there before.
func (r *Repo) park(name, dir string) error {
	to := filepath.Join(r.parkedDir(), name)
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	if err := os.MkdirAll(r.parkedDir(), 0o700); err != nil {
		return err
	}
	return os.Rename(dir, to)
}

// copyFile copies an index file, keeping its modification time. Git compares file times to
// the second (unless it was built to compare nanoseconds), so it takes an entry whose time
// is not older than the index file's own as "racily clean" and compares its content: a file
// changed in the same second as the checkout wrote it, to the same size, is still seen. A
// copy with a later time would make git trust such an entry.
//
// A copy that is already there, a regular file of the same bytes and time, is left as it is.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if was, err := os.Lstat(dst); err == nil && was.Mode().IsRegular() && was.Size() == fi.Size() && was.ModTime().Equal(fi.ModTime()) {
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, b) {
			return nil
		}
	}
	tmp := dst + ".tmp"
	os.Remove(tmp)
	if err := writeNew(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// removeAll removes p and what is under it, as os.RemoveAll does, and where a folder in it
// could not be read or written (its permissions taken away), gives its owner them back
// and tries again. Symbolic links are removed, never followed.
func removeAll(p string) error {
	err := os.RemoveAll(p)
	if err == nil {
		return nil
	}
	var open func(dir string)
	open = func(dir string) {
		if os.Chmod(dir, 0o700) != nil {
			return
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				open(filepath.Join(dir, e.Name()))
			}
		}
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.IsDir() {
		open(p)
		err = os.RemoveAll(p)
	}
	return err
}

// clean removes from the slot's working tree everything commit does not track, as `git
// clean -ffdx` would (untracked and ignored files, folders of their own, nested
// repositories), but the slot's .git file: without a git process, from the commit's tree
// read through the long-lived reader. A symbolic link is removed, never followed. It
// reports false when it could not, for the caller to ask git.
func (s *Slot) clean(ctx context.Context, commit string) bool {
	files, err := s.repo.listTree(ctx, commit)
	if err != nil {
		return false
	}
	tracked := make(map[string]string, len(files)) // path → kind
	dirs := map[string]bool{".": true}
	for _, f := range files {
		tracked[f.path] = f.kind
		for d := path.Dir(f.path); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	ok := true
	var walk func(rel string)
	walk = func(rel string) {
		dir := filepath.Join(s.Dir, filepath.FromSlash(rel))
		// A folder a checkout makes: a candidate's tests may have made it read-only or
		// unreadable, for the next candidate's run to fail on.
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && fi.Mode()&modeBitsMask != freshPerm(0) {
			os.Chmod(dir, freshPerm(0))
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			ok = false
			return
		}
		for _, e := range entries {
			p := path.Join(rel, e.Name())
			if p == ".git" {
				continue
			}
			switch kind := tracked[p]; {
			case kind == "commit":
				// A submodule: git clean leaves it alone.
			case kind != "":
				if e.IsDir() {
					// A folder where the commit has a file: removed, whatever is in it
					// (the file is checked out in its place).
					if err := removeAll(filepath.Join(s.Dir, filepath.FromSlash(p))); err != nil {
						ok = false
					}
				}
			case e.IsDir() && dirs[p]:
				walk(p)
			default:
				if err := removeAll(filepath.Join(s.Dir, filepath.FromSlash(p))); err != nil {
					ok = false
				}
			}
		}
	}
	walk(".")
	return ok
}
