package queue

import (
	"bytes"
	"testing"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

// BenchmarkValidate measures what `orchestrator validate` does in-process on a generated
// 10,000-task queue and a 10,000-ID test plan (5,000 IDs mapped by the queue's TEST tasks,
// 5,000 not, so 5,000 findings): parse the queue, read the plan, run every rule of SPEC §6.1.
// Target: 50 ms.
func BenchmarkValidate(b *testing.B) {
	src := genQueue(b, 10000)
	var plan bytes.Buffer
	if err := queuegen.WritePlan(&plan, 10000, 5000); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src) + plan.Len()))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Parse("task_queue.md", src, Tasks)
		if err != nil {
			b.Fatal(err)
		}
		p, err := ParsePlan("test-plan-output.json", plan.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		if fs := Check(d, p); len(fs) != 5001 {
			b.Fatalf("%d findings, want 5001 (5000 unmapped IDs and no matrix)", len(fs))
		}
	}
}
