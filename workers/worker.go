package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/worktree"
)

// How often a worker says it is alive, and how long the workers bucket keeps what it
// said: a worker is listed until three heartbeats are missed.
const (
	heartbeatInterval = 5 * time.Second
	heartbeatTTL      = 3 * heartbeatInterval
)

// A Workspace is where a job's agent runs on a worker.
type Workspace struct {
	// Dir is the agent's checkout of the job's base, its working folder: a worktree of the
	// worker's cache repository, with a .git file. Each of the worker's job lanes keeps
	// its own between jobs, reset to the next job's base and cleaned.
	Dir string
	// Markers is the agent's own marker folder (ORCHESTRATOR_MARKER_DIR); Log the agent
	// log file, which the worker returns whole.
	Markers string
	Log     string
	// Attempt is the job's private folder on the worker (ORCHESTRATOR_ATTEMPT_DIR):
	// Markers and Log are in it, and a sandbox's private folders go there.
	Attempt string
	// Objects is the cache repository's objects folder, which an agent's own git folder
	// borrows (agents.OwnGit); Hide the folders the agent must not see (the cache).
	Objects string
	Hide    []string
	// Worker is the worker's name (ORCHESTRATOR_WORKER).
	Worker string
}

// A RunResult is what Run reports of an agent run.
type RunResult struct {
	// ExitCode is the agent's exit code, -1 for a signal.
	ExitCode int
	// Stdout is the tail of what the agent printed (its final message is there).
	Stdout string
	// Stopped says why the agent was stopped ("timeout", "worker stopped"), "" when it
	// ended on its own.
	Stopped string
}

// A RunFunc runs job's agent in ws and returns once it has ended; ctx ends with the job's
// timeout or the worker's stop, and the agent must then be stopped. An error is the
// worker's (the agent could not start), not the agent's: the job goes back to the queue.
type RunFunc func(ctx context.Context, job Job, ws Workspace) (RunResult, error)

// A Worker takes jobs from the job stream and runs them, Jobs at a time. Its cache holds a
// repository of the bases it has fetched, so that a later base costs only its new objects.
type Worker struct {
	// Name names the worker in heartbeats and outcomes; unique among the workers.
	Name string
	// URL is the NATS server; Token the workers' password (user WorkerUser).
	URL   string
	Token string
	// CacheDir is the worker's own folder: its repository of bases and its jobs'
	// checkouts. One worker at a time uses it.
	CacheDir string
	// Jobs is how many jobs run at once (at least 1).
	Jobs int
	// Run runs a job's agent.
	Run RunFunc
	// Logf, if set, hears what the worker does.
	Logf func(format string, args ...any)

	repo    gitRepo
	js      jetstream.JetStream
	bases   jetstream.ObjectStore
	results jetstream.ObjectStore
	beats   jetstream.KeyValue
	ackWait time.Duration

	lanes   []*lane
	fetchMu sync.Mutex      // one bundle chain fetched at a time; guards have
	have    map[string]bool // bases known to be in the cache repository
	fetched atomic.Int64

	mu      sync.Mutex
	running map[string]bool // attempt keys of the jobs running now
	changed chan struct{}   // a heartbeat is due now
}

// A Heartbeat is what a worker says of itself in the workers bucket.
type Heartbeat struct {
	Name    string    `json:"name"`
	Host    string    `json:"host"`
	Jobs    int       `json:"jobs"`
	Running []string  `json:"running"` // attempt IDs, "TASK-001/3"
	Since   time.Time `json:"since"`
	At      time.Time `json:"at"`
}

// ErrCacheInUse is the error of a worker whose cache folder another worker uses.
var ErrCacheInUse = errors.New("worker cache in use by another worker")

