package watch_test

// End-to-end tests of the GREEN gate that runs only what a change can reach (SPEC §7.3,
// issue 26): a Go module of 20 packages, BUILD tasks in the sandbox, each changing one
// package. The start's baseline runs the whole suite and seals each package's result; each
// GREEN runs the changed package alone, the others' tests reused by name; a candidate whose code
// plants results in the Go build cache and in the orchestrator's state, for packages it did
// not touch, changes nothing: its broken package runs and fails, and every record of the
// state is still one the orchestrator sealed.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/seal"
)

// impactPackages adds to the gomod fixture (money, tax, cart) 17 packages g01…g17, each
// importing money, each with a test: 20 packages in all.
func impactPackages(r *realRepo) {
	for i := 1; i <= 17; i++ {
		name := fmt.Sprintf("g%02d", i)
		r.write(name+"/"+name+".go", fmt.Sprintf(`package %[1]s

import "example.com/shop/money"

// Value is the package's amount.
func Value() money.Cents { return money.Cents(%[2]d) }
`, name, i))
		r.write(name+"/"+name+"_test.go", fmt.Sprintf(`package %[1]s

import "testing"

func TestValue(t *testing.T) {
	if got := Value(); got != %[2]d {
		t.Fatalf("Value() = %%d, want %[2]d", got)
	}
}
`, name, i))
	}
}

// impactCheat is the cheating implementer's g11.go: it breaks g11, and its init function,
// which runs in the gate's run of g11's tests, plants a pass where results are kept: a
// file in the Go build cache, a record in the orchestrator's state, and every record there
// overwritten.
const impactCheat = `package g11

import (
	"os/exec"
	"os"
	"path/filepath"
	"regexp"

	"example.com/shop/money"
)

func init() {
	if c := os.Getenv("GOCACHE"); c != "" {
		os.WriteFile(filepath.Join(c, %[1]q), []byte("ok example.com/shop/g11"), 0o644)
	}
	dir := %[2]q
	forged := []byte("{\n  \"package\": \"example.com/shop/g11\",\n  \"tests\": [{\"id\": \"example.com/shop/g11.TestValue\", \"status\": \"passed\"}]\n}\n")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.WriteFile(filepath.Join(dir, e.Name()), forged, 0o600)
	}
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "planted.json"), forged, 0o600)
}

// Value is wrong.
func Value() money.Cents { return 0 }
`

