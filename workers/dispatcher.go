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
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/orchestrator/orchestrator/worktree"
)

// DispatcherOptions say how the authority hands out jobs.
type DispatcherOptions struct {
	// URL and Credentials reach the NATS server (Serve's URL and Authority, or a
	// cluster's).
	URL         string
	Credentials Credentials
	// Repo is the authority's repository folder: bases are bundled from it, candidates
	// fetched into it.
	Repo string
	// Objects reads Repo's objects and writes its refs through long-lived git processes
	// (the watch's own, whose processes its reaper of agents' orphans knows); nil: the
	// dispatcher opens its own, ended by Close.
	Objects *worktree.Repo
	// Key derives each job's secret (the authority's seal key will do); it never leaves
	// the authority, and the same key must be given after a restart.
	Key []byte
	// AckWait is how long a worker may hold a job without a progress acknowledgement
	// before JetStream gives it to another (default 30s); MaxDeliver how many times a job
	// is handed out at most (default 5). Both are the jobs consumer's settings.
	AckWait    time.Duration
	MaxDeliver int
	// Replicas is how many servers of a cluster keep each stream and bucket (JetStream's
	// replicas; default 1): with 3, work goes on when one of three servers is lost.
	Replicas int
	// Refused, if set, hears of every outcome the dispatcher refused (a forged one, one
	// whose candidate could not be fetched); Dropped of every duplicate it dropped.
	Refused func(AttemptID, string, error)
	Dropped func(AttemptID, string)
}

// A Dispatcher is the authority's side of the protocol: it submits jobs and accepts one
// outcome per attempt, whose candidate it fetches into the authority's repository. Every
// outcome accepted is delivered on Outcomes. A Dispatcher re-derives what is pending from
// JetStream when it starts again: Pending, and the outcomes not yet acknowledged, which
// arrive on Outcomes as before.
type Dispatcher struct {
	o        DispatcherOptions
	nc       *nats.Conn
	js       jetstream.JetStream
	bases    jetstream.ObjectStore
	results  jetstream.ObjectStore
	attempts jetstream.KeyValue
	accepted jetstream.KeyValue
	git      gitRepo
	objects  *worktree.Repo
	ownObj   bool // objects was opened here, and is closed by Close
	consume  jetstream.ConsumeContext
	out      chan Outcome

	mu     sync.Mutex // guards anchor, sinceAnchor, bundling
	anchor string     // the next bundle's prerequisite (bundleBase)
	// sinceAnchor counts the bundles made against anchor.
	sinceAnchor int

	sent sync.Map // attempt keys delivered on out by this Dispatcher
}

// ErrDuplicateAttempt is the error of Submit for an attempt ID that was submitted before.
var ErrDuplicateAttempt = errors.New("attempt submitted before")

