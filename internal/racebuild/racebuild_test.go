package racebuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A race-built program's race is found through LogTo and Reports whatever the program's
// exit code or output; its twin without the race reports nothing.
func TestReportsFindARace(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"racy": "n++",
		"calm": "mu.Lock(); n++; mu.Unlock()",
	} {
		src := filepath.Join(dir, name+".go")
		prog := "package main\n\nimport \"sync\"\n\nfunc main() {\n\tvar mu sync.Mutex\n\tvar wg sync.WaitGroup\n\tn := 0\n" +
			"\tfor range 2 {\n\t\twg.Add(1)\n\t\tgo func() { defer wg.Done(); " + body + " }()\n\t}\n\twg.Wait()\n\t_ = &mu\n\tprintln(n)\n}\n"
		if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("go", "build", "-race", "-o", filepath.Join(dir, name), src).CombinedOutput(); err != nil {
			t.Fatalf("go build -race: %v\n%s", err, out)
		}
	}
	t.Setenv("GORACE", "")
	for _, c := range []struct {
		prog  string
		races bool
	}{{"calm", false}, {"racy", true}} {
		logs := t.TempDir()
		LogTo(logs)
		_ = exec.Command(filepath.Join(dir, c.prog)).Run() // exit 66 after a race: Reports tells
		got, err := Reports(logs)
		if err != nil {
			t.Fatal(err)
		}
		if (len(got) > 0) != c.races || (c.races && !strings.Contains(got[0], "DATA RACE")) {
			t.Errorf("%s: reports %q, want races: %v", c.prog, got, c.races)
		}
		if Failed(logs) != c.races {
			t.Errorf("%s: Failed = %v, want %v", c.prog, !c.races, c.races)
		}
	}
}

// The flags follow the test binary: -race exactly when it has the race detector.
func TestFlagsFollowTheBinary(t *testing.T) {
	if got := strings.Join(Flags(), " "); (got == "-race") != Enabled || (got != "" && got != "-race") {
		t.Errorf("Flags() = %q with Enabled %v", got, Enabled)
	}
}
