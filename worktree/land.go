package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/orchestrator/orchestrator/seal"
)

// ErrMoved means the integration branch is no longer where a candidate was based: another
// task landed, or the person committed. The candidate is rebased and judged again.
var ErrMoved = errors.New("the integration branch moved")

// A ConflictError means a change could not be applied: a rebase onto the new head
// conflicted, or landing would overwrite the person's uncommitted changes. Paths names the
// files.
type ConflictError struct {
	What  string // "rebase" or "landing"
	Paths []string
}

func (e *ConflictError) Error() string {
	if e.What == "landing" {
		return "landing would overwrite uncommitted changes in the working tree: " + strings.Join(e.Paths, ", ")
	}
	return "rebase onto the integration head conflicts in " + strings.Join(e.Paths, ", ")
}

// Rebase replays candidate (a commit whose parent is its base) onto onto, as a three-way
// merge of trees in git's object store (no working tree is touched), and returns the new
// commit with message. A conflict is a *ConflictError naming the paths.
func (r *Repo) Rebase(ctx context.Context, candidate, onto, message string) (string, error) {
	out, err := r.git(ctx, r.Root, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", onto, candidate)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	switch {
	case err != nil && exitCode(err) == 1 && len(lines) > 1:
		return "", &ConflictError{What: "rebase", Paths: lines[1:]}
	case err != nil:
		return "", err
	}
	return r.commitTree(ctx, lines[0], onto, message)
}

// Parent returns the first parent of commit.
func (r *Repo) Parent(ctx context.Context, commit string) (string, error) {
	id, _, _, err := r.object(ctx, commit+"^1", false)
	return id, err
}

// IsAncestor reports whether commit a is in the history of commit b (b itself included):
// whether b descends from a. A commit the repository no longer has (a rewritten history
// that git has since collected) is in no history.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	if a == b {
		return true, nil
	}
	_, err := r.git(ctx, r.Root, nil, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	if _, _, _, e := r.object(ctx, a+"^{commit}", false); errors.Is(e, ErrMissing) {
		return false, nil
	}
	return false, err
}

// Land puts candidate on the integration branch as one commit with message, and returns
// it. The candidate's parent must be the branch's head (else ErrMoved: rebase it and judge
// it again). When the person's working tree is on the branch, it follows as a fast-forward
// would (their branch advances as if they had pulled), keeping their uncommitted changes;
// where the landing would overwrite them, nothing lands and the error is a *ConflictError
// naming the paths. When it is on another branch, only the branch moves.
//
// The landed commit's message is message with its seal (SPEC §7.7): an Orchestrator-Seal
// trailer over message's Orchestrator- trailers and the commit's tree, so that Landed and
// LastLanding know the orchestrator's landings from commits anyone else made.
func (r *Repo) Land(ctx context.Context, candidate, message string) (string, error) {
	k, err := r.Key()
	if err != nil {
		return "", err
	}
	// The branch's head, and the candidate's parent and tree.
	var fields [3]string
	for i, name := range []string{"refs/heads/" + r.Branch, candidate + "^1", candidate + "^{tree}"} {
		if fields[i], _, _, err = r.object(ctx, name, false); err != nil {
			return "", fmt.Errorf("land %s: %v", candidate, err)
		}
	}
	head, parent, tree := fields[0], fields[1], fields[2]
	if parent != head {
		return "", ErrMoved
	}
	commit, err := r.commitTree(ctx, tree, head, k.SealMessage(message, tree))
	if err != nil {
		return "", err
	}
	r.landed(commit, head)
	if !r.personOnBranch() {
		if err := r.updateRef(ctx, "refs/heads/"+r.Branch, commit, head); err != nil {
			return "", fmt.Errorf("%w: %v", ErrMoved, err)
		}
		return commit, nil
	}
	if _, err := r.git(ctx, r.Root, nil, "merge", "--ff-only", "-q", "--no-stat", commit); err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			if paths := overwritten(ge.Stderr); len(paths) > 0 {
				return "", &ConflictError{What: "landing", Paths: paths}
			}
			if strings.Contains(ge.Stderr, "Not possible to fast-forward") {
				return "", ErrMoved
			}
		}
		return "", err
	}
	return commit, nil
}

// personOnBranch reports whether the person's working tree has the integration branch
// checked out (its HEAD file names it), so that a landing moves their tree too.
func (r *Repo) personOnBranch() bool {
	b, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	return err == nil && strings.TrimSpace(string(b)) == "ref: refs/heads/"+r.Branch
}

