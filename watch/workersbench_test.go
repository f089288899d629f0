package watch_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/workers"
)

// BenchmarkWorkersVsJobs (issue 28): the same eight independent tasks with 5 s agents
// (ORCHESTRATOR_BENCH_WORK sets another time), run by `watch --jobs 4` with the agents here,
// and by four workers on this machine (`watch --jobs 4 --serve-workers` and four
// `orchestrator worker` processes of one job each, every agent in the workers' sandbox):
// the wall time of each, and their ratio (target ≤ 1.1×). The workers' time includes
// their start and the bundles both ways. Both arms run their agents in bubblewrap, as a
// config's default (sandbox: auto) does here and a worker always does;
// ORCHESTRATOR_BENCH_LOCAL_SANDBOX=off runs the local arm's agents without it.
// ORCHESTRATOR_BENCH_TRACE=1 logs each arm's timeline: the watch's events (--json, in
// the warm benchmark) and each worker's log, both to the millisecond.
//
//	go test ./watch -run '^$' -bench BenchmarkWorkersVsJobs -benchtime 1x
func BenchmarkWorkersVsJobs(b *testing.B) {
	var here, there time.Duration
	for b.Loop() {
		for _, onWorkers := range []bool{false, true} {
			r, tasks := workersBenchRepo(b, remoteConfig)
			start := time.Now()
			args := []string{"watch", "--once", "--jobs", "4"}
			if onWorkers {
				args = append(args, "--serve-workers", "127.0.0.1:0")
			}
			w := r.start(args...)
			if onWorkers {
				url := servedURL(b, r, w)
				for i := 1; i <= 4; i++ {
					startWorker(b, url, fmt.Sprintf("w%d", i))
				}
			}
			took := allLanded(b, r, w, tasks, start)
			if onWorkers {
				there += took
			} else {
				here += took
			}
		}
	}
	reportWorkersVsJobs(b, here, there)
}

// BenchmarkWorkersVsJobsWarm is BenchmarkWorkersVsJobs with a fleet that is up before the
// run, as workers are once they serve a team: the four workers are connected, to a NATS
// server of their own that keeps the workers' streams from an earlier run (made here by a
// dispatcher that then closes), before `watch --once --jobs 4 --workers URL` starts. The
// time counted is the watch's alone in both arms.
//
//	go test ./watch -run '^$' -bench BenchmarkWorkersVsJobsWarm -benchtime 1x
func BenchmarkWorkersVsJobsWarm(b *testing.B) {
	const authority = "bench-authority-password"
	var here, there time.Duration
	for b.Loop() {
		for _, onWorkers := range []bool{false, true} {
			config := ""
			var srv *workers.Server
			if onWorkers {
				var err error
				srv, err = workers.Serve(context.Background(), workers.ServeOptions{Addr: "127.0.0.1:0", StoreDir: b.TempDir(), Token: remoteToken, AuthorityToken: authority})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(srv.Close)
				config = fmt.Sprintf("workers:\n  url: %s\n  credentials: %s:%s\n  token: %s\n  ack_wait: 2s\n", srv.URL(), workers.AuthorityUser, authority, remoteToken)
			}
			r, tasks := workersBenchRepo(b, config)
			if onWorkers {
				// The streams of an earlier run, then the fleet, connected and idle.
				d, err := workers.NewDispatcher(context.Background(), workers.DispatcherOptions{
					URL: srv.URL(), Credentials: srv.Authority(), Repo: r.root, Key: []byte("an earlier run's key"), AckWait: 2 * time.Second,
				})
				if err != nil {
					b.Fatal(err)
				}
				d.Close()
				for i := 1; i <= 4; i++ {
					startWorker(b, srv.URL(), fmt.Sprintf("w%d", i))
				}
				r.waitFor("the four workers never all said they were there", func() bool {
					hb, err := workers.ListWorkers(context.Background(), srv.URL(), srv.Authority())
					return err == nil && len(hb) == 4
				})
			}
			start := time.Now()
			args := []string{"watch", "--once", "--jobs", "4"}
			if os.Getenv("ORCHESTRATOR_BENCH_TRACE") != "" {
				args = append(args, "--json")
			}
			took := allLanded(b, r, r.start(args...), tasks, start)
			if onWorkers {
				there += took
			} else {
				here += took
			}
		}
	}
	reportWorkersVsJobs(b, here, there)
}

// workersBenchRepo is the benchmarks' Go module with eight independent tasks whose agents
// work 5 s (ORCHESTRATOR_BENCH_WORK sets another time) and write a package of their own,
// gated by its `go test`, with its baseline taken; config is added to its config.
func workersBenchRepo(b *testing.B, config string) (*realRepo, []realTask) {
	b.Helper()
	work := 5 * time.Second
	if s := os.Getenv("ORCHESTRATOR_BENCH_WORK"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			work = d
		}
	}
	var tasks []realTask
	agents := map[string][]string{}
	for k := 1; k <= 8; k++ {
		id, name := fmt.Sprintf("TASK-%03d", k), fmt.Sprintf("a%d", k)
		tasks = append(tasks, realTask{id: id, category: "backend", agent: name, testCommand: fmt.Sprintf("go test ./part%02d", k), exempt: true})
		agents[name] = remoteAgent(work, 0, fmt.Sprintf("part%02d/value.go=package part%02d; func Value() int { return %d }", k, k, k))
	}
	// Both arms run their agents as a person's config does by default (sandbox: auto):
	// bubblewrap, as a worker always does where it runs.
	if os.Getenv("ORCHESTRATOR_BENCH_LOCAL_SANDBOX") != "off" {
		config = "sandbox: auto\n" + config
	}
	r := newRealRepo(b, "gomod", goTest, tasks, agents, config)
	if code, out := r.run("baseline"); code != 0 {
		b.Fatalf("baseline: exit %d\n%s", code, out)
	}
	return r, tasks
}

// allLanded waits for the watch w to end, checks that it landed every task, and returns
// the time since start.
func allLanded(b *testing.B, r *realRepo, w *watchRun, tasks []realTask, start time.Time) time.Duration {
	b.Helper()
	code := w.wait(b, 10*time.Minute)
	took := time.Since(start)
	if os.Getenv("ORCHESTRATOR_BENCH_TRACE") != "" {
		b.Logf("start %s\n%s", start.Format("15:04:05.000"), w.out.String())
	}
	if code != 0 {
		b.Fatalf("exit %d\n%s", code, w.out.String())
	}
	for _, tk := range tasks {
		if st := r.field(tk.id, "Status"); st != "completed" {
			b.Fatalf("%s is %s\n%s", tk.id, st, w.out.String())
		}
	}
	return took
}

// reportWorkersVsJobs reports both arms' mean wall time and their ratio.
func reportWorkersVsJobs(b *testing.B, here, there time.Duration) {
	b.ReportMetric(here.Seconds()/float64(b.N), "jobs4-s")
	b.ReportMetric(there.Seconds()/float64(b.N), "workers4-s")
	b.ReportMetric(float64(there)/float64(here), "workers/jobs")
}
