package plan

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// BenchmarkJudge measures the gate's own time on one planner output: the scratch file of n
// tasks (half TEST tasks, so n/2 plan IDs) appended to a queue, the matrix made, and
// validate's rules run on the candidate. go test ./plan -bench Judge
func BenchmarkJudge(b *testing.B) {
	for _, n := range []int{800, 10000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			var q, pl bytes.Buffer
			if err := queuegen.WriteQueue(&q, n); err != nil {
				b.Fatal(err)
			}
			if err := queuegen.WritePlan(&pl, n, 0); err != nil {
				b.Fatal(err)
			}
			scratch := []byte(q.String()[strings.Index(q.String(), "### "):])
			plan, err := queue.ParsePlan("plan.json", pl.Bytes())
			if err != nil {
				b.Fatal(err)
			}
			existing, err := queue.Parse("task_queue.md", []byte("# Task Queue\n"), queue.Tasks)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(scratch)))
			b.ResetTimer()
			for range b.N {
				if v := Judge(existing, "plan.md", scratch, plan, "candidate.md"); !v.OK() {
					b.Fatal(v.Text())
				}
			}
		})
	}
}
