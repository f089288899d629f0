// Package queuegen writes large, realistic task queues and test plans for benchmarks and for
// people who want to repeat them (`make bench-data`).
package queuegen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Categories of the generated test plan, in file order.
var Categories = []string{"unit", "integration", "e2e", "security", "performance", "edge_cases"}

// TaskID returns the ID of the i-th generated task (1-based): TASK-00001.
func TaskID(i int) string { return fmt.Sprintf("TASK-%05d", i) }

// TestID returns the plan ID covered by the i-th task, when it is a TEST task.
func TestID(i int) string {
	return fmt.Sprintf("%s-%05d", planPrefix(i), i)
}

func planPrefix(i int) string {
	return []string{"UNIT", "INT", "E2E", "SEC", "PERF", "EDGE"}[(i/2)%len(Categories)]
}

// WriteQueue writes a task queue of n tasks with about 12 fields each (about 440 bytes a
// task). Odd tasks are TEST tasks (Category testing, Mode write); each even task is a BUILD
// task that depends on the TEST task before it. The headings are bare IDs, so that a sed
// script can find them.
func WriteQueue(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "# Task Queue\n\nGenerated for benchmarks: %d tasks.\n\n", n)
	fmt.Fprintf(bw, "## Project Commands\n\n| Command | Value |\n|---------|-------|\n| Build | go build ./... |\n| Test | go test ./... |\n\n## Tasks\n\n")
	for i := 1; i <= n; i++ {
		id := TaskID(i)
		fmt.Fprintf(bw, "### %s\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n", id)
		if i%2 == 1 {
			fmt.Fprintf(bw, "| Category | testing |\n| Mode | write |\n| Complexity | normal |\n| Priority | medium |\n")
			fmt.Fprintf(bw, "| Depends On | - |\n| Test IDs | %s |\n", TestID(i))
		} else {
			fmt.Fprintf(bw, "| Category | backend |\n| Complexity | normal |\n| Priority | medium |\n")
			fmt.Fprintf(bw, "| Depends On | %s |\n| Test IDs | - |\n| Agent | claude |\n", TaskID(i-1))
		}
		fmt.Fprintf(bw, "| Test File | pkg/f%d/f_test.go |\n| Test Command | go test ./pkg/f%d |\n", i, i)
		fmt.Fprintf(bw, "| Retry-Count | 0 |\n| Max-Retries | 10 |\n| Halted | false |\n\n")
		fmt.Fprintf(bw, "**Objective:** Make feature %d work as the plan says.\n\n**Acceptance Criteria:**\n- Its tests pass\n- No other test breaks\n\n", i)
	}
	return bw.Flush()
}

// WritePlan writes a test plan in claudestrator's shape whose IDs are exactly those of the
// TEST tasks of WriteQueue(n), plus extra IDs that no task maps.
func WritePlan(w io.Writer, n, extra int) error {
	type test struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Category string `json:"category"`
		Priority string `json:"priority"`
		Steps    []any  `json:"steps"`
	}
	tests := map[string][]test{}
	for i := 1; i <= n; i += 2 {
		c := Categories[(i/2)%len(Categories)]
		tests[c] = append(tests[c], test{ID: TestID(i), Name: fmt.Sprintf("test %d", i), Category: c, Priority: "high", Steps: []any{}})
	}
	for i := 0; i < extra; i++ {
		tests["unit"] = append(tests["unit"], test{ID: fmt.Sprintf("UNIT-X%05d", i), Name: "unmapped", Category: "unit", Priority: "low", Steps: []any{}})
	}
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "{\"tests\": {")
	for ci, c := range Categories {
		if ci > 0 {
			fmt.Fprint(bw, ",")
		}
		list := tests[c]
		if list == nil {
			list = []test{}
		}
		b, err := json.Marshal(list)
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "\n  %q: %s", c, b)
	}
	fmt.Fprint(bw, "\n}}\n")
	return bw.Flush()
}