// Serve connects and runs jobs until ctx ends; then the jobs running are stopped and
// handed back to the stream for another worker.
func (w *Worker) Serve(ctx context.Context) error {
	if w.Run == nil || w.Name == "" || w.CacheDir == "" {
		return errors.New("worker: name, cache folder and run function are required")
	}
	w.Jobs = max(w.Jobs, 1)
	cache, err := filepath.Abs(w.CacheDir)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.CacheDir = cache
	if err := os.MkdirAll(w.CacheDir, 0o700); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	lock := flock.New(filepath.Join(w.CacheDir, "lock"))
	if ok, err := lock.TryLock(); err != nil || !ok {
		return fmt.Errorf("worker %s: %s: %w", w.Name, w.CacheDir, ErrCacheInUse)
	}
	defer lock.Unlock()
	if err := w.prepareCache(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	nc, err := connect(w.URL, Credentials{User: WorkerUser, Password: w.Token}, "orchestrator worker "+w.Name)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer nc.Close()
	cons, err := w.attach(ctx, nc)
	if err != nil {
		return fmt.Errorf("worker %s: %w", w.Name, err)
	}
	w.running = map[string]bool{}
	w.changed = make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() { w.heartbeat(ctx) })
	w.lanes = make([]*lane, w.Jobs)
	for i := range w.lanes {
		w.lanes[i] = &lane{dir: filepath.Join(w.CacheDir, "lanes", strconv.Itoa(i), "work")}
	}
	wg.Go(func() { w.prefetch(ctx) })
	for _, l := range w.lanes {
		wg.Go(func() { w.loop(ctx, cons, l) })
	}
	wg.Wait()
	return nil
}

// prepareCache makes the cache repository, and ends and removes what a worker killed
// before left: its agents (found by their ORCHESTRATOR_ATTEMPT_DIR) and checkouts.
func (w *Worker) prepareCache(ctx context.Context) error {
	gitDir := filepath.Join(w.CacheDir, "repo.git")
	w.repo = gitRepo{gitDir: gitDir}
	w.have = map[string]bool{}
	if _, err := os.Stat(gitDir); err != nil {
		if _, err := (gitRepo{}).run(ctx, nil, "init", "-q", "--bare", gitDir); err != nil {
			return err
		}
	}
	jobs := filepath.Join(w.CacheDir, "jobs")
	entries, _ := os.ReadDir(jobs)
	for _, e := range entries {
		// jobs/<task>/<attempt> (jobDir), or jobs/<task>.<attempt> of a worker before.
		top := filepath.Join(jobs, e.Name())
		dirs := []string{top}
		attempts, _ := os.ReadDir(top)
		for _, a := range attempts {
			dirs = append(dirs, filepath.Join(top, a.Name()))
		}
		for _, dir := range dirs {
			agents.StopAdopted(0, 0, "ORCHESTRATOR_ATTEMPT_DIR", dir, 2*time.Second)
		}
		os.RemoveAll(top)
	}
	// The lanes' checkouts are made again as jobs come.
	os.RemoveAll(filepath.Join(w.CacheDir, "lanes"))
	if _, err := w.repo.run(ctx, nil, "worktree", "prune"); err != nil {
		return err
	}
	var err error
	w.repo.format, err = w.repo.objectFormat(ctx)
	return err
}

// attach finds the job consumer and the buckets, waiting for an authority to make them.
func (w *Worker) attach(ctx context.Context, nc *nats.Conn) (jetstream.Consumer, error) {
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(requestTimeout))
	if err != nil {
		return nil, err
	}
	w.js = js
	pause := 100 * time.Millisecond
	for {
		cons, err := w.lookUp(ctx)
		if err == nil {
			w.ackWait = cons.CachedInfo().Config.AckWait
			return cons, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrConsumerNotFound) &&
			!errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
			pause = min(2*pause, 2*time.Second)
		}
	}
}

func (w *Worker) lookUp(ctx context.Context) (jetstream.Consumer, error) {
	var err error
	if w.bases, err = w.js.ObjectStore(ctx, basesBucket); err != nil {
		return nil, err
	}
	if w.results, err = w.js.ObjectStore(ctx, resultsBucket); err != nil {
		return nil, err
	}
	if w.beats, err = w.js.KeyValue(ctx, workersBucket); err != nil {
		return nil, err
	}
	return w.js.Consumer(ctx, jobStream, jobConsumer)
}

func (w *Worker) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

// loop takes one job at a time until ctx ends.
func (w *Worker) loop(ctx context.Context, cons jetstream.Consumer, l *lane) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		batch, err := cons.Fetch(1, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				w.logf("fetch: %v", err)
				time.Sleep(time.Second) // the server is away: do not spin
			}
			continue
		}
		for msg := range batch.Messages() {
			w.take(ctx, msg, l)
		}
		cancel()
	}
}

