package watch_test

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// BenchmarkWorkersVsJobs (issue 28): the same eight independent tasks with 5 s agents
// (ORCHESTRATOR_BENCH_WORK sets another time), run by `watch --jobs 4` with the agents here,
// and by four workers on this machine (`watch --jobs 4 --serve-workers` and four
// `orchestrator worker` processes of one job each, every agent in the workers' sandbox):
// the wall time of each, and their ratio (target ≤ 1.1×). The workers' time includes
// their start and the bundles both ways.
//
//	go test ./watch -run '^$' -bench BenchmarkWorkersVsJobs -benchtime 1x
func BenchmarkWorkersVsJobs(b *testing.B) {
	work := 5 * time.Second
	if s := os.Getenv("ORCHESTRATOR_BENCH_WORK"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			work = d
		}
	}
	var here, there time.Duration
	for b.Loop() {
		for _, onWorkers := range []bool{false, true} {
			var tasks []realTask
			agents := map[string][]string{}
			for k := 1; k <= 8; k++ {
				id, name := fmt.Sprintf("TASK-%03d", k), fmt.Sprintf("a%d", k)
				tasks = append(tasks, realTask{id: id, category: "backend", agent: name, testCommand: fmt.Sprintf("go test ./part%02d", k), exempt: true})
				agents[name] = remoteAgent(work, 0, fmt.Sprintf("part%02d/value.go=package part%02d; func Value() int { return %d }", k, k, k))
			}
			r := newRealRepo(b, "gomod", goTest, tasks, agents, remoteConfig)
			if code, out := r.run("baseline"); code != 0 {
				b.Fatalf("baseline: exit %d\n%s", code, out)
			}
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