// NewDispatcher connects to the server, makes the streams, buckets and consumers of the
// protocol where they do not exist yet, and starts taking outcomes. Close ends it.
func NewDispatcher(ctx context.Context, o DispatcherOptions) (*Dispatcher, error) {
	if len(o.Key) == 0 {
		return nil, errors.New("dispatcher: no key")
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 5
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	nc, err := connect(o.URL, o.Credentials, "orchestrator authority")
	if err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	d := &Dispatcher{o: o, nc: nc, git: gitRepo{dir: o.Repo}, objects: o.Objects, out: make(chan Outcome, 64)}
	if d.objects == nil {
		if d.objects, err = worktree.Open(ctx, o.Repo); err != nil {
			nc.Close()
			return nil, fmt.Errorf("dispatcher: %w", err)
		}
		d.ownObj = true
	}
	if err := d.setUp(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	return d, nil
}

// setUp makes what the protocol keeps in JetStream, and subscribes to outcomes.
func (d *Dispatcher) setUp(ctx context.Context) error {
	js, err := jetstream.New(d.nc, jetstream.WithDefaultTimeout(requestTimeout))
	if err != nil {
		return err
	}
	d.js = js
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: jobStream, Subjects: []string{jobSubject}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: time.Hour, Replicas: d.o.Replicas,
	}); err != nil {
		return err
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, jobStream, jetstream.ConsumerConfig{
		Durable: jobConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: d.o.AckWait,
		MaxDeliver: d.o.MaxDeliver, MaxAckPending: -1,
	}); err != nil {
		return err
	}
	outcomes, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: outcomeStream, Subjects: []string{outcomeSubject + ".>"}, Storage: jetstream.FileStorage, Replicas: d.o.Replicas,
	})
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		obs  *jetstream.ObjectStore
	}{{basesBucket, &d.bases}, {resultsBucket, &d.results}} {
		if *b.obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: b.name, Storage: jetstream.FileStorage, Replicas: d.o.Replicas}); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{attemptsBucket, &d.attempts}, {acceptedBucket, &d.accepted}} {
		if *b.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b.name, Storage: jetstream.FileStorage, Replicas: d.o.Replicas}); err != nil {
			return err
		}
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: workersBucket, TTL: heartbeatTTL, Storage: jetstream.MemoryStorage, Replicas: d.o.Replicas}); err != nil {
		return err
	}
	if d.git.format, err = d.git.objectFormat(ctx); err != nil {
		return err
	}
	d.anchor = d.newestBase(ctx)
	cons, err := outcomes.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: outcomeConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		return err
	}
	if d.consume, err = cons.Consume(d.handle); err != nil {
		return err
	}
	// A job handed out MaxDeliver times without an acknowledgement is not handed out
	// again: JetStream says so with an advisory, which ends the attempt (exhausted).
	_, err = d.nc.Subscribe(maxDeliveriesSubject, d.exhausted)
	return err
}

// maxDeliveriesSubject is JetStream's advisory for a job of the jobs consumer that was
// handed out as many times as it may be.
var maxDeliveriesSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + jobStream + "." + jobConsumer

// exhausted takes the advisory of a job no worker finished: the attempt's outcome is that
// it was exhausted, kept in the accepted bucket as any outcome (so that a restarted
// authority finds it, and a worker's late outcome is a duplicate), and the job leaves the
// stream.
func (d *Dispatcher) exhausted(m *nats.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if json.Unmarshal(m.Data, &adv) != nil || adv.StreamSeq == 0 {
		return
	}
	// No deadline of its own: each request gets requestTimeout (the JetStream context's
	// default), as the outcome loop's do.
	ctx := context.Background()
	s, err := d.js.Stream(ctx, jobStream)
	if err != nil {
		return
	}
	raw, err := s.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		return
	}
	var job Job
	if json.Unmarshal(raw.Data, &job) != nil || job.Attempt.validate() != nil {
		return
	}
	w := wireOutcome{Attempt: job.Attempt, Base: job.Base, Candidate: job.Base, ExitCode: -1, Delivery: adv.Deliveries, Exhausted: adv.Deliveries}
	rec, _ := json.Marshal(w)
	if err := kvCreate(ctx, d.accepted, job.Attempt.key(), rec); err != nil {
		return // an outcome was accepted after all, or the bucket cannot be written now
	}
	_ = s.DeleteMsg(ctx, adv.StreamSeq)
	if o, err := d.outcome(ctx, &w); err == nil {
		d.deliver(o)
	}
}

// newestBase returns the base most recently bundled that the repository has, the next
// bundle's prerequisite after a restart.
func (d *Dispatcher) newestBase(ctx context.Context) string {
	infos, err := d.bases.List(ctx)
	if err != nil {
		return ""
	}
	slices.SortFunc(infos, func(a, b *jetstream.ObjectInfo) int { return b.ModTime.Compare(a.ModTime) })
	for _, info := range infos {
		if d.git.commit(ctx, info.Name) == info.Name {
			return info.Name
		}
	}
	return ""
}

// Outcomes delivers every outcome the dispatcher accepts, once per attempt and
// Dispatcher; after a restart, an outcome accepted but not yet acknowledged before it may
// come again (Accepted says so too).
func (d *Dispatcher) Outcomes() <-chan Outcome { return d.out }

