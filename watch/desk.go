package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/sandbox"
	"github.com/orchestrator/orchestrator/testrun"
	"github.com/orchestrator/orchestrator/worktree"
)

// stateRuns is the folder of the attempt records the gate and crash recovery trust: in the
// repository's git folder, outside every working tree (SPEC §15.2 item 4).
// .orchestrator/runs holds their readable copies.
func stateRuns(repo *worktree.Repo) string { return filepath.Join(repo.State(), "runs") }

// projectDir returns the folder of a checkout that corresponds to the person's project
// root (the folder that holds .orchestrator/, which may be below the repository's top).
func (r *runner) projectDir(checkout string) string {
	return filepath.Join(checkout, r.sub)
}

// takeSlot gives attempt a a worktree: the first job slot no running attempt holds, reset
// to the integration head, which becomes the attempt's base.
func (r *runner) takeSlot(ctx context.Context, a *attempt) error {
	name := ""
	for i := 1; ; i++ {
		name = fmt.Sprintf("job-%d", i)
		if _, held := r.slots[name]; !held {
			break
		}
	}
	return r.holdSlot(ctx, a, name, true)
}

// holdSlot gives attempt a the slot called name; with reset, it is made a pristine
// checkout of the integration head first (an adopted attempt keeps its slot as it is).
func (r *runner) holdSlot(ctx context.Context, a *attempt, name string, reset bool) error {
	s, err := r.repo.Slot(ctx, name)
	if err != nil {
		return err
	}
	r.slots[name] = a.id
	a.slot = s
	if !reset {
		return nil
	}
	if a.base, err = r.repo.Head(ctx); err != nil {
		return err
	}
	if err := s.Reset(ctx, a.base); err != nil {
		return err
	}
	return r.linkShared(s.Dir)
}

// releaseSlot frees the attempt's slot for the next attempt.
func (r *runner) releaseSlot(a *attempt) {
	if a.slot != nil && r.slots[a.slot.Name] == a.id {
		delete(r.slots, a.slot.Name)
	}
}

// sharedDirs are folders that git ignores but tests need, taken from the person's tree
// into every checkout as a symbolic link (a JavaScript project's node_modules).
var sharedDirs = []string{"node_modules"}

// linkShared links the shared folders the person's project has into a checkout.
func (r *runner) linkShared(checkout string) error {
	for _, d := range sharedDirs {
		src := filepath.Join(r.o.Layout.Root, d)
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		dst := filepath.Join(r.projectDir(checkout), d)
		if _, err := os.Lstat(dst); err == nil {
			continue // tracked, or linked already
		}
		if err := os.Symlink(src, dst); err != nil {
			return err
		}
	}
	return nil
}

// scopeDir is the orchestrator's folder as a path of the repository: no candidate may
// change anything under it.
func (r *runner) scopeDir() string {
	return filepath.ToSlash(filepath.Join(r.sub, ".orchestrator")) + "/"
}

// makeCandidate turns what the agent left in its slot into the attempt's candidate commit,
// under refs/orchestrator/attempts/<ID>/<n>, and lists git's changes; the patch is kept as
// changes.diff in the attempt folder.
func (r *runner) makeCandidate(ctx context.Context, a *attempt) error {
	if a.slot == nil {
		return errors.New("the attempt has no worktree")
	}
	ref := fmt.Sprintf("refs/orchestrator/attempts/%s/%d", a.id, a.n)
	c, err := a.slot.Commit(ctx, a.base, ref, fmt.Sprintf("%s attempt %d (candidate)\n", a.id, a.n))
	if err != nil {
		return err
	}
	a.candidate = c
	if a.changes, err = r.repo.Diff(ctx, a.base, c); err != nil {
		return err
	}
	// Files under .orchestrator/ that .gitignore keeps out of the candidate still count.
	if a.strays, err = a.slot.Untracked(ctx, r.scopeDir()); err != nil {
		return err
	}
	patch, err := r.repo.Patch(ctx, a.base, c)
	if err != nil {
		return err
	}
	a.write("changes.diff", []byte(patch))
	return nil
}

