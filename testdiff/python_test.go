package testdiff

import (
	"context"
	"os"
	"strings"
	"testing"
)

// pyBefore is a Python test module as real projects write them: pytest functions with
// parametrize (inline and from a table), a unittest class with setUp and subTest.
const pyBefore = `import unittest

import pytest

from calc import Calc, parse

CASES = [("1", 1), ("2", 2)]


@pytest.mark.parametrize("s,want", [("1+1", 2), ("2*3", 6)])
def test_parse(s, want):
    assert parse(s) == want


@pytest.mark.parametrize("s,want", CASES)
def test_table(s, want):
    assert parse(s) == want


def test_plain():
    got = parse("3")
    assert got == 3
    assert isinstance(got, int)


class TestCalc(unittest.TestCase):
    def setUp(self):
        self.calc = Calc()

    def test_add(self):
        for a, b, want in [(1, 2, 3), (2, 2, 4)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(self.calc.add(a, b), want)

    def test_sub(self):
        self.assertEqual(self.calc.sub(2, 1), 1)
`

// needPython skips a test when there is no python3, and fails it under CI.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no /usr/bin/python3")
		}
		t.Skip("no /usr/bin/python3")
	}
}

// TestComparePython: each kind of change to a Python test module, read with Python's ast.
func TestComparePython(t *testing.T) {
	needPython(t)
	replace := func(old, new string) string {
		if !strings.Contains(pyBefore, old) {
			t.Fatalf("the snippet has no %q", old)
		}
		return strings.Replace(pyBefore, old, new, 1)
	}
	tests := []struct {
		name  string
		after string
		want  map[string]Kind
		what  string
	}{
		{"reformatted and commented", replace(`    got = parse("3")`, "    # Three.\n    got = parse( '3' )"),
			map[string]Kind{"test_parse": Unchanged, "test_plain": Unchanged, "TestCalc.test_add": Unchanged}, ""},
		{"parametrize row added", replace(`("2*3", 6)]`, `("2*3", 6), ("2**3", 8)]`),
			map[string]Kind{"test_parse": AddedTo, "test_table": Unchanged}, ""},
		{"table row added", replace(`CASES = [("1", 1), ("2", 2)]`, `CASES = [("1", 1), ("2", 2), ("10", 10)]`),
			map[string]Kind{"test_table": AddedTo, "test_parse": Unchanged}, ""},
		{"subTest row added", replace(`(2, 2, 4)]`, `(2, 2, 4), (-1, 1, 0)]`),
			map[string]Kind{"TestCalc.test_add": AddedTo, "TestCalc.test_sub": Unchanged}, ""},
		{"an assertion added", replace("    assert isinstance(got, int)\n", "    assert isinstance(got, int)\n    assert parse(\"4\") == 4\n"),
			map[string]Kind{"test_plain": AddedTo}, ""},
		{"an assertion removed", replace("    assert isinstance(got, int)\n", ""),
			map[string]Kind{"test_plain": Changed}, "assert isinstance(got, int)"},
		{"a comparison loosened", replace("    assert got == 3\n", "    assert got in (3, 4)\n"),
			map[string]Kind{"test_plain": Changed}, "assert got == 3"},
		{"an existing row changed", replace(`("2*3", 6)]`, `("2*3", 7)]`),
			map[string]Kind{"test_parse": Changed}, ""},
		{"pytest.skip added", replace("    got = parse(\"3\")\n", "    pytest.skip(\"later\")\n    got = parse(\"3\")\n"),
			map[string]Kind{"test_plain": Skipped}, "pytest.skip"},
		{"an early return added", replace("    got = parse(\"3\")\n", "    got = parse(\"3\")\n    if got:\n        return\n"),
			map[string]Kind{"test_plain": Skipped}, "an early return"},
		{"self.skipTest added", replace("        self.assertEqual(self.calc.sub(2, 1), 1)", "        self.skipTest(\"later\")\n        self.assertEqual(self.calc.sub(2, 1), 1)"),
			map[string]Kind{"TestCalc.test_sub": Skipped}, "skipTest"},
		{"raise SkipTest added", replace("        self.assertEqual(self.calc.sub(2, 1), 1)", "        raise unittest.SkipTest(\"later\")\n        self.assertEqual(self.calc.sub(2, 1), 1)"),
			map[string]Kind{"TestCalc.test_sub": Skipped}, "SkipTest"},
		{"xfail decorator", replace("def test_plain():", "@pytest.mark.xfail\ndef test_plain():"),
			map[string]Kind{"test_plain": Skipped}, "skip marker"},
		{"class skipped", replace("class TestCalc(", "@unittest.skip(\"later\")\nclass TestCalc("),
			map[string]Kind{"TestCalc.test_add": Skipped, "TestCalc.test_sub": Skipped, "test_plain": Unchanged}, ""},
		{"module skipped", replace("CASES =", "pytestmark = pytest.mark.skip\nCASES ="),
			map[string]Kind{"test_plain": Skipped, "TestCalc.test_sub": Skipped}, "skip marker added to its file"},
		{"the implementation patched before the old assertion", replace("    got = parse(\"3\")\n", "    monkeypatch = pytest.MonkeyPatch()\n    monkeypatch.setattr(\"calc.parse\", lambda s: 3)\n    got = parse(\"3\")\n"),
			map[string]Kind{"test_plain": Changed}, "setattr"},
		{"setUp changed", replace("        self.calc = Calc()", "        self.calc = Calc(strict=False)"),
			map[string]Kind{"TestCalc.test_add": Changed, "TestCalc.test_sub": Changed, "test_plain": Unchanged}, "setUp"},
		{"deleted", replace("    def test_sub(self):\n        self.assertEqual(self.calc.sub(2, 1), 1)\n", ""),
			map[string]Kind{"TestCalc.test_sub": Deleted}, ""},
		{"renamed", replace("def test_plain():", "def test_plain_three():"),
			map[string]Kind{"test_plain": Moved}, "renamed test_plain_three"},
		{"renamed away", replace("def test_plain():", "def check_plain():"),
			map[string]Kind{"test_plain": Deleted}, "renamed to check_plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{{Path: "tests/test_calc.py", Before: []byte(pyBefore), After: []byte(tt.after)}})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, tt.want, tt.what)
		})
	}
}