// Submit hands job to the workers: it bundles the base if no bundle of it is there yet,
// records the attempt and publishes the job. The job's Secret is set here.
func (d *Dispatcher) Submit(ctx context.Context, job Job) error {
	if err := job.Attempt.validate(); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	var err error
	base, tree := d.git.commitTree(ctx, job.Base)
	if base == "" {
		return fmt.Errorf("submit %s: base %q is not a commit of %s", job.Attempt, job.Base, d.o.Repo)
	}
	job.Base, job.BaseTree = base, tree
	if len(job.Argv) == 0 {
		return fmt.Errorf("submit %s: no agent command", job.Attempt)
	}
	if err := d.bundleBase(ctx, base); err != nil {
		return fmt.Errorf("submit %s: %w", job.Attempt, err)
	}
	if job.Seed != "" {
		if job.Seed, err = d.bundleSeed(ctx, job.Seed, base); err != nil {
			return fmt.Errorf("submit %s: %w", job.Attempt, err)
		}
	}
	rec, _ := json.Marshal(attemptRecord{Base: base, Agent: job.Agent, Submitted: time.Now().UTC()})
	if _, err := d.attempts.Create(ctx, job.Attempt.key(), rec); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("submit %s: %w", job.Attempt, ErrDuplicateAttempt)
		}
		return fmt.Errorf("submit %s: %w", job.Attempt, err)
	}
	job.Secret = jobSecret(d.o.Key, job.Attempt)
	b, err := json.Marshal(job)
	if err != nil {
		return err
	}
	// The message ID makes a second publish of the same job (after a crash between the
	// record and the publish, say) a no-op within the stream's duplicate window.
	if _, err := d.js.Publish(ctx, jobSubject, b, jetstream.WithMsgID(job.Attempt.key())); err != nil {
		return fmt.Errorf("submit %s: %w", job.Attempt, err)
	}
	return nil
}

// BundleBase puts the bundle of commit base in the bases bucket, where the workers fetch it
// as soon as it is there (Worker): the authority calls it ahead of the jobs on base (the
// integration head when a run starts), so that neither the first job's submission nor
// the worker that takes it waits for the bundle. Submit bundles a base that was not.
func (d *Dispatcher) BundleBase(ctx context.Context, base string) error {
	c := d.git.commit(ctx, base)
	if c == "" {
		return fmt.Errorf("bundle base: %q is not a commit of %s", base, d.o.Repo)
	}
	return d.bundleBase(ctx, c)
}

// attemptRecord is what the attempts bucket keeps of a submitted job.
type attemptRecord struct {
	Base      string    `json:"base"`
	Agent     string    `json:"agent"`
	Submitted time.Time `json:"submitted"`
}

// anchorEvery is how many bases are bundled against one anchor before the next base
// becomes the anchor: a bundle holds at most what that many landings added, and a worker
// behind by as many bases fetches one bundle for them, not one for each.
const anchorEvery = 16

// bundleBase puts the bundle of base in the bases bucket unless it is there: against the
// anchor, an earlier base, when that is an ancestor of base (a worker that has the anchor
// or any base after it fetches one bundle), else the whole history. The anchor is the
// first base bundled (or the newest after a restart), and every anchorEvery-th after it:
// bundled against the last base instead, each worker that was a few landings behind
// fetched and unbundled a chain of them, one after the other (issue 28's measurements:
// four bundles, 0.17 s, while the gate waited for the cores).
func (d *Dispatcher) bundleBase(ctx context.Context, base string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if there, err := d.bundled(ctx, base); err != nil || there {
		return err
	}
	prereq := d.anchor
	if prereq != "" && !d.git.isAncestor(ctx, prereq, base) {
		prereq = ""
	}
	if err := d.putBundle(ctx, base, prereq); err != nil {
		return fmt.Errorf("bundle base %s: %w", base, err)
	}
	if d.sinceAnchor++; prereq == "" || d.sinceAnchor >= anchorEvery {
		d.anchor, d.sinceAnchor = base, 0
	}
	return nil
}

