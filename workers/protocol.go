package workers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

// The names of what the protocol keeps in JetStream. One set per NATS account: an
// orchestrator that shares a cluster with another gives each its own account.
const (
	// jobStream is the work-queue stream of attempt jobs; workers pull them through the
	// durable consumer jobConsumer, so that each job is held by one worker at a time.
	jobStream   = "ORCH_JOBS"
	jobSubject  = "orch.jobs"
	jobConsumer = "workers"
	// outcomeStream keeps the outcomes workers publish, on outcomeSubject.<task>.<n>,
	// until the authority's durable consumer outcomeConsumer has acknowledged them.
	outcomeStream   = "ORCH_OUTCOMES"
	outcomeSubject  = "orch.outcomes"
	outcomeConsumer = "authority"
	// basesBucket holds the bundles of base commits, written by the authority only;
	// resultsBucket the candidates' bundles, logs and outputs, written by workers.
	basesBucket   = "ORCH_BASES"
	resultsBucket = "ORCH_RESULTS"
	// attemptsBucket records every attempt submitted, acceptedBucket the one outcome
	// accepted per attempt: together they are what the authority re-derives on restart.
	attemptsBucket = "ORCH_ATTEMPTS"
	acceptedBucket = "ORCH_ACCEPTED"
	// workersBucket holds each connected worker's heartbeat, which expires with the
	// bucket's TTL when the worker stops sending it.
	workersBucket = "ORCH_WORKERS"
)

// requestTimeout bounds one JetStream request. A request that reaches a stream's leader
// as that server dies gets no answer: without a bound of its own it waits as long as its
// context does, and so does everything behind it (every outcome waited five minutes, the
// outcome loop's bound, behind one such request when a node of three was killed). A
// request that times out is tried again, as the caller's error says.
const requestTimeout = 15 * time.Second

// transferRate is the slowest an object is expected to move, in bytes a second: a
// transfer gets requestTimeout and one second more for every transferRate bytes.
const transferRate = 1 << 20

// request returns ctx bounded for one JetStream request that moves size bytes.
func request(ctx context.Context, size uint64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout+time.Duration(size/transferRate)*time.Second)
}

// prerequisiteKey is the metadata of a base bundle that names the base it was made
// against: the worker must have that commit before it can unbundle this one. A bundle
// without it holds the whole history of its base.
const prerequisiteKey = "prerequisite"

// An AttemptID names one attempt of one task: unique across the life of the repository's
// runs, as the watch loop numbers attempt folders.
type AttemptID struct {
	Task string
	N    int
}

// String returns "TASK-001/3".
func (a AttemptID) String() string { return a.Task + "/" + strconv.Itoa(a.N) }

// key is the attempt's name in subjects and KV keys: "TASK-001.3".
func (a AttemptID) key() string { return a.Task + "." + strconv.Itoa(a.N) }

// Ref is where the authority keeps the attempt's candidate in its repository.
func (a AttemptID) Ref() string {
	return "refs/orchestrator/attempts/" + a.Task + "/" + strconv.Itoa(a.N)
}

// validate refuses an attempt ID that is not a task ID of the queue format and a
// positive number: only those are safe in a subject, a KV key and a ref.
func (a AttemptID) validate() error {
	if !queue.ValidID(a.Task) || a.N < 1 {
		return fmt.Errorf("attempt %q: not a task ID and a positive attempt number", a.String())
	}
	return nil
}

// parseKey reads a key made by AttemptID.key.
func parseKey(k string) (AttemptID, error) {
	i := strings.LastIndexByte(k, '.')
	if i < 0 {
		return AttemptID{}, fmt.Errorf("attempt key %q: no number", k)
	}
	n, err := strconv.Atoi(k[i+1:])
	a := AttemptID{Task: k[:i], N: n}
	if err != nil {
		return AttemptID{}, fmt.Errorf("attempt key %q: %w", k, err)
	}
	return a, a.validate()
}

// A Job is one attempt to run on a worker: everything an agent needs, and nothing of the
// authority's own state. It travels as JSON in the job stream.
type Job struct {
	Attempt AttemptID `json:"attempt"`
	// Base is the commit the agent starts from; its bundle is in the bases bucket.
	// BaseTree is its tree, which Submit fills in: the worker tells an agent that changed
	// nothing by it.
	Base     string `json:"base"`
	BaseTree string `json:"base_tree,omitempty"`
	// Seed, if set, is a commit whose one parent is Base, what the agent's checkout holds
	// when it starts: the work of the attempt a re-emit attempt re-emits (SPEC §9, mode
	// D), as the watch's own worktree would hold it. The candidate is still one commit on
	// Base. Its bundle is in the bases bucket, against Base.
	Seed string `json:"seed,omitempty"`
	// Prompt is written to the agent's standard input.
	Prompt string `json:"prompt"`
	// Agent names the agent (claude, codex, exec, or one of the config's), Argv its
	// command line, as the watch loop builds it.
	Agent string   `json:"agent"`
	Argv  []string `json:"argv"`
	// Sub is the project's folder in the repository (slash-separated, "" for its top): the
	// agent starts there, as it does in the watch's worktree.
	Sub string `json:"sub,omitempty"`
	// Env are the NAME=value variables the agent gets on top of the worker's own path,
	// home and locale, already filtered by the authority: nothing secret of its own.
	Env []string `json:"env,omitempty"`
	// Timeout bounds the agent's run on the worker; 0 is no bound.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Secret is the job's own key, which the worker proves its outcome with (Proof).
	// Submit derives it from the dispatcher's key; nobody else can.
	Secret string `json:"secret,omitempty"`
}

