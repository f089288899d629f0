package gate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
)

// manyModule writes a Go module of n packages: base, imported by every other, and p01…;
// p06 and p07 import p05 too. Each package has two tests, and p09 reads testdata/.
func manyModule(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	write := func(rel, text string) {
		tb.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write("go.mod", "module example.com/many\n\ngo 1.22\n")
	write("base/base.go", "package base\n\n// One is one.\nfunc One() int { return 1 }\n")
	write("base/base_test.go", "package base\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal(One())\n\t}\n}\n")
	for i := 1; i < n; i++ {
		name := fmt.Sprintf("p%02d", i)
		imports, uses := `"example.com/many/base"`, "base.One()"
		if i == 6 || i == 7 {
			imports += "\n\t\"example.com/many/p05\""
			uses += " + p05.Value() - p05.Value()"
		}
		write(name+"/"+name+".go", fmt.Sprintf("package %s\n\nimport (\n\t%s\n)\n\n// Value is the package's value.\nfunc Value() int { return %s + %d }\n", name, imports, uses, i))
		test := fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc TestValue(t *testing.T) {\n\tif Value() != %d {\n\t\tt.Fatal(Value())\n\t}\n}\n\nfunc TestOther(t *testing.T) {}\n", name, i+1)
		if i == 9 {
			test = strings.Replace(test, "import \"testing\"", "import (\n\t\"os\"\n\t\"testing\"\n)", 1)
			test += "\nfunc TestData(t *testing.T) {\n\tb, err := os.ReadFile(\"testdata/want.txt\")\n\tif err != nil || string(b) != \"ten\\n\" {\n\t\tt.Fatalf(\"%q %v\", b, err)\n\t}\n}\n"
			write(name+"/testdata/want.txt", "ten\n")
		}
		write(name+"/"+name+"_test.go", test)
	}
	return root
}

// TestImpactSeesDataReadAcrossPackages: a test that reads a data file of another folder
// (../testdata/vat.txt, which the module's root package holds) runs again when that file
// changes, and fails: a candidate that deletes the file is refused, not granted the pass
// sealed when the file was there. A symbolic link out of the checkout leaves no record
// usable: every package runs.
func TestImpactSeesDataReadAcrossPackages(t *testing.T) {
	root := t.TempDir()
	write := writer(t, root)
	write("go.mod", "module example.com/shop\n\ngo 1.22\n")
	write("doc.go", "// Package shop sells things.\npackage shop\n")
	write("shop_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestShop(t *testing.T) {}\n")
	write("testdata/vat.txt", "20\n")
	write("tax/tax.go", "package tax\n\n// Standard is the standard rate.\nconst Standard = 20\n")
	write("tax/rates_test.go", "package tax\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestRatesFile(t *testing.T) {\n\tb, err := os.ReadFile(\"../testdata/vat.txt\")\n\tif err != nil || string(b) != \"20\\n\" {\n\t\tt.Fatalf(\"%q %v\", b, err)\n\t}\n}\n")
	im := newImpact(t)
	if v := impactGreen(t, root, im, nil); !v.Pass {
		t.Fatalf("first GREEN: %s\n%s", v.Reason, v.Log.String())
	}
	baseline := []string{"example.com/shop.TestShop", "example.com/shop/tax.TestRatesFile"}
	os.Remove(filepath.Join(root, "testdata", "vat.txt"))
	write("testdata/vat-2027.txt", "21\n")
	v := impactGreen(t, root, im, baseline)
	if v.Pass || strings.Contains(v.Log.String(), "package example.com/shop/tax, ") {
		t.Fatalf("the data file tax's test reads is gone, and GREEN passed or reused tax's record: %s\n%s", v.Reason, v.Log.String())
	}
	if !strings.Contains(v.Reason, "TestRatesFile") {
		t.Errorf("the refusal does not name the test that fails: %s", v.Reason)
	}
	write("testdata/vat.txt", "20\n")
	os.Symlink("/etc/hostname", filepath.Join(root, "testdata", "host"))
	v = impactGreen(t, root, im, baseline)
	if !v.Pass || !slices.Equal(RanCommands(v.Log.String()), []string{"go test ./..."}) || !strings.Contains(v.Log.String(), "symbolic link out of the checkout") {
		t.Errorf("a link out of the checkout: pass %v, ran %q\n%s", v.Pass, RanCommands(v.Log.String()), v.Log.String())
	}
}

// TestImpactSeesTestsThatBuildOthers: a test that runs another package it does not import
// (`go run ../cmd/shop`, an end-to-end test of a command) runs again when that package's
// Go files change, and fails on the change that breaks it; a package whose tests build
// nothing keeps its record.
func TestImpactSeesTestsThatBuildOthers(t *testing.T) {
	root := t.TempDir()
	write := writer(t, root)
	write("go.mod", "module example.com/shop\n\ngo 1.22\n")
	write("cmd/shop/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"11.99\") }\n")
	write("e2e/cli_test.go", "package e2e\n\nimport (\n\t\"os/exec\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestCLI(t *testing.T) {\n\tout, err := exec.Command(\"go\", \"run\", \"../cmd/shop\").Output()\n\tif err != nil || strings.TrimSpace(string(out)) != \"11.99\" {\n\t\tt.Fatalf(\"%q %v\", out, err)\n\t}\n}\n")
	write("money/money.go", "package money\n\n// One is one.\nfunc One() int { return 1 }\n")
	write("money/money_test.go", "package money\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal()\n\t}\n}\n")
	im := newImpact(t)
	if v := impactGreen(t, root, im, nil); !v.Pass {
		t.Fatalf("first GREEN: %s\n%s", v.Reason, v.Log.String())
	}
	baseline := []string{"example.com/shop/e2e.TestCLI", "example.com/shop/money.TestOne"}
	write("cmd/shop/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"9.99 20\") }\n")
	v := impactGreen(t, root, im, baseline)
	log := v.Log.String()
	if v.Pass || !strings.Contains(v.Reason, "TestCLI") {
		t.Errorf("the command the e2e test runs changed, and GREEN passed or blamed another test: %s\n%s", v.Reason, log)
	}
	if !strings.Contains(log, "package example.com/shop/money, ") {
		t.Errorf("money's tests build nothing, and its record was not reused:\n%s", log)
	}
}

// writer returns a function that writes a file of the folder root, making its folders.
func writer(t *testing.T, root string) func(rel, text string) {
	return func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newImpact returns a store of sealed package results of the test's own, whose records
// name commit c0ffee000001.
func newImpact(t *testing.T) *Impact {
	t.Helper()
	key, err := seal.New()
	if err != nil {
		t.Fatal(err)
	}
	return &Impact{Dir: filepath.Join(t.TempDir(), "impact"), Key: key, Commit: "c0ffee000001"}
}

// impactGreen runs the GREEN gate of the whole suite on root with the records in im.
func impactGreen(tb testing.TB, root string, im *Impact, baseline []string) *Verdict {
	tb.Helper()
	in := Input{
		Root: root, AttemptDir: tb.TempDir(), Task: "TASK-001", Attempt: 1,
		TestCommand: "go test ./...", FullCommand: "go test ./...", Globs: globs,
		Timeout: 5 * time.Minute, Env: PinnedEnv(os.Environ()), Baseline: baseline,
	}
	if im != nil {
		in.Impact, in.Key = im, im.Key
	}
	v, err := Green(context.Background(), in)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// TestImpactRunsWhatTheChangeReaches: on a module of 20 packages, the first GREEN runs
// them all and seals each package's pass; the same tree again runs nothing; a change to
// one package's Go files runs it and its importers; to its testdata/, every package (a
// test of any package may read it); to the leaf all import, all of them. The tests that
// did not run count as passed, by name.
func TestImpactRunsWhatTheChangeReaches(t *testing.T) {
	root := manyModule(t, 20)
	im := newImpact(t)
	edit := func(rel, old, new string) {
		t.Helper()
		p := filepath.Join(root, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s holds no %q", rel, old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
		want   []string // the command that runs; nil: none
		reused int
	}{
		{"first run: everything", func() {}, []string{"go test ./..."}, 0},
		{"same tree: nothing", func() {}, nil, 20},
		{"the orchestrator's queue: nothing", func() {
			os.MkdirAll(filepath.Join(root, ".orchestrator"), 0o755)
			os.WriteFile(filepath.Join(root, ".orchestrator", "task_queue.md"), []byte("| Status | completed |\n"), 0o644)
		}, nil, 20},
		{"another checkout's .git file: nothing", func() {
			os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: /elsewhere/worktrees/gate-2\n"), 0o644)
		}, nil, 20},
		{"one package: it and its importers", func() { edit("p05/p05.go", "+ 5", "+ 2 + 3") },
			[]string{"go test ./p05 ./p06 ./p07"}, 17},
		{"testdata of one package: all (any package's test may read it)", func() { os.WriteFile(filepath.Join(root, "p09/testdata/more.txt"), []byte("x"), 0o644) },
			[]string{"go test ./..."}, 0},
		{"the same again: nothing", func() {}, nil, 20},
		{"the leaf all import: all", func() { edit("base/base.go", "return 1", "return 2 - 1") },
			[]string{"go test ./..."}, 0},
		{"a file of no package: all", func() { os.WriteFile(filepath.Join(root, "notes.txt"), []byte("read by any test\n"), 0o644) },
			[]string{"go test ./..."}, 0},
	}
	for _, st := range steps {
		st.change()
		v := impactGreen(t, root, im, nil)
		log := v.Log.String()
		if !v.Pass {
			t.Fatalf("%s: GREEN failed: %s\n%s", st.name, v.Reason, log)
		}
		if got := RanCommands(log); !slices.Equal(got, st.want) {
			t.Errorf("%s: ran %q, want %q\n%s", st.name, got, st.want, log)
		}
		if got := strings.Count(log, "reused: same inputs as c0ffee000001: package "); got != st.reused {
			t.Errorf("%s: %d packages reused, want %d\n%s", st.name, got, st.reused, log)
		}
		// One run of the whole suite, as far as the baseline and the RED tests can tell.
		if got := len(v.Full.Passed()); got != 1+19*2+1 {
			t.Errorf("%s: %d tests passed, want 40: %v", st.name, got, v.Full.Passed())
		}
		if !slices.Contains(v.Full.Passed(), "example.com/many/p13.TestValue") {
			t.Errorf("%s: p13.TestValue is not among the passed tests", st.name)
		}
	}
}

// TestImpactRefusesEditedRecords: a record edited by hand (a failing package's pass
// planted under its key, or a record copied over another key) is not evidence: its seal
// fails, gate.log says so, and the whole suite runs. The package's failure decides.
func TestImpactRefusesEditedRecords(t *testing.T) {
	root := manyModule(t, 20)
	im := newImpact(t)
	first := impactGreen(t, root, im, nil)
	if !first.Pass {
		t.Fatalf("first GREEN failed: %s\n%s", first.Reason, first.Log.String())
	}
	baseline := first.Full.Passed()
	// Break p13, then forge its record: the pass of its old key copied under the new key,
	// the key inside edited to match.
	old, err := filepath.Glob(filepath.Join(im.Dir, "*.json"))
	if err != nil || len(old) != 20 {
		t.Fatalf("records: %v %v, want 20\n%s", old, err, first.Log.String())
	}
	var p13 string
	for _, f := range old {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), `"package": "example.com/many/p13"`) {
			p13 = f
		}
	}
	os.WriteFile(filepath.Join(root, "p13", "p13.go"), []byte("package p13\n\n// Value is wrong.\nfunc Value() int { return 0 }\n"), 0o644)
	in := Input{Root: root, Env: PinnedEnv(os.Environ()), Impact: im}
	plan, why := in.planImpact(context.Background(), "go test ./...", false)
	if plan == nil || len(plan.run) != 1 {
		t.Fatalf("plan: %v (%s), want p13 to run", plan, why)
	}
	b, _ := os.ReadFile(p13)
	oldKey := strings.TrimSuffix(filepath.Base(p13), ".json")
	forged := strings.Replace(string(b), oldKey, plan.run[0].key, 1)
	forgedPath := filepath.Join(im.Dir, plan.run[0].key+".json")
	if err := os.WriteFile(forgedPath, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	v := impactGreen(t, root, im, baseline)
	log := v.Log.String()
	if v.Pass || v.Type != TypeRegression {
		t.Errorf("GREEN with a forged record: pass %v, type %q (%s); want p13's failure\n%s", v.Pass, v.Type, v.Reason, log)
	}
	if !strings.Contains(log, "its seal does not match its content") || !strings.Contains(log, filepath.Base(forgedPath)) {
		t.Errorf("gate.log does not name the record whose seal failed:\n%s", log)
	}
	if got := RanCommands(log); !slices.Equal(got, []string{"go test ./..."}) {
		t.Errorf("ran %q, want the whole suite\n%s", got, log)
	}
	if strings.Contains(log, "reused:") {
		t.Errorf("a record was reused though one failed its seal:\n%s", log)
	}
	// The honest twin: the record removed, only p13 runs, and it fails.
	os.Remove(forgedPath)
	v = impactGreen(t, root, im, baseline)
	if v.Pass || !slices.Equal(RanCommands(v.Log.String()), []string{"go test ./p13"}) {
		t.Errorf("without the forged record: pass %v, ran %q; want p13 alone, failing\n%s", v.Pass, RanCommands(v.Log.String()), v.Log.String())
	}
	if v.FailingTest != "example.com/many/p13.TestValue" {
		t.Errorf("failing test %q, want example.com/many/p13.TestValue", v.FailingTest)
	}
}

// TestPlainGoTest: which commands the gate may narrow to packages, and how.
func TestPlainGoTest(t *testing.T) {
	for _, tt := range []struct {
		command string
		ok      bool
		flags   string
		only    string
	}{
		{"go test ./...", true, "", "go test ./a ./b"},
		{"go test -race -count=1 -run 'Test.*' ./...", true, "-race", "go test -race -count=1 -run 'Test.*' ./a ./b"},
		{"go test -tags integration ./x/... ./y", true, "-tags=integration", "go test -tags integration ./a ./b"},
		{"go test", true, "", "go test ./a ./b"},
		{"cd app && go test ./...", false, "", ""},
		{"go test ./... && go vet ./...", false, "", ""},
		{"CGO_ENABLED=0 go test ./...", false, "", ""},
		{"go test -coverpkg=./... ./...", false, "", ""},
		{"go test -exec wrapper ./...", false, "", ""},
		{"go test ./... > out.txt", false, "", ""},
		{"go test x_test.go", false, "", ""},
		{"pytest -q", false, "", ""},
	} {
		g, ok := testrun.PlainGoTest(tt.command)
		if ok != tt.ok {
			t.Errorf("%q: plain %v, want %v", tt.command, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if got := strings.Join(g.BuildFlags, " "); got != tt.flags {
			t.Errorf("%q: build flags %q, want %q", tt.command, got, tt.flags)
		}
		if got := g.Only([]string{"b", "a", "a"}); got != tt.only {
			t.Errorf("%q: narrowed to %q, want %q", tt.command, got, tt.only)
		}
	}
}

// TestImpactReusesFailuresThatDecideNothing: a package that fails only by tests owed to
// another TEST task is not run again on the same inputs (a parallel run's GREEN gates
// would otherwise run every other task's RED tests at each gate); a recorded failure that
// would decide anything runs again: once the test is no longer owed, when the package
// holds the task's own RED test, and when the failure was chance's (a flaky test), which
// passes on the run again. VERIFY never reuses a failure.
func TestImpactReusesFailuresThatDecideNothing(t *testing.T) {
	root := manyModule(t, 6)
	flake := filepath.Join(t.TempDir(), "flake")
	add := func(rel, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	add("p03/owed_test.go", "package p03\n\nimport \"testing\"\n\nfunc TestOwed(t *testing.T) { t.Fatal(\"Owed() is another task's\") }\n")
	add("p04/flaky_test.go", fmt.Sprintf("package p04\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestFlaky(t *testing.T) {\n\tif _, err := os.Stat(%q); err == nil {\n\t\tt.Fatal(\"chance\")\n\t}\n}\n", flake))
	key, err := seal.New()
	if err != nil {
		t.Fatal(err)
	}
	im := &Impact{Dir: filepath.Join(t.TempDir(), "impact"), Key: key, Commit: "c0ffee000002"}
	const owedID, flakyID = "example.com/many/p03.TestOwed", "example.com/many/p04.TestFlaky"
	owed := true
	green := func(baseline []string, deps ...*Manifest) *Verdict {
		t.Helper()
		in := Input{
			Root: root, AttemptDir: t.TempDir(), Task: "TASK-002", Attempt: 1,
			TestCommand: "go test ./...", FullCommand: "go test ./...", Globs: globs,
			Timeout: 5 * time.Minute, Env: PinnedEnv(os.Environ()), Baseline: baseline,
			Owed: func(id string) bool { return owed && id == owedID }, Deps: deps,
			Impact: im, Key: key,
		}
		v, err := Green(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(step string, v *Verdict, pass bool, ran []string) {
		t.Helper()
		if v.Pass != pass {
			t.Errorf("%s: pass %v (%s), want %v\n%s", step, v.Pass, v.Reason, pass, v.Log.String())
		}
		if got := RanCommands(v.Log.String()); !slices.Equal(got, ran) {
			t.Errorf("%s: ran %q, want %q\n%s", step, got, ran, v.Log.String())
		}
	}

	first := green(nil)
	check("first run", first, true, []string{"go test ./..."})
	baseline := append(first.Full.Passed(), owedID)

	v := green(baseline)
	check("same tree, the failure owed", v, true, nil)
	if !strings.Contains(v.Log.String(), "package example.com/many/p03 failed: 2 passed, 1 failed") {
		t.Errorf("gate.log does not say p03's failure was reused:\n%s", v.Log.String())
	}
	if !slices.Contains(v.Full.Failed(), owedID) || !slices.Contains(v.Full.Passed(), "example.com/many/p03.TestValue") {
		t.Errorf("the reused failure is not in the run's result: failed %v", v.Full.Failed())
	}

	red := &Manifest{Task: "TASK-T02", FailingTests: []string{owedID}, TestFiles: []string{"p03/owed_test.go"}}
	v = green(baseline, red)
	check("the package holds the task's RED test", v, false, []string{"go test ./p03"})
	if v.FailingTest != owedID {
		t.Errorf("failing test %q, want %s", v.FailingTest, owedID)
	}

	owed = false
	v = green(baseline)
	check("the test no longer owed", v, false, []string{"go test ./p03"})
	if v.Type != TypeRegression || v.FailingTest != owedID {
		t.Errorf("the test no longer owed: type %q, failing %q; want a regression of %s", v.Type, v.FailingTest, owedID)
	}

	// A failure of chance: recorded, and run again at the next gate, where it passes.
	owed = true
	add("p04/p04.go", "package p04\n\nimport (\n\t\"example.com/many/base\"\n)\n\n// Value is the package's value, written again.\nfunc Value() int { return base.One() + 4 }\n")
	if err := os.WriteFile(flake, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v = green(baseline)
	check("a flaky failure", v, false, []string{"go test ./p04"})
	if v.FailingTest != flakyID {
		t.Errorf("failing test %q, want %s\n%s", v.FailingTest, flakyID, v.Log.String())
	}
	os.Remove(flake)
	v = green(baseline)
	check("the flaky test again", v, true, []string{"go test ./p04"})

	// VERIFY runs a recorded failure again, whatever it is owed.
	in := Input{Root: root, AttemptDir: t.TempDir(), Task: "TASK-V01", Attempt: 1, TestCommand: "go test ./...",
		Globs: globs, Timeout: 5 * time.Minute, Env: PinnedEnv(os.Environ()), Impact: im, Key: key,
		Owed: func(string) bool { return true }}
	vv, err := Verify(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	check("VERIFY", vv, false, []string{"go test ./p03"})
}
