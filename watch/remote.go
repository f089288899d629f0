package watch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator/orchestrator/agents"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/workers"
)

// WorkersOptions say where attempts' agents run when not on this machine (SPEC §18): on
// worker machines (`orchestrator worker`) that take the attempts' jobs from a NATS
// JetStream server, through package workers. The run stage changes only in where the
// agent runs: the attempt's slot (at the base, which the prompt is made from), base, prompt
// and records stay here, the candidate comes back as a commit fetched into the attempt's
// ref (remoteCandidate), and every later stage judges it as it would a local one, from
// its own checkout.
// The zero value runs every agent here.
type WorkersOptions struct {
	// Serve, when set, is the address (host:port, port 0 for a free one) of the embedded
	// JetStream server the run starts for workers, its storage in the orchestrator's state
	// (workers/ in the repository's git folder).
	Serve string
	// Token is the workers' password of the embedded server; "" takes the one kept in the
	// state, or makes one, keeps it and prints it.
	Token string
	// URL is an existing NATS server or cluster, Credentials the authority's user on it.
	URL         string
	Credentials workers.Credentials
	// AckWait and MaxDeliver are the job consumer's (workers.DispatcherOptions); 0 for
	// the defaults.
	AckWait    time.Duration
	MaxDeliver int
	// Replicas is the streams' and buckets' replicas on a cluster (workers.DispatcherOptions).
	Replicas int
}

// enabled reports whether attempts' agents run on workers.
func (w WorkersOptions) enabled() bool { return w.Serve != "" || w.URL != "" }

// remoteSide is the run's side of the workers: the embedded server (nil with an existing
// one), the dispatcher, and the attempts that wait for an outcome. Its goroutine (route)
// hands each outcome to its attempt, and tells the loop which worker took which attempt.
type remoteSide struct {
	server *workers.Server
	d      *workers.Dispatcher
	// started hears that a worker took an attempt (from its heartbeat).
	started chan workerStart

	mu      sync.Mutex
	waiting map[workers.AttemptID]*remoteRun
	// bundleAhead bundles a new integration head for the workers beside the loop, as soon
	// as a landing makes it: the next job on it, submitted a moment later, finds its
	// bundle made or being made, rather than making it while its worker waits.
	bundleAhead func(head string)
}

// A workerStart says that worker took attempt a's job.
type workerStart struct {
	a      *attempt
	worker string
}

// A remoteRun is the run stage of an attempt whose agent runs on a worker: a wait for the
// attempt's outcome that ends when the outcome arrives (done closes) or when the loop
// gives up on it (a timeout, an interrupt, a person's status change).
type remoteRun struct {
	id workers.AttemptID
	a  *attempt
	// markerDir is the marker folder the agent would have written its marker in here
	// (agentMarkers): the outcome's marker is written there.
	markerDir string
	done      chan struct{}

	mu    sync.Mutex // guards out and ended, which route and the loop share
	out   *workers.Outcome
	ended bool

	// The loop's own: the worker that runs it (heartbeat, then outcome), and once the
	// outcome is taken, the agent's exit code, the tail of its output, and the candidate
	// the dispatcher fetched into the attempt's ref (the base when the outcome is the
	// authority's own: no worker finished, or what one sent was refused).
	worker    string
	arrived   bool
	exit      int
	stdout    string
	candidate string
}

// arrive gives the wait its outcome, unless it has ended already (a late outcome, which
// is dropped) or has one. It reports whether the outcome was taken.
func (rr *remoteRun) arrive(o workers.Outcome) bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.ended {
		return false
	}
	rr.out, rr.ended = &o, true
	close(rr.done)
	return true
}

// abandon ends the wait without an outcome (if none arrived before): a later one is
// dropped. The job stays in the stream.
func (rr *remoteRun) abandon() {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if !rr.ended {
		rr.ended = true
		close(rr.done)
	}
}

// outcome returns the outcome that arrived before the wait ended, or nil.
func (rr *remoteRun) outcome() *workers.Outcome {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.out
}

