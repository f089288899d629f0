package testdiff

import (
	"context"
	"strings"
	"testing"
)

// goBefore is a Go test file as a real project has it: a table test with subtests, a
// plain test, and a helper.
const goBefore = `package calc

import "testing"

func TestAdd(t *testing.T) {
	tests := []struct {
		name string
		a, b int
		want int
	}{
		{"zero", 0, 0, 0},
		{"one", 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Add(tt.a, tt.b); got != tt.want {
				t.Errorf("Add(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	got, err := Parse("1+2")
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("Parse = %d, want 3", got)
	}
}
`

// TestCompareGo: each kind of change to a Go test file, read with go/ast.
func TestCompareGo(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(goBefore, old) {
			t.Fatalf("the snippet has no %q", old)
		}
		return strings.Replace(goBefore, old, new, 1)
	}
	tests := []struct {
		name  string
		after string
		want  map[string]Kind
		what  string // part of the What of the first test not unchanged
	}{
		{"reformatted and commented", strings.Replace(goBefore, "\tif got != 3 {", "\t// The sum.\n\tif got != 3  {", 1),
			map[string]Kind{"TestAdd": Unchanged, "TestParse": Unchanged}, ""},
		{"table rows added", replace(`{"one", 1, 0, 1},`, `{"one", 1, 0, 1},
		{"negative", -1, -2, -3},
		{"overflow", 1 << 62, 1 << 62, -1 << 63},`),
			map[string]Kind{"TestAdd": AddedTo, "TestParse": Unchanged}, ""},
		{"row type gains a field", replace("want int\n\t}{", "want int\n\t\tskipOnWindows bool\n\t}{"),
			map[string]Kind{"TestAdd": AddedTo}, ""},
		{"a subtest added", replace("\tfor _, tt := range tests {", "\tt.Run(\"big\", func(t *testing.T) {\n\t\tif Add(1<<40, 1) != 1<<40+1 {\n\t\t\tt.Error(\"big\")\n\t\t}\n\t})\n\tfor _, tt := range tests {"),
			map[string]Kind{"TestAdd": AddedTo}, ""},
		{"an assertion added at the end", replace("\t\tt.Errorf(\"Parse = %d, want 3\", got)\n\t}\n", "\t\tt.Errorf(\"Parse = %d, want 3\", got)\n\t}\n\tgot, err = Parse(\"2*3\")\n\tif err != nil || got != 6 {\n\t\tt.Errorf(\"Parse(2*3) = %d, %v\", got, err)\n\t}\n"),
			map[string]Kind{"TestParse": AddedTo}, ""},
		{"an assertion removed", replace("\tif got != 3 {\n\t\tt.Errorf(\"Parse = %d, want 3\", got)\n\t}\n", ""),
			map[string]Kind{"TestParse": Changed}, "if got != 3"},
		{"a comparison loosened", replace("if got != 3 {", "if got < 0 {"),
			map[string]Kind{"TestParse": Changed}, "if got != 3"},
		{"an existing row changed", replace(`{"one", 1, 0, 1},`, `{"one", 1, 0, 2},`),
			map[string]Kind{"TestAdd": Changed}, `{"one", 1, 0, 1}`},
		{"an early return added", replace("\tgot, err := Parse(\"1+2\")\n", "\tgot, err := Parse(\"1+2\")\n\tif got == 3 {\n\t\treturn\n\t}\n"),
			map[string]Kind{"TestParse": Skipped}, "an early return"},
		{"t.Skip added", replace("\tgot, err := Parse(\"1+2\")\n", "\tt.Skip(\"flaky\")\n\tgot, err := Parse(\"1+2\")\n"),
			map[string]Kind{"TestParse": Skipped}, "t.Skip"},
		{"t.Skip in a subtest", replace("\t\t\tif got := Add", "\t\t\tif tt.name == \"one\" {\n\t\t\t\tt.SkipNow()\n\t\t\t}\n\t\t\tif got := Add"),
			map[string]Kind{"TestAdd": Skipped}, "t.SkipNow"},
		{"a continue in the table loop", replace("\t\tt.Run(tt.name,", "\t\tif tt.a == 1 {\n\t\t\tcontinue\n\t\t}\n\t\tt.Run(tt.name,"),
			map[string]Kind{"TestAdd": Skipped}, "continue"},
		{"the expectation overwritten before the old check", replace("\tif got != 3 {", "\tgot = 3\n\tif got != 3 {"),
			map[string]Kind{"TestParse": Changed}, "assigns got"},
		{"a shadowing want", replace("\t\t\tif got := Add", "\t\t\ttt := tt\n\t\t\ttt.want = Add(tt.a, tt.b)\n\t\t\tif got := Add"),
			map[string]Kind{"TestAdd": Changed}, "tt"},
		{"deleted", strings.Replace(goBefore, goBefore[strings.Index(goBefore, "func TestParse"):], "", 1),
			map[string]Kind{"TestAdd": Unchanged, "TestParse": Deleted}, ""},
		{"renamed", replace("func TestParse(", "func TestParseSum("),
			map[string]Kind{"TestParse": Moved}, "renamed TestParseSum"},
		{"renamed away", replace("func TestParse(", "func testParse("),
			map[string]Kind{"TestParse": Deleted}, "renamed to testParse"},
		{"a build constraint", "//go:build never\n\n" + goBefore,
			map[string]Kind{"TestAdd": Skipped, "TestParse": Skipped}, "build constraint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{{Path: "calc/calc_test.go", Before: []byte(goBefore), After: []byte(tt.after)}})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, tt.want, tt.what)
		})
	}
}