// overwritten reads the paths git lists when a checkout would overwrite local changes or
// untracked files: the tab-indented lines after the error line.
func overwritten(stderr string) []string {
	var paths []string
	listing := false
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.Contains(line, "would be overwritten by"):
			listing = true
		case listing && strings.HasPrefix(line, "\t"):
			paths = append(paths, strings.TrimSpace(line))
		default:
			listing = false
		}
	}
	return paths
}

// Landed returns the commit of the integration branch that landed attempt n of task, or
// "" if none did: after a crash, a landing is never made twice. Only a landing whose seal
// holds counts (LastLanding).
func (r *Repo) Landed(ctx context.Context, task string, n int) string {
	return r.lastWith(ctx, "^Orchestrator-Task: "+task+"$", fmt.Sprintf("^Orchestrator-Attempt: %d$", n))
}

// LastLanding returns the last commit of the integration branch that landed task, or "".
// A commit whose trailers name the task but whose Orchestrator-Seal does not verify over
// its trailers and tree (a commit made outside the orchestrator, or one whose message was
// rewritten) is not a landing: it is skipped (EditedLandings names it).
func (r *Repo) LastLanding(ctx context.Context, task string) string {
	return r.lastWith(ctx, "^Orchestrator-Task: "+task+"$")
}

// lastWith returns the last commit of the integration branch whose message has a line
// matching each pattern (a basic regular expression; task IDs hold no special character)
// and whose seal holds.
func (r *Repo) lastWith(ctx context.Context, patterns ...string) string {
	landings, err := r.landings(ctx, patterns...)
	if err != nil {
		return ""
	}
	for _, l := range landings {
		if l.err == nil {
			return l.commit
		}
	}
	return ""
}

// A landing is a commit of the integration branch with the orchestrator's trailers; err
// says why its seal fails (nil when it holds).
type landing struct {
	commit string
	err    error
}

// landings lists the commits of the integration branch, newest first, whose message has a
// line matching each pattern, each with its seal checked.
func (r *Repo) landings(ctx context.Context, patterns ...string) ([]landing, error) {
	k, err := r.Key()
	if err != nil {
		return nil, err
	}
	args := []string{"log", "-z", "--format=%H %T%n%B", "--all-match"}
	for _, p := range patterns {
		args = append(args, "--grep="+p)
	}
	out, err := r.git(ctx, r.Root, nil, append(args, "refs/heads/"+r.Branch, "--")...)
	if err != nil {
		return nil, err
	}
	var list []landing
	for _, entry := range strings.Split(out, "\x00") {
		head, message, _ := strings.Cut(entry, "\n")
		commit, tree, ok := strings.Cut(strings.TrimSpace(head), " ")
		if !ok {
			continue
		}
		l := landing{commit: commit}
		if err := k.CheckMessage(message, tree); err != nil {
			l.err = seal.Edited("commit "+commit, err)
		}
		list = append(list, l)
	}
	return list, nil
}

// EditedLandings returns the commits of the integration branch that carry an
// Orchestrator-Task trailer but whose seal fails, as *seal.EditedError values naming them:
// they are not landings.
//
// The audit is kept with the head it read: when the branch has since moved only by
// landings this Repo made (sealed as they were made), their audit is the last one's, and no
// git command reads the history again.
func (r *Repo) EditedLandings(ctx context.Context) []error {
	head, err := r.Head(ctx)
	if err != nil {
		return nil
	}
	a := &r.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head != "" {
		at := head
		for at != a.head && a.ours[at] != "" {
			at = a.ours[at]
		}
		if at == a.head {
			a.head = head
			return slices.Clone(a.edited)
		}
	}
	landings, err := r.landings(ctx, "^Orchestrator-Task: ")
	if err != nil {
		return nil
	}
	var out []error
	for _, l := range landings {
		if l.err != nil {
			out = append(out, l.err)
		}
	}
	a.head, a.edited = head, out
	return slices.Clone(out)
}

// landingAudit is the last audit of the branch's landings (EditedLandings) and the
// landings made since, each with its parent.
type landingAudit struct {
	mu     sync.Mutex
	head   string
	edited []error
	ours   map[string]string // landing → parent
}

// landed notes a landing this Repo made on parent.
func (r *Repo) landed(commit, parent string) {
	a := &r.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ours == nil {
		a.ours = map[string]string{}
	}
	a.ours[commit] = parent
}

// SameTree reports whether commits a and b hold the same tree.
func (r *Repo) SameTree(ctx context.Context, a, b string) (bool, error) {
	ta, err := r.Tree(ctx, a)
	if err != nil {
		return false, err
	}
	tb, err := r.Tree(ctx, b)
	if err != nil {
		return false, err
	}
	return ta == tb, nil
}