// wait registers attempt a's wait for its outcome, before its job is submitted, so that no
// outcome finds nobody waiting.
func (rs *remoteSide) wait(a *attempt, markerDir string) *remoteRun {
	rr := &remoteRun{id: workers.AttemptID{Task: a.id, N: a.n}, a: a, markerDir: markerDir, done: make(chan struct{})}
	rs.mu.Lock()
	rs.waiting[rr.id] = rr
	rs.mu.Unlock()
	return rr
}

// forget ends the registration of the wait rr.
func (rs *remoteSide) forget(rr *remoteRun) {
	rs.mu.Lock()
	if rs.waiting[rr.id] == rr {
		delete(rs.waiting, rr.id)
	}
	rs.mu.Unlock()
}

// route hands each accepted outcome to the attempt that waits for it, and each worker's
// new attempt to the loop, until ctx ends. An outcome nobody waits for (a late one, or
// one of an attempt a restarted run decided without it) is dropped with a line.
func (rs *remoteSide) route(ctx context.Context, beats <-chan workers.Heartbeat, report *reporter) {
	// What each worker ran at its last heartbeat: an attempt is announced when a worker
	// starts listing it, not at every heartbeat (a killed worker's lingers until it
	// expires).
	ran := map[string][]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-rs.d.Outcomes():
			rs.mu.Lock()
			rr := rs.waiting[o.Attempt]
			rs.mu.Unlock()
			if rr == nil || !rr.arrive(o) {
				report.event(o.Attempt.Task, "dropped", fmt.Sprintf("attempt %d's outcome from worker %s came after the attempt was decided without it", o.Attempt.N, o.Worker))
			}
		case hb, ok := <-beats:
			if !ok {
				beats = nil
				continue
			}
			for _, s := range hb.Running {
				if slices.Contains(ran[hb.Name], s) {
					continue
				}
				id, ok := workers.ParseAttemptID(s)
				if !ok {
					continue
				}
				rs.mu.Lock()
				rr := rs.waiting[id]
				rs.mu.Unlock()
				if rr != nil {
					select {
					case rs.started <- workerStart{a: rr.a, worker: hb.Name}:
					case <-ctx.Done():
						return
					}
				}
			}
			ran[hb.Name] = hb.Running
		}
	}
}

