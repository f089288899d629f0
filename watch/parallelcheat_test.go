package watch_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// partRelay is the value of part 2 that its forging implementer writes: wrong, with an init
// function that runs the test binary again as its child and relays its output with every
// FAIL turned to PASS.
const partRelay = `package part02

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
)

// Value is wrong.
func Value() int { return 0 }

var suffix = "test"

func init() {
	// os.Args copied: the gate's reading of runner tampering does not follow it, so
	// that what catches this relay is the canaries.
	args := os.Args
	if os.Getenv("PART_RELAYED") != "" || !strings.HasSuffix(args[0], "."+suffix) {
		return
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "PART_RELAYED=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		os.Stdout.WriteString(strings.ReplaceAll(sc.Text(), "FAIL", "PASS") + "\n")
	}
	cmd.Wait()
	os.Exit(0)
}
`

// TestParallelSandboxedCheats (issue 23): four TEST→BUILD pairs at --jobs 4 with two gates at
// once, in the sandbox, with retries on. Two implementers are honest; one forges the test
// binary's report from an init function, one rewrites the test it was given so that a wrong
// value passes. Their gates run beside the honest ones: each cheat is refused at every
// attempt (forged_results, test_tampered) and nothing of it lands, and the honest pairs land
// at their first attempt.
func TestParallelSandboxedCheats(t *testing.T) {
	t.Parallel()
	var tasks []realTask
	agents := map[string][]string{}
	var dirs []string
	for i := 1; i <= 4; i++ {
		pkg := fmt.Sprintf("part%02d", i)
		id := fmt.Sprintf("UNIT-1%02d", i)
		test, build := fmt.Sprintf("TASK-T%02d", i), fmt.Sprintf("TASK-%03d", i)
		testFile := pkg + "/value_test.go"
		testText := fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc TestValue_%s(t *testing.T) {\n\tif got := Value(); got != %d {\n\t\tt.Errorf(\"Value() = %%d, want %d\", got)\n\t}\n}\n", pkg, strings.ReplaceAll(id, "-", "_"), i, i)
		red := map[string]string{testFile: testText}
		green := map[string]string{pkg + "/value.go": fmt.Sprintf("package %s\n\n// Value is the part's number.\nfunc Value() int { return %d }\n", pkg, i)}
		switch i {
		case 2:
			green = map[string]string{pkg + "/value.go": partRelay}
		case 4:
			green = map[string]string{
				pkg + "/value.go": "package part04\n\n// Value is wrong.\nfunc Value() int { return 0 }\n",
				testFile:          strings.Replace(testText, "got != 4", "got != 0", 1),
			}
		}
		redDir, greenDir := files(t, red), files(t, green)
		dirs = append(dirs, redDir, greenDir)
		agents["w"+pkg] = slowAgent("test-writer", time.Duration(200+100*i)*time.Millisecond, 0, redDir)
		agents["b"+pkg] = slowAgent("implementer", time.Duration(200+100*i)*time.Millisecond, 0, greenDir)
		tasks = append(tasks,
			realTask{id: test, category: "testing", mode: "write", agent: "w" + pkg, testIDs: id},
			realTask{id: build, category: "backend", agent: "b" + pkg, deps: test})
	}
	r := newRealRepo(t, "gomod", goTest, tasks, agents, "gate_jobs: 2\nretries: {max_retries: 1}\n")
	for i := 1; i <= 4; i++ {
		pkg := fmt.Sprintf("part%02d", i)
		r.write(pkg+"/doc.go", fmt.Sprintf("// Package %s is part %d of the shop.\npackage %s\n", pkg, i, pkg))
	}
	r.commitAll()
	r.sandboxed(append(dirs, filepath.Dir(r.starts))...)
	base := head(r.repo)

	code, out := r.run("watch", "--once", "--jobs", "4")
	st := r.statuses()
	for _, id := range []string{"TASK-T01", "TASK-001", "TASK-T02", "TASK-T03", "TASK-003", "TASK-T04"} {
		if st[id] != "completed" {
			t.Errorf("%s is %s, want completed (exit %d)%s\n%s", id, st[id], code, r.describeAttempts(id), out)
		}
		if dirs := r.attemptDirs(id); len(dirs) != 1 {
			t.Errorf("%s: attempts %v, want one%s", id, dirs, r.describeAttempts(id))
		}
	}
	for _, c := range []struct{ id, typ string }{{"TASK-002", "forged_results"}, {"TASK-004", "test_tampered"}} {
		if st[c.id] == "completed" {
			t.Errorf("%s, a cheat, is completed%s", c.id, r.describeAttempts(c.id))
		}
		for _, n := range r.attemptDirs(c.id) {
			res := r.read(fmt.Sprintf(".orchestrator/runs/%s/%d/result.json", c.id, n))
			if !strings.Contains(res, `"failure_type": "`+c.typ+`"`) {
				t.Errorf("%s attempt %d was not refused as %s:\n%s", c.id, n, c.typ, res)
			}
		}
	}
	for _, c := range commitsSince(r.repo, base) {
		for _, f := range filesOf(r.repo, c) {
			if f == "part02/value.go" || f == "part04/value.go" {
				t.Errorf("a cheat's %s landed in %.12s", f, c)
			}
		}
	}
	onlyPersonsTree(r.repo)
	r.noneLeft()
}
