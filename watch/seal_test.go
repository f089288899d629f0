package watch_test

// End-to-end tests of sealed evidence (SPEC §15.2 item 4, §7.6 "Checkout", §7.7
// Orchestrator-Seal; issue 23 item 2), without the sandbox (`sandbox: off`): an agent, or
// the code the gate runs, that writes the orchestrator's state or the repository's own
// configuration gains nothing. A record whose seal fails is not evidence, and `status`
// names it; a change to .git/config, info/attributes or hooks stops the run with exit 2.
// Beside each cheat, the honest twin lands and `status` shows it verified.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stateDir is the orchestrator's state as an agent without the sandbox reaches it: its
// attempt folder is .git/orchestrator/runs/<ID>/<n>.
const stateDir = `"$ORCHESTRATOR_ATTEMPT_DIR/../../.."`

// breakPercent makes money.Percent wrong, so that money's baseline test TestPercent
// fails; the task's own test command (the whole suite) then fails only on a baseline test.
const breakPercent = `sed -i 's/return Cents((v + 50) \/ 100)/return Cents(v \/ 100)/' money/money.go
`

// goodWork is a harmless change that passes every gate.
const goodWork = `cat > money/round.go <<'EOF'
package money

// Round is a no-op kept for a later task.
func Round(c int) int { return c }
EOF
`

// TestSealedEvidence: each cheat writes orchestrator state the gate or status would read,
// and fails; the honest twin lands and is verified.
func TestSealedEvidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sh   string
		// wantType is the failure type of attempt 1 ("" for the honest twin, which lands).
		wantType string
		// wantReason is in attempt 1's reason.
		wantReason string
		// edited names the record status must report as edited outside the orchestrator.
		edited string
		// byHand: the task must not show as verified (completed by hand at most).
		byHand bool
	}{
		{name: "honest", sh: goodWork},
		{name: "empties the baseline and breaks a baseline test", wantType: "regression", wantReason: "example.com/shop/money.TestPercent",
			sh: breakPercent + `printf '{\n  "passing_tests": [],\n  "baseline_regression_command": ""\n}\n' > ` + stateDir + `/baseline.json
`, edited: ".git/orchestrator/baseline.json"},
		{name: "forges its verified mark and completes itself", byHand: true,
			sh: breakPercent + `mkdir -p ` + stateDir + `/verified
c=$(git rev-parse HEAD)
printf '%s\n' "$c" > ` + stateDir + `/verified/TASK-001
orchestrator --dir "$ORCHESTRATOR_MARKER_DIR/../.." set TASK-001 Status=completed Commit="$c"
`, edited: ".git/orchestrator/verified/TASK-001"},
		{name: "copies a sealed record over another task's", wantType: "regression", wantReason: "TestPercent",
			sh: breakPercent + `mkdir -p ` + stateDir + `/runs/TASK-009/1
cp ` + stateDir + `/runs/TASK-001/1/result.json ` + stateDir + `/runs/TASK-009/1/result.json
`, edited: ".git/orchestrator/runs/TASK-009/1/result.json"},
		{name: "forges a result.json", wantType: "regression", wantReason: "TestPercent",
			sh: breakPercent + `mkdir -p ` + stateDir + `/runs/TASK-009/1
printf '{\n  "task": "TASK-009",\n  "attempt": 1,\n  "outcome": "completed",\n  "commit": "%s"\n}\n' "$(git rev-parse HEAD)" > ` + stateDir + `/runs/TASK-009/1/result.json
`, edited: ".git/orchestrator/runs/TASK-009/1/result.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-001", category: "backend", agent: "builder", exempt: true},
			}, map[string][]string{"builder": scriptAgent(tt.sh)}, "")
			r.write(".orchestrator/no_auto_retry", "")
			code, out := r.run("watch", "--once")
			st := r.statuses()
			line := statusLine(r.repo, "TASK-001")
			_, status := r.run("status")
			res := r.result("TASK-001", 1)
			if tt.wantType == "" && !tt.byHand {
				if code != 0 || st["TASK-001"] != "completed" || !strings.HasPrefix(line, "TASK-001  completed ") && !strings.Contains(line, " completed ") || strings.Contains(line, "by hand") {
					t.Fatalf("honest: exit %d, TASK-001 %q, status line %q; want 0, completed and verified%s\n%s", code, st["TASK-001"], line, r.describeAttempts("TASK-001"), out)
				}
				if strings.Contains(status, "edited outside") || strings.Contains(out, "edited outside") {
					t.Errorf("honest run: a record reported edited:\n%s\n%s", status, out)
				}
				if msg := r.git("log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Orchestrator-Seal: ") {
					t.Errorf("the landing has no Orchestrator-Seal trailer:\n%s", msg)
				}
				return
			}
			if code == 0 {
				t.Errorf("exit 0 after the cheat, want non-zero%s\n%s", r.describeAttempts("TASK-001"), out)
			}
			if tt.wantType != "" && (res["failure_type"] != tt.wantType || !strings.Contains(res["reason"].(string), tt.wantReason)) {
				t.Errorf("attempt 1: %v: %v; want %s naming %s\n%s", res["failure_type"], res["reason"], tt.wantType, tt.wantReason, evidence(r.repo, "TASK-001", 1))
			}
			if tt.byHand && !strings.Contains(line, "by hand") {
				t.Errorf("status shows %q: the forged mark made the task verified", line)
			}
			if !strings.Contains(status, "edited outside the orchestrator") || !strings.Contains(status, tt.edited) {
				t.Errorf("status does not say %s was edited outside the orchestrator:\n%s", tt.edited, status)
			}
			if !strings.Contains(out, tt.edited) {
				t.Errorf("watch does not name %s:\n%s", tt.edited, out)
			}
			r.noneLeft()
		})
	}
}