// bundleSeed puts the bundle of seed, a commit whose one parent is base, in the bases
// bucket against base, unless it is there, and returns its full name. A seed is no base of
// later jobs: it leaves the anchors alone.
func (d *Dispatcher) bundleSeed(ctx context.Context, seed, base string) (string, error) {
	c := d.git.commit(ctx, seed)
	if c == "" {
		return "", fmt.Errorf("seed %q is not a commit of %s", seed, d.o.Repo)
	}
	if parents, ok, err := d.objects.Commit(ctx, c); err != nil {
		return "", err
	} else if !ok || len(parents) != 1 || parents[0] != base {
		return "", fmt.Errorf("seed %.12s is not one commit on the base %.12s", c, base)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if there, err := d.bundled(ctx, c); err != nil || there {
		return c, err
	}
	if err := d.putBundle(ctx, c, base); err != nil {
		return "", fmt.Errorf("bundle seed %s: %w", c, err)
	}
	return c, nil
}

// bundled reports whether the bases bucket holds the bundle of commit c; d.mu is held.
func (d *Dispatcher) bundled(ctx context.Context, c string) (bool, error) {
	_, err := d.bases.GetInfo(ctx, c)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	}
	return err == nil, err
}

// putBundle puts the bundle of tip against prereq ("": its whole history) in the bases
// bucket, named by tip, its prerequisite in its metadata; d.mu is held.
func (d *Dispatcher) putBundle(ctx context.Context, tip, prereq string) error {
	meta := jetstream.ObjectMeta{Name: tip, Metadata: map[string]string{}}
	if prereq != "" {
		meta.Metadata[prerequisiteKey] = prereq
	}
	return d.put(ctx, d.bases, meta, func(w io.Writer) error { return d.git.writeBundle(ctx, w, tip, prereq) })
}

// put writes an object from what write writes, through a temporary file: the object
// store wants a reader, and git a writer.
func (d *Dispatcher) put(ctx context.Context, obs jetstream.ObjectStore, meta jetstream.ObjectMeta, write func(io.Writer) error) error {
	_, err := putObject(ctx, obs, meta, write)
	return err
}