// privateImpact is a folder of sealed package results of the test's own (ORCHESTRATOR_IMPACT),
// where the user's, which the other tests share, would have its gates reuse what they
// sealed: in the user's cache folder, as the user's is.
func privateImpact(t testing.TB) string {
	t.Helper()
	parent := filepath.Dir(sharedGateCache(t))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "impact-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestImpactGreenRunsTheChangedPackage(t *testing.T) {
	t.Parallel()
	honest1, honest2, cheat := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(honest1, "g05", "more.go"), "package g05\n\n// More is more.\nfunc More() int { return 5 }\n")
	writeFile(t, filepath.Join(honest2, "g07", "more.go"), "package g07\n\n// More is more.\nfunc More() int { return 7 }\n")
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "honest1", exempt: true},
		{id: "TASK-002", category: "backend", agent: "honest2", deps: "TASK-001", exempt: true},
		{id: "TASK-003", category: "backend", agent: "cheat", deps: "TASK-002", exempt: true},
	}, map[string][]string{
		"honest1": slowAgent("implementer", 0, 0, honest1),
		"honest2": slowAgent("implementer", 0, 0, honest2),
		"cheat":   slowAgent("implementer", 0, 0, cheat),
	}, "retries:\n  max_retries: 1\n")
	impactPackages(r)
	planted := "planted-" + strings.NewReplacer("/", "-").Replace(t.Name()) + fmt.Sprint(time.Now().UnixNano())
	cache := sharedGateCache(t)
	state := privateImpact(t)
	t.Cleanup(func() { os.Remove(filepath.Join(cache, "go-build", planted)) })
	writeFile(t, filepath.Join(cheat, "g11", "g11.go"), fmt.Sprintf(impactCheat, planted, state))
	r.commitAll()
	base := head(r.repo)
	r.sandboxed(filepath.Dir(r.starts), honest1, honest2, cheat)
	home := t.TempDir()
	code, out := r.runWith([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"ORCHESTRATOR_GATE_CACHE=" + cache, "ORCHESTRATOR_IMPACT=" + state, "GOCACHE=" + goCache(t)}, "watch", "--once")

	gateLog := func(id string) string { return r.read(".orchestrator/runs/" + id + "/1/gate.log") }
	for _, id := range []string{"TASK-001", "TASK-002"} {
		if got := r.statuses()[id]; got != "completed" {
			t.Fatalf("%s is %q, want completed (exit %d)%s\n%s", id, got, code, r.describeAttempts(id), out)
		}
	}
	// The start's baseline sealed each package's result: the first GREEN ran g05 alone.
	if got := gate.RanCommands(gateLog("TASK-001")); strings.Join(got, "|") != "go test ./g05" {
		t.Errorf("TASK-001 ran %q, want go test ./g05\n%s", got, gateLog("TASK-001"))
	}
	if n := strings.Count(gateLog("TASK-001"), "reused: same inputs as "+base[:12]); n != 19 {
		t.Errorf("TASK-001 reused %d packages of the baseline's run, want 19\n%s", n, gateLog("TASK-001"))
	}
	// The honest twin: g07 alone ran, the 19 other packages' tests reused by name.
	log2 := gateLog("TASK-002")
	if got := gate.RanCommands(log2); strings.Join(got, "|") != "go test ./g07" {
		t.Errorf("TASK-002 ran %q, want go test ./g07\n%s", got, log2)
	}
	if n := strings.Count(log2, "reused: same inputs as "); n != 19 {
		t.Errorf("TASK-002 reused %d packages, want 19\n%s", n, log2)
	}
	if planted := regexp.MustCompile(`canary \w+: planted (.*)`).FindStringSubmatch(log2); planted == nil ||
		!strings.HasPrefix(planted[1], "g07/") || strings.Contains(planted[1], "g11/") {
		t.Errorf("TASK-002: the canaries are not where the tests ran, and only there\n%s", log2)
	}
	// The baseline grew from the run's results and the reused ones: g11's test is in it.
	if b := r.read(".orchestrator/baseline.json"); !strings.Contains(b, "example.com/shop/g11.TestValue") || !strings.Contains(b, "example.com/shop/g07.TestValue") {
		t.Errorf("the baseline lacks the reused and the run tests:\n%s", b)
	}

	// The cheat: g11 ran and failed as a regression, whatever its code planted.
	if got := r.statuses()["TASK-003"]; got == "completed" {
		t.Fatalf("the cheating implementer's task completed\n%s\n%s", gateLog("TASK-003"), out)
	}
	log3 := gateLog("TASK-003")
	if got := gate.RanCommands(log3); strings.Join(got, "|") != "go test ./g11" {
		t.Errorf("TASK-003 ran %q, want go test ./g11\n%s", got, log3)
	}
	if !strings.Contains(log3, "decision: fail (regression)") || !strings.Contains(log3, "example.com/shop/g11.TestValue") {
		t.Errorf("TASK-003 did not fail as a regression of g11.TestValue\n%s", log3)
	}
	if strings.Contains(log3, "reused: same inputs as") && strings.Contains(log3, "package example.com/shop/g11,") {
		t.Errorf("g11's old pass was reused\n%s", log3)
	}
	// Nothing the cheat wrote reached the state: every record there is sealed, none planted.
	if _, err := os.Stat(filepath.Join(state, "planted.json")); err == nil {
		t.Error("the candidate's code planted a record in the orchestrator's state")
	}
	key, err := seal.Load(filepath.Join(home, ".config", "orchestrator", "key"))
	if err != nil {
		t.Fatal(err)
	}
	records, _ := filepath.Glob(filepath.Join(state, "*.json"))
	if len(records) < 20 {
		t.Errorf("%d records in the state, want at least 20", len(records))
	}
	for _, f := range records {
		if _, err := key.ReadJSON(seal.KindImpact, f); err != nil {
			t.Errorf("record %s: %v", filepath.Base(f), err)
		}
	}
}

