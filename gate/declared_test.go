package gate

import (
	"slices"
	"testing"
)

func TestNamedBy(t *testing.T) {
	tests := []struct {
		name, id string
		want     bool
	}{
		{"TestAdd_UNIT_001", "UNIT-001", true},
		{"test_unit_001_adds", "UNIT-001", true},
		{"TestUNIT_001", "UNIT-001", true},
		{"UNIT-001 adds two numbers", "UNIT-001", true},
		{"TestMul/UNIT_001_zero", "UNIT-001", true},
		{"test_unit_0010", "UNIT-001", false},
		{"test_xunit_001", "UNIT-001", false},
		{"testunit_001", "UNIT-001", false},
		{"TestAdd", "UNIT-001", false},
		{"test_ac_ste_1", "AC-STE-1", true},
		{"test_ac_ste_12", "AC-STE-1", false},
	}
	for _, tt := range tests {
		if got := namedBy(tt.name, tt.id); got != tt.want {
			t.Errorf("namedBy(%q, %q) = %v, want %v", tt.name, tt.id, got, tt.want)
		}
	}
}

// TestDeclared: only declarations name tests; a name in a comment or a string does not.
func TestDeclared(t *testing.T) {
	tests := []struct {
		file, src string
		want      []string
	}{
		{"calc/mul_test.go", "package calc\n\nimport \"testing\"\n\n// func TestMul_UNIT_002(t *testing.T)\nvar s = `\nfunc TestMul_UNIT_003(t *testing.T) {}\n`\n\nfunc TestMul_UNIT_001(t *testing.T) { Mul(2, 3) }\n\nfunc TestHelper(x int) {}\n\nfunc (s suite) TestMethod(t *testing.T) {}\n",
			[]string{"TestMul_UNIT_001"}},
		{"x_test.go", "func TestAdd_UNIT_001(t *testing.T) {}\n", []string{"TestAdd_UNIT_001"}},
		{"tests/test_mul.py", "# def test_unit_002():\n'''\ndef test_unit_003():\n'''\ns = \"def test_unit_004(): pass\"\n\ndef test_unit_001_mul():\n    pass\n\nclass TestMul:\n    async def test_unit_005(self):\n        pass\n",
			[]string{"test_unit_001_mul", "test_unit_005"}},
		{"src/mul.test.ts", "// it(\"UNIT-002 comment\")\n/* test('UNIT-003 block') */\nconst s = \"it('UNIT-004 string')\";\ndescribe('mul', () => {\n  it(\"UNIT-001 multiplies\", () => {});\n  test.only(`UNIT-005 only`, () => {});\n  it.skip('UNIT-006 skipped', () => {});\n  submit('UNIT-007 not a test');\n});\n",
			[]string{"UNIT-001 multiplies", "UNIT-005 only"}},
		{"tests/mul.rs", "#[test]\nfn unit_001_mul() {}\n", []string{"unit_001_mul"}},
	}
	for _, tt := range tests {
		if got := declared(tt.file, tt.src); !slices.Equal(got, tt.want) {
			t.Errorf("declared(%s) = %q, want %q", tt.file, got, tt.want)
		}
	}
}

func TestTopName(t *testing.T) {
	for id, want := range map[string]string{
		"example.com/calc.TestMul_UNIT_001":     "TestMul_UNIT_001",
		"example.com/calc.TestMul/zero":         "TestMul",
		"tests/test_mul.py::test_unit_001":      "test_unit_001",
		"tests/test_mul.py::TestC::test_x[1-2]": "test_x",
		"src/mul.test.ts > mul > UNIT-001 a/b":  "UNIT-001 a/b",
		"example.com/a.Test.b/c.TestX":          "TestX",
	} {
		if got := topName(id); got != want {
			t.Errorf("topName(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestNameSpansAgreeWithNamedBy: an ID names a test exactly when its token is one of the
// test name's spans.
func TestNameSpansAgreeWithNamedBy(t *testing.T) {
	names := []string{"TestAdd_UNIT_001", "test_unit_001_adds", "TestUNIT_001", "test_unit_0010", "testunit_001", "TestAddUNIT_001", "it adds UNIT-002 > x", "TestAC_STE_1", "test_ac_ste_12"}
	ids := []string{"UNIT-001", "UNIT-002", "AC-STE.1", "AC-STE.12", "UNIT-0010", "ADD-UNIT"}
	for _, n := range names {
		spans := map[string]bool{}
		for _, s := range NameSpans(n) {
			spans[s] = true
		}
		for _, id := range ids {
			if got, want := spans[IDToken(id)], NamedBy(n, id); got != want {
				t.Errorf("%s, %s: spans say %v, NamedBy %v", n, id, got, want)
			}
		}
	}
}
