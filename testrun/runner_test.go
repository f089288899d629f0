package testrun

import (
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		command string
		want    Runner
	}{
		{"go test ./...", Go},
		{"go test -race -count=1 ./pkg/...", Go},
		{"CGO_ENABLED=0 go test ./...", Go},
		{"cd app && go test ./...", Go},
		{"go vet ./... && go test ./...", Go},
		{"/usr/local/go/bin/go test ./...", Go},
		{"go build ./...", Exit},
		{"echo go test", Exit},
		{"pytest -q tests/", Pytest},
		{"pytest", Pytest},
		{"py.test tests", Pytest},
		{"python3 -m pytest", Pytest},
		{"python -m pytest -x", Pytest},
		{"/usr/bin/python3 -m pytest", Pytest},
		{"uv run pytest", Pytest},
		{"poetry run pytest -q", Pytest},
		{"python3 -m unittest", Exit},
		{"npx vitest run", Vitest},
		{"npx vitest", Vitest},
		{"pnpm exec vitest run", Vitest},
		{"yarn vitest run", Vitest},
		{"./node_modules/.bin/vitest run", Vitest},
		{"npx jest", Jest},
		{"npx --yes jest --ci", Jest},
		{"jest", Jest},
		{"npm test", Exit},
		{"npm run test", Exit},
		{"cargo test", Cargo},
		{"cargo +nightly test --all", Cargo},
		{"cargo build", Exit},
		{"make test", Exit},
		{"", Exit},
		{"'go' 'test' ./...", Go},
		{"time go test ./... 2>&1", Go},
		{"env GOFLAGS=-mod=mod go test ./...", Go},
		{"if true; then pytest; fi", Pytest},
	} {
		if got := Detect(tt.command); got != tt.want {
			t.Errorf("Detect(%q) = %s, want %s", tt.command, got, tt.want)
		}
	}
}

func TestInstrument(t *testing.T) {
	for _, tt := range []struct {
		command string
		want    string
	}{
		{"go test ./...", "go test -json ./..."},
		{"go test -json ./...", "go test -json ./..."},
		{"go test ./... -args -x", "go test -json ./... -args -x"},
		{"cd app && go test ./a && go test ./b", "cd app && go test -json ./a && go test -json ./b"},
		{"go test ./... 2>&1 | tee out", "go test -json ./... 2>&1 | tee out"},
		{"pytest -q tests/", "pytest -p orchestrator_report -rA --continue-on-collection-errors -q tests/"},
		{"/usr/bin/python3 -m pytest", "/usr/bin/python3 -m pytest -p orchestrator_report -rA --continue-on-collection-errors"},
		{"npx vitest run", "npx vitest run --reporter=default --reporter=json '--outputFile.json=TMP/vitest-1.json'"},
		{"npx vitest --reporter=verbose", "npx vitest --reporter=json '--outputFile.json=TMP/vitest-1.json' --reporter=verbose"},
		{"npx jest src", "npx jest --json '--outputFile=TMP/jest-1.json' src"},
		{"cargo test", "cargo test --no-fail-fast"},
		{"cargo test --no-fail-fast", "cargo test --no-fail-fast"},
		{"cargo test -q", "cargo test --no-fail-fast -q -- --format=pretty"},
		{"cargo test -- -q", "cargo test --no-fail-fast -- --format=pretty -q"},
		{"cargo test -- --exact a", "cargo test --no-fail-fast -- --exact a"},
		{"make test", "make test"},
	} {
		inv := instrument(tt.command, Detect(tt.command), "/tmp/x y", nil)
		got := strings.ReplaceAll(inv.command, "/tmp/x y", "TMP")
		if got != tt.want {
			t.Errorf("instrument(%q):\n got %q\nwant %q", tt.command, got, tt.want)
		}
	}
	if inv := instrument("go test -v ./...", Go, "/tmp", nil); !inv.verbose {
		t.Error("go test -v: not verbose")
	}
	inv := instrument("pytest a; pytest b", Pytest, "/t", nil)
	if !inv.stream || inv.sessions != 2 || strings.Count(inv.command, "-p orchestrator_report") != 2 {
		t.Errorf("two pytest runs: %q, stream %v, %d sessions", inv.command, inv.stream, inv.sessions)
	}
	plugins := &pytestSetup{module: "rep", plugins: func(site) []string { return []string{"timeout", "x dist"} }}
	if inv := instrument("pytest -q", Pytest, "/t", plugins); inv.command != "pytest -p rep -p timeout -p 'x dist' -rA --continue-on-collection-errors -q" {
		t.Errorf("configured plugins: %q", inv.command)
	}
}

func TestLex(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{`a "b c" 'd e' f\ g`, []string{"a", "b c", "d e", "f g"}},
		{`a&&b||c;d|e`, []string{"a", "&&", "b", "||", "c", ";", "d", "|", "e"}},
		{"a 2>&1 >out b", []string{"a", "2>&", "1", ">", "out", "b"}},
		{`a "x\"y" # comment`, []string{"a", `x"y`}},
		{"a \\\nb", []string{"a", "b"}},
		{"a\\\nb", []string{"ab"}},
		{`"unterminated`, []string{"unterminated"}},
		{`'unterminated`, []string{"unterminated"}},
	} {
		var got []string
		for _, w := range lex(tt.line) {
			got = append(got, w.text)
		}
		if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
			t.Errorf("lex(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"./pkg/a":    "./pkg/a",
		"":           "''",
		"a b":        "'a b'",
		"it's":       `'it'\''s'`,
		"^(A|B)$":    "'^(A|B)$'",
		"x[1-2]":     "'x[1-2]'",
		"--x=a/b:c":  "--x=a/b:c",
		"$HOME":      "'$HOME'",
		"tests::foo": "tests::foo",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// FuzzDetect checks that no command line makes the lexer, Detect or instrument panic, and
// that instrument only adds to a line.
func FuzzDetect(f *testing.F) {
	for _, s := range []string{"go test ./...", "cd a && npx vitest run 2>&1 | tee x", "cargo test -q -- --exact a", `pytest "a b" 'c`, "a 2>&1 >"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r := Detect(line)
		inv := instrument(line, r, "/tmp", nil)
		if len(inv.command) < len(line) {
			t.Fatalf("instrument(%q) = %q is shorter", line, inv.command)
		}
		_ = RegressionCommandFor("", line, []string{"a.TestX", "x > y"})
	})
}