// take runs one job message: progress acknowledgements while it runs, then the outcome
// and the acknowledgement, or back to the stream when the worker could not run it.
func (w *Worker) take(ctx context.Context, msg jetstream.Msg, l *lane) {
	var job Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil || job.Attempt.validate() != nil {
		w.logf("job on %s: not a job: %v", msg.Subject(), err)
		_ = msg.Term()
		return
	}
	var delivery uint64 = 1
	if meta, err := msg.Metadata(); err == nil {
		delivery = meta.NumDelivered
	}
	w.setRunning(job.Attempt, true)
	defer w.setRunning(job.Attempt, false)
	progress := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.keepAlive(msg, progress) })
	w.logf("job %s (delivery %d): base %s", job.Attempt, delivery, short(job.Base))
	l.mu.Lock()
	err := w.runJob(ctx, job, delivery, l)
	l.mu.Unlock()
	close(progress)
	wg.Wait()
	if err != nil {
		w.logf("job %s: %v", job.Attempt, err)
		// Another worker may do better; JetStream stops after MaxDeliver.
		_ = msg.NakWithDelay(time.Second)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := msg.DoubleAck(actx); err != nil {
		w.logf("job %s: ack: %v", job.Attempt, err)
	}
}

// keepAlive sends a progress acknowledgement well inside the ack wait until done closes,
// so that JetStream does not give the job to another worker while this one works on it.
func (w *Worker) keepAlive(msg jetstream.Msg, done <-chan struct{}) {
	every := max(w.ackWait/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			_ = msg.InProgress()
		}
	}
}

