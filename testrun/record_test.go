package testrun

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

var record = flag.Bool("record", false, "run the scenarios of testdata/scenarios with the real runners and rewrite testdata/outputs (jest scenarios need TESTRUN_JEST_MODULES, a node_modules folder with jest, ts-jest and typescript)")

// TestRecord re-records testdata/outputs: each scenario of testdata/scenarios is a tiny
// project (a txtar archive whose comment names the runner and the command) that is written
// to a temporary folder and run for real, as Run runs it. The output, the report files, the
// exit code and the runner's version are kept in testdata/outputs/<scenario>.txtar, which
// the parser tests read. It also records go_large.txtar.gz, 1,000 tests in 10 packages, for
// BenchmarkParseGoJSON.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the runners' outputs")
	}
	scenarios, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	versions := map[Runner]string{}
	for _, path := range scenarios {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			meta := parseMeta(string(ar.Comment))
			runner := Runner(meta["runner"])
			dir := t.TempDir()
			for _, f := range ar.Files {
				writeFile(t, filepath.Join(dir, f.Name), f.Data)
			}
			if err := linkNodeModules(runner, dir); err != nil {
				t.Skip(err)
			}
			if _, ok := versions[runner]; !ok {
				versions[runner] = runnerVersion(t, runner, dir)
			}
			out, reports, inv, code := recordRun(t, dir, meta["command"])
			if Detect(meta["command"]) != runner {
				t.Fatalf("Detect(%q) = %s, want %s", meta["command"], Detect(meta["command"]), runner)
			}
			comment := fmt.Sprintf("runner: %s\ncommand: %s\nran: %s\nroot: %s\nexit: %d\nversion: %s\n%s",
				runner, meta["command"], inv.command, dir, code, versions[runner], meta[""])
			rec := &txtar.Archive{Comment: []byte(comment)}
			rec.Files = append(rec.Files, txtar.File{Name: "output", Data: out})
			for i, r := range reports {
				rec.Files = append(rec.Files, txtar.File{Name: fmt.Sprintf("report-%d", i+1), Data: r})
			}
			writeFile(t, filepath.Join("testdata", "outputs", name+".txtar"), txtar.Format(rec))
		})
	}
	t.Run("go_large", func(t *testing.T) {
		dir := t.TempDir()
		writeLargeGoProject(t, dir, 10, 100)
		out, _, inv, code := recordRun(t, dir, "go test ./...")
		comment := fmt.Sprintf("runner: go\ncommand: go test ./...\nran: %s\nroot: %s\nexit: %d\nversion: %s\n1,000 tests in 10 packages, 30 of them failing, each with output.\n",
			inv.command, dir, code, runnerVersion(t, Go, dir))
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(txtar.Format(&txtar.Archive{Comment: []byte(comment), Files: []txtar.File{{Name: "output", Data: out}}}))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join("testdata", "outputs", "go_large.txtar.gz"), gz.Bytes())
	})
}

// recordRun runs a command as Run does and returns its raw output and report files.
func recordRun(t *testing.T, dir, command string) ([]byte, [][]byte, invocation, int) {
	t.Helper()
	var out bytes.Buffer
	inv, code, timedOut, reports, _, err := run(context.Background(), dir, command, Detect(command), 5*time.Minute, options{},
		func(invocation) io.Writer { return &out })
	if err != nil || timedOut {
		t.Fatalf("%s: %v (timed out: %v)", command, err, timedOut)
	}
	return out.Bytes(), reports, inv, code
}

// parseMeta reads "key: value" lines; other lines are kept under "".
func parseMeta(comment string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(comment, "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if ok && !strings.Contains(k, " ") {
			m[k] = v
			continue
		}
		if l != "" {
			m[""] += l + "\n"
		}
	}
	return m
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// linkNodeModules gives a JavaScript project the node_modules it runs with: the ts fixture's
// for vitest, $TESTRUN_JEST_MODULES for jest.
func linkNodeModules(r Runner, dir string) error {
	var from string
	switch r {
	case Vitest:
		abs, err := filepath.Abs("testdata/projects/ts/node_modules")
		if err != nil {
			return err
		}
		from = abs
	case Jest:
		from = os.Getenv("TESTRUN_JEST_MODULES")
		if from == "" {
			return fmt.Errorf("TESTRUN_JEST_MODULES is not set")
		}
	default:
		return nil
	}
	if _, err := os.Stat(from); err != nil {
		return err
	}
	return os.Symlink(from, filepath.Join(dir, "node_modules"))
}

// runnerVersion asks a runner for its version.
func runnerVersion(t *testing.T, r Runner, dir string) string {
	t.Helper()
	var args []string
	switch r {
	case Go:
		args = []string{"go", "version"}
	case Pytest:
		args = []string{"/usr/bin/python3", "-m", "pytest", "--version"}
	case Vitest:
		args = []string{"npx", "vitest", "--version"}
	case Jest:
		args = []string{"npx", "jest", "--version"}
	case Cargo:
		args = []string{"cargo", "--version"}
	default:
		return ""
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// npm warns about its own configuration on stderr: keep the last line.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	v := strings.TrimSpace(lines[len(lines)-1])
	if r == Jest {
		v = "jest " + v
	}
	return v
}

// writeLargeGoProject writes a module of pkgs packages with tests tests each; every 33rd
// test fails, and every test logs a line.
func writeLargeGoProject(t testing.TB, dir string, pkgs, tests int) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "go.mod"), []byte("module example.com/large\n\ngo 1.22\n"))
	n := 0
	for p := range pkgs {
		var b strings.Builder
		fmt.Fprintf(&b, "package p%02d\n\nimport \"testing\"\n", p)
		for i := range tests {
			n++
			fmt.Fprintf(&b, "\nfunc TestCase%03d(t *testing.T) {\n\tt.Logf(\"case %%d\", %d)\n", i, n)
			if n%33 == 0 {
				fmt.Fprintf(&b, "\tt.Errorf(\"case %d: got %%d, want %%d\", 1, 2)\n", n)
			}
			b.WriteString("}\n")
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("p%02d", p), "p_test.go"), []byte(b.String()))
	}
}