// TestConfigChangeStopsRun: an agent, or the code its gate runs, that installs a smudge
// filter (.git/config and .git/info/attributes) or a hook stops the run with exit 2 naming
// the file, its task blocked; nothing lands, and no filter ever runs as the orchestrator.
func TestConfigChangeStopsRun(t *testing.T) {
	t.Parallel()
	ran := filepath.Join(t.TempDir(), "filter-ran")
	filter := `git config filter.evil.smudge "touch ` + ran + `; sed s/Percent/Evil/"
git config filter.evil.clean "touch ` + ran + `; cat"
printf '*.go filter=evil\n' > "$(git rev-parse --git-common-dir)/info/attributes"
`
	// The implementation's init, run by the gate's go test: it finds the repository from
	// the gate checkout's .git file and writes a filter into its configuration.
	gateFilter := goodWork + `cat > money/zz_init.go <<'EOF'
package money

import (
	"os"
	"path/filepath"
	"strings"
)

func init() {
	for dir, _ := os.Getwd(); dir != "/"; dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, ".git"))
		if err != nil {
			continue
		}
		gitdir := strings.TrimSpace(strings.TrimPrefix(string(b), "gitdir: "))
		common := filepath.Dir(filepath.Dir(gitdir))
		f, err := os.OpenFile(filepath.Join(common, "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			f.WriteString("[filter \"evil\"]\n\tsmudge = touch ` + ran + `; cat\n")
			f.Close()
		}
		return
	}
}
EOF
`
	tests := []struct {
		name, sh, want string
	}{
		{name: "smudge filter", sh: goodWork + filter, want: ".git/config"},
		{name: "attributes alone", sh: goodWork + `printf '*.go filter=lfs\n' > "$(git rev-parse --git-common-dir)/info/attributes"
`, want: ".git/info/attributes"},
		{name: "hook", sh: goodWork + `h="$(git rev-parse --git-common-dir)/hooks/post-merge"; printf '#!/bin/sh\ntouch ` + ran + `\n' > "$h"; chmod +x "$h"
`, want: ".git/hooks/post-merge"},
		{name: "filter written by the code the gate runs", sh: gateFilter, want: ".git/config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-001", category: "backend", agent: "builder", exempt: true},
			}, map[string][]string{"builder": scriptAgent(tt.sh)}, "")
			base := head(r.repo)
			code, out := r.run("watch", "--once")
			if code != 2 || !strings.Contains(out, "configuration changed") || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want 2 naming %s%s\n%s", code, tt.want, r.describeAttempts("TASK-001"), out)
			}
			if st := r.statuses()["TASK-001"]; st != "blocked" {
				t.Errorf("TASK-001 is %q, want blocked", st)
			}
			if reason := fieldOf(r.repo, "TASK-001", "Blocked-Reason"); !strings.Contains(reason, tt.want) {
				t.Errorf("Blocked-Reason %q does not name %s", reason, tt.want)
			}
			if got := head(r.repo); got != base {
				t.Errorf("the integration branch moved to %s", got)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the filter or hook ran")
			}
			r.noneLeft()
		})
	}
}

