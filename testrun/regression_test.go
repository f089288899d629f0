package testrun

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSplitGoID(t *testing.T) {
	for _, tt := range []struct {
		id, module, pkg, name string
	}{
		{"example.com/calc.TestAdd", "", "example.com/calc", "TestAdd"},
		{"example.com/calc.TestAdd/sub.case/x", "", "example.com/calc", "TestAdd/sub.case/x"},
		{"gopkg.in/yaml.v3.TestDecode", "", "gopkg.in/yaml.v3", "TestDecode"},
		{"calc.TestAdd", "", "calc", "TestAdd"},
		{"example.com/calc.ExampleAdd", "", "example.com/calc", "ExampleAdd"},
		{"example.com/calc.FuzzAdd/seed#0", "", "example.com/calc", "FuzzAdd/seed#0"},
		// An import path that itself looks like a test ID: the module settles it.
		{"ex.com/a.TestLike/p.TestX", "ex.com/a.TestLike", "ex.com/a.TestLike/p", "TestX"},
		{"ex.com/a.TestLike/p.TestX", "", "ex.com/a", "TestLike/p.TestX"},
	} {
		pkg, name, ok := SplitGoID(tt.id, tt.module)
		if !ok || pkg != tt.pkg || name != tt.name {
			t.Errorf("SplitGoID(%q) = %q, %q, %v; want %q, %q", tt.id, pkg, name, ok, tt.pkg, tt.name)
		}
	}
	if _, _, ok := SplitGoID("no test here", ""); ok {
		t.Error("SplitGoID of a non-ID: ok")
	}
}