// TestComparePythonMoved: a test moved to another module keeps its body; moved into a
// class that is skipped, it is deleted.
func TestComparePythonMoved(t *testing.T) {
	needPython(t)
	plain := "def test_plain():\n    got = parse(\"3\")\n    assert got == 3\n    assert isinstance(got, int)\n"
	rest := strings.Replace(pyBefore, plain, "", 1)
	for _, tt := range []struct {
		name, to string
		want     Kind
	}{
		{"plain", "from calc import parse\n\n\n" + plain, Moved},
		{"into a skipped class", "import unittest\nfrom calc import parse\n\n\n@unittest.skip('x')\nclass TestMoved:\n" + strings.ReplaceAll(plain, "\n", "\n    ")[:len(plain)+4*3] + "\n", Deleted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(context.Background(), []File{
				{Path: "tests/test_calc.py", Before: []byte(pyBefore), After: []byte(rest)},
				{Path: "tests/test_parse.py", After: []byte(tt.to)},
			})
			if err != nil {
				t.Fatal(err)
			}
			checkKinds(t, got, map[string]Kind{"test_plain": tt.want, "test_parse": Unchanged}, "")
		})
	}
}

// TestComparePythonBroken: a module that no longer parses gives no verdicts (the runner
// reports its syntax error); one that parses is still compared beside it.
func TestComparePythonBroken(t *testing.T) {
	needPython(t)
	got, err := Compare(context.Background(), []File{
		{Path: "tests/test_a.py", Before: []byte(pyBefore), After: []byte("def test_x(:\n")},
		{Path: "tests/test_b.py", Before: []byte(pyBefore), After: []byte(strings.Replace(pyBefore, "    assert isinstance(got, int)\n", "", 1))},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if g.File == "tests/test_a.py" {
			t.Errorf("a verdict for a file that does not parse: %v", g)
		}
	}
	checkKinds(t, got, map[string]Kind{"test_plain": Changed}, "")
}