// putObject is put for both sides.
func putObject(ctx context.Context, obs jetstream.ObjectStore, meta jetstream.ObjectMeta, write func(io.Writer) error) (*jetstream.ObjectInfo, error) {
	f, err := os.CreateTemp("", "orchestrator-bundle-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := write(f); err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	rctx, cancel := request(ctx, uint64(size))
	defer cancel()
	return obs.Put(rctx, meta, f)
}

// handle takes one outcome message: refused (and terminated) when its proof fails or its
// candidate cannot be fetched, dropped when the attempt has an accepted outcome already,
// else accepted and delivered.
func (d *Dispatcher) handle(msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var w wireOutcome
	if err := json.Unmarshal(msg.Data(), &w); err != nil {
		d.refuse(AttemptID{}, "", fmt.Errorf("outcome on %s: %w", msg.Subject(), err))
		_ = msg.Term()
		return
	}
	o, err := d.accept(ctx, &w)
	var fetch *fetchError
	if errors.As(err, &fetch) && fetch.local {
		// git could not take the bundle: maybe the repository's fault of the moment (a
		// worktree being made shows git a HEAD that is not a commit yet), maybe the
		// bundle's. Again a little later, then refused.
		if meta, merr := msg.Metadata(); merr == nil && meta.NumDelivered < fetchTries {
			err = fmt.Errorf("%w: %v", errRetry, err)
		}
	}
	switch {
	case errors.Is(err, errDuplicate):
		if d.o.Dropped != nil {
			d.o.Dropped(w.Attempt, w.Worker)
		}
		_ = msg.Ack()
	case errors.Is(err, errRetry):
		_ = msg.NakWithDelay(time.Second)
	case err != nil:
		d.refuse(w.Attempt, w.Worker, err)
		_ = msg.Term()
		if fetch != nil {
			// The job's own worker sent it (its proof holds) and acknowledged the job: no
			// other outcome comes, and the attempt must not wait for one.
			d.refused(ctx, &w, err)
		}
	default:
		d.deliver(o)
		_ = msg.Ack()
	}
}

// fetchTries is how many times an outcome whose bundle git could not take is tried, a
// second apart.
const fetchTries = 5

// A fetchError is an outcome whose proof holds but whose candidate could not be fetched:
// local when git failed on the bundle, else the candidate is not what the outcome says.
type fetchError struct {
	err   error
	local bool
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// deliver hands an outcome to the caller, once per attempt and Dispatcher: a message
// redelivered while the caller was slow to read is the same outcome.
func (d *Dispatcher) deliver(o *Outcome) {
	if _, dup := d.sent.LoadOrStore(o.Attempt.key(), true); !dup {
		d.out <- *o
	}
}

// refused records and delivers the authority's own outcome of an attempt whose worker's
// outcome it refused, as it does for a job no worker finished: the candidate is the base,
// and Refused says why.
func (d *Dispatcher) refused(ctx context.Context, w *wireOutcome, why error) {
	r := wireOutcome{Attempt: w.Attempt, Worker: w.Worker, Base: w.Base, Candidate: w.Base, ExitCode: -1, Delivery: w.Delivery, Refused: why.Error()}
	rec, _ := json.Marshal(r)
	if err := kvCreate(ctx, d.accepted, w.Attempt.key(), rec); err != nil {
		return // an outcome was accepted after all, or the bucket cannot be written now
	}
	if o, err := d.outcome(ctx, &r); err == nil {
		d.deliver(o)
	}
}

func (d *Dispatcher) refuse(a AttemptID, worker string, err error) {
	if d.o.Refused != nil {
		d.o.Refused(a, worker, err)
	}
}

var (
	errDuplicate = errors.New("an outcome of the attempt was accepted before")
	errRetry     = errors.New("try again")
)

// accepted is what the accepted bucket keeps of an outcome: the wire form, proof
// included.
type acceptedRecord = wireOutcome

// accept checks one outcome and, if it is the attempt's first good one, fetches its
// candidate into the attempt's ref and records it as accepted.
func (d *Dispatcher) accept(ctx context.Context, w *wireOutcome) (*Outcome, error) {
	if err := w.Attempt.validate(); err != nil {
		return nil, err
	}
	if w.Exhausted != 0 {
		return nil, fmt.Errorf("attempt %s: an outcome from a worker that says no worker finished it: %w", w.Attempt, ErrForged)
	}
	if w.Refused != "" {
		return nil, fmt.Errorf("attempt %s: an outcome from a worker that says the authority refused it: %w", w.Attempt, ErrForged)
	}
	if _, err := kvGet(ctx, d.attempts, w.Attempt.key()); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("attempt %s: never submitted: %w", w.Attempt, ErrForged)
		}
		return nil, fmt.Errorf("%w: %v", errRetry, err)
	}
	if err := w.verify(jobSecret(d.o.Key, w.Attempt)); err != nil {
		return nil, err
	}
	prev, err := kvGet(ctx, d.accepted, w.Attempt.key())
	switch {
	case err == nil:
		var p acceptedRecord
		if json.Unmarshal(prev.Value(), &p) == nil && p.Proof == w.Proof {
			// The very outcome accepted before, whose message was not acknowledged (the
			// authority stopped in between): deliver it again.
			return d.outcome(ctx, w)
		}
		return nil, errDuplicate
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, fmt.Errorf("%w: %v", errRetry, err)
	}
	candidate, err := d.fetchCandidate(ctx, w)
	if err != nil {
		return nil, err
	}
	rec, _ := json.Marshal(w)
	if err := kvCreate(ctx, d.accepted, w.Attempt.key(), rec); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, errDuplicate
		}
		return nil, fmt.Errorf("%w: %v", errRetry, err)
	}
	if err := d.objects.SetRef(ctx, w.Attempt.Ref(), candidate); err != nil {
		return nil, fmt.Errorf("%w: %v", errRetry, err)
	}
	return d.outcome(ctx, w)
}