// TestCompareGoRenamedAndEdited: a test renamed with its body changed is a deletion (and a
// new test), not a move.
func TestCompareGoRenamedAndEdited(t *testing.T) {
	after := strings.Replace(goBefore, "func TestParse(", "func TestParseSum(", 1)
	after = strings.Replace(after, "if got != 3 {", "if got < 3 {", 1)
	got, err := Compare(context.Background(), []File{{Path: "calc_test.go", Before: []byte(goBefore), After: []byte(after)}})
	if err != nil {
		t.Fatal(err)
	}
	checkKinds(t, got, map[string]Kind{"TestAdd": Unchanged, "TestParse": Deleted}, "")
}

// TestCompareGoMoved: a test moved to another file of its package keeps its body; moved
// into a file that does not build (a build constraint), it is deleted.
func TestCompareGoMoved(t *testing.T) {
	i := strings.Index(goBefore, "func TestParse")
	rest, parse := goBefore[:i], goBefore[i:]
	for _, tt := range []struct {
		name, header string
		want         Kind
	}{
		{"plain", "package calc\n\nimport \"testing\"\n\n", Moved},
		{"into a file that does not build", "//go:build ignore\n\npackage calc\n\nimport \"testing\"\n\n", Deleted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{
				{Path: "calc/calc_test.go", Before: []byte(goBefore), After: []byte(rest)},
				{Path: "calc/parse_test.go", After: []byte(tt.header + parse)},
			})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, map[string]Kind{"TestAdd": Unchanged, "TestParse": tt.want}, "")
		})
	}
}

// TestCompareGoHelper: a test whose helper lost its check is changed, though its own body
// is not; a helper that only grew changes nothing.
func TestCompareGoHelper(t *testing.T) {
	before := goBefore + "\nfunc TestSub(t *testing.T) {\n\tcheck(t, Sub(2, 1), 1)\n}\n\nfunc check(t *testing.T, got, want int) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Errorf(\"got %d, want %d\", got, want)\n\t}\n}\n"
	weak := strings.Replace(before, "\tif got != want {\n\t\tt.Errorf(\"got %d, want %d\", got, want)\n\t}\n", "", 1)
	grown := strings.Replace(before, "\tt.Helper()\n", "\tt.Helper()\n\tt.Logf(\"got %d\", got)\n", 1)
	for _, tt := range []struct {
		name, after string
		want        Kind
	}{{"weakened", weak, Changed}, {"grown", grown, AddedTo}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{{Path: "calc_test.go", Before: []byte(before), After: []byte(tt.after)}})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, map[string]Kind{"TestAdd": Unchanged, "TestSub": tt.want}, "")
		})
	}
}

// TestCompareGoSuite: a method of a testify-style suite is a test, named by its suite.
func TestCompareGoSuite(t *testing.T) {
	before := "package calc\n\ntype CalcSuite struct{ suite.Suite }\n\nfunc (s *CalcSuite) TestAdd() {\n\ts.Equal(2, Add(1, 1))\n}\n"
	after := "package calc\n\ntype CalcSuite struct{ suite.Suite }\n\nfunc (s *CalcSuite) TestAdd() {\n\ts.T().Skip()\n\ts.Equal(2, Add(1, 1))\n}\n"
	got, err := Compare(context.Background(), []File{{Path: "calc_test.go", Before: []byte(before), After: []byte(after)}})
	if err != nil {
		t.Fatal(err)
	}
	checkKinds(t, got, map[string]Kind{"CalcSuite.TestAdd": Skipped}, "Skip")
}

