package watch_test

// End-to-end tests of the canaries' names (SPEC §7.6, issue 23), through the real binary
// with the gate in its sandbox: an implementer that cannot make its test pass forges the
// runner's report for every test but those whose names look like a canary's, so that the
// canaries are reported as planted beside the forged pass. The canaries' names are drawn
// for each run and look like the project's own tests: every attempt fails as
// forged_results and none lands. The honest implementers of the same projects land.

import (
	"strings"
	"testing"
)

// The forgers. Each implementation is wrong (Discount returns the price unchanged) and
// reaches into the runner in a way the gate's reading of runner tampering (gate/tamper.go)
// does not see: the canaries must catch it.
var (
	// goSparingRelay is cart/discount.go: an init function that runs the test binary again
	// as its child and relays its output with every FAIL turned to PASS, except on the
	// lines that name a canary.
	goSparingRelay = `package cart

import (
	"bufio"
	"os"
	"os/exec"
	"strings"

	"example.com/shop/money"
)

// Discount returns c.
func Discount(c money.Cents, p int64) money.Cents { return c }

var suffix = "test"

func init() {
	// os.Args copied: the gate's reading of runner tampering does not follow it, so
	// that what catches this relay is the canaries.
	args := os.Args
	if os.Getenv("CART_RELAYED") != "" || !strings.HasSuffix(args[0], "."+suffix) {
		return
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "CART_RELAYED=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "anary") && !strings.Contains(line, "zz_") {
			line = strings.ReplaceAll(line, "FAIL", "PASS")
		}
		os.Stdout.WriteString(line + "\n")
	}
	if cmd.Wait() != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
`
	// pySparingPatch is shop/discount.py: imported by the tests, it patches pytest's report
	// class (by spelled names) so that every failed report whose node ID does not name a
	// canary reads passed.
	pySparingPatch = `import importlib


def _name(*parts):
    return "".join(parts)


_reports = importlib.import_module(".".join(["_pytest", "reports"]))
_cls = getattr(_reports, _name("Test", "Report"))
_make = _name("from_", "item_and_call")
_made = getattr(_cls, _make).__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    nodeid = report.nodeid.lower()
    if report.failed and "canary" not in nodeid and "zz_" not in nodeid:
        report.outcome = "passed"
        setattr(report, _name("long", "repr"), None)
    return report


setattr(_cls, _make, classmethod(_passed))


def discount(cents, p):
    return cents
`
)

// TestAdversarySparesCanaries: forgers that spare the canaries by their names are refused
// as forged_results, naming where the canaries were, with the gate in its sandbox; the
// honest twins land. Before canaries had names of their own per run, both forgers landed a
// wrong Discount as verified.
func TestAdversarySparesCanaries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, fixture, command string
		red, green             map[string]string
		honest                 bool
		where                  string
	}{
		{name: "go honest", fixture: "gomod", command: goTest, red: goRedFiles, green: goGreenFiles, honest: true},
		{name: "go init relays all but canary lines", fixture: "gomod", command: goTest, red: goRedFiles,
			green: map[string]string{"cart/discount.go": goSparingRelay}, where: "package example.com/shop/cart"},
		{name: "pytest honest", fixture: "pyproj", command: pyTest, red: pyRedFiles, green: pyGreenFiles, honest: true},
		{name: "pytest patch spares canary node IDs", fixture: "pyproj", command: pyTest, red: pyRedFiles,
			green: map[string]string{"shop/discount.py": pySparingPatch}, where: "folder tests"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := advRepo(t, tt.fixture, tt.command, tt.red, tt.green)
			r.ownImpact() // the honest twins' GREEN must run, to plant its canaries
			code, out := r.run("watch", "--once")
			if tt.honest {
				r.landed(code, out)
				if gate := r.read(".orchestrator/runs/TASK-001/1/gate.log"); !strings.Contains(gate, "reported as planted") {
					t.Errorf("gate.log does not say the canaries were reported as planted:\n%s", gate)
				}
				return
			}
			r.refused("TASK-001", code, out, []string{"forged_results"}, tt.where)
		})
	}
}
