package watch

import (
	"path"
	"strings"

	"github.com/orchestrator/orchestrator/queue"
)

// redTests tells the RED gate which tests are a TEST task's (SPEC §7.2): whether testCmd,
// the command the attempt started with, is the project's rather than the task's own Test
// Command (then the gate narrows it), and the task's Test File paths. A queue that cannot be
// read just now (a person's half-finished save) leaves the command as it is.
func redTests(tasks, id, testCmd string) (project bool, testFile []string) {
	doc, err := queue.Load(tasks)
	if err != nil {
		return false, nil
	}
	rec, ok := doc.Record(id)
	if !ok {
		return false, nil
	}
	own := doc.Get(rec, "Test Command")
	if !queue.IsEmpty(own) && strings.TrimSpace(own) == testCmd {
		return false, nil
	}
	for _, p := range queue.List(doc.Get(rec, "Test File")) {
		p = path.Clean(strings.TrimPrefix(strings.TrimSpace(p), "./"))
		if p != "." && !strings.HasPrefix(p, "../") && !path.IsAbs(p) {
			testFile = append(testFile, p)
		}
	}
	return true, testFile
}
