// Package workers runs attempts on worker machines through NATS JetStream (SPEC §18): an
// attempt is a pure function, base commit and prompt in, candidate commit out, and this
// package carries it to another machine and back. The verdict stays with the authority
// (the watch loop): nothing a worker says is evidence.
//
// # Transport
//
// [Serve] starts an embedded NATS server with JetStream, its storage in a folder of the
// orchestrator's state, with two users: the authority, which may do everything, and the
// workers, with a token, which may take jobs, acknowledge them, write results and publish
// outcomes and heartbeats, and nothing else (they cannot publish jobs, read the job
// stream but through the shared consumer, write base bundles or the accepted record, or
// acknowledge the authority's outcomes). An existing cluster serves as well, with the
// same two roles in its own credentials.
//
// No queue, lease or retry is made here; JetStream's are used:
//
//   - jobs go to a work-queue stream, which workers pull through one durable consumer:
//     a job is held by one worker at a time; the worker sends progress acknowledgements
//     (InProgress) every third of the consumer's AckWait while the agent runs, and
//     acknowledges the job once its outcome is published. A worker that dies stops
//     acknowledging: JetStream hands the job to another after AckWait, MaxDeliver times
//     at most;
//   - the base commits travel as git bundles in an object store bucket, one per base,
//     each holding only what the previous bundled base lacks (its "prerequisite"
//     metadata names that base): a worker that has the earlier base fetches only the new
//     objects, one that has nothing fetches the chain;
//   - the worker's candidate comes back as a bundle of candidate ^base, with the agent's
//     log and output, in a second bucket, and a small outcome message names them.
//
// # The authority's side
//
// A [Dispatcher] submits a [Job] ([Dispatcher.Submit]) and accepts one [Outcome] per
// attempt, which it delivers on [Dispatcher.Outcomes] once its candidate is in the
// authority's repository under refs/orchestrator/attempts/<task>/<n>, its objects
// checked by git index-pack --strict (the watch takes that commit as the candidate, never
// checking it out). Each job carries a
// secret derived from the dispatcher's key; the worker proves its outcome with it (an
// HMAC of everything the outcome says, the digests of its bundle and log included), so
// that a worker cannot return an outcome for an attempt it was not given: such an
// outcome is refused with [ErrForged]. A later outcome of an accepted attempt (a worker
// that was slow, after a redelivery) is dropped. What was submitted and what was
// accepted are kept in two key-value buckets, so that a restarted authority re-derives
// what is pending ([Dispatcher.Pending], [Dispatcher.Accepted]) and never accepts two
// outcomes of one attempt.
//
// # The worker's side
//
// A [Worker] keeps a cache: a bare repository of the bases it fetched, and a folder per
// job with a worktree checkout of the base. It fetches its first base as soon as the
// authority bundles one (the run bundles the integration head as it starts,
// [Dispatcher.BundleBase]), so that its first job does not wait for it. Its [RunFunc] runs the agent there
// ([AgentRunner]: agents.Start as the watch loop starts an agent, in agents.Sandbox when
// bubblewrap works); then the worker commits what the checkout holds on top of the base
// with an index of its own (all files, new ones included, .gitignore honoured), as
// package worktree does for a local attempt. A worker announces itself and the attempts
// it runs in a key-value bucket whose entries expire ([ListWorkers]). When it starts, it
// ends the agents a killed worker left in its cache.
//
// # What it does not own
//
// It does not decide what to run or judge what came back (package watch), render prompts
// (package prompts) or build the agent's command line (package agents and the watch
// loop's configuration).
package workers