// openWorkers starts the embedded server (or finds the existing one) and the dispatcher,
// and the goroutine that routes outcomes. The function it returns stops them.
func (r *runner) openWorkers(ctx context.Context) (func(), error) {
	o := r.o.Workers
	rs := &remoteSide{waiting: map[workers.AttemptID]*remoteRun{}, started: make(chan workerStart, 64)}
	url, creds := o.URL, o.Credentials
	if o.Serve != "" {
		store := filepath.Join(r.repo.State(), "workers")
		token, made, err := workerToken(store, o.Token)
		if err != nil {
			return nil, err
		}
		srv, err := workers.Serve(ctx, workers.ServeOptions{Addr: o.Serve, StoreDir: filepath.Join(store, "jetstream"), Token: token})
		if err != nil {
			return nil, err
		}
		rs.server = srv
		url, creds = srv.URL(), srv.Authority()
		msg := fmt.Sprintf("serving on %s; start workers with: orchestrator worker --connect %s", url, url)
		switch {
		case made:
			msg += fmt.Sprintf(" --token %s (made now, kept in %s)", token, filepath.Join(store, tokenFile))
		case o.Token == "":
			msg += fmt.Sprintf(" and the token kept in %s", filepath.Join(store, tokenFile))
		default:
			msg += " and the workers' token of the config or $ORCHESTRATOR_WORKER_TOKEN"
		}
		r.report.event("", "workers", msg)
	}
	key, err := r.repo.Key()
	if err != nil {
		rs.close()
		return nil, err
	}
	rs.d, err = workers.NewDispatcher(ctx, workers.DispatcherOptions{
		URL: url, Credentials: creds, Repo: r.repo.Root, Objects: r.repo,
		// The jobs' secrets derive from the person's key, never sent anywhere: the same
		// after a restart, so that an outcome of an earlier run's job is still checked.
		Key:     []byte(key.Sum("workers", nil)),
		AckWait: o.AckWait, MaxDeliver: o.MaxDeliver, Replicas: o.Replicas,
		Refused: func(a workers.AttemptID, worker string, err error) {
			r.report.event(a.Task, "warning", fmt.Sprintf("refused an outcome of attempt %d from worker %q: %v", a.N, worker, err))
		},
	})
	if err != nil {
		rs.close()
		return nil, err
	}
	if o.URL != "" {
		r.report.event("", "workers", "attempts run on the workers of "+url)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	beats, err := rs.d.WatchWorkers(rctx)
	if err != nil {
		r.report.event("", "warning", "workers' heartbeats: "+err.Error()+"; where an attempt runs is known once its outcome arrives")
	}
	var wg sync.WaitGroup
	wg.Go(func() { rs.route(rctx, beats, r.report) })
	if head, err := r.repo.Head(ctx); err == nil {
		// The first attempts' base, bundled while the loop reads the queue and readies
		// their slots: the workers fetch it before a job names it. Submit bundles it if
		// this has not (its error is Submit's to report).
		wg.Go(func() { _ = rs.d.BundleBase(rctx, head) })
	}
	rs.bundleAhead = func(head string) { wg.Go(func() { _ = rs.d.BundleBase(rctx, head) }) }
	r.remote, r.workerStarts = rs, rs.started
	return func() {
		cancel()
		wg.Wait()
		rs.close()
	}, nil
}

// close stops the dispatcher and the embedded server.
func (rs *remoteSide) close() {
	if rs.d != nil {
		rs.d.Close()
	}
	if rs.server != nil {
		rs.server.Close()
	}
}

// tokenFile keeps the workers' token of the embedded server in its folder of the state.
const tokenFile = "token"

// workerToken returns the workers' token of the embedded server: given, else the one kept
// in dir, else a new one, which it keeps there (readable by the person only); made says
// it is new.
func workerToken(dir, given string) (token string, made bool, err error) {
	if given != "" {
		return given, false, nil
	}
	path := filepath.Join(dir, tokenFile)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), false, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("workers' token: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("workers' token: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("workers' token: %w", err)
	}
	token = hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("workers' token: %w", err)
	}
	return token, true, nil
}

// launchRemote hands the agent of attempt a to the workers: its job (base, prompt, agent,
// command line, environment and what is left of the task timeout) is submitted, and the
// attempt is tracked as a local agent is, its done channel the wait for its outcome.
func (r *runner) launchRemote(ctx context.Context, a *attempt, prompt, markerDir string) error {
	rr := r.remote.wait(a, markerDir)
	job := workers.Job{
		Attempt: rr.id, Base: a.base, Seed: a.seed, Prompt: prompt, Agent: a.agent, Argv: a.argv, Sub: filepath.ToSlash(r.sub),
		Env: r.jobEnv(a), Timeout: max(r.o.Config.TaskTimeout.Duration-time.Since(a.started), time.Second),
	}
	if err := r.remote.d.Submit(ctx, job); err != nil {
		r.remote.forget(rr)
		res := result{Outcome: outcomeSetup, Reason: "the workers' server did not take the job: " + err.Error()}
		return r.stopForSetup(a, res, "attempt could not start: "+res.Reason+"\n")
	}
	a.remote = rr
	a.record(result{Outcome: "running"})
	r.report.eventWith(a.id, "sent", fmt.Sprintf("attempt %d, %s task, agent %s: sent to the workers", a.n, a.task.Kind, a.agent), eventFields{Attempt: a.n, Agent: a.agent})
	r.track(a, rr.done)
	return nil
}

// jobEnv is the environment the agent of attempt a gets on a worker beside the worker's
// own path, home, locale and ORCHESTRATOR_ variables: what it would get here in the
// sandbox (agents.AgentEnv with config agent_env) but its keys, tokens and passwords: those
// stay here, and the agent on a worker uses the worker's own (its environment).
func (r *runner) jobEnv(a *attempt) []string {
	var out []string
	for _, kv := range agents.AgentEnv(agents.ProgramOf(a.agent, a.argv), os.Environ(), r.o.Config.AgentEnv) {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "HOME", name == "LANG", name == "LANGUAGE", name == "TZ", name == "TERM",
			strings.HasPrefix(name, "LC_"), strings.HasPrefix(name, "ORCHESTRATOR_"):
			continue // the worker's own
		case gate.SecretName(name):
			continue // a key never leaves this machine: the worker's agent uses the worker's
		}
		out = append(out, kv)
	}
	return out
}