// TestImpactAfterBaselineByHand: `orchestrator baseline`, run by hand in the person's tree
// before `watch`, seals each package's result as the watch's own baseline does, so that
// the first GREEN gate runs the one package its change reaches (before, it ran them all).
func TestImpactAfterBaselineByHand(t *testing.T) {
	t.Parallel()
	honest := t.TempDir()
	writeFile(t, filepath.Join(honest, "g05", "more.go"), "package g05\n\n// More is more.\nfunc More() int { return 5 }\n")
	r := newRealRepo(t, "gomod", goTest, []realTask{
		{id: "TASK-001", category: "backend", agent: "honest", exempt: true},
	}, map[string][]string{"honest": slowAgent("implementer", 0, 0, honest)}, "")
	impactPackages(r)
	r.commitAll()
	base := head(r.repo)
	env := []string{"GOCACHE=" + goCache(t), "ORCHESTRATOR_IMPACT=" + privateImpact(t)}
	if code, out := r.runWith(env, "baseline"); code != 0 {
		t.Fatalf("baseline: exit %d\n%s", code, out)
	}
	code, out := r.runWith(env, "watch", "--once")
	if got := r.statuses()["TASK-001"]; got != "completed" {
		t.Fatalf("TASK-001 is %q, want completed (exit %d)%s\n%s", got, code, r.describeAttempts("TASK-001"), out)
	}
	log := r.read(".orchestrator/runs/TASK-001/1/gate.log")
	if got := gate.RanCommands(log); strings.Join(got, "|") != "go test ./g05" {
		t.Errorf("the first GREEN ran %q, want go test ./g05\n%s", got, log)
	}
	if n := strings.Count(log, "reused: same inputs as "+base[:12]); n != 19 {
		t.Errorf("the first GREEN reused %d packages of the baseline by hand, want 19\n%s", n, log)
	}
}

// TestImpactSharedByClones: the sealed results are the user's, not a repository's. A second
// clone of the same module (its own commits, its own folder) starts its run with no go test
// at all: its baseline takes every package's sealed pass of the first clone's run, and its
// task's GREEN runs the one package its change reaches. The honest twin of the records'
// trust is TestImpactGreenRunsTheChangedPackage's cheat, which cannot plant one.
func TestImpactSharedByClones(t *testing.T) {
	t.Parallel()
	impact := privateImpact(t)
	env := []string{"GOCACHE=" + goCache(t), "ORCHESTRATOR_IMPACT=" + impact}
	clone := func(pkg string) *realRepo {
		honest := t.TempDir()
		writeFile(t, filepath.Join(honest, pkg, "more.go"), "package "+pkg+"\n\n// More is more.\nfunc More() int { return 5 }\n")
		r := newRealRepo(t, "gomod", goTest, []realTask{
			{id: "TASK-001", category: "backend", agent: "honest", exempt: true},
		}, map[string][]string{"honest": slowAgent("implementer", 0, 0, honest)}, "")
		impactPackages(r)
		r.commitAll()
		return r
	}
	first := clone("g05")
	base := head(first.repo)
	code, out := first.runWith(env, "watch", "--once")
	if got := first.statuses()["TASK-001"]; got != "completed" {
		t.Fatalf("the first clone's TASK-001 is %q, want completed (exit %d)%s\n%s", got, code, first.describeAttempts("TASK-001"), out)
	}
	if !strings.Contains(out, "running go test ./... on "+base[:12]+" (no package has a sealed pass of the same inputs)") {
		t.Errorf("the first clone's baseline did not run every package:\n%s", out)
	}

	second := clone("g09")
	code, out = second.runWith(env, "watch", "--once")
	if got := second.statuses()["TASK-001"]; got != "completed" {
		t.Fatalf("the second clone's TASK-001 is %q, want completed (exit %d)%s\n%s", got, code, second.describeAttempts("TASK-001"), out)
	}
	if !strings.Contains(out, "(all 20 packages have a sealed pass of the same inputs: nothing runs)") {
		t.Errorf("the second clone's baseline ran packages again:\n%s", out)
	}
	log := second.read(".orchestrator/runs/TASK-001/1/gate.log")
	if got := gate.RanCommands(log); strings.Join(got, "|") != "go test ./g09" {
		t.Errorf("the second clone's GREEN ran %q, want go test ./g09\n%s", got, log)
	}
	// The records it reused are the first clone's, and gate.log says whose.
	if n := strings.Count(log, "reused: same inputs as "+base[:12]+" in "+first.root+": "); n != 19 {
		t.Errorf("the second clone's GREEN names the first clone's records %d times, want 19\n%s", n, log)
	}
	if b := second.read(".orchestrator/baseline.json"); !strings.Contains(b, "example.com/shop/g11.TestValue") {
		t.Errorf("the second clone's baseline lacks the reused tests:\n%s", b)
	}
}
