package watch

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/fsnotify/fsnotify"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/worktree"
)

// privateMarkers is the name of an agent's own marker folder in its run folder: in the
// sandbox, the only marker folder it can write (SPEC §15.2), so that it can claim its own
// task and no other.
const privateMarkers = "markers"

// agentState is the name of the private folder of an agent program's own state in its run
// folder: made and seeded at the agent's start, removed at its end (agents.Sandbox.Config).
const agentState = "agent-state"

// sandbox returns the jail of an agent of attempt a (SPEC §15.2), or nil when agents run
// without one. The agent runs argv for the adapter called adapter in work, a slot; runDir
// is its run's folder (the attempt's, or a role's in it) and markerDir its own marker
// folder there.
// It may write its worktree, markerDir, its program's private state folder and the
// folders config sandbox_writable names; it reads what the gate's commands read (the
// system, the toolchains of the home folder, config sandbox_readable) and the
// repository's objects, which its own git folder borrows (agents.OwnGit: its git status,
// diff, add, commit and stash work, and write only there); the person's tree, the
// repository's git folder, the
// orchestrator's state and key, the other slots and the home folder are hidden (an empty
// home inside), and its environment is cleared but for what AgentEnv keeps and config
// agent_env.
func (r *runner) sandbox(a *attempt, adapter string, argv []string, work, runDir, markerDir string) *agents.Sandbox {
	if !r.jail {
		return nil
	}
	program := agents.ProgramOf(adapter, argv)
	config := filepath.Join(runDir, agentState)
	_ = os.RemoveAll(config) // a crashed run's
	sb := &agents.Sandbox{
		Dir:      work,
		Writable: []string{markerDir},
		Hide:     r.hidden(filepath.Dir(work)),
		Program:  program,
		Pass:     r.o.Config.AgentEnv,
		Config:   config,
	}
	if r.gateJail != nil {
		sb.ReadOnly = r.gateJail.Readable()
	}
	sb.ReadOnly = append(sb.ReadOnly, filepath.Join(r.repo.Common, "objects"))
	if _, err := os.Lstat(filepath.Join(work, ".git")); err == nil && a.base != "" {
		// The repository's git folder is hidden; the agent's git works on a folder of its
		// own that borrows the repository's objects, at the attempt's base.
		sb.Git = &agents.OwnGit{Dir: filepath.Join(runDir, "agent-git"), Objects: filepath.Join(r.repo.Common, "objects"), Base: a.base}
		// Its index starts from the slot's, whose file times spare reading every file.
		for _, s := range []*worktree.Slot{a.slot, r.gate} {
			if s != nil && s.Dir == work {
				sb.Git.Index = s.Index()
			}
		}
	}
	if program == agents.Claude {
		// Claude Code's sessions go from attempt to attempt of the task, for the re-emit
		// prompt that resumes one (mode D); nothing else of its state does.
		sb.Sessions = filepath.Join(r.runs, a.id, "sessions")
	}
	for _, d := range r.o.Config.SandboxWritable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.o.Layout.Root, d)
		}
		sb.Writable = append(sb.Writable, d)
	}
	if home, err := os.UserHomeDir(); err == nil {
		sb.Home = home
	}
	return sb
}

// hidden are the folders no agent sees: the person's tree, the repository's git folder and
// the orchestrator's state in it, the folder of the slots (each agent is shown its own),
// the gate's caches and the user's configuration folder, where the key of the seals is.
func (r *runner) hidden(slots string) []string {
	out := []string{r.o.Layout.Root, r.repo.Root, r.repo.Common, r.repo.State(), slots, gate.CacheDir(), gate.ImpactDir()}
	if cfg, err := os.UserConfigDir(); err == nil {
		out = append(out, cfg)
	}
	return slices.Compact(out)
}

// agentMarkers returns the marker folder of an attempt's agent: its own, in the attempt
// folder, made and watched, when it runs in the sandbox; else the shared one.
func (r *runner) agentMarkers(a *attempt) (string, error) {
	if !r.jail {
		return r.o.Layout.Markers(), nil
	}
	dir := filepath.Join(a.dir, privateMarkers)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	r.watchMarkers(a.id, dir)
	return dir, nil
}

// watchMarkers has the loop hear of markers written in dir, task id's private marker
// folder, and forward them (forwardMarker).
func (r *runner) watchMarkers(id, dir string) {
	if r.watcher == nil {
		return
	}
	if r.markerDirs == nil {
		r.markerDirs = map[string]string{}
	}
	if err := r.watcher.Add(dir); err == nil {
		r.markerDirs[dir] = id
	}
}

// forwardMarker moves the marker of task id that its agent wrote in its private marker
// folder into the shared one, where the loop, recovery and the person find it: only
// <ID>.done and <ID>.failed, read as markers.Find reads them (a regular file, its size
// bounded); anything else the agent left there is no claim. A marker that is not a
// regular file is removed.
func (r *runner) forwardMarker(id, dir string) {
	for range 2 {
		m, err := markers.Find(dir, id)
		if err != nil {
			for _, k := range []markers.Kind{markers.Done, markers.Failed} {
				if p, perr := markers.Path(dir, id, k); perr == nil {
					if fi, lerr := os.Lstat(p); lerr == nil && !fi.Mode().IsRegular() {
						os.Remove(p)
					}
				}
			}
			continue
		}
		if m == nil {
			return
		}
		if markers.Write(r.o.Layout.Markers(), id, m.Kind, m.Body) != nil {
			return
		}
		os.Remove(m.Path)
	}
}

// privateMarkerEvent handles an event of the file watcher in a private marker folder, and
// reports whether it was one.
func (r *runner) privateMarkerEvent(ev fsnotify.Event) bool {
	dir := filepath.Dir(ev.Name)
	id, ok := r.markerDirs[dir]
	if !ok {
		return false
	}
	if a := r.running[id]; a != nil && filepath.Dir(dir) == a.dir {
		r.forwardMarker(id, dir)
	}
	return true
}

// endPrivate forwards what the ended agent of a left in its private marker folder, stops
// watching the folder, and removes it and the private state folder of its program.
func (r *runner) endPrivate(a *attempt) {
	dir := filepath.Join(a.dir, privateMarkers)
	if _, err := os.Stat(dir); err != nil {
		return
	}
	r.forwardMarker(a.id, dir)
	if r.watcher != nil {
		_ = r.watcher.Remove(dir)
	}
	delete(r.markerDirs, dir)
	os.RemoveAll(dir)
	os.RemoveAll(filepath.Join(a.dir, agentState))
}