// workerStarted hears that a worker took attempt s.a: its record and the live view say
// where it runs.
func (r *runner) workerStarted(s workerStart) {
	a := s.a
	if r.running[a.id] != a || a.remote == nil || a.remote.worker == s.worker {
		return
	}
	a.remote.worker = s.worker
	a.record(result{Outcome: "running"})
	r.report.eventWith(a.id, "started", fmt.Sprintf("attempt %d, %s task, agent %s on worker %s", a.n, a.task.Kind, a.agent, s.worker), eventFields{Attempt: a.n, Agent: a.agent, Worker: s.worker})
}

// endRemote takes the outcome of attempt a's remote run, if it arrived before the wait
// ended, as a local agent's run leaves it: the agent's marker in its marker folder, its
// log in the attempt's agent.log, its exit code and output for the pre-checks, and the
// candidate the dispatcher fetched, which makeCandidate takes (remoteCandidate). Nothing
// of it is evidence: the stages after judge the candidate's tree, from their own
// checkouts, as they judge a local one. The attempt's slot is a name (takeSlot): no stage
// reads it.
func (r *runner) endRemote(ctx context.Context, a *attempt) {
	rr := a.remote
	if rr == nil {
		return
	}
	r.remote.forget(rr)
	o := rr.outcome()
	if o == nil {
		return // a timeout, an interrupt, a person's status change: a later one is dropped
	}
	if o.Base != a.base {
		r.report.event(a.id, "warning", fmt.Sprintf("attempt %d's outcome from worker %s is on base %.12s, not the attempt's %.12s: dropped", a.n, o.Worker, o.Base, a.base))
		return
	}
	if o.Exhausted > 0 || o.Refused != "" {
		// No worker finished it, or what its worker sent was refused: the attempt ends as
		// an agent that failed, its slot at its base, and the retries decide what comes
		// next.
		msg := fmt.Sprintf("no worker finished attempt %d: its job was handed out %d time(s) without being finished (workers.max_deliver)", a.n, o.Exhausted)
		if o.Refused != "" {
			msg = fmt.Sprintf("the outcome of attempt %d from worker %s was refused: %s", a.n, o.Worker, o.Refused)
		}
		r.report.event(a.id, "warning", msg)
		rr.arrived, rr.exit, rr.stdout, rr.candidate = true, -1, msg, a.base
		if a.mirror != "" {
			_ = os.WriteFile(filepath.Join(a.mirror, "agent.log"), []byte(msg+"\n"), 0o644)
		}
		return
	}
	if rr.worker != o.Worker {
		rr.worker = o.Worker
		r.report.eventWith(a.id, "started", fmt.Sprintf("attempt %d, %s task, agent %s on worker %s", a.n, a.task.Kind, a.agent, o.Worker), eventFields{Attempt: a.n, Agent: a.agent, Worker: o.Worker})
	}
	rr.arrived, rr.exit, rr.stdout, rr.candidate = true, o.ExitCode, o.Stdout, o.Candidate
	if o.Stopped == reasonTimeout && a.stopReason == "" {
		a.stopReason = reasonTimeout
	}
	if a.mirror != "" {
		_ = os.WriteFile(filepath.Join(a.mirror, "agent.log"), o.Log, 0o644)
	}
	if m := o.Marker; m != nil {
		if k := markers.Kind(m.Kind); k == markers.Done || k == markers.Failed {
			_ = markers.Write(rr.markerDir, a.id, k, []byte(m.Text))
		}
	}
}