func TestGoRunPattern(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{[]string{"TestA"}, "^TestA$"},
		{[]string{"TestB", "TestA"}, "^(TestA|TestB)$"},
		// A subtest of a named test is covered by it.
		{[]string{"TestA", "TestA/x", "TestA/x/y"}, "^TestA$"},
		// Subtests of a test that failed run alone, with their parents.
		{[]string{"TestA", "TestT/x", "TestT/y.z"}, `^TestA$|^TestT$/^(x|y\.z)$`},
		{[]string{"TestT/x/deep", "TestU/(a)"}, `^TestT$/^x$/^deep$|^TestU$/^\(a\)$`},
	} {
		if got := GoRunPattern(tt.names); got != tt.want {
			t.Errorf("GoRunPattern(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// TestGoRunPatternSelects checks, with the testing package's own matching rules (split at
// top-level | into alternatives, and at / into levels), that a pattern selects exactly the
// tests named and the subtests of those named whole.
func TestGoRunPatternSelects(t *testing.T) {
	names := []string{"TestA", "TestT/x", "TestT/y"}
	pat := GoRunPattern(names)
	for name, want := range map[string]bool{
		"TestA": true, "TestA/anything": true, "TestT": true, "TestT/x": true, "TestT/y": true,
		"TestT/z": false, "TestB": false, "TestAB": false, "TestT/x/deeper": true,
	} {
		if got := goRunMatches(pat, name); got != want {
			t.Errorf("pattern %q on %s = %v, want %v", pat, name, got, want)
		}
	}
}

// goRunMatches applies a -run pattern as the testing package does (testing/match.go).
func goRunMatches(pattern, name string) bool {
	elems := strings.Split(name, "/")
	for _, alt := range splitTop(pattern, '|') {
		levels := splitTop(alt, '/')
		ok := true
		for i, e := range elems {
			if i >= len(levels) {
				break
			}
			if !regexp.MustCompile(levels[i]).MatchString(e) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// splitTop splits s at sep outside brackets and parentheses, as testing's splitRegexp.
func splitTop(s string, sep byte) []string {
	var out []string
	cs, cp, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			cs++
		case ']':
			if cs > 0 {
				cs--
			}
		case '(':
			if cs == 0 {
				cp++
			}
		case ')':
			if cs == 0 {
				cp--
			}
		case '\\':
			i++
		case sep:
			if cs == 0 && cp == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func TestRegressionCommand(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), []byte("// the module\nmodule example.com/m // here\n\ngo 1.22\n"))
	for _, tt := range []struct {
		r    Runner
		ids  []string
		want string
	}{
		{Go, []string{"example.com/m.TestA"}, "go test . -run '^TestA$'"},
		{Go, []string{"example.com/m/pkg/b.TestB", "example.com/m/pkg/a.TestA2", "example.com/m/pkg/a.TestA1", "other.org/x.TestX"},
			"f=0; go test ./pkg/a -run '^(TestA1|TestA2)$' || f=1; go test ./pkg/b -run '^TestB$' || f=1; go test other.org/x -run '^TestX$' || f=1; [ $f = 0 ]"},
		{Pytest, []string{"tests/test_x.py::test_a", "tests/test_x.py::test_p[a b]"}, "pytest -q tests/test_x.py::test_a 'tests/test_x.py::test_p[a b]'"},
		{Vitest, []string{"src/a.test.ts > add > adds (1+1)", "src/b.test.ts > top"}, `npx vitest run src/a.test.ts src/b.test.ts -t '^(add adds \(1\+1\)|top)$'`},
		{Jest, []string{"a.test.js > it's"}, `npx jest 'a\.test\.js' -t '^it'\''s$'`},
		{Cargo, []string{"tests::adds", "src/lib.rs - add (line 3)"}, "cargo test -- --exact tests::adds 'src/lib.rs - add (line 3)'"},
		{Exit, []string{"x"}, ""},
		{Go, nil, ""},
	} {
		if got := RegressionCommand(root, tt.r, tt.ids); got != tt.want {
			t.Errorf("RegressionCommand(%s, %q):\n got %s\nwant %s", tt.r, tt.ids, got, tt.want)
		}
	}
}

func TestRegressionCommandFor(t *testing.T) {
	for _, tt := range []struct {
		command string
		ids     []string
		want    string
	}{
		{"/usr/bin/python3 -m pytest tests/", []string{"tests/t.py::a"}, "/usr/bin/python3 -m pytest -q tests/t.py::a"},
		{"pytest -q", []string{"t.py::a"}, "pytest -q t.py::a"},
		{"npx vitest", []string{"a.test.ts > x"}, "npx vitest run a.test.ts -t '^x$'"},
		{"cd web && npx vitest run --coverage", []string{"a.test.ts > x"}, "cd web && npx vitest run a.test.ts -t '^x$'"},
		{"CGO_ENABLED=0 go test -race ./...", []string{"m.TestA"}, "CGO_ENABLED=0 go test m -run '^TestA$'"},
		{"cd sub && go test ./...", []string{"m/a.TestA", "m/b.TestB"}, "cd sub && { f=0; go test m/a -run '^TestA$' || f=1; go test m/b -run '^TestB$' || f=1; [ $f = 0 ]; }"},
		{"make test", []string{"x"}, "make test"},
		{"cargo test", nil, ""},
	} {
		if got := RegressionCommandFor(t.TempDir(), tt.command, tt.ids); got != tt.want {
			t.Errorf("RegressionCommandFor(%q):\n got %s\nwant %s", tt.command, got, tt.want)
		}
	}
}

// largeGoBaseline returns the IDs of 1,000 Go tests in 10 packages, some with subtests.
func largeGoBaseline() []string {
	var ids []string
	for p := range 10 {
		for i := range 100 {
			id := fmt.Sprintf("example.com/large/p%02d.TestCase%03d", p, i)
			if i%10 == 0 {
				// A failed parent: only its passing subtests are in the baseline.
				ids = append(ids, id+"/case_one", id+"/case_two")
				continue
			}
			ids = append(ids, id)
		}
	}
	return ids
}

func TestRegressionCommandLarge(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), []byte("module example.com/large\n"))
	cmd := RegressionCommand(root, Go, largeGoBaseline())
	if n := strings.Count(cmd, "go test "); n != 10 {
		t.Errorf("%d go test invocations, want 10", n)
	}
	if !strings.Contains(cmd, "go test ./p07 -run '^(TestCase001|") {
		t.Errorf("command: %.300s", cmd)
	}
}

// BenchmarkRegressionCommand builds the regression command of a baseline of 1,000 Go tests
// in 10 packages (ten go test invocations). Compare: go test ./testrun -run '^$' -bench
// RegressionCommand -benchmem.
func BenchmarkRegressionCommand(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/large\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ids := largeGoBaseline()
	b.ReportAllocs()
	for b.Loop() {
		if cmd := RegressionCommand(root, Go, ids); strings.Count(cmd, "go test ") != 10 {
			b.Fatal("not 10 invocations")
		}
	}
}