// checkKinds checks the kinds of the tests, and that the first test not unchanged says
// what (when what is not "").
func checkKinds(t *testing.T, got []Test, want map[string]Kind, what string) {
	t.Helper()
	kinds := map[string]Kind{}
	for _, g := range got {
		kinds[g.Name] = g.Kind
	}
	for name, k := range want {
		if kinds[name] != k {
			t.Errorf("%s is %q, want %q (all: %v)", name, kinds[name], k, got)
		}
	}
	if what == "" {
		return
	}
	for _, g := range got {
		if g.Kind != Unchanged {
			if !strings.Contains(g.What, what) {
				t.Errorf("%s: What = %q, want …%s…", g.Name, g.What, what)
			}
			return
		}
	}
	t.Errorf("no test changed, want one that says %q", what)
}

// TestCompareGoMethodTable: a table whose own method runs its rows (go-humanize's
// testList{…}.validate(t)) may gain rows anywhere, as a ranged one does; changing or
// removing a row is still a change.
func TestCompareGoMethodTable(t *testing.T) {
	before := "package humanize\n\nimport \"testing\"\n\nfunc TestFtoa(t *testing.T) {\n\ttestList{\n\t\t{\"200\", Ftoa(200), \"200\"},\n\t\t{\"2\", Ftoa(2), \"2\"},\n\t}.validate(t)\n}\n"
	for _, tt := range []struct {
		name, old, new string
		want           Kind
	}{
		{"a row inserted", `{"200", Ftoa(200), "200"},`, `{"200", Ftoa(200), "200"},` + "\n\t\t{\"20\", Ftoa(20.0), \"20\"},", AddedTo},
		{"a row changed", `{"2", Ftoa(2), "2"},`, `{"2", Ftoa(2), "2.0"},`, Changed},
		{"a row removed", "\t\t{\"2\", Ftoa(2), \"2\"},\n", "", Changed},
		{"another method", "}.validate(t)", "}.skip(t)", Changed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			after := strings.Replace(before, tt.old, tt.new, 1)
			if after == before {
				t.Fatalf("the snippet has no %q", tt.old)
			}
			got, err := Compare(context.Background(), []File{{Path: "ftoa_test.go", Before: []byte(before), After: []byte(after)}})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, map[string]Kind{"TestFtoa": tt.want}, "")
		})
	}
}

// TestCompareGoSameNameHelpers: helpers that share a name are told apart: methods of two
// types (a flag.Value's String and Set, declared for each of a test file's value types, as
// spf13/pflag's tests do), and the blank variables that run at init (var _ = ...). A new
// type and test beside them changes no other test; a change of one type's method changes
// the tests that call a method of that name (helpers are known by name, not by type:
// TestInt too); a change of a blank variable's value, which runs before every test,
// changes them all, as a change of init does.
func TestCompareGoSameNameHelpers(t *testing.T) {
	before := `package calc

import "testing"

type intValue int

func (v *intValue) String() string { return "int" }
func (v *intValue) Set(s string) error { *v = 1; return nil }

type boolValue bool

func (v *boolValue) String() string { return "bool" }
func (v *boolValue) Set(s string) error { *v = true; return nil }

var _ = register("int")
var _ = register("bool")

func register(name string) bool { return name != "" }

func TestInt(t *testing.T) {
	var v intValue
	if v.Set("1"); v.String() != "int" {
		t.Fatal("int")
	}
}

func TestBool(t *testing.T) {
	var v boolValue
	for _, s := range []string{"true"} {
		if v.Set(s); v.String() != "bool" {
			t.Fatal("bool")
		}
	}
}
`
	added := before + `
type hexValue uint

func (v *hexValue) String() string { return "hex" }
func (v *hexValue) Set(s string) error { *v = 16; return nil }

var _ = register("hex")

func TestHex(t *testing.T) {
	var v hexValue
	if v.Set("0x10"); v.String() != "hex" {
		t.Fatal("hex")
	}
}
`
	boolWeakened := strings.Replace(before, `func (v *boolValue) String() string { return "bool" }`, `func (v *boolValue) String() string { return "" }`, 1)
	blankChanged := strings.Replace(before, `var _ = register("bool")`, `var _ = register("")`, 1)
	for _, tt := range []struct {
		name, after string
		want        map[string]Kind
	}{
		{"a new type and test beside them", added, map[string]Kind{"TestInt": Unchanged, "TestBool": Unchanged}},
		{"one type's method changed", boolWeakened, map[string]Kind{"TestInt": Changed, "TestBool": Changed}},
		{"a blank variable's value changed", blankChanged, map[string]Kind{"TestInt": Changed, "TestBool": Changed}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{{Path: "calc_test.go", Before: []byte(before), After: []byte(tt.after)}})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, tt.want, "")
		})
	}
}