// changedPaths returns the candidate's changed paths relative to the project root, as the
// gates read them, and the paths under the orchestrator's folder, which are out of scope.
func (r *runner) changedPaths(a *attempt) (changed, forbidden []string) {
	prefix := ""
	if r.sub != "." && r.sub != "" {
		prefix = filepath.ToSlash(r.sub) + "/"
	}
	forbidden = append(forbidden, a.strays...)
	for _, p := range worktree.Paths(a.changes) {
		if strings.HasPrefix(p, r.scopeDir()) {
			if !slices.Contains(forbidden, p) {
				forbidden = append(forbidden, p)
			}
			continue
		}
		if prefix != "" {
			if !strings.HasPrefix(p, prefix) {
				changed = append(changed, "../"+p) // outside the project: never a test file
				continue
			}
			p = strings.TrimPrefix(p, prefix)
		}
		changed = append(changed, p)
	}
	return changed, forbidden
}

// gateDir makes the gate's pristine checkout of commit (SPEC §7.6): a slot of its own,
// never the agent's worktree, so that files the agent left untracked or ignored are not
// there, and whose bytes are the commit's blobs (else a *worktree.CheckoutError naming the
// file, which stops the run). It returns the project folder in it.
func (r *runner) gateDir(ctx context.Context, commit string) (string, error) {
	if r.gate == nil {
		s, err := r.repo.Slot(ctx, "gate")
		if err != nil {
			return "", err
		}
		r.gate = s
	}
	if err := r.gate.Reset(ctx, commit); err != nil {
		return "", err
	}
	if err := r.gate.CheckCheckout(ctx, commit); err != nil {
		return "", err
	}
	if err := r.linkShared(r.gate.Dir); err != nil {
		return "", err
	}
	return r.projectDir(r.gate.Dir), nil
}

// landingMessage is the landed commit's message: the task's ID and title, and trailers
// that say what was verified (SPEC §7.7).
func landingMessage(a *attempt, title string, v *gate.Verdict, red string) string {
	var b strings.Builder
	subject := a.id
	if title = strings.TrimSpace(title); title != "" {
		subject += ": " + title
	}
	fmt.Fprintf(&b, "%s\n\nOrchestrator-Task: %s\nOrchestrator-Attempt: %d\nOrchestrator-Gate: %s\n", subject, a.id, a.n, oneLine(v.Reason))
	if red != "" {
		fmt.Fprintf(&b, "Orchestrator-Red: %s\n", red)
	}
	if a.ruling != "" {
		fmt.Fprintf(&b, "Orchestrator-Review: %s\n", oneLine(a.ruling))
	}
	if len(v.ChangedTests) > 0 {
		// Existing tests a TEST task rewrote to state new behaviour (SPEC §7.2): people see them.
		fmt.Fprintf(&b, "Orchestrator-Changed-Tests: %s\n", strings.Join(v.ChangedTests, ", "))
	}
	return b.String()
}

// Landing results beside a plain pass.
var (
	// errLandingConflict: the landing would overwrite the person's uncommitted changes.
	errLandingConflict = errors.New("landing conflict")
	// errRebaseConflict: the candidate does not apply to the new integration head.
	errRebaseConflict = errors.New("rebase conflict")
)

// maxRebaseConflicts is how many times in a row a task goes back to pending for a rebase
// conflict before it is blocked (SPEC §7.7).
const maxRebaseConflicts = 3

