package review

import (
	"os"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/testrun"
)

func isTest(p string) bool { return testrun.IsTestFile(p, testrun.DefaultGlobs) }

const goTests = `package cart

import "testing"

func TestDiscount(t *testing.T) {
	if got := Discount(1000, 10); got != 900 {
		t.Errorf("Discount = %v, want 900", got)
	}
}
`

// TestPrechecksGo: a change that hard-codes the test's case, hides a stub behind an
// environment variable, skips the test, removes its assertion and deletes another test.
// Every finding names its file and line.
func TestPrechecksGo(t *testing.T) {
	patch, err := os.ReadFile("testdata/go.patch")
	if err != nil {
		t.Fatal(err)
	}
	p := Check(Input{Patch: string(patch), IsTest: isTest, Tests: map[string]string{"cart/discount_test.go": goTests}})
	got := p.Text()
	for _, want := range []string{
		"cart/discount.go:6: hard_coded: 1000, a value of the tests (cart/discount_test.go:6), in the implementation: if c == 1000 && p == 10 {",
		"cart/discount.go:6: hard_coded: 10, a value of the tests (cart/discount_test.go:6)",
		"cart/discount.go:7: hard_coded: 900, a value of the tests (cart/discount_test.go:6)",
		"cart/discount.go:9: env_switch: the implementation reads the environment or a flag",
		"cart/discount_test.go:6: test_skipped: skip added: t.Skip(\"later\")",
		"cart/discount_test.go:7: assertion_removed: assertion removed: t.Errorf(\"Discount = %v, want 900\", got)",
		"cart/discount_test.go:11: test_deleted: test TestOther removed",
		"cart/discount_test.go:13: assertion_removed: assertion removed: t.Fatal(\"no\")",
		"mutation: none",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the pre-checks lack %q:\n%s", want, got)
		}
	}
	// The honest line has no value of the tests.
	if strings.Contains(got, "c - c*p/100") {
		t.Errorf("the honest line is flagged:\n%s", got)
	}
}

// TestPrechecksHonest: an honest implementation and no test change: no finding.
func TestPrechecksHonest(t *testing.T) {
	patch := `diff --git a/cart/discount.go b/cart/discount.go
--- a/cart/discount.go
+++ b/cart/discount.go
@@ -3,3 +3,3 @@
 func Discount(c, p int64) int64 {
-	return c
+	return c - c*p/100 // percent
 }
`
	p := Check(Input{Patch: patch, IsTest: isTest, Tests: map[string]string{"cart/discount_test.go": goTests}, Mutation: "3 mutants, 3 killed"})
	if len(p.Findings) != 0 {
		t.Errorf("findings on an honest change: %v", p.Findings)
	}
	if !strings.Contains(p.Text(), "mutation: 3 mutants, 3 killed") {
		t.Errorf("the mutation result is not in the pre-checks:\n%s", p.Text())
	}
}

// TestPrechecksPython: a lookup table of the tests' cases, a new test by the implementer
// and a pytest skip.
func TestPrechecksPython(t *testing.T) {
	tests := "from shop.discount import discount\n\n\ndef test_unit_001_discount():\n    assert discount(1000, 10) == 900\n    assert discount(250, 20) == 200\n"
	patch := `diff --git a/shop/discount.py b/shop/discount.py
new file mode 100644
--- /dev/null
+++ b/shop/discount.py
@@ -0,0 +1,4 @@
+_ANSWERS = {(1000, 10): 900, (250, 20): 200}
+
+def discount(cents, p):
+    return _ANSWERS.get((cents, p), cents)
diff --git a/tests/test_extra.py b/tests/test_extra.py
new file mode 100644
--- /dev/null
+++ b/tests/test_extra.py
@@ -0,0 +1,4 @@
+import pytest
+@pytest.mark.skip
+def test_more():
+    assert True
`
	p := Check(Input{Patch: patch, IsTest: isTest, Tests: map[string]string{"tests/test_discount.py": tests}})
	got := p.Text()
	for _, want := range []string{
		"shop/discount.py:1: hard_coded: 1000",
		"shop/discount.py:1: hard_coded: 900",
		"shop/discount.py:1: hard_coded: 250",
		"shop/discount.py:1: hard_coded: 200",
		"tests/test_extra.py:2: test_skipped",
		"tests/test_extra.py:3: new_test: test test_more added by the implementer",
		"tests/test_extra.py:1: new_test: test file added by the implementer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the pre-checks lack %q:\n%s", want, got)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	block := func(status, notes string) string {
		return "Verdict below.\n\n```tdd-result\nrole: judge\nstatus: " + status + "\nfiles: []\ncommand: go test ./...\noutput_excerpt: |\n  ok\nnotes: " + notes + "\n```\n"
	}
	v, _, err := ParseVerdict(block("failed", `{"verdict": "fail", "reasons": ["hard-coded at cart/discount.go:6"], "rewrite_tests": false}`))
	if err != nil || v.Pass() || v.Reasons[0] != "hard-coded at cart/discount.go:6" {
		t.Fatalf("got %+v, %v", v, err)
	}
	for name, text := range map[string]string{
		"no block":          "pass",
		"not JSON":          block("ok", "looks fine"),
		"no reason":         block("ok", `{"verdict": "pass", "reasons": []}`),
		"unknown verdict":   block("ok", `{"verdict": "maybe", "reasons": ["x"]}`),
		"status disagrees":  block("ok", `{"verdict": "fail", "reasons": ["x"]}`),
		"unknown key":       block("ok", `{"verdict": "pass", "reasons": ["x"], "score": 3}`),
		"pass with rewrite": block("ok", `{"verdict": "pass", "reasons": ["x"], "rewrite_tests": true}`),
		"wrong role":        strings.Replace(block("ok", `{"verdict": "pass", "reasons": ["x"]}`), "role: judge", "role: reviewer", 1),
	} {
		if _, _, err := ParseVerdict(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseNotes(t *testing.T) {
	yes := `{"new_tests": {"answer": "yes", "evidence": "a"}, "real_code": {"answer": "yes", "evidence": "b"}, "truthful": {"answer": "no", "evidence": "cart/discount.go:6 returns 900"}, "does_the_task": {"answer": "yes", "evidence": "d"}}`
	block := func(notes string) string {
		return "```tdd-result\nrole: reviewer\nstatus: ok\nfiles: []\ncommand: go test ./...\noutput_excerpt: |\n  ok\nnotes: " + notes + "\n```\n"
	}
	n, _, err := ParseNotes(block(yes))
	if err != nil {
		t.Fatal(err)
	}
	if no := n.No(); len(no) != 1 || no[0] != "truthful" {
		t.Errorf("No() = %v", no)
	}
	for name, notes := range map[string]string{
		"missing question": `{"new_tests": {"answer": "yes", "evidence": "a"}}`,
		"no evidence":      strings.Replace(yes, `"evidence": "a"`, `"evidence": ""`, 1),
		"maybe":            strings.Replace(yes, `"answer": "no"`, `"answer": "maybe"`, 1),
		"prose":            "all good",
	} {
		if _, _, err := ParseNotes(block(notes)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
