package gate

import (
	"strings"
	"testing"
)

// TestByName: with test_ids: names, a Test ID is a test's full name (SPEC §7.2): it names
// that test, and the subtests, parametrizations and methods below it.
func TestByName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		testID, id string
		want       int
	}{
		{"example.com/calc.TestParse/empty", "TestParse/empty", nameIs},
		{"example.com/calc.TestParse/empty", "example.com/calc.TestParse/empty", nameIs},
		{"example.com/calc.TestParse/empty", "TestParse", nameBelow},
		{"example.com/calc.TestParse", "TestParse", nameIs},
		{"example.com/calc.TestParseAll", "TestParse", nameOther},
		{"example.com/calc.TestParse/empty_line", "TestParse/empty", nameOther},
		{"tests/test_p.py::test_parse[empty]", "test_parse[empty]", nameIs},
		{"tests/test_p.py::test_parse[empty]", "test_parse", nameBelow},
		{"tests/test_p.py::test_parse[empty]", "tests/test_p.py::test_parse", nameBelow},
		{"tests/test_p.py::test_parse_all", "test_parse", nameOther},
		{"tests/test_p.py::TestData::test_valid", "TestData.test_valid", nameIs},
		{"tests/test_p.py::TestData::test_valid", "TestData", nameBelow},
		{"tests/test_p.py::test_float[1.5]", "test_float[1.5]", nameIs},
		{"tests/test_p.py::test_unit_001", "UNIT-001", nameOther},
	} {
		if got := byName(tt.testID, tt.id); got != tt.want {
			t.Errorf("byName(%q, %q) = %d, want %d", tt.testID, tt.id, got, tt.want)
		}
	}
}

func TestTestBase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"example.com/calc.TestGolden/sub_3_1": "example.com/calc.TestGolden",
		"example.com/calc.TestGolden":         "example.com/calc.TestGolden",
		"tests/t.py::test_case[sub_3_1.txt]":  "tests/t.py::test_case",
		"tests/t.py::C::test_x":               "tests/t.py::C::test_x",
	} {
		if got := testBase(in); got != want {
			t.Errorf("testBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProbeSource: the probe cuts each block at its first statement that names a missing
// name, keeps what runs before it (with its variables used), and leaves the rest of the
// file as it was, line for line.
func TestProbeSource(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, src string
		want      []string // in the output
		not       []string // not in it
	}{
		{name: "a nil map write before the call", src: `package calc

import "testing"

func TestMul(t *testing.T) {
	var want map[string]int
	want["a"] = 6
	if got := Mul(2, 3); got != want["a"] {
		t.Fatal(got)
	}
}
`, want: []string{"\twant[\"a\"] = 6\n\t_ = t; _ = want; panic(", "var want map[string]int"}, not: []string{" Mul("}},
		{name: "a table test with subtests", src: `package calc

import (
	"fmt"
	"testing"
)

func TestMul(t *testing.T) {
	for _, tt := range []struct{ a, b int }{{1, 2}} {
		name := fmt.Sprint(tt.a)
		t.Run(name, func(t *testing.T) {
			if Mul(tt.a, tt.b) != 2 {
				t.Fatal()
			}
		})
	}
}
`, want: []string{"t.Run(name, func(t *testing.T) {\n\t\t\t_ = t; _ = tt; _ = name; _ = t; panic("}, not: []string{" Mul("}},
		{name: "an import used only after the cut", src: `package cart

import (
	"testing"

	"example.com/shop/money"
)

func TestDiscount(t *testing.T) {
	if Discount(money.Cents(1000), 10) != 900 {
		t.Fatal()
	}
}
`, want: []string{`_ "example.com/shop/money"`}, not: []string{" Discount("}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := probeSource([]byte(tt.src), map[string]bool{"Mul": true, "Discount": true})
			if !ok {
				t.Fatal("nothing cut")
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(string(out), n) {
					t.Errorf("output holds %q:\n%s", n, out)
				}
			}
		})
	}
	if _, ok := probeSource([]byte("package calc\n\nfunc TestX(t *testing.T) { t.Log(1) }\n"), map[string]bool{"Mul": true}); ok {
		t.Error("a file that names no missing name was cut")
	}
}
