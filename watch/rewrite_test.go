package watch_test

// End-to-end tests of a history rewrite (SPEC §7.5, §8; issue 27): a person resets the
// integration branch to an older commit, and the baseline and the retry counters follow
// the history, through a real `watch` with scripted agents on the gomod fixture. And a
// half-saved queue while the start's baseline runs.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRealResetThenHonestGreen: on the first history, a TEST task and its BUILD task land
// a test (cart.TestDiscount_UNIT_001) that the baseline then holds, and TASK-003's agent
// claims done twice with code that breaks the money package (two false successes, the
// same signature). The person resets the branch to the fixture's commit, abandoning all of
// it, and sets TASK-003 going again with auto-retry on.
//
// The cheat the rules must refuse stays refused: attempt 3 breaks the money package once
// more and is rejected. What must not happen: the baseline's test of the abandoned commits
// taken for a regression of the honest attempt 4, and a halt inherited from the abandoned
// history (the third false success, the third identical signature). Attempt 4 lands, the
// run exits 0, and the person is told why the baseline was measured again and why the old
// failures no longer count.
func TestRealResetThenHonestGreen(t *testing.T) {
	t.Parallel()
	broken := files(t, map[string]string{"money/money.go": `// Package money holds amounts of money in cents.
package money

import "fmt"

// Cents is an amount of money in cents.
type Cents int64

// String formats c as euros.
func (c Cents) String() string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

// Percent returns p percent of c.
func (c Cents) Percent(p int64) Cents { return 0 }
`})
	round := files(t, map[string]string{"money/round.go": "package money\n\n// Round rounds c to whole euros.\nfunc Round(c Cents) Cents { return (c + 50) / 100 * 100 }\n"})
	tasks := redGreenVerify()[:2]
	tasks[0].testCommand = "go test ./cart"
	tasks = append(tasks, realTask{id: "TASK-003", category: "backend", agent: "rounder", testCommand: "go test ./money", exempt: true})
	r := newRealRepo(t, "gomod", goTest, tasks, map[string][]string{
		"writer":  slowAgent("test-writer", 100*time.Millisecond, 0, files(t, goRedFiles)),
		"builder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, goGreenFiles)),
		"rounder": {"TESTAGENT_MODE=plan", "TESTAGENT_ROLE=implementer", "TESTAGENT_WORK=100ms", "TESTAGENT_AFTER=0s",
			"TESTAGENT_PLAN=1=slow TESTAGENT_FROM=" + broken + "; 4=slow TESTAGENT_FROM=" + round},
	}, "")
	fixture := strings.TrimSpace(git(t, r.root, "rev-parse", "HEAD"))

	// The first history: no retries, so that each run gives TASK-003 one attempt.
	r.write(".orchestrator/no_auto_retry", "")
	code, out := r.run("watch", "--once")
	if code != 1 {
		t.Fatalf("first run: exit %d, want 1 (TASK-003 failed)\n%s", code, out)
	}
	for id, want := range map[string]string{"TASK-T01": "completed", "TASK-001": "completed", "TASK-003": "failed"} {
		if got := r.statuses()[id]; got != want {
			t.Fatalf("first run: %s is %q, want %s%s\n%s", id, got, want, r.describeAttempts(id), out)
		}
	}
	if code, out := r.run("set", "TASK-003", "Status=pending"); code != 0 {
		t.Fatalf("set: exit %d\n%s", code, out)
	}
	if code, out = r.run("watch", "--once"); code != 1 {
		t.Fatalf("second run: exit %d, want 1 (TASK-003 failed again)\n%s", code, out)
	}
	for n := 1; n <= 2; n++ {
		if res := r.result("TASK-003", n); res["claim"] != "done" || res["outcome"] != "failed" {
			t.Fatalf("TASK-003 attempt %d: claim %v, outcome %v; want a false success%s", n, res["claim"], res["outcome"], r.describeAttempts("TASK-003"))
		}
	}
	abandoned := r.result("TASK-003", 2)["signature"]

	// The person abandons all of it.
	git(t, r.root, "reset", "-q", "--hard", fixture)
	if err := os.Remove(filepath.Join(r.root, ".orchestrator", "no_auto_retry")); err != nil {
		t.Fatal(err)
	}
	if code, out := r.run("set", "TASK-003", "Status=pending"); code != 0 {
		t.Fatalf("set: exit %d\n%s", code, out)
	}
	code, out = r.run("watch", "--once")
	if code != 0 {
		t.Errorf("after the reset: exit %d, want 0%s\n%s", code, r.describeAttempts("TASK-003"), out)
	}
	if got := r.statuses()["TASK-003"]; got != "completed" {
		t.Errorf("TASK-003 is %q, want completed; %s%s", got, r.reasonFields("TASK-003"), r.describeAttempts("TASK-003"))
	}
	if h := r.field("TASK-003", "Halted"); h == "true" {
		t.Errorf("TASK-003 halted after the reset: %s", r.reasonFields("TASK-003"))
	}
	// The cheat of the new history is still refused.
	if res := r.result("TASK-003", 3); res["outcome"] != "failed" || res["claim"] != "done" {
		t.Errorf("attempt 3 (breaks money, claims done) ended %v: %v; want failed", res["outcome"], res["reason"])
	} else if res["signature"] != abandoned {
		t.Logf("attempt 3's signature %v differs from the abandoned history's %v", res["signature"], abandoned)
	}
	if res := r.result("TASK-003", 4); res["outcome"] != "completed" {
		t.Errorf("the honest attempt 4 ended %v: %v; want completed (landed)", res["outcome"], res["reason"])
	}
	if forgot, _ := r.result("TASK-003", 3)["forgot"].([]any); len(forgot) != 2 {
		t.Errorf("attempt 3 forgot %v, want attempts 1 and 2 (of the abandoned history)", r.result("TASK-003", 3)["forgot"])
	}
	if rc := r.field("TASK-003", "Retry-Count"); rc != "1" {
		t.Errorf("Retry-Count %q, want 1 (the retry after attempt 3 alone)", rc)
	}
	for _, say := range []string{"was rewritten", "no longer count"} {
		if !strings.Contains(out, say) {
			t.Errorf("the run does not say %q:\n%s", say, out)
		}
	}
	if _, err := os.Stat(filepath.Join(r.root, "money", "round.go")); err != nil {
		t.Errorf("the verified work is not in the person's tree: %v", err)
	}
	// The baseline holds for the new history, and none of the abandoned commits' tests.
	b := r.read(".orchestrator/baseline.json")
	if strings.Contains(b, "TestDiscount_UNIT_001") {
		t.Errorf("the baseline still holds the abandoned commits' test:\n%s", b)
	}
	head := strings.TrimSpace(git(t, r.root, "rev-parse", "HEAD"))
	if !strings.Contains(b, `"commit": "`+head+`"`) {
		t.Errorf("the baseline does not hold for the head %s:\n%s", head, b)
	}
	r.noneLeft()
}

