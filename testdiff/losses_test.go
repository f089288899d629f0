package testdiff

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestUnaccounted: a changed Go test that names what is missing (Mul, ParseStrict), judged
// by what it lost: each cheat that empties or loosens a check and names Mul elsewhere is
// unaccounted; each honest change that moves the check onto the missing name is not.
func TestUnaccounted(t *testing.T) {
	const before = `package calc

import "testing"

func check(t *testing.T, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("got %d, want %d", got, want)
	}
}

func TestAdd(t *testing.T) {
	check(t, Add(1, 2), 3)
}

func TestParse(t *testing.T) {
	got := Parse("1+2")
	if got != 3 {
		t.Errorf("Parse = %d, want 3", got)
	}
}
`
	replace := func(old, new string) string {
		t.Helper()
		if !strings.Contains(before, old) {
			t.Fatalf("the file has no %q", old)
		}
		return strings.Replace(before, old, new, 1)
	}
	missing := func(name string) bool { return name == "Mul" || name == "ParseStrict" || name == "Strict" }
	tests := []struct {
		name  string
		after string
		test  string // the changed test
		want  string // part of what is unaccounted; "" when all is
	}{
		// Cheats.
		{"check emptied into a mention", replace("if got != want {\n\t\tt.Errorf(\"got %d, want %d\", got, want)\n\t}", "_ = Mul"),
			"TestAdd", "its helper check: `if got != want { t.Errorf(\"got %d, want %d\", got, want) }` replaced by `_ = Mul`, which checks less (0 checks in place of 1)"},
		{"check emptied into an if", replace("if got != want {\n\t\tt.Errorf(\"got %d, want %d\", got, want)\n\t}", "if Mul == nil {\n\t}"),
			"TestAdd", "which checks less"},
		{"check onto what exists", replace("if got != 3 {", "_ = ParseStrict\n\tif got != got {"),
			"TestParse", "which checks without what is missing"},
		{"value no longer computed", replace(`got := Parse("1+2")`, "got := 3\n\t_ = ParseStrict"),
			"TestParse", "`got := 3`, `_ = ParseStrict`, which does not set got from what is missing"},
		// What the rule does not see: it reads names, not values, so a value that names
		// the missing function only to throw its result away counts as using it.
		{"value overwritten, naming the missing function", replace("\tif got != 3 {", "\tgot = 3 + 0*len(ParseStrict)\n\tif got != 3 {"),
			"TestParse", ""},
		{"value overwritten", replace("\tif got != 3 {", "\tgot = 3\n\t_ = ParseStrict\n\tif got != 3 {"),
			"TestParse", "`got = 3` added, which assigns got without what is missing"},
		{"check deleted, a row names Mul", replace("check(t, Add(1, 2), 3)", "_ = Mul"),
			"TestAdd", "`check(t, Add(1, 2), 3)` replaced by `_ = Mul`, which checks less"},
		{"helper deleted", strings.Replace(replace("func check(t *testing.T, got, want int) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Errorf(\"got %d, want %d\", got, want)\n\t}\n}", ""), "check(t, Add(1, 2), 3)", "check(t, Mul(1, 3), 3)", 1),
			"TestAdd", "its helper check: `func check(t *testing.T, got, want int) {"},
		// Honest changes.
		{"call renamed", replace(`got := Parse("1+2")`, `got := ParseStrict("1+2")`), "TestParse", ""},
		{"check moved onto the new function", replace("check(t, Add(1, 2), 3)", "check(t, Mul(1, 3), 3)"), "TestAdd", ""},
		{"new function with an error", replace(`got := Parse("1+2")`, "got, err := ParseStrict(\"1+2\")\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}"),
			"TestParse", ""},
		{"helper through a new constant", replace("if got != want {", "if got != want+Strict {"), "TestAdd", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{{Path: "calc_test.go", Before: []byte(before), After: []byte(tt.after)}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range got {
				if c.Name != tt.test {
					continue
				}
				if c.Kind != Changed {
					t.Fatalf("%s is %s, want changed", c.Name, c.Kind)
				}
				why := c.Unaccounted(missing)
				if tt.want == "" && why != "" || tt.want != "" && !strings.Contains(why, tt.want) {
					t.Fatalf("unaccounted: %q, want %q", why, tt.want)
				}
				return
			}
			t.Fatalf("no %s among %v", tt.test, got)
		})
	}
}