// runJob materialises the base, runs the agent, commits what it changed and publishes
// the outcome.
func (w *Worker) runJob(ctx context.Context, job Job, delivery uint64, l *lane) error {
	if err := w.ensureBase(ctx, job.Base); err != nil {
		return err
	}
	if job.Seed != "" {
		if err := w.ensureSeed(ctx, job); err != nil {
			return err
		}
	}
	ws, err := w.checkout(ctx, job, l)
	defer os.RemoveAll(ws.Attempt)
	if err != nil {
		return err
	}
	rctx := ctx
	if job.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, job.Timeout)
		defer cancel()
	}
	res, err := w.Run(rctx, job, ws)
	if err != nil {
		return fmt.Errorf("run agent: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("worker stopped: %w", ctx.Err())
	}
	candidate, err := w.commit(ctx, ws, job)
	if err != nil {
		return fmt.Errorf("candidate: %w", err)
	}
	out := wireOutcome{Attempt: job.Attempt, Worker: w.Name, Base: job.Base, Candidate: candidate,
		ExitCode: res.ExitCode, Stopped: res.Stopped, Delivery: delivery}
	if m, err := markers.Find(ws.Markers, job.Attempt.Task); err == nil && m != nil {
		out.Marker = &Marker{Kind: string(m.Kind), Text: strings.ToValidUTF8(string(m.Body), "?")}
		out.Marker.Text = strings.ReplaceAll(out.Marker.Text, "\x00", "")
	}
	prefix := fmt.Sprintf("%s/%d/%s-%s/", job.Attempt.key(), delivery, w.Name, randomToken()[:8])
	put := func(name string, write func(io.Writer) error) (string, string, error) {
		info, err := putObject(ctx, w.results, jetstream.ObjectMeta{Name: prefix + name}, write)
		if err != nil {
			return "", "", fmt.Errorf("put %s: %w", name, err)
		}
		return info.Name, info.Digest, nil
	}
	// The three objects at once: each is a few round trips to the server, which the
	// authority waits for.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	if candidate != job.Base {
		wg.Go(func() {
			out.Bundle, out.BundleDigest, errs[0] = put("candidate.bundle", func(wr io.Writer) error {
				return w.repo.writeBundle(ctx, wr, candidate, job.Base)
			})
		})
	}
	wg.Go(func() {
		out.LogObject, out.LogDigest, errs[1] = put("agent.log", func(wr io.Writer) error { return copyFile(wr, ws.Log) })
	})
	wg.Go(func() {
		out.StdoutObject, out.StdoutDigest, errs[2] = put("stdout", func(wr io.Writer) error {
			_, err := io.WriteString(wr, res.Stdout)
			return err
		})
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out.sign(job.Secret)
	b, _ := json.Marshal(out)
	if _, err := w.js.Publish(ctx, outcomeSubject+"."+job.Attempt.key(), b); err != nil {
		return fmt.Errorf("publish outcome: %w", err)
	}
	w.logf("job %s: candidate %s, agent exit %d", job.Attempt, short(candidate), res.ExitCode)
	return nil
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// baseRef keeps a fetched base reachable in the cache repository.
func baseRef(c string) string { return "refs/bases/" + c }

// ensureBase fetches base into the cache repository unless it is there: its bundle, and
// before it the bundles of the prerequisites the cache lacks, oldest first.
func (w *Worker) ensureBase(ctx context.Context, base string) error {
	w.fetchMu.Lock()
	defer w.fetchMu.Unlock()
	if w.have[base] {
		return nil
	}
	var chain []string
	for c := base; c != "" && !w.have[c] && w.repo.commit(ctx, c) == ""; {
		if len(chain) > 10000 {
			return fmt.Errorf("base %s: bundle chain too long", short(base))
		}
		info, err := w.bases.GetInfo(ctx, c)
		if err != nil {
			return fmt.Errorf("base %s: bundle %s: %w", short(base), short(c), err)
		}
		chain = append(chain, c)
		c = info.Metadata[prerequisiteKey]
	}
	dir, err := os.MkdirTemp(w.CacheDir, "fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, c := range slices.Backward(chain) {
		path := filepath.Join(dir, c+".bundle")
		if err := getObject(ctx, w.bases, c, "", path); err != nil {
			return err
		}
		if fi, err := os.Stat(path); err == nil {
			w.fetched.Add(fi.Size())
		}
		tip, err := w.repo.unbundle(ctx, path)
		if err != nil {
			return err
		}
		if tip != c {
			return fmt.Errorf("bundle of %s holds %s", short(c), short(tip))
		}
		if _, err := w.repo.run(ctx, nil, "update-ref", baseRef(c), c); err != nil {
			return err
		}
	}
	w.have[base] = true
	return nil
}

// ensureSeed fetches the job's seed (ensureBase) and checks that it is one commit on the
// job's base: an agent's checkout never starts from anything else.
func (w *Worker) ensureSeed(ctx context.Context, job Job) error {
	if !worktree.IsObjectID(job.Seed) {
		return fmt.Errorf("seed %q: not a commit's full name", job.Seed)
	}
	if err := w.ensureBase(ctx, job.Seed); err != nil {
		return err
	}
	parents, ok, err := w.repo.parents(ctx, job.Seed)
	if err != nil {
		return err
	}
	if !ok || len(parents) != 1 || parents[0] != job.Base {
		return fmt.Errorf("seed %s is not one commit on the base %s", short(job.Seed), short(job.Base))
	}
	return nil
}

// prefetch fetches a worker's first base ahead of its first job, until ctx ends or it has
// one: the newest base bundled when the worker starts, else the first one bundled after,
// so that the first job finds its base in the cache (or only what is new since) and its
// lane's checkout made (prepareLanes) while the watch waits for its agent to start. Later bases are fetched by the jobs on them
// only: fetched by every worker as soon as they are bundled, they took the cores from
// the gate of the landing that made them (issue 28's measurements). The job's own
// ensureBase is the rule: a prefetch that fails is only logged.
func (w *Worker) prefetch(ctx context.Context) {
	watcher, err := w.bases.Watch(ctx)
	if err != nil {
		w.logf("bases: %v", err)
		return
	}
	defer watcher.Stop()
	var newest *jetstream.ObjectInfo
	initial := true
	for {
		select {
		case <-ctx.Done():
			return
		case info, ok := <-watcher.Updates():
			if !ok {
				return
			}
			switch {
			case info == nil:
				// The end of the bases there now.
				initial = false
				if newest != nil && w.fetchAhead(ctx, newest.Name) {
					return
				}
			case info.Deleted:
			case initial:
				if newest == nil || !info.ModTime.Before(newest.ModTime) {
					newest = info
				}
			case w.fetchAhead(ctx, info.Name):
				return
			}
		}
	}
}

// fetchAhead fetches base into the cache ahead of its jobs, and makes the lanes'
// checkouts of it, and reports whether it did.
func (w *Worker) fetchAhead(ctx context.Context, base string) bool {
	if !worktree.IsObjectID(base) {
		return false // not a commit's name: no bundle of the authority's
	}
	if err := w.ensureBase(ctx, base); err != nil {
		if ctx.Err() == nil {
			w.logf("base %s: %v", short(base), err)
		}
		return false
	}
	w.prepareLanes(ctx, base)
	return true
}

// prepareLanes makes the checkout of base of each lane that has none yet and runs no job:
// a lane's first job then resets a checkout, a few files, rather than making one (0.2 s of
// the first job in issue 28's timeline, while the authority waited for its outcome).
func (w *Worker) prepareLanes(ctx context.Context, base string) {
	for _, l := range w.lanes {
		if !l.mu.TryLock() {
			continue // its job makes it
		}
		if l.admin == "" && ctx.Err() == nil {
			if err := w.resetLane(ctx, l, base); err != nil {
				w.logf("lane %s: %v", l.dir, err)
			}
		}
		l.mu.Unlock()
	}
}

var unsafeName = lazyre.New(`[^A-Za-z0-9_.-]`)

// A lane is one of the worker's job loops, with the checkout its jobs run in: made by
// its first job, reset and cleaned by each next one (two git processes, where making and
// removing a worktree for each job took four).
type lane struct {
	mu    sync.Mutex // held by the lane's job, or by prepareLanes
	dir   string     // the checkout
	admin string     // its git folder in the cache repository, once made
}

// jobDir is the folder of attempt a's job in the worker's cache: jobs/<task>/<attempt>,
// named as the watch names an attempt's folder (runs/<task>/<attempt>), so that an agent
// finds its attempt's number where it would find it here.
func jobDir(cache string, a AttemptID) string {
	return filepath.Join(cache, "jobs", a.Task, strconv.Itoa(a.N))
}

// checkout makes the job's folder and the lane's checkout of the base.
func (w *Worker) checkout(ctx context.Context, job Job, l *lane) (Workspace, error) {
	dir := jobDir(w.CacheDir, job.Attempt)
	_ = os.RemoveAll(dir)
	ws := Workspace{Dir: l.dir, Markers: filepath.Join(dir, "markers"), Log: filepath.Join(dir, "agent.log"),
		Attempt: dir, Objects: filepath.Join(w.repo.gitDir, "objects"), Hide: []string{w.CacheDir}, Worker: w.Name}
	if err := os.MkdirAll(ws.Markers, 0o755); err != nil {
		return ws, err
	}
	start := job.Base
	if job.Seed != "" {
		start = job.Seed // the work a re-emit attempt re-emits; its candidate is still on Base
	}
	if err := w.resetLane(ctx, l, start); err != nil {
		return ws, err
	}
	// The worker's own index of the checkout, which the agent cannot reach: the
	// candidate is made with a copy of it.
	b, err := os.ReadFile(filepath.Join(l.admin, "index"))
	if err != nil {
		return ws, err
	}
	return ws, os.WriteFile(filepath.Join(dir, "index"), b, 0o600)
}

// reuse resets the lane's checkout to base and cleans it. The last agent may have
// changed or removed its .git file, or put a link in its place: it is written first.
func (l *lane) reuse(ctx context.Context, base string) error {
	if err := worktree.WriteGitFile(l.dir, l.admin); err != nil {
		return err
	}
	g := gitRepo{gitDir: l.admin, workTree: l.dir, dir: l.dir}
	if _, err := g.run(ctx, nil, "reset", "-q", "--hard", "--no-recurse-submodules", base); err != nil {
		return err
	}
	_, err := g.run(ctx, nil, "clean", "-q", "-ffdx")
	return err
}

// resetLane makes the lane's checkout hold base and nothing else: reset and cleaned of
// every file the last job's agent left (ignored ones and nested repositories too), or
// made afresh when it has none or git cannot reset it.
func (w *Worker) resetLane(ctx context.Context, l *lane, base string) error {
	if l.admin != "" {
		err := l.reuse(ctx, base)
		if err == nil {
			return nil
		}
		w.logf("lane %s: made again: %v", l.dir, err)
	}
	l.admin = ""
	_ = os.RemoveAll(l.dir)
	if _, err := w.repo.run(ctx, nil, "worktree", "prune"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.dir), 0o755); err != nil {
		return err
	}
	if _, err := w.repo.run(ctx, nil, "worktree", "add", "-q", "--detach", l.dir, base); err != nil {
		return err
	}
	admin, err := gitRepo{dir: l.dir}.run(ctx, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return err
	}
	l.admin = strings.TrimSpace(admin)
	return nil
}

// commit records what is in the checkout now as one commit on the job's base (all files,
// new ones included, as .gitignore says), with the worker's copy of the index; base
// itself when nothing changed.
func (w *Worker) commit(ctx context.Context, ws Workspace, job Job) (string, error) {
	g := gitRepo{gitDir: w.repo.gitDir, workTree: ws.Dir, dir: ws.Dir, env: []string{"GIT_INDEX_FILE=" + filepath.Join(ws.Attempt, "index"),
		"GIT_AUTHOR_NAME=orchestrator worker", "GIT_AUTHOR_EMAIL=worker@localhost",
		"GIT_COMMITTER_NAME=orchestrator worker", "GIT_COMMITTER_EMAIL=worker@localhost"}}
	if _, err := g.run(ctx, nil, "add", "-A", "--ignore-errors", "--", "."); err != nil {
		return "", err
	}
	tree, err := g.run(ctx, nil, "write-tree")
	if err != nil {
		return "", err
	}
	baseTree := job.BaseTree
	if !worktree.IsObjectID(baseTree) {
		// From an authority that does not say it.
		if baseTree, err = g.run(ctx, nil, "rev-parse", job.Base+"^{tree}"); err != nil {
			return "", err
		}
	}
	if strings.TrimSpace(tree) == strings.TrimSpace(baseTree) {
		return job.Base, nil
	}
	msg := fmt.Sprintf("attempt %s on worker %s\n", job.Attempt, w.Name)
	out, err := g.run(ctx, strings.NewReader(msg), "commit-tree", strings.TrimSpace(tree), "-p", job.Base, "-F", "-")
	return strings.TrimSpace(out), err
}

// setRunning records that the job of a starts or ends, and has the heartbeat say so now.
func (w *Worker) setRunning(a AttemptID, on bool) {
	w.mu.Lock()
	if on {
		w.running[a.String()] = true
	} else {
		delete(w.running, a.String())
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// heartbeat puts the worker's Heartbeat in the workers bucket every heartbeatInterval
// and whenever a job starts or ends, until ctx ends; then it removes it.
func (w *Worker) heartbeat(ctx context.Context) {
	host, _ := os.Hostname()
	since := time.Now().UTC()
	key := unsafeName().ReplaceAllString(w.Name, "_")
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	for {
		w.mu.Lock()
		hb := Heartbeat{Name: w.Name, Host: host, Jobs: w.Jobs, Since: since, At: time.Now().UTC(), Running: []string{}}
		for a := range w.running {
			hb.Running = append(hb.Running, a)
		}
		w.mu.Unlock()
		slices.Sort(hb.Running)
		b, _ := json.Marshal(hb)
		if _, err := w.beats.Put(ctx, key, b); err != nil && ctx.Err() == nil {
			w.logf("heartbeat: %v", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = w.beats.Delete(dctx, key)
			cancel()
			return
		case <-t.C:
		case <-w.changed:
		}
	}
}

// ListWorkers returns the heartbeats of the workers connected to the server at url, by
// name.
func ListWorkers(ctx context.Context, url string, creds Credentials) ([]Heartbeat, error) {
	nc, err := connect(url, creds, "orchestrator workers")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(requestTimeout))
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, workersBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []Heartbeat
	for k := range l.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired meanwhile
		}
		var hb Heartbeat
		if json.Unmarshal(e.Value(), &hb) == nil {
			out = append(out, hb)
		}
	}
	slices.SortFunc(out, func(a, b Heartbeat) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
