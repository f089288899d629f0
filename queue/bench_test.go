package queue

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

func genQueue(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := queuegen.WriteQueue(&buf, n); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkParse measures parsing and indexing generated queues of 1k, 10k and 50k tasks.
// The target is 20 ms for 10k, and linear growth.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		src := genQueue(b, n)
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				d, err := Parse("task_queue.md", src, Tasks)
				if err != nil || !d.Fast || len(d.Records) != n {
					b.Fatalf("parse: %v fast=%v records=%d", err, d.Fast, len(d.Records))
				}
			}
		})
	}
}

// BenchmarkParseGoldmark is the same parse through goldmark, for comparison.
func BenchmarkParseGoldmark(b *testing.B) {
	src := genQueue(b, 10000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := parseGoldmark("task_queue.md", src, Tasks); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseOnly measures the parse that `orchestrator set` does: every record checked,
// one record's fields kept.
func BenchmarkParseOnly(b *testing.B) {
	src := genQueue(b, 10000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseOnly("task_queue.md", src, Tasks, "TASK-05000"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReady measures computing the ready set of a generated 10,000-task queue, which
// the watch loop does in every write that finishes or starts a task.
func BenchmarkReady(b *testing.B) {
	d, err := Parse("task_queue.md", genQueue(b, 10000), Tasks)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(Ready(d, nil, nil)) == 0 {
			b.Fatal("nothing ready")
		}
	}
}
