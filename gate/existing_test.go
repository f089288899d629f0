package gate

import (
	"strings"
	"testing"
)

// TestExistingTests: a test writer's change to a test file that was already there may only
// add tests. Reformatting and comments change nothing; a test deleted, changed or skipped,
// or a skip marker for the whole file, is reported.
func TestExistingTests(t *testing.T) {
	tests := []struct {
		name, file, before, after string
		want                      []string // parts of the lines, in order; none for no finding
	}{
		{"go gains a test", "a_test.go",
			"package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif 1 != 1 {\n\t\tt.Fatal()\n\t}\n}\n",
			"package a\n\nimport \"testing\"\n\n// TestA checks.\nfunc TestA(t *testing.T) {\n\tif 1 != 1 { t.Fatal() }\n}\n\nfunc TestB(t *testing.T) {}\n", nil},
		{"go skip", "a_test.go",
			"package a\nfunc TestA(t *testing.T) { check(t) }\n",
			"package a\nfunc TestA(t *testing.T) { t.Skip(); check(t) }\n", []string{"TestA skipped"}},
		{"go SkipNow in TestMain counts for the file", "a_test.go",
			"package a\nfunc TestA(t *testing.T) { check(t) }\n",
			"package a\nfunc TestMain(m *testing.M) { if true { return }; m.Run() }\nfunc init() { testing.Short() }\nfunc TestA(t *testing.T) { check(t) }\n", nil},
		{"go deleted file", "a_test.go", "package a\nfunc TestA(t *testing.T) {}\n", "", []string{"TestA deleted (the file was deleted)"}},
		{"py method changed", "tests/test_a.py",
			"class TestA:\n    def test_x(self):\n        assert f() == 1\n\n    def test_y(self):\n        assert f() == 2\n",
			"class TestA:\n    def test_x(self):\n        assert f() == 1\n\n    def test_y(self):\n        assert True\n", []string{"TestA.test_y changed"}},
		{"py xfail", "tests/test_a.py",
			"def test_x():\n    assert f() == 1\n",
			"import pytest\n\n\n@pytest.mark.xfail\ndef test_x():\n    assert f() == 1\n", []string{"test_x skipped"}},
		{"py skip in the body", "tests/test_a.py",
			"def test_x():\n    assert f() == 1\n",
			"def test_x():\n    pytest.skip('later')\n    assert f() == 1\n", []string{"test_x skipped"}},
		{"py class skipped", "tests/test_a.py",
			"class TestA:\n    def test_x(self):\n        assert f() == 1\n",
			"@pytest.mark.skip\nclass TestA:\n    def test_x(self):\n        assert f() == 1\n", []string{"skip marker added for the file"}},
		{"py module skipped", "tests/test_a.py",
			"def test_x():\n    assert f() == 1\n",
			"import pytest\npytest.skip('no', allow_module_level=True)\n\ndef test_x():\n    assert f() == 1\n", []string{"skip marker added for the file"}},
		{"py a comment and a new test", "tests/test_a.py",
			"def test_x():\n    assert f() == 1\n",
			"# The tests of f.\ndef test_x():\n    assert f() == 1\n\n\ndef test_y():\n    assert f() == 1\n", nil},
		{"js it.skip", "a.test.ts",
			"describe('f', () => {\n  it('adds', () => {\n    expect(f(1)).toBe(2)\n  })\n})\n",
			"describe('f', () => {\n  it.skip('adds', () => {\n    expect(f(1)).toBe(2)\n  })\n})\n", []string{"adds deleted or skipped"}},
		{"js describe.skip", "a.test.ts",
			"describe('f', () => {\n  it('adds', () => {\n    expect(f(1)).toBe(2)\n  })\n})\n",
			"describe.skip('f', () => {\n  it('adds', () => {\n    expect(f(1)).toBe(2)\n  })\n})\n", []string{"skip marker added for the file"}},
		{"js body changed", "a.test.js",
			"test('adds', () => { expect(f(1)).toBe(2) })\n",
			"test('adds', () => { expect(f(1)).toBeDefined() })\n", []string{"adds changed"}},
		{"js gains a test", "a.test.js",
			"test('adds', () => { expect(f(1)).toBe(2) })\n",
			"test('adds', () => {\n  expect(f(1)).toBe(2)\n})\ntest('subtracts', () => { expect(g(1)).toBe(0) })\n", nil},
		{"rust ignore", "tests/a.rs",
			"#[test]\nfn adds() {\n    assert_eq!(add(1, 1), 2);\n}\n",
			"#[test]\n#[ignore]\nfn adds() {\n    assert_eq!(add(1, 1), 2);\n}\n", []string{"adds skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := existingTests(tt.file, []byte(tt.before), bytesOrNil(tt.after))
			if len(got) != len(tt.want) {
				t.Fatalf("existingTests = %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d = %q, want …%s…", i, got[i], w)
				}
			}
		})
	}
}