// A Marker is what the agent wrote as its completion marker: Kind "done" or "failed",
// and the marker's text.
type Marker struct {
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
}

// An Outcome is what a worker returns for a job, as the authority accepted it. Nothing in
// it is evidence: the authority judges the candidate by running its own gate (SPEC §18).
type Outcome struct {
	Attempt AttemptID
	// Worker is the name of the worker that ran it.
	Worker string
	// Base is the job's base; Candidate the commit of what the agent changed on top of it
	// (Base itself when it changed nothing), fetched into Attempt.Ref() of the
	// authority's repository.
	Base, Candidate string
	// ExitCode is the agent's exit code, -1 for a signal; Stopped says why the worker
	// stopped it ("timeout"), "" when it ended on its own.
	ExitCode int
	Stopped  string
	// Stdout is the tail of the agent's output (its final message is there), Log its whole
	// log (standard output and error).
	Stdout string
	Log    []byte
	// Marker is the agent's completion marker, nil when it wrote none.
	Marker *Marker
	// Delivery is which delivery of the job this was (1 for the first): more than one
	// means a worker before this one died or gave up on it.
	Delivery uint64
	// Exhausted, when not 0, says that no worker finished the job: it was handed out this
	// many times (MaxDeliver) without an acknowledgement. Candidate is then the base, and
	// Worker, Log and Stdout are empty.
	Exhausted uint64
	// Refused, when not "", says why the authority refused the outcome the job's worker
	// sent (its candidate could not be fetched or is not one commit on the base): the
	// attempt ends as an agent that failed. Candidate is then the base.
	Refused string
}

// wireOutcome is an outcome as a worker publishes it: the big parts are objects of the
// results bucket, named here with their SHA-256 digests, and Proof binds it all to the
// job's secret.
type wireOutcome struct {
	Attempt   AttemptID `json:"attempt"`
	Worker    string    `json:"worker"`
	Base      string    `json:"base"`
	Candidate string    `json:"candidate"`
	ExitCode  int       `json:"exit_code"`
	Stopped   string    `json:"stopped,omitempty"`
	Marker    *Marker   `json:"marker,omitempty"`
	Delivery  uint64    `json:"delivery"`
	// Bundle, LogObject and StdoutObject name objects of the results bucket; Bundle is ""
	// when the candidate is the base. Each digest is the object store's "SHA-256=..."
	// form.
	Bundle       string `json:"bundle,omitempty"`
	BundleDigest string `json:"bundle_digest,omitempty"`
	LogObject    string `json:"log"`
	LogDigest    string `json:"log_digest"`
	StdoutObject string `json:"stdout"`
	StdoutDigest string `json:"stdout_digest"`
	// Proof is the HMAC-SHA256, with the job's secret, of everything above (proofText).
	Proof string `json:"proof"`
	// Exhausted is the authority's record of a job no worker finished (Outcome.Exhausted),
	// never a worker's: an outcome that sets it is refused.
	Exhausted uint64 `json:"exhausted,omitempty"`
	// Refused is the authority's record of an outcome of the job's worker it refused
	// (Outcome.Refused), never a worker's: an outcome that sets it is refused.
	Refused string `json:"refused,omitempty"`
}

// proofText is what Proof signs: every field but Proof, unambiguously (NUL-separated;
// no field may hold a NUL).
func (w *wireOutcome) proofText() []byte {
	marker := ""
	if w.Marker != nil {
		marker = w.Marker.Kind + "\x01" + w.Marker.Text
	}
	parts := []string{"orchestrator-outcome-v1", w.Attempt.key(), w.Worker, w.Base, w.Candidate,
		strconv.Itoa(w.ExitCode), w.Stopped, marker, strconv.FormatUint(w.Delivery, 10),
		w.Bundle, w.BundleDigest, w.LogObject, w.LogDigest, w.StdoutObject, w.StdoutDigest}
	return []byte(strings.Join(parts, "\x00"))
}

// sign sets Proof with the job's secret.
func (w *wireOutcome) sign(secret string) {
	w.Proof = hex.EncodeToString(mac([]byte(secret), w.proofText()))
}

// ErrForged is the error of an outcome whose proof is not the job's: a worker that was not
// given the attempt, or one that changed what it reports after signing.
var ErrForged = errors.New("outcome not proved by its job's secret")

// verify checks Proof with the job's secret.
func (w *wireOutcome) verify(secret string) error {
	got, err := hex.DecodeString(w.Proof)
	if err != nil || !hmac.Equal(got, mac([]byte(secret), w.proofText())) {
		return fmt.Errorf("attempt %s from worker %q: %w", w.Attempt, w.Worker, ErrForged)
	}
	return nil
}

// jobSecret derives the secret of attempt a from the dispatcher's key: the authority
// needs to keep no secret per job, and can check an outcome after a restart.
func jobSecret(key []byte, a AttemptID) string {
	return hex.EncodeToString(mac(key, []byte("orchestrator-job-v1\x00"+a.key())))
}

func mac(key, text []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(text)
	return m.Sum(nil)
}
