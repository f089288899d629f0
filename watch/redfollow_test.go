package watch_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// goMoneyHalfEven is money.go with Percent rounding half to even, the behaviour the test
// writer's rewritten TestPercent states.
const goMoneyHalfEven = `// Package money holds amounts of money in cents.
package money

import "fmt"

// Cents is an amount of money in cents.
type Cents int64

// String formats c as euros.
func (c Cents) String() string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

// Percent returns p percent of c, rounded half to even.
func (c Cents) Percent(p int64) Cents {
	v := int64(c) * p
	neg := v < 0
	if neg {
		v = -v
	}
	q, r := v/100, v%100
	if r > 50 || r == 50 && q%2 == 1 {
		q++
	}
	if neg {
		q = -q
	}
	return Cents(q)
}
`

// TestChangedTestFollowsToGreen: a test the test writer rewrote at RED (TestPercent now
// states rounding half to even, and fails at the base) is held to its RED version at
// GREEN, and the baseline takes that version when the BUILD lands (SPEC §7.2, issue 24
// item 3). The cheat: an implementer that puts the old TestPercent back instead of
// changing the rounding is refused as test_tampered naming money/money_test.go. The
// honest twin lands; the baseline then has TestPercent passing, with the RED version's
// hash of money/money_test.go.
func TestChangedTestFollowsToGreen(t *testing.T) {
	t.Parallel()
	const rewrite = `perl -0pi -e 's/Percent\(50\); got != 3 \{/Percent(50); got != 2 {/' money/money_test.go && grep -q 'got != 2' money/money_test.go`
	for _, cheat := range []bool{false, true} {
		name := "honest"
		if cheat {
			name = "the implementer puts the old test back"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			green := map[string]string{"cart/discount.go": goGreenFiles["cart/discount.go"], "money/money.go": goMoneyHalfEven}
			greenDir := files(t, green)
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
				{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
			}, map[string][]string{
				"writer":  scriptAgent(rewrite, "TESTAGENT_ROLE=test-writer", "TESTAGENT_FROM="+files(t, goRedFiles)),
				"builder": slowAgent("implementer", 100*time.Millisecond, 0, greenDir),
			}, "")
			if cheat {
				// The test as it was before RED, beside the unchanged rounding.
				old := r.read("money/money_test.go")
				if err := os.WriteFile(filepath.Join(greenDir, "money", "money_test.go"), []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(greenDir, "money", "money.go")); err != nil {
					t.Fatal(err)
				}
			}
			r.write(".orchestrator/no_auto_retry", "")
			code, out := r.run("watch", "--once")
			if cheat {
				r.refused("TASK-001", code, out, []string{"test_tampered"}, "money/money_test.go")
				r.noneLeft()
				return
			}
			r.landed(code, out)
			test := r.git("show", "refs/heads/main:money/money_test.go")
			if !strings.Contains(test, "got != 2") {
				t.Fatalf("the landed money_test.go is not the RED version:\n%s", test)
			}
			passing, hashes := baselineFile(r)
			if !slices.Contains(passing, "example.com/shop/money.TestPercent") {
				t.Errorf("the baseline's passing tests lack TestPercent: %v", passing)
			}
			if got, want := hashes["money/money_test.go"], sha(test+"\n"); got != want && got != sha(test) {
				t.Errorf("the baseline's hash of money/money_test.go is %s, want the RED version's %s", got, want)
			}
			r.noneLeft()
		})
	}
}

// goPercentCases is a data-driven test of money's Percent: one subtest per file of
// testdata/percent, "cents percent want".
const goPercentCases = `package money

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPercentCases(t *testing.T) {
	files, _ := filepath.Glob("testdata/percent/*.txt")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c, p, want int64
			if _, err := fmt.Sscan(string(b), &c, &p, &want); err != nil {
				t.Fatal(err)
			}
			if got := Cents(c).Percent(p); int64(got) != want {
				t.Errorf("Cents(%d).Percent(%d) = %d, want %d", c, p, got, want)
			}
		})
	}
}
`

// goMoneyRoundUp is money.go with Percent rounding any fraction of a cent away from zero.
var goMoneyRoundUp = goMoneyHalfEven[:strings.Index(goMoneyHalfEven, "// Percent")] + `// Percent returns p percent of c, a fraction of a cent rounded away from zero.
func (c Cents) Percent(p int64) Cents {
	v := int64(c) * p
	if v >= 0 {
		return Cents((v + 99) / 100)
	}
	return Cents((v - 99) / 100)
}
`