// land puts a verified candidate on the integration branch (SPEC §7.7) and returns the
// commit that verifies the task. A candidate that changes nothing lands no commit: the
// head it was verified at is its commit. One whose base is no longer the integration head
// is rebased onto it and judged again there by rejudge (two tasks that pass alone and
// break together never both land): a verdict that fails then is returned as is. A rebase
// conflict is errRebaseConflict, a landing that would overwrite the person's uncommitted
// changes errLandingConflict, both naming the paths.
func (r *runner) land(ctx context.Context, a *attempt, message string, rejudge func(commit string) (*gate.Verdict, error)) (string, *gate.Verdict, error) {
	if a.unchanged() {
		return a.candidate, nil, nil
	}
	cand := a.candidate
	for tries := 0; ; tries++ {
		commit, err := r.repo.Land(ctx, cand, message)
		var ce *worktree.ConflictError
		switch {
		case errors.As(err, &ce):
			return "", nil, fmt.Errorf("%w: %v", errLandingConflict, ce)
		case errors.Is(err, worktree.ErrMoved) && tries < 3:
			// Another task landed, or the person committed: rebase onto the new head and
			// judge it again there.
			head, err := r.repo.Head(ctx)
			if err != nil {
				return "", nil, err
			}
			rebased, err := r.repo.Rebase(ctx, cand, head, fmt.Sprintf("%s attempt %d (candidate, on %.12s)\n", a.id, a.n, head))
			if errors.As(err, &ce) {
				return "", nil, fmt.Errorf("%w: %v", errRebaseConflict, ce)
			}
			if err != nil {
				return "", nil, err
			}
			cand = rebased
			_ = r.repo.SetRef(ctx, fmt.Sprintf("refs/orchestrator/attempts/%s/%d", a.id, a.n), cand)
			r.report.event(a.id, "rebased", fmt.Sprintf("attempt %d: the integration branch moved; judging it again on %.12s", a.n, head))
			v, err := rejudge(cand)
			if err != nil || !v.Pass {
				return "", v, err
			}
			a.verdict = v // the run on the new head is the one the baseline grows from
			continue
		case err != nil:
			return "", nil, err
		}
		return commit, nil, nil
	}
}

// openSandbox decides at the start of a run whether agents and the gate's commands run in
// bubblewrap (SPEC §7.6, §15.2): config sandbox auto uses it where it runs and says once
// when it does not; bwrap refuses to start without it; off never uses it. Without it, the
// run says that the gate trusts the candidate's code.
func (r *runner) openSandbox() error {
	switch r.o.Config.Sandbox {
	case "off":
		r.report.event("", "warning", "sandbox: off: the gate runs the candidates' tests and code with your user's rights, and trusts them")
		return nil
	case "bwrap":
		if err := sandbox.Available(); err != nil {
			return fmt.Errorf("sandbox: bwrap: %w", err)
		}
	default:
		if err := sandbox.Available(); err != nil {
			r.report.event("", "warning", "agents and the gate's test runs go without a sandbox, and the gate trusts the candidates' code: "+err.Error())
			return nil
		}
	}
	r.jail = true
	spec := gate.JailSpec{
		Env:      r.env,
		Hide:     []string{r.o.Layout.Root, r.repo.Root, r.repo.Common, r.repo.State()},
		Readable: r.readable(),
		Cache:    gate.CacheDir(),
		Network:  r.o.Config.GateNetwork == "host",
	}
	j, err := gate.NewJail(spec)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	r.gateJail = j
	return nil
}

// readable are the paths the sandboxes show read-only that they would hide otherwise: the
// shared folders of the person's tree that checkouts link to, and config sandbox_readable.
func (r *runner) readable() []string {
	var out []string
	for _, d := range sharedDirs {
		src := filepath.Join(r.o.Layout.Root, d)
		if fi, err := os.Stat(src); err == nil && fi.IsDir() {
			out = append(out, src)
		}
	}
	for _, d := range r.o.Config.SandboxReadable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.o.Layout.Root, d)
		}
		out = append(out, d)
	}
	return out
}

// gateInput fills the sandbox of the gate's commands into in, for a run in checkout: the
// jail and its environment, or the pinned environment without one.
func (r *runner) gateInput(in gate.Input, checkout string) gate.Input {
	in.Env = r.env
	if r.gateJail != nil {
		in.Jail, in.Env, in.Checkout = r.gateJail, r.gateJail.Env, checkout
	}
	return in
}

// runOptions are the test-run options of a command run outside the gate proper (the
// start's baseline): the same sandbox and environment.
func (r *runner) runOptions(checkout, dir string) []testrun.Option {
	in := r.gateInput(gate.Input{Root: dir}, checkout)
	return gate.RunOptions(in)
}
