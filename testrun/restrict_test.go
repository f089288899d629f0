package testrun

import "testing"

func TestRestrict(t *testing.T) {
	tests := []struct {
		name    string
		command string
		files   []string
		want    string
		ok      bool
	}{
		{"go: packages of the test files", "go test ./...", []string{"calc/mul_test.go", "pkg/b/b_test.go", "calc/x_test.go"}, "go test ./calc ./pkg/b", true},
		{"go: flags kept", "go test -count=1 -run X -v ./... -args -flag", []string{"calc/mul_test.go"}, "go test -count=1 -run X -v ./calc -args -flag", true},
		{"go: no package argument", "go test -race", []string{"a_test.go"}, "go test -race .", true},
		{"go: several packages replaced", "go test ./a ./b -short", []string{"c/c_test.go"}, "go test ./c -short", true},
		{"go: cd honoured", "cd app && go test ./...", []string{"app/calc/m_test.go", "other/o_test.go"}, "cd app && go test ./calc", true},
		{"go: support files are not packages", "go test ./...", []string{"calc/testdata/in.txt"}, "go test ./...", false},
		{"pytest: files", "pytest -q", []string{"tests/test_x.py", "tests/conftest.py"}, "pytest -q tests/test_x.py", true},
		{"pytest: path replaced, value flags kept", "/usr/bin/python3 -m pytest -q -k fast tests", []string{"tests/test_mul.py"}, "/usr/bin/python3 -m pytest -q -k fast tests/test_mul.py", true},
		{"vitest", "npx vitest run", []string{"src/mul.test.ts", "src/fixture.json"}, "npx vitest run src/mul.test.ts", true},
		{"vitest: filter replaced", "npx vitest run src --reporter dot", []string{"src/a.spec.tsx"}, "npx vitest run src/a.spec.tsx --reporter dot", true},
		{"jest: path patterns escaped", "npx jest", []string{"src/a.test.js"}, `npx jest 'src\/a\.test\.js'`, true},
		{"cargo: integration tests", "cargo test -q", []string{"tests/mul.rs"}, "cargo test -q --test mul", true},
		{"cargo: before --", "cargo test -- --nocapture", []string{"tests/mul.rs"}, "cargo test --test mul -- --nocapture", true},
		{"two runners: the one without files runs nothing", "go test ./... && pytest", []string{"tests/test_x.py"}, "true && pytest tests/test_x.py", true},
		{"redirection kept", "go test ./... 2>&1", []string{"a/a_test.go"}, "go test ./a 2>&1", true},
		{"unknown runner", "make test", []string{"calc/mul_test.go"}, "make test", false},
		{"no files", "go test ./...", nil, "go test ./...", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Restrict(tt.command, tt.files)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Restrict(%q, %v) = %q, %v; want %q, %v", tt.command, tt.files, got, ok, tt.want, tt.ok)
			}
		})
	}
}
