package tdd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/gate"
)

// TestScrub: what an implementer of AC-STE.2 is shown loses every line that names another
// AC, by its ID or by its tests' names in any runner's spelling, or quotes its text; its
// own lines stay, and an AC whose number only starts another's is not taken for it.
func TestScrub(t *testing.T) {
	others := []string{"a basket of three items gets ten percent off", "short"}
	ids := []string{"AC-STE.1", "AC-STE.3"}
	tests := []struct {
		name, line string
		drop       bool
	}{
		{"another AC's ID", "// covers AC-STE.1 too", true},
		{"another AC's ID in other case", "see ac-ste.3", true},
		{"a Go test of another AC", "--- FAIL: TestAC_STE_1 (0.00s)", true},
		{"a Go subtest of another AC", "    --- FAIL: TestAC_STE_3/empty (0.00s)", true},
		{"a pytest test of another AC", "FAILED tests/test_promo.py::test_ac_ste_1 - assert 0 == 10", true},
		{"a vitest title of another AC", " × promo > ac_ste_3 keeps the total", true},
		{"another AC's text, spaced and cased otherwise", "# A basket of   three items gets TEN percent off", true},
		{"a long piece of another AC's text", `"three items gets ten percent"`, true},
		{"own ID", "// AC-STE.2: the voucher", false},
		{"own Go test", "--- FAIL: TestAC_STE_2 (0.00s)", false},
		{"an AC whose number starts another's", "--- FAIL: TestAC_STE_10 (0.00s)", false},
		{"an ID inside a longer one", "AC-STE.13 is not AC 1", false},
		{"a short other text is not matched", "short circuit", false},
		{"a short line inside another's text", "items", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Scrub("before\n"+tt.line+"\nafter", others, ids)
			want := "before\n" + tt.line + "\nafter"
			if tt.drop {
				want = "before\nafter"
			}
			if got != want {
				t.Errorf("Scrub = %q, want %q", got, want)
			}
		})
	}
	if Scrub("", others, ids) != "" {
		t.Error("Scrub of nothing is something")
	}
}

func TestRedactIDs(t *testing.T) {
	got := RedactIDs("applied after the discount (see AC-STE.1 and AC-STE.3)", []string{"AC-STE.1", "AC-STE.3"})
	if want := "applied after the discount (see [another AC] and [another AC])"; got != want {
		t.Errorf("RedactIDs = %q, want %q", got, want)
	}
}

func TestBareNames(t *testing.T) {
	got := BareNames([]string{
		"example.com/shop/money.TestAC_STE_1", "example.com/shop/money.TestAC_STE_1/empty",
		"tests/test_promo.py::test_ac_ste_2", "tests/test_promo.py::test_ac_ste_2[3-items]",
		"src/promo.test.ts > ac_ste_3 keeps the total", "TestPlain",
	})
	want := []string{"TestAC_STE_1", "TestAC_STE_1", "test_ac_ste_2", "test_ac_ste_2", "ac_ste_3 keeps the total", "TestPlain"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BareNames = %q\nwant %q", got, want)
	}
}

// TestRedOutput: the own tests' outputs when the runner reported them; the run's output
// when none did (the build failed before a test ran).
func TestRedOutput(t *testing.T) {
	m := &gate.Manifest{
		Outputs:      map[string]string{"p.TestAC_STE_2": "want 90, got 100\n", "p.TestAC_STE_1": "other's\n"},
		RunnerOutput: "# p\n./p_test.go:9: undefined: Voucher\n",
	}
	if got, want := RedOutput(m, []string{"p.TestAC_STE_2"}), "--- p.TestAC_STE_2\nwant 90, got 100\n"; got != want {
		t.Errorf("RedOutput = %q, want %q", got, want)
	}
	if got := RedOutput(m, []string{"p.TestAC_STE_9"}); got != m.RunnerOutput {
		t.Errorf("RedOutput without the test's output = %q, want the run's", got)
	}
	if strings.Contains(RedOutput(m, []string{"p.TestAC_STE_2"}), "other's") {
		t.Error("another AC's output is shown")
	}
}