// TestRealHalfSavedQueueDuringStartBaseline: while the baseline runs at the start of watch
// (its test command waits on a fifo the test holds), a person leaves the task queue half
// saved: a task heading with no field table yet. When the baseline ends, the run must not
// stop (exit 2, "record has no field table"): it says the queue does not parse, starts
// nothing, and waits; once the file is whole again, the task runs and the run exits 0.
func TestRealHalfSavedQueueDuringStartBaseline(t *testing.T) {
	t.Parallel()
	ctl := t.TempDir()
	fifo, started, done := filepath.Join(ctl, "fifo"), filepath.Join(ctl, "started"), filepath.Join(ctl, "done")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first run of the test command (the start's baseline) waits for the fifo; the
	// later ones (the gate's) do not.
	hold := filepath.Join(ctl, "hold.sh")
	if err := os.WriteFile(hold, []byte("[ -e "+done+" ] && exit 0\ntouch "+started+"\ncat "+fifo+" >/dev/null\ntouch "+done+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRealRepo(t, "gomod", "sh "+hold+" && "+goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "builder", testCommand: "go test ./cart", exempt: true},
	}, map[string][]string{"builder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, goGreenFiles))}, "")
	w := r.start("watch", "--once", "--debounce", "20ms")
	r.waitFor("the start's baseline never ran\n"+w.out.String(), func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	good := r.read(".orchestrator/task_queue.md")
	r.write(".orchestrator/task_queue.md", good+"### TASK-002: half-saved\n")
	// Let the baseline end.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.waitFor("no warning that the queue does not parse\n"+w.out.String(), func() bool {
		return strings.Contains(w.out.String(), "scheduling paused until the file parses") || w.exited()
	})
	if w.exited() {
		t.Fatalf("watch ended (%v) on a half-saved queue after the start's baseline; want it to wait\n%s", w.err, w.out.String())
	}
	if !strings.Contains(w.out.String(), "task_queue.md") {
		t.Errorf("the warning does not name the queue file:\n%s", w.out.String())
	}
	if dirs := r.attemptDirs("TASK-001"); len(dirs) != 0 {
		t.Errorf("TASK-001 started (attempts %v) while the queue did not parse", dirs)
	}
	r.write(".orchestrator/task_queue.md", good)
	if code := w.wait(t, 60*time.Second); code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, w.out.String())
	}
	if got := r.statuses()["TASK-001"]; got != "completed" {
		t.Errorf("TASK-001 is %q, want completed%s\n%s", got, r.describeAttempts("TASK-001"), w.out.String())
	}
	r.oneAgentPerAttempt("TASK-001")
	r.noneLeft()
}

// TestRealAmendKeepsBaseline (issue 26 item 3): a person amends the message of the commit
// the baseline holds for: the history is rewritten, the tree is the same. The next watch
// runs no baseline, and the baseline holds for the new head.
func TestRealAmendKeepsBaseline(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "rounder", testCommand: "go test ./money", exempt: true},
	}, map[string][]string{
		"rounder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, map[string]string{"money/round.go": "package money\n\n// Round rounds c to whole euros.\nfunc Round(c Cents) Cents { return (c + 50) / 100 * 100 }\n"})),
	}, "")
	if code, out := r.run("baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	git(t, r.root, "commit", "-q", "--amend", "-m", "fixture, reworded")
	amended := strings.TrimSpace(git(t, r.root, "rev-parse", "HEAD"))
	code, out := r.run("watch", "--once")
	if code != 0 || r.field("TASK-001", "Status") != "completed" {
		t.Fatalf("exit %d%s\n%s", code, r.describeAttempts("TASK-001"), out)
	}
	if strings.Contains(out, "rewritten") || strings.Contains(out, " baseline: ") {
		t.Errorf("a message amended made watch measure the baseline again:\n%s", out)
	}
	// It holds for the amended commit, or for TASK-001's landing on top of it.
	var b struct {
		Commit string `json:"commit"`
	}
	text := r.read(".orchestrator/baseline.json")
	if err := json.Unmarshal([]byte(text), &b); err != nil || b.Commit == "" {
		t.Fatalf("baseline.json: %v\n%s", err, text)
	}
	if b.Commit != amended && !strings.Contains(r.git("log", "--format=%H", b.Commit), amended) {
		t.Errorf("the baseline holds for %s, which is not the amended history (%s):\n%s", b.Commit, amended, text)
	}
}