// fetchCandidate adds the candidate's objects to the authority's repository and checks
// that it is the job's base or a commit of one parent, the base, named by its full object
// name. Every error but errRetry is a *fetchError.
func (d *Dispatcher) fetchCandidate(ctx context.Context, w *wireOutcome) (string, error) {
	rec, err := kvGet(ctx, d.attempts, w.Attempt.key())
	if err != nil {
		return "", fmt.Errorf("%w: %v", errRetry, err)
	}
	var ar attemptRecord
	if err := json.Unmarshal(rec.Value(), &ar); err != nil || ar.Base != w.Base {
		return "", &fetchError{fmt.Errorf("attempt %s: outcome on base %s, job on %s", w.Attempt, w.Base, ar.Base), false}
	}
	if w.Bundle == "" {
		if w.Candidate != w.Base {
			return "", &fetchError{fmt.Errorf("attempt %s: candidate %s without a bundle", w.Attempt, w.Candidate), false}
		}
		return w.Base, nil
	}
	dir, err := os.MkdirTemp("", "orchestrator-outcome-*")
	if err != nil {
		return "", &fetchError{err, true}
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "candidate.bundle")
	if err := getObject(ctx, d.results, w.Bundle, w.BundleDigest, path); err != nil {
		return "", &fetchError{fmt.Errorf("attempt %s: %w", w.Attempt, err), true}
	}
	tip, err := d.git.unbundleChecked(ctx, path)
	if err != nil {
		return "", &fetchError{fmt.Errorf("attempt %s: %w", w.Attempt, err), true}
	}
	if tip != w.Candidate {
		return "", &fetchError{fmt.Errorf("attempt %s: bundle holds %s, not candidate %s", w.Attempt, tip, w.Candidate), false}
	}
	// Every later stage names the candidate as the outcome did: a ref (refs/heads/main,
	// HEAD), an abbreviation or a tag would be read again, each time as what it names
	// then. Only a commit's own full name is taken.
	if !worktree.IsObjectID(tip) {
		return "", &fetchError{fmt.Errorf("attempt %s: candidate %q is not the full name of a commit", w.Attempt, tip), false}
	}
	parents, ok, err := d.objects.Commit(ctx, tip)
	if err != nil {
		return "", &fetchError{err, true}
	}
	if !ok {
		return "", &fetchError{fmt.Errorf("attempt %s: candidate %q is not the full name of a commit", w.Attempt, tip), false}
	}
	if len(parents) != 1 || parents[0] != w.Base {
		return "", &fetchError{fmt.Errorf("attempt %s: candidate %s is not one commit on base %s", w.Attempt, tip, w.Base), false}
	}
	ignored, err := ignoredAdded(ctx, d.objects, d.git, w.Base, tip)
	if err != nil {
		return "", &fetchError{err, true}
	}
	if len(ignored) > 0 {
		return "", &fetchError{fmt.Errorf("attempt %s: candidate %s adds files its own .gitignore ignores, which git add never takes: %s", w.Attempt, tip, strings.Join(ignored, ", ")), false}
	}
	return tip, nil
}

// getObject writes object name of obs to the file path, after checking that its digest
// is digest.
func getObject(ctx context.Context, obs jetstream.ObjectStore, name, digest, path string) error {
	info, err := objectInfo(ctx, obs, name)
	if err != nil {
		return fmt.Errorf("object %s: %w", name, err)
	}
	if digest != "" && info.Digest != digest {
		return fmt.Errorf("object %s: digest %s, outcome says %s", name, info.Digest, digest)
	}
	// GetFile checks the content against the digest as it reads.
	rctx, cancel := request(ctx, info.Size)
	defer cancel()
	if err := obs.GetFile(rctx, name, path); err != nil {
		return fmt.Errorf("object %s: %w", name, err)
	}
	return nil
}