// TestCompareGoHelperOfHelper: a test is changed through a helper of its helper when that
// one loses a check (eq emptied), not when it transforms its table once more (gomarkdown's
// transformLinks, reached through doLinkTests): that only grows what the test checks.
func TestCompareGoHelperOfHelper(t *testing.T) {
	const before = `package calc

import (
	"strings"
	"testing"
)

func eq(t *testing.T, got, want string) {
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func expect(cases []string) []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		c = strings.TrimSpace(c)
		out[i] = c
	}
	return out
}

func run(t *testing.T, cases []string) {
	for i, want := range expect(cases) {
		eq(t, Render(cases[i]), want)
	}
}

func TestRender(t *testing.T) {
	run(t, []string{"a", "b"})
}
`
	for _, tt := range []struct {
		name, old, new string
		want           Kind
	}{
		{"its helper's helper loses its check", "\tif got != want {\n\t\tt.Errorf(\"got %q, want %q\", got, want)\n\t}\n", "\t_ = got\n", Changed},
		{"its helper's helper transforms once more", "\t\tc = strings.TrimSpace(c)\n", "\t\tc = strings.TrimSpace(c)\n\t\tc = strings.ToLower(c)\n", AddedTo},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(before, tt.old) {
				t.Fatalf("no %q", tt.old)
			}
			after := strings.Replace(before, tt.old, tt.new, 1)
			got, err := Compare(context.Background(), []File{{Path: "calc_test.go", Before: []byte(before), After: []byte(after)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Kind != tt.want {
				t.Fatalf("got %v, want TestRender %s", got, tt.want)
			}
		})
	}
}

// TestRefsOwned: a changed test's names are judged with the package or module they are
// members of, where it mentions them only as such: bytes.Equal is not a missing method
// Equal, operator.mul not a missing calc.mul; a name mentioned alone stays alone.
func TestRefsOwned(t *testing.T) {
	needPython(t)
	tests := []struct {
		name, path, before, after string
		want, not                 []string // among the changed test's Refs; not among them
	}{
		{"go package member", "calc_test.go",
			"package calc\n\nimport (\n\t\"bytes\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Error(bytes.MinRead)\n\t}\n}\n",
			"package calc\n\nimport (\n\t\"bytes\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif !bytes.Equal(nil, nil) || v.Plus(w) {\n\t\tt.Error(bytes.MinRead)\n\t}\n}\n",
			[]string{"bytes.Equal", ".Plus", "bytes.MinRead", ".Error", "(local).t"}, []string{"Equal", "MinRead", "Plus", "t"}},
		{"go local and standard alias", "calc_test.go",
			"package calc\n\nimport (\n\tcalc \"math/bits\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Error(calc.UintSize)\n\t}\n}\n",
			"package calc\n\nimport (\n\tcalc \"math/bits\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tMul := func(a, b int) int { return a * b }\n\tif Mul(1, 2) != 2 || calc.Mul != nil || (Config{Offset: 1}).Offset != 1 {\n\t\tt.Error(calc.UintSize)\n\t}\n}\n",
			[]string{"(local).Mul", "math/bits.Mul", ".Offset"}, []string{"Mul", "calc.Mul", "Offset"}},
		{"go import paths", "calc_test.go",
			"package calc_test\n\nimport (\n\t\"testing\"\n\n\tyaml \"gopkg.in/yaml.v3\"\n\t\"example.com/go-calc/v2\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif calc.Add(1, 2) != 3 {\n\t\tt.Error(yaml.Marshal)\n\t}\n}\n",
			"package calc_test\n\nimport (\n\t\"testing\"\n\n\tyaml \"gopkg.in/yaml.v3\"\n\t\"example.com/go-calc/v2\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tif calc.Plus(1, 2) != 3 {\n\t\tt.Error(yaml.Marshal)\n\t}\n}\n",
			[]string{"example.com/go-calc/v2.Plus", "gopkg.in/yaml.v3.Marshal"}, []string{"Plus", "Marshal", "calc.Plus"}},
		{"python module member", "tests/test_calc.py",
			"import operator\nimport calc as c\n\n\ndef test_add():\n    assert c.add(1, 2) == 3\n",
			"import operator\nimport calc as c\nfrom calc import mul\n\n\ndef test_add():\n    assert operator.mul(1, 3) == mul(1, 3) == c.plus(1, 2) == getattr(c, \"minus\")(4, 1)\n",
			[]string{"operator.mul", "calc.mul", "calc.plus", "minus"}, []string{"mul", "plus", "calc.minus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{{Path: tt.path, Before: []byte(tt.before), After: []byte(tt.after)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Kind != Changed {
				t.Fatalf("got %v, want one changed test", got)
			}
			for _, w := range tt.want {
				if !slices.Contains(got[0].Refs, w) {
					t.Errorf("Refs %v, want %s among them", got[0].Refs, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got[0].Refs, n) {
					t.Errorf("Refs %v, want no %s", got[0].Refs, n)
				}
			}
		})
	}
}
