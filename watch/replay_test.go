package watch_test

// TestReplayHistory measures the gates against honest work (issue 24): commits of public
// Go, Python, Rust and TypeScript libraries nobody here wrote, each replayed as a TEST task
// that applies exactly the commit's test files and a BUILD task that applies the rest,
// through `orchestrator watch --once`. The case list is fixed in
// testdata/replay/cases.json, made from local mirrors by testdata/replay/gencases.go, with
// a judgement by hand of what SPEC §7.2 asks for each case.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/agents"
)

// A replayCase is one commit of cases.json (its schema is gencases.go's Case).
type replayCase struct {
	Name        string   `json:"name"`
	Repo        string   `json:"repo"`
	Lang        string   `json:"lang"`
	Commit      string   `json:"commit"`
	Parent      string   `json:"parent"`
	Subject     string   `json:"subject"`
	TestCommand string   `json:"test_command"`
	TestFiles   []string `json:"test_files"`
	TestDeleted []string `json:"test_deleted"`
	CodeFiles   []string `json:"code_files"`
	CodeDeleted []string `json:"code_deleted"`
	NodeModules []string `json:"node_modules"`
	Expected    string   `json:"expected"`
	Judgement   string   `json:"judgement"`
}

// A replayOutcome is what `watch --once` made of a case.
type replayOutcome struct {
	c        *replayCase
	outcome  string // landed, refused at RED, refused at GREEN, no mirror, error
	failType string
	reason   string
	redRuns  string // the RED gate's test runs: duration and command
	elapsed  time.Duration
}

// wantRefusal reads a judgement "refuse: TYPE: why" or "refuse: TYPE (phrase): why" into
// the failure type SPEC §7.2 asks for and the phrase its reason must hold ("" when the
// type is enough); ok is false for "land".
func (c *replayCase) wantRefusal() (typ, phrase string, ok bool) {
	rest, ok := strings.CutPrefix(c.Expected, "refuse: ")
	if !ok {
		return "", "", false
	}
	head, _, _ := strings.Cut(rest, ":")
	typ, phrase, _ = strings.Cut(head, " (")
	return strings.TrimSpace(typ), strings.TrimSuffix(phrase, ")"), true
}

// verdict compares the outcome with the case's judgement: "landed", "correctly refused",
// "refused, other reason" (refused, but not with the failure type and reason §7.2 gives),
// "falsely refused" (honest work that §7.2 lets land was refused), "wrongly landed" (a
// change §7.2 refuses landed), or the outcome itself when the case did not run.
func (o replayOutcome) verdict() string {
	typ, phrase, refuse := o.c.wantRefusal()
	switch {
	case o.outcome == "landed" && !refuse:
		return "landed"
	case o.outcome == "landed":
		return "wrongly landed"
	case !strings.HasPrefix(o.outcome, "refused"):
		return o.outcome
	case !refuse:
		return "falsely refused"
	case o.failType != typ || !strings.Contains(o.reason, phrase):
		return "refused, other reason"
	}
	return "correctly refused"
}