// objectInfo is obs.GetInfo as one request.
func objectInfo(ctx context.Context, obs jetstream.ObjectStore, name string) (*jetstream.ObjectInfo, error) {
	rctx, cancel := request(ctx, 0)
	defer cancel()
	return obs.GetInfo(rctx, name)
}

// kvGet is kv.Get as one request.
func kvGet(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	rctx, cancel := request(ctx, 0)
	defer cancel()
	return kv.Get(rctx, key)
}

// kvCreate is kv.Create as one request.
func kvCreate(ctx context.Context, kv jetstream.KeyValue, key string, value []byte) error {
	rctx, cancel := request(ctx, 0)
	defer cancel()
	_, err := kv.Create(rctx, key, value)
	return err
}

// outcome reads the parts of an accepted outcome from the results bucket.
func (d *Dispatcher) outcome(ctx context.Context, w *wireOutcome) (*Outcome, error) {
	o := &Outcome{Attempt: w.Attempt, Worker: w.Worker, Base: w.Base, Candidate: w.Candidate,
		ExitCode: w.ExitCode, Stopped: w.Stopped, Marker: w.Marker, Delivery: w.Delivery, Exhausted: w.Exhausted, Refused: w.Refused}
	if w.Exhausted != 0 || w.Refused != "" {
		return o, nil // no worker's parts: the authority wrote it
	}
	for _, part := range []struct {
		name, digest string
		set          func([]byte)
	}{
		{w.LogObject, w.LogDigest, func(b []byte) { o.Log = b }},
		{w.StdoutObject, w.StdoutDigest, func(b []byte) { o.Stdout = string(b) }},
	} {
		info, err := objectInfo(ctx, d.results, part.name)
		if err != nil {
			return nil, fmt.Errorf("%w: attempt %s: object %s: %v", errRetry, w.Attempt, part.name, err)
		}
		if info.Digest != part.digest {
			return nil, fmt.Errorf("attempt %s: object %s: digest %s, outcome says %s", w.Attempt, part.name, info.Digest, part.digest)
		}
		rctx, cancel := request(ctx, info.Size)
		b, err := d.results.GetBytes(rctx, part.name)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errRetry, err)
		}
		part.set(b)
	}
	return o, nil
}

// Accepted returns the accepted outcome of attempt a, if there is one: for a restarted
// authority, which asks for each attempt it had running.
func (d *Dispatcher) Accepted(ctx context.Context, a AttemptID) (*Outcome, bool, error) {
	e, err := kvGet(ctx, d.accepted, a.key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var w wireOutcome
	if err := json.Unmarshal(e.Value(), &w); err != nil {
		return nil, false, err
	}
	o, err := d.outcome(ctx, &w)
	if err != nil {
		return nil, false, err
	}
	return o, true, nil
}

// Pending lists the attempts submitted that have no accepted outcome yet: what a
// restarted authority still waits for.
func (d *Dispatcher) Pending(ctx context.Context) ([]AttemptID, error) {
	keys := func(kv jetstream.KeyValue) (map[string]bool, error) {
		l, err := kv.ListKeys(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for k := range l.Keys() {
			out[k] = true
		}
		return out, nil
	}
	submitted, err := keys(d.attempts)
	if err != nil {
		return nil, err
	}
	done, err := keys(d.accepted)
	if err != nil {
		return nil, err
	}
	var out []AttemptID
	for k := range submitted {
		if done[k] {
			continue
		}
		if a, err := parseKey(k); err == nil {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b AttemptID) int { return strings.Compare(a.key(), b.key()) })
	return out, nil
}

// Close stops taking outcomes and disconnects.
func (d *Dispatcher) Close() {
	if d.consume != nil {
		d.consume.Stop()
	}
	d.nc.Close()
	if d.ownObj {
		d.objects.Close()
	}
}
