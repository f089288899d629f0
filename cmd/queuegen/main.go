// Command queuegen writes a generated task queue (and optionally its test plan) for
// benchmarks: go run ./cmd/queuegen -tasks 10000 -o task_queue.md -plan plan.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/orchestrator/orchestrator/queue/queuegen"
)

func main() {
	n := flag.Int("tasks", 10000, "number of tasks")
	out := flag.String("o", "-", "queue file to write (- for standard output)")
	plan := flag.String("plan", "", "also write a test plan to this file")
	extra := flag.Int("plan-extra", 0, "test IDs in the plan that no task maps (10,000 tasks and 5,000 extra make a 10,000-ID plan)")
	flag.Parse()
	if err := run(*n, *out, *plan, *extra); err != nil {
		fmt.Fprintln(os.Stderr, "queuegen:", err)
		os.Exit(1)
	}
}

func run(n int, out, plan string, extra int) error {
	w := os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := queuegen.WriteQueue(w, n); err != nil {
		return err
	}
	if plan == "" {
		return nil
	}
	f, err := os.Create(plan)
	if err != nil {
		return err
	}
	if err := queuegen.WritePlan(f, n, extra); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