// TestReplayHistory replays every case of testdata/replay/cases.json through `orchestrator
// watch --once` and prints a table (case, outcome, verdict against the judgement, failure
// type, reason) with the totals: landed, correctly refused, falsely refused.
//
// It is opt-in: it runs only with ORCHESTRATOR_REPLAY=1 (`make replay`), because it needs
// the mirrors of the public repositories, which CI does not fetch: bare git directories at
// $ORCHESTRATOR_REPLAY_MIRRORS/<owner>+<name>/repo. When it runs, a
// missing mirror or commit fails it. It reports and does not fail on a case whose outcome
// differs from its judgement, unless ORCHESTRATOR_REPLAY_STRICT=1: then every case judged
// "land" must land and every case judged "refuse" must be refused. Python cases need
// Debian's pytest, Rust cases cargo (offline: the crates have no dependencies), JavaScript
// cases npm, which installs their test runner (node_modules, once, into
// ~/.cache/orchestrator-test/replay-node); the gate and the agents run in bubblewrap where
// it works. With ORCHESTRATOR_REPLAY_KEEP=DIR, each case's attempt folders (gate.log,
// result.json) are copied to DIR/<case>.
func TestReplayHistory(t *testing.T) {
	if os.Getenv("ORCHESTRATOR_REPLAY") != "1" {
		t.Skip("replay of real history is opt-in: ORCHESTRATOR_REPLAY=1 (make replay); it needs the mirrors of the public repositories")
	}
	b, err := os.ReadFile(filepath.Join("testdata", "replay", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []*replayCase }
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	mirrors := os.Getenv("ORCHESTRATOR_REPLAY_MIRRORS")
	if mirrors == "" {
		t.Fatal("ORCHESTRATOR_REPLAY_MIRRORS must name the folder of the repositories' bare mirrors, <owner>+<name>/repo")
	}
	strict := os.Getenv("ORCHESTRATOR_REPLAY_STRICT") == "1"
	sandbox := "bwrap"
	if err := agents.BwrapAvailable(); err != nil {
		t.Logf("bubblewrap does not run here (%v): agents and gates run without a sandbox", err)
		sandbox = "off"
	}
	var mu sync.Mutex
	var outcomes []replayOutcome
	start := time.Now()
	t.Run("cases", func(t *testing.T) {
		for _, c := range file.Cases {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				o := replay(t, c, mirrors, sandbox)
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				switch v := o.verdict(); {
				case v == "no mirror" || v == "error":
					t.Errorf("%s: %s", v, o.reason)
				case strict && v != "landed" && v != "correctly refused":
					t.Errorf("%s: %s (%s: %s); judged %q: %s", v, o.outcome, o.failType, o.reason, c.Expected, c.Judgement)
				}
			})
		}
	})
	t.Log("\n" + replayTable(file.Cases, outcomes, time.Since(start), sandbox))
}