// TestTestDataOnlyEndToEnd: a TEST task whose change is only a file under testdata/, read
// by a data-driven test nobody changed (SPEC §7.2): RED runs the package that holds
// testdata/, finds TestPercentCases/round_up failing where the baseline had
// TestPercentCases passing, and matches the task's Test ID, the project's own test name
// (config test_ids: names). The BUILD that makes it pass lands. The cheats: a new case
// that holds at the base already is a false RED ("the tests already pass"); an
// implementer that rewrites the test data to match the old behaviour is test_tampered,
// naming the data file.
func TestTestDataOnlyEndToEnd(t *testing.T) {
	t.Parallel()
	const data = "money/testdata/percent/round_up.txt"
	for _, tt := range []struct {
		name        string
		red, green  map[string]string
		task, typ   string // the task refused and its failure type ("" for a landing)
		reasonNames string
	}{
		{name: "honest", red: map[string]string{data: "3 10 1\n"}, green: map[string]string{"money/money.go": goMoneyRoundUp}},
		{name: "a case that holds at the base", red: map[string]string{"money/testdata/percent/again.txt": "1000 15 150\n"},
			green: map[string]string{"money/money.go": goMoneyRoundUp}, task: "TASK-T01", typ: "false_red", reasonNames: "the tests already pass"},
		{name: "the implementer rewrites the test data", red: map[string]string{data: "3 10 1\n"},
			green: map[string]string{data: "3 10 0\n"}, task: "TASK-001", typ: "test_tampered", reasonNames: data},
		// A case that was there before the task (a baseline test's data), rewritten by the
		// implementer to what its code gives; its twin adds a case of its own and lands.
		{name: "the implementer rewrites an earlier test's data", red: map[string]string{data: "3 10 1\n"},
			green: map[string]string{"money/money.go": goMoneyRoundUp, "money/testdata/percent/fifteen.txt": "1000 15 151\n"},
			task:  "TASK-001", typ: "test_tampered", reasonNames: "money/testdata/percent/fifteen.txt, a file tests read (test data), was changed"},
		{name: "honest, the implementer adds a case", red: map[string]string{data: "3 10 1\n"},
			green: map[string]string{"money/money.go": goMoneyRoundUp, "money/testdata/percent/twenty.txt": "2000 10 200\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testIDs := "TestPercentCases/round_up"
			if _, ok := tt.red[data]; !ok {
				testIDs = "TestPercentCases/again"
			}
			r := newRealRepo(t, "gomod", goTest, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: testIDs},
				{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
			}, map[string][]string{
				"writer":  slowAgent("test-writer", 100*time.Millisecond, 0, files(t, tt.red)),
				"builder": slowAgent("implementer", 100*time.Millisecond, 0, files(t, tt.green)),
			}, "test_ids: names\n")
			r.write("money/cases_test.go", goPercentCases)
			r.write("money/testdata/percent/fifteen.txt", "1000 15 150\n")
			r.commitAll()
			r.write(".orchestrator/no_auto_retry", "")
			code, out := r.run("watch", "--once")
			if tt.typ == "" {
				r.landed(code, out)
				red := r.result("TASK-T01", 1)
				if !strings.Contains(r.read(".orchestrator/runs/TASK-T01/1/gate.log"), "go test ./money") {
					t.Errorf("RED did not run the package that holds testdata/ (go test ./money)\n%v", red)
				}
				r.noneLeft()
				return
			}
			if tt.task == "TASK-T01" {
				st := r.statuses()
				res := r.result("TASK-T01", 1)
				if st["TASK-T01"] == "completed" || res["failure_type"] != tt.typ || !strings.Contains(res["reason"].(string), tt.reasonNames) {
					t.Errorf("TASK-T01 %q: %v: %v; want %s naming %q%s\n%s", st["TASK-T01"], res["failure_type"], res["reason"], tt.typ, tt.reasonNames, r.describeAttempts("TASK-T01"), out)
				}
				r.noneLeft()
				return
			}
			r.refused(tt.task, code, out, []string{tt.typ}, tt.reasonNames)
			r.noneLeft()
		})
	}
}

// baselineFile reads .orchestrator/baseline.json's passing tests and test file hashes.
func baselineFile(r *realRepo) (passing []string, hashes map[string]string) {
	r.t.Helper()
	var b struct {
		Passing []string          `json:"passing_tests"`
		Hashes  map[string]string `json:"test_file_hashes"`
	}
	if err := json.Unmarshal([]byte(r.read(".orchestrator/baseline.json")), &b); err != nil {
		r.t.Fatal(err)
	}
	return b.Passing, b.Hashes
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
