package testrun

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestOriginRecorded reads where the failures of real runs were raised: in the test's own
// code (a broken test at RED), in the code under test, or nowhere (an assertion).
func TestOriginRecorded(t *testing.T) {
	for _, tt := range []struct {
		recording, test string
		want            string // file:line kind, or "" for nothing raised
	}{
		{"go_panic", "example.com/calc.TestPanic", "calc_test.go:14 panic"},
		{"go_panic_impl", "example.com/calc.TestMul", "calc.go:4 panic"},
		{"go_fail", "example.com/calc.TestNegative", ""},
		{"py_raise_test", "tests/test_calc.py::test_raised_in_test", "tests/test_calc.py:5 KeyError"},
		{"py_raise_test", "tests/test_calc.py::test_raised_in_code", "calc.py:9 JSONDecodeError"},
		{"py_raise_test", "tests/test_calc.py::test_assertion", ""},
		{"py_fail", "tests/test_calc.py::test_negative", ""},
		{"py_fail", "tests/test_calc.py::test_uses_fixture", "tests/test_calc.py:8 RuntimeError"},
	} {
		t.Run(tt.recording+"/"+tt.test, func(t *testing.T) {
			rec := loadRecording(t, filepath.Join("testdata", "outputs", tt.recording+".txtar"))
			res := rec.parse()
			var test *Test
			for i := range res.Tests {
				if res.Tests[i].ID == tt.test {
					test = &res.Tests[i]
				}
			}
			if test == nil {
				t.Fatalf("no test %s in %q", tt.test, res.Failed())
			}
			got := ""
			if file, line, kind, ok := Origin(rec.runner, *test, rec.root); ok {
				got = fmt.Sprintf("%s:%d %s", file, line, kind)
			}
			if got != tt.want {
				t.Errorf("Origin = %q, want %q\n%s", got, tt.want, test.Output)
			}
		})
	}
}