// TestRememberedHookRewritten: the configuration's fingerprint remembers the hash of a
// file more than a second old by its stamp. TASK-001's honest agent works two seconds, so
// that when TASK-002 starts the hooks' hashes are remembered; TASK-002's agent then
// rewrites a hook in place with bytes of the same size and puts its modification time
// back: inode, size and modification time are as remembered, the change time (which no
// one can set) is not, and the run stops naming the hook. TASK-001 lands.
func TestRememberedHookRewritten(t *testing.T) {
	t.Parallel()
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "slow", exempt: true},
		{id: "TASK-002", category: "backend", agent: "rewriter", deps: "TASK-001", exempt: true},
	}, map[string][]string{
		"slow": scriptAgent("sleep 2\n" + goodWork),
		"rewriter": scriptAgent(`h="$(git rev-parse --git-common-dir)/hooks/pre-commit.sample"; t="$(stat -c %y "$h")"
printf 'X' | dd of="$h" bs=1 seek=0 conv=notrunc 2>/dev/null; touch -d "$t" "$h"
`),
	}, "")
	code, out := r.run("watch", "--once")
	const want = ".git/hooks/pre-commit.sample"
	if code != 2 || !strings.Contains(out, "configuration changed") || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want 2 naming %s%s\n%s", code, want, r.describeAttempts("TASK-002"), out)
	}
	if st := r.statuses(); st["TASK-001"] != "completed" || st["TASK-002"] != "blocked" {
		t.Errorf("statuses %v, want TASK-001 completed and TASK-002 blocked", st)
	}
	r.noneLeft()
}

// TestExposedKeyRefused: a key file that others may read is refused before anything
// starts: watch exits 2 naming the file, and status too; the honest twin, the same key
// made private, runs.
func TestExposedKeyRefused(t *testing.T) {
	t.Parallel()
	r := newRepo(t, []task{{id: "TASK-001", category: "backend", testCommand: "test -f calc.go"}},
		map[string][]string{"honest": {"TESTAGENT_MODE=honest", "TESTAGENT_WRITE=calc.go=package calc"}}, "")
	conf := t.TempDir()
	key := filepath.Join(conf, "orchestrator", "key")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		c := r.cmd(args...)
		c.Env = append(os.Environ(), "XDG_CONFIG_HOME="+conf)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	for _, cmd := range [][]string{{"watch", "--once"}, {"status"}} {
		if code, out := run(cmd...); code != 2 || !strings.Contains(out, key) || !strings.Contains(out, "mode 0644") {
			t.Errorf("%v with a world-readable key: exit %d, want 2 naming %s\n%s", cmd, code, key, out)
		}
	}
	if st := r.statuses()["TASK-001"]; st != "pending" {
		t.Errorf("TASK-001 is %q after a refused start, want pending", st)
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run("watch", "--once"); code != 0 {
		t.Errorf("private key: exit %d, want 0\n%s", code, out)
	}
}

// TestEditOfAnAuditedRecordReported: the watch's audit after each attempt remembers the
// records it found sealed and does not read them again while their files are unchanged
// (seal.Audit); a record it remembers that an agent then edits is read again and
// reported all the same. TASK-002's agent works two seconds, so that the audit after it
// remembers TASK-001's record; TASK-003's agent edits that record.
func TestEditOfAnAuditedRecordReported(t *testing.T) {
	t.Parallel()
	work := func(n int) string {
		return fmt.Sprintf("cat > money/extra%[1]d.go <<'EOF'\npackage money\n\n// Extra%[1]d is kept for a later task.\nfunc Extra%[1]d() int { return %[1]d }\nEOF\n", n)
	}
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "first", exempt: true},
		{id: "TASK-002", category: "backend", agent: "slow", deps: "TASK-001", exempt: true},
		{id: "TASK-003", category: "backend", agent: "editor", deps: "TASK-002", exempt: true},
	}, map[string][]string{
		"first": scriptAgent(work(1)),
		"slow":  scriptAgent("sleep 2\n" + work(2)),
		"editor": scriptAgent(`sed -i 's/"attempt": 1/"attempt":  1/' ` + stateDir + `/runs/TASK-001/1/result.json
` + work(3)),
	}, "")
	code, out := r.run("watch", "--once")
	for _, id := range []string{"TASK-001", "TASK-002"} {
		if st := r.statuses()[id]; st != "completed" {
			t.Fatalf("%s is %q, want completed (exit %d)%s\n%s", id, st, code, r.describeAttempts(id), out)
		}
	}
	const edited = ".git/orchestrator/runs/TASK-001/1/result.json"
	if !strings.Contains(out, "edited outside the orchestrator") || !strings.Contains(out, edited) {
		t.Errorf("watch does not say %s was edited outside the orchestrator:\n%s", edited, out)
	}
	if strings.Count(out, edited) != 1 {
		t.Errorf("watch names %s %d times, want once:\n%s", edited, strings.Count(out, edited), out)
	}
}
