package watch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/workers"
)

// BenchmarkWorkersVsJobsWarm is BenchmarkWorkersVsJobs with a fleet that is up before the
// run, as workers are once they serve a team: the same eight tasks, 5 s agents and real
// `go test` gates, against `watch --jobs 4`; but the four workers are connected, to a
// NATS server of their own that keeps the workers' streams from an earlier run (made
// here by a dispatcher that then closes), before `watch --once --workers URL` starts.
// The time counted is the watch's alone in both arms; BenchmarkWorkersVsJobs counts four
// workers starting beside it on the same cores.
//
//	go test ./watch -run '^$' -bench BenchmarkWorkersVsJobsWarm -benchtime 3x
func BenchmarkWorkersVsJobsWarm(b *testing.B) {
	const authority = "bench-authority-password"
	var here, there time.Duration
	for b.Loop() {
		for _, onWorkers := range []bool{false, true} {
			var tasks []realTask
			agents := map[string][]string{}
			for k := 1; k <= 8; k++ {
				id, name := fmt.Sprintf("TASK-%03d", k), fmt.Sprintf("a%d", k)
				tasks = append(tasks, realTask{id: id, category: "backend", agent: name, testCommand: fmt.Sprintf("go test ./part%02d", k), exempt: true})
				agents[name] = remoteAgent(5*time.Second, 0, fmt.Sprintf("part%02d/value.go=package part%02d; func Value() int { return %d }", k, k, k))
			}
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
			r := newRealRepo(b, "gomod", goTest, tasks, agents, config)
			if code, out := r.run("baseline"); code != 0 {
				b.Fatalf("baseline: exit %d\n%s", code, out)
			}
			args := []string{"watch", "--once", "--jobs", "4"}
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
			w := r.start(args...)
			code := w.wait(b, 10*time.Minute)
			took := time.Since(start)
			if code != 0 {
				b.Fatalf("workers %v: exit %d\n%s", onWorkers, code, w.out.String())
			}
			for _, tk := range tasks {
				if st := r.field(tk.id, "Status"); st != "completed" {
					b.Fatalf("workers %v: %s is %s", onWorkers, tk.id, st)
				}
			}
			if onWorkers {
				there += took
			} else {
				here += took
			}
		}
	}
	b.ReportMetric(here.Seconds()/float64(b.N), "jobs4-s")
	b.ReportMetric(there.Seconds()/float64(b.N), "workers4-s")
	b.ReportMetric(float64(there)/float64(here), "workers/jobs")
}