// remoteCandidate returns the candidate of attempt a, whose agent ran on a worker: the
// commit the dispatcher fetched into the attempt's ref, which it checked (git's strict
// object checks, one commit whose one parent is the job's base), taken as it is rather
// than checked out in the slot and committed again. What a local candidate is, it is too:
// a commit whose parent is the base, or the base itself when its tree is the base's (a
// worker that made an empty commit changed nothing), under the attempt's ref. Its message
// and author are the worker's, and nothing reads them: a rebase and a landing make
// commits of their own.
func (r *runner) remoteCandidate(ctx context.Context, a *attempt) (string, error) {
	c := a.remote.candidate
	if c == "" {
		c = a.base // no outcome arrived: nothing of the agent's is here
	}
	if c != a.base {
		parent, err := r.repo.Parent(ctx, c)
		if err != nil {
			return "", fmt.Errorf("the candidate %.12s from worker %s: %w", c, a.remote.worker, err)
		}
		if parent != a.base {
			return "", fmt.Errorf("the candidate %.12s from worker %s is not a commit on the base %.12s", c, a.remote.worker, a.base)
		}
		tree, err := r.repo.Tree(ctx, c)
		if err != nil {
			return "", fmt.Errorf("the candidate %.12s from worker %s: %w", c, a.remote.worker, err)
		}
		if baseTree, err := r.repo.Tree(ctx, a.base); err != nil {
			return "", err
		} else if tree == baseTree {
			c = a.base
		}
	}
	if r.repo.Ref(ctx, a.ref()) == c {
		return c, nil // the dispatcher's
	}
	if err := r.repo.SetRef(ctx, a.ref(), c); err != nil {
		return "", err
	}
	return c, nil
}

// remoteSubmitted reports whether attempt a's job was submitted to the workers: a record
// of a crashed run that says "starting" may have been written just before it was.
func (r *runner) remoteSubmitted(ctx context.Context, a *attempt) bool {
	if r.remote == nil || a.n < 1 {
		return false
	}
	id := workers.AttemptID{Task: a.id, N: a.n}
	if _, ok, err := r.remote.d.Accepted(ctx, id); err == nil && ok {
		return true
	}
	pending, err := r.remote.d.Pending(ctx)
	return err == nil && slices.Contains(pending, id)
}

// recoverRemote takes up attempt a of a run that stopped while the attempt's agent ran on
// a worker: the outcome accepted since (or before) is judged now, a job still pending is
// waited for, and only a job the server no longer knows counts as lost. The slot is the
// attempt's base again: a remote agent never wrote it.
func (r *runner) recoverRemote(ctx context.Context, a *attempt, prev result) error {
	if a.slot == nil {
		name := prev.Slot
		for i := 1; name == "" || r.slots[name] != "" && r.slots[name] != a.id; i++ {
			name = fmt.Sprintf("job-%d", i)
		}
		if err := r.holdSlot(ctx, a, name, false); err != nil {
			return err
		}
	}
	if err := a.slot.Reset(ctx, a.base); err != nil {
		return err
	}
	markerDir, err := r.agentMarkers(a)
	if err != nil {
		return err
	}
	a.started = prev.Started
	if a.started.IsZero() {
		a.started = time.Now()
	}
	rr := r.remote.wait(a, markerDir)
	rr.worker = prev.Worker
	a.remote = rr
	if !r.remoteSubmitted(ctx, a) {
		r.remote.forget(rr)
		rr.abandon()
		r.report.event(a.id, "recovered", fmt.Sprintf("attempt %d was sent to the workers, whose server no longer knows it; judging what is left", a.n))
		r.attempts++
		return r.finish(ctx, a)
	}
	id := workers.AttemptID{Task: a.id, N: a.n}
	if o, ok, err := r.remote.d.Accepted(ctx, id); err == nil && ok {
		rr.arrive(*o)
		r.report.event(a.id, "recovered", fmt.Sprintf("attempt %d's outcome came from worker %s; judging it", a.n, o.Worker))
		r.attempts++
		return r.finish(ctx, a)
	}
	where := "the workers"
	if rr.worker != "" {
		where = "worker " + rr.worker
	}
	r.report.eventWith(a.id, "adopted", fmt.Sprintf("attempt %d runs on %s; waiting for its outcome", a.n, where), eventFields{Attempt: a.n, Agent: a.agent, Worker: rr.worker})
	r.track(a, rr.done)
	return nil
}