// replayTable prints the outcomes in the order of the case list, and the totals.
func replayTable(cases []*replayCase, outcomes []replayOutcome, wall time.Duration, sandbox string) string {
	byName := map[string]replayOutcome{}
	for _, o := range outcomes {
		byName[o.c.Name] = o
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %-6s %-16s %-21s %-15s %s\n", "case", "lang", "outcome", "verdict", "failure type", "reason")
	counts := map[string]int{}
	for _, c := range cases {
		o, ok := byName[c.Name]
		if !ok {
			continue
		}
		v := o.verdict()
		counts[v]++
		fmt.Fprintf(&b, "%-20s %-6s %-16s %-21s %-15s %s\n", c.Name, c.Lang, o.outcome, v, orDash(o.failType), clipLine(o.reason, 400))
		if v != "landed" {
			fmt.Fprintf(&b, "%-20s judged %s: %s\n", "", c.Expected, clipLine(c.Judgement, 400))
		}
		if o.redRuns != "" {
			fmt.Fprintf(&b, "%-20s RED runs (%s in all): %s\n", "", o.elapsed.Round(time.Millisecond), o.redRuns)
		}
	}
	fmt.Fprintf(&b, "\n%d cases in %s (sandbox %s): %d landed, %d refused: %d correctly refused (and %d more refused with another reason than SPEC §7.2's), %d falsely refused; %d wrongly landed",
		len(outcomes), wall.Round(time.Second), sandbox, counts["landed"]+counts["wrongly landed"],
		counts["correctly refused"]+counts["refused, other reason"]+counts["falsely refused"],
		counts["correctly refused"], counts["refused, other reason"], counts["falsely refused"], counts["wrongly landed"])
	if n := counts["no mirror"] + counts["error"]; n > 0 {
		fmt.Fprintf(&b, ", %d did not run", n)
	}
	b.WriteString("\n")
	return b.String()
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// replay runs one case: a fresh repository holding the parent's tree, a TEST task whose
// agent writes the commit's test files and a BUILD task whose agent writes the rest, and
// `watch --once` over them.
func replay(t *testing.T, c *replayCase, mirrors, sandbox string) replayOutcome {
	o := replayOutcome{c: c}
	gitDir := filepath.Join(mirrors, strings.Replace(c.Repo, "/", "+", 1), "repo")
	for _, rev := range []string{c.Parent, c.Commit} {
		if err := exec.Command("git", "--git-dir", gitDir, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
			o.outcome, o.reason = "no mirror", fmt.Sprintf("%s has no commit %s (%v): fetch %s", gitDir, rev, err, c.Repo)
			return o
		}
	}
	switch c.Lang {
	case "python":
		needPytest(t)
	case "rust":
		needProgram(t, "cargo")
	}
	var nodeModules string
	if len(c.NodeModules) > 0 {
		nodeModules = replayNodeModules(t, c.NodeModules)
	}
	r := &realRepo{repo: &repo{t: t, root: t.TempDir()}, starts: filepath.Join(t.TempDir(), "starts.log")}
	r.tag = strings.NewReplacer("/", "-", " ", "-").Replace(fmt.Sprintf("watch-replay-%d-%s", os.Getpid(), t.Name()))
	archive := exec.Command("sh", "-c", `git --git-dir="$1" archive "$2" | tar -x -C "$3"`, "sh", gitDir, c.Parent, r.root)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("archive %s: %v\n%s", c.Parent, err, out)
	}
	git(t, r.root, "init", "-q", "-b", "main")
	r.write(".git/info/exclude", ".orchestrator/\n")
	// Every file of the tree was tracked upstream, whatever its .gitignore says.
	git(t, r.root, "add", "-A", "-f")
	git(t, r.root, "commit", "-q", "-m", "parent "+c.Parent)
	if nodeModules != "" {
		// The person's node_modules, which git ignores and the gate's checkouts link to.
		r.write(".git/info/exclude", ".orchestrator/\n/node_modules/\n")
		if out, err := exec.Command("cp", "-a", nodeModules, filepath.Join(r.root, "node_modules")).CombinedOutput(); err != nil {
			t.Fatalf("copy node_modules: %v\n%s", err, out)
		}
	}

	testDir, codeDir := sideFiles(t, gitDir, c.Commit, c.TestFiles), sideFiles(t, gitDir, c.Commit, c.CodeFiles)
	var q strings.Builder
	q.WriteString("# Task Queue\n\n## Project Commands\n\n| Command | Value |\n|---------|-------|\n")
	fmt.Fprintf(&q, "| Build | - |\n| Test | %s |\n\n## Tasks\n\n", c.TestCommand)
	// No Test IDs: the project has no plan IDs, and config test_ids: names (SPEC §12) does
	// not exist yet.
	fmt.Fprintf(&q, "### TASK-T01: tests of %s\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | testing |\n| Mode | write |\n| Agent | writer |\n| Depends On | - |\n\n**Objective:** %s (tests).\n\n", c.Name, c.Subject)
	fmt.Fprintf(&q, "### TASK-001: code of %s\n\n| Field | Value |\n|-------|-------|\n| Status | pending |\n| Category | backend |\n| Agent | builder |\n| Depends On | TASK-T01 |\n\n**Objective:** %s (code).\n\n", c.Name, c.Subject)
	r.write(".orchestrator/task_queue.md", q.String())
	var cfg strings.Builder
	cfg.WriteString("agent: writer\ntask_timeout: 10m\nsandbox: " + sandbox + "\n")
	if sandbox != "off" {
		// The agents read their files from the test's folders, in /tmp.
		cfg.WriteString("sandbox_writable: [" + quoteAll([]string{testDir, codeDir, filepath.Dir(r.starts)}) + "]\n")
	}
	cfg.WriteString("agents:\n")
	for _, a := range []struct {
		name, role, from string
		deleted          []string
	}{{"builder", "implementer", codeDir, c.CodeDeleted}, {"writer", "test-writer", testDir, c.TestDeleted}} {
		env := append([]string{"env", "TESTAGENT_TAG=" + r.tag, "TESTAGENT_STARTLOG=" + r.starts}, slowAgent(a.role, 0, 0, a.from)...)
		for _, f := range a.deleted {
			if strings.ContainsAny(f, " \t\n") {
				t.Fatalf("%s: a deleted file with a blank in its name cannot be listed in TESTAGENT_DELETE", f)
			}
		}
		if len(a.deleted) > 0 {
			env = append(env, "TESTAGENT_DELETE="+strings.Join(a.deleted, " "))
		}
		fmt.Fprintf(&cfg, "  %s: {command: [%s]}\n", a.name, quoteAll(append(env, agentBin)))
	}
	r.write(".orchestrator/config.yaml", cfg.String())
	// One attempt per task: a refusal is the measure, a retry would repeat it.
	r.write(".orchestrator/no_auto_retry", "")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	r.commitAll()
	cmd := exec.CommandContext(ctx, orchestratorBin, "--dir", r.root, "watch", "--once")
	cmd.Dir = r.root
	// Offline and with the toolchain that is here: a go.mod that asks for another one
	// fails instead of downloading it.
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOPROXY=off")
	if c.Lang == "rust" {
		cmd.Env = append(cmd.Env, rustupEnv(t)...)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	st := r.statuses()
	red, green := r.result("TASK-T01", 1), r.result("TASK-001", 1)
	o.redRuns, o.elapsed = gateRuns(red)
	switch {
	case st["TASK-T01"] == "completed" && st["TASK-001"] == "completed":
		o.outcome = "landed"
	case st["TASK-T01"] != "completed" && red["outcome"] != nil:
		o.outcome = "refused at RED"
		o.failType, o.reason = fmt.Sprint(red["failure_type"]), fmt.Sprint(red["reason"])
	case st["TASK-T01"] == "completed" && green["outcome"] != nil:
		o.outcome = "refused at GREEN"
		o.failType, o.reason = fmt.Sprint(green["failure_type"]), fmt.Sprint(green["reason"])
	default:
		o.outcome = "error"
		o.reason = fmt.Sprintf("watch exited %d with statuses %v:%s%s\n%s", code, st, r.describeAttempts("TASK-T01"), r.describeAttempts("TASK-001"), out)
	}
	if keep := os.Getenv("ORCHESTRATOR_REPLAY_KEEP"); keep != "" {
		// The attempt folders (gate.log, result.json, changes.diff) for a person to read.
		dst := filepath.Join(keep, c.Name)
		os.RemoveAll(dst)
		if err := os.MkdirAll(keep, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", filepath.Join(r.root, ".orchestrator", "runs"), dst).CombinedOutput(); err != nil {
			t.Errorf("keep the attempt folders: %v\n%s", err, out)
		}
	}
	r.noneLeft()
	return o
}

// needProgram skips the test when program is not installed (fails it under CI=true).
func needProgram(t *testing.T, program string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", program, err)
		}
		t.Skipf("%s not available: %v", program, err)
	}
}

// rustupEnv names rustup's and cargo's folders of the person's home (RUSTUP_HOME,
// CARGO_HOME, unless they are set): the tests' home is a folder of their own
// (isolateHome), where rustup's cargo finds no toolchain.
func rustupEnv(t *testing.T) []string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for k, d := range map[string]string{"RUSTUP_HOME": ".rustup", "CARGO_HOME": ".cargo"} {
		if os.Getenv(k) != "" {
			continue
		}
		if p := filepath.Join(u.HomeDir, d); dirExists(p) {
			env = append(env, k+"="+p)
		}
	}
	return env
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

var replayNodeMu sync.Mutex

// replayNodeModules returns a node_modules folder that holds the npm packages pkgs (a
// case's test runner, "vitest@3.2.4"), installed by npm on first use into
// ~/.cache/orchestrator-test/replay-node/<pkgs>, for the cases to copy. It is not the
// project's whole devDependencies (linters, bundlers, type checkers): the tests need only
// their runner.
func replayNodeModules(t *testing.T, pkgs []string) string {
	t.Helper()
	needProgram(t, "npm")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "orchestrator-test", "replay-node", strings.ReplaceAll(strings.Join(pkgs, "+"), "/", "_"))
	nm, done := filepath.Join(dir, "node_modules"), filepath.Join(dir, "installed")
	replayNodeMu.Lock()
	defer replayNodeMu.Unlock()
	if _, err := os.Stat(done); err == nil {
		return nm
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", append([]string{"install", "--no-audit", "--no-fund", "--no-package-lock"}, pkgs...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return nm
}

// sideFiles writes the files of commit named in files into a new folder, for an agent's
// TESTAGENT_FROM, and returns it.
func sideFiles(t *testing.T, gitDir, commit string, files []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := exec.Command("git", "--git-dir", gitDir, "show", commit+":"+f).Output()
		if err != nil {
			t.Fatalf("git show %s:%s: %v", commit, f, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// gateRuns describes the test runs a gate recorded in an attempt's result.json, and
// returns their total duration.
func gateRuns(res map[string]any) (string, time.Duration) {
	g, _ := res["gate"].(map[string]any)
	runs, _ := g["runs"].([]any)
	var parts []string
	var total time.Duration
	for _, x := range runs {
		run, _ := x.(map[string]any)
		ns, _ := run["duration_ns"].(float64)
		d := time.Duration(ns)
		total += d
		parts = append(parts, fmt.Sprintf("%s %v (exit %v)", d.Round(time.Millisecond), run["command"], run["exit_code"]))
	}
	return strings.Join(parts, "; "), total
}

// TestReplayVerdict: the replay's verdict of each outcome against its judgement. A refusal
// counts as correct only with the failure type, and the phrase, that the judgement names.
func TestReplayVerdict(t *testing.T) {
	t.Parallel()
	const pass = "refuse: false_red (the tests already pass): nothing fails at the base"
	tests := []struct {
		expected, outcome, failType, reason, want string
	}{
		{"land", "landed", "", "", "landed"},
		{"land", "refused at RED", "scope_violation", "TestBytes changed", "falsely refused"},
		{"land", "refused at GREEN", "test_fails", "TestBytes failed", "falsely refused"},
		{pass, "landed", "", "", "wrongly landed"},
		{pass, "refused at RED", "false_red", "false RED: the tests already pass (go test . exited 0)", "correctly refused"},
		{pass, "refused at RED", "false_red", "false RED: no test ran", "refused, other reason"},
		{pass, "refused at RED", "scope_violation", "TestFormatFloat changed", "refused, other reason"},
		{"refuse: scope_violation: TestNewConstraint changed while passing", "refused at RED", "scope_violation", "TestNewConstraint changed", "correctly refused"},
		{"land", "no mirror", "", "", "no mirror"},
	}
	for _, tt := range tests {
		o := replayOutcome{c: &replayCase{Expected: tt.expected}, outcome: tt.outcome, failType: tt.failType, reason: tt.reason}
		if got := o.verdict(); got != tt.want {
			t.Errorf("judged %q, %s (%s: %s): verdict %q, want %q", tt.expected, tt.outcome, tt.failType, tt.reason, got, tt.want)
		}
	}
}

// TestReplayCases checks the case list without the mirrors: every case is named once,
// judged ("land" or "refuse: TYPE…" with a known failure type, and a judgement), and has
// test files and code files to replay.
func TestReplayCases(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "replay", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []*replayCase }
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	if len(file.Cases) < 20 {
		t.Errorf("%d cases, want at least 20", len(file.Cases))
	}
	types := map[string]bool{"false_red": true, "scope_violation": true, "broken_test": true, "test_fails": true, "test_tampered": true, "regression": true}
	seen := map[string]bool{}
	langs := map[string]map[string]bool{}
	for _, c := range file.Cases {
		if seen[c.Name] {
			t.Errorf("%s: named twice", c.Name)
		}
		seen[c.Name] = true
		if langs[c.Lang] == nil {
			langs[c.Lang] = map[string]bool{}
		}
		langs[c.Lang][c.Repo] = true
		if len(c.Commit) != 40 || len(c.Parent) != 40 || c.TestCommand == "" {
			t.Errorf("%s: commit %q, parent %q, test command %q", c.Name, c.Commit, c.Parent, c.TestCommand)
		}
		if len(c.TestFiles)+len(c.TestDeleted) == 0 || len(c.CodeFiles)+len(c.CodeDeleted) == 0 {
			t.Errorf("%s: a case changes tests and code together", c.Name)
		}
		if typ, _, refuse := c.wantRefusal(); refuse && !types[typ] || !refuse && c.Expected != "land" {
			t.Errorf("%s: expected %q: want \"land\" or \"refuse: <failure type>: why\"", c.Name, c.Expected)
		}
		if c.Judgement == "" || c.Judgement == "not judged yet" {
			t.Errorf("%s: not judged", c.Name)
		}
	}
	for _, lang := range []string{"go", "python"} {
		if len(langs[lang]) < 3 {
			t.Errorf("%s cases come from %d repositories, want at least 3", lang, len(langs[lang]))
		}
	}
}
