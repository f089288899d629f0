package gate

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/sandbox"
	"github.com/orchestrator/orchestrator/testrun"
)

// TestCacheOutOfReach: the gate's Go build cache, shared by every gate run, is written by
// the go command and by nothing the candidate's code runs (SPEC §7.6). A test that writes
// into the cache through GOCACHE, and beside it, passes, and neither file is there after,
// while the go command's own entries are (the cache stays warm for the next gate). A command
// the gate does not know as go test (a script, pytest) cannot write it either: its GOCACHE
// is a private one.
func TestCacheOutOfReach(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	// The gate's shared cache, warm as the loop has it; the files a cheat would write are
	// named for this run.
	cache := CacheDir()
	mark := fmt.Sprintf("poison-%d", time.Now().UnixNano())
	start := time.Now().Add(-time.Second)
	j, err := NewJail(JailSpec{Env: PinnedEnv(os.Environ()), Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if j.testExec == "" {
		t.Fatalf("a sandbox does not nest here: %v", j.noNest)
	}
	root := t.TempDir()
	for rel, text := range map[string]string{
		"go.mod": "module example.com/c\n\ngo 1.22\n",
		"p/p.go": "package p\n\n// One is one.\nfunc One() int { return 1 }\n",
		"p/p_test.go": "package p\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n)\n\n" +
			"func TestOne(t *testing.T) {\n\tc := os.Getenv(\"GOCACHE\")\n" +
			"\tos.MkdirAll(c, 0o755)\n\tos.WriteFile(filepath.Join(c, \"" + mark + "\"), []byte(\"x\"), 0o644)\n" +
			"\tos.WriteFile(filepath.Join(filepath.Dir(c), \"" + mark + "\"), []byte(\"x\"), 0o644)\n" +
			"\tif One() != 1 {\n\t\tt.Fatal(\"One\")\n\t}\n}\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := Input{Root: root, Checkout: root, Jail: j}
	ctx := context.Background()
	res, err := testrun.Run(ctx, root, "go test ./...", 2*time.Minute, in.runOptions("go test ./...")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Passed(); len(got) != 1 {
		t.Fatalf("passed %v, want TestOne:\n%s", got, res.Output)
	}
	script := "mkdir -p " + filepath.Join(cache, "go-build") + " && echo x > " + filepath.Join(cache, "go-build", mark+"-script") + " && echo GOCACHE=$GOCACHE"
	out, err := testrun.Run(ctx, root, script, time.Minute, in.runOptions(script)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Output, "GOCACHE=/tmp/go-build") {
		t.Errorf("a script's GOCACHE is not private:\n%s", out.Output)
	}
	for _, f := range []string{"go-build/" + mark, mark, "go-build/" + mark + "-script"} {
		if _, err := os.Stat(filepath.Join(cache, f)); err == nil {
			t.Errorf("candidate code wrote %s in the gate's cache", f)
		}
	}
	// The go command's own build of p, in a folder no run had before, is in the cache.
	fresh := 0
	filepath.WalkDir(filepath.Join(cache, "go-build"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.ModTime().After(start) {
				fresh++
			}
		}
		return nil
	})
	if fresh == 0 {
		t.Errorf("the go command's own builds are not in the cache")
	}
	if d := j.Describe(root); !strings.Contains(d, "test binaries run where they are an empty folder") {
		t.Errorf("Describe does not say how the caches are kept: %s", d)
	}
}

// TestJailGoTelemetryOff: a go command in the gate's sandbox, whose home folder is empty,
// reads Go's telemetry setting "off" and starts no telemetry process of its own; the
// setting is read-only there and lies outside the folder the sandbox may write, so that no
// earlier run can put a link in its place.
func TestJailGoTelemetryOff(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	cache := filepath.Join(t.TempDir(), "gate")
	j, err := NewJail(JailSpec{Env: PinnedEnv(os.Environ()), Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.profile.Over) != 1 || strings.HasPrefix(j.profile.Over[0][0], cache+string(filepath.Separator)) {
		t.Fatalf("the telemetry setting is bound from %v, want one file outside %s", j.profile.Over, cache)
	}
	root := t.TempDir()
	in := Input{Root: root, Checkout: root, Jail: j}
	script := `go env GOTELEMETRY; ls "$HOME/.config/go/telemetry"; echo local > "$HOME/.config/go/telemetry/mode" && echo written`
	out, err := testrun.Run(context.Background(), root, script, time.Minute, in.runOptions(script)...)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Fields(out.Output); len(lines) < 2 || lines[0] != "off" || lines[1] != "mode" {
		t.Errorf("in the sandbox, go env GOTELEMETRY and the telemetry folder say:\n%s\nwant off, and only the setting (no local counters)", out.Output)
	}
	if strings.Contains(out.Output, "written") {
		t.Errorf("the sandbox could write the telemetry setting:\n%s", out.Output)
	}

	// A home folder the sandbox does not hide (a system folder: /proc here, where nothing
	// can be written, not even by go env's telemetry) is the host's, read-only: nothing is
	// put there, and the jail's commands run; so do they with a home that did not exist
	// (go env, run by NewJail, makes it for its telemetry, and the jail hides it).
	for _, home := range []string{"/proc", filepath.Join(root, "no-such-home")} {
		env := append(PinnedEnv(os.Environ()), "HOME="+home)
		j, err := NewJail(JailSpec{Env: env, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if home == "/proc" && len(j.profile.Over) != 0 {
			t.Errorf("HOME=/proc: the jail binds %v", j.profile.Over)
		}
		in := Input{Root: root, Checkout: root, Jail: j}
		out, err := testrun.Run(context.Background(), root, "echo ran", time.Minute, in.runOptions("echo ran")...)
		if err != nil || !strings.Contains(out.Output, "ran") {
			t.Errorf("HOME=%s: a command in the jail: %v\n%s", home, err, out.Output)
		}
	}
}

// TestTestExecQuotes: the -exec program names a caches' folder whose path holds what the
// shell would read (a dollar sign, quotes, a space) as the folder itself.
func TestTestExecQuotes(t *testing.T) {
	cache := filepath.Join(t.TempDir(), `it's $HOME "x"`)
	exe, err := testExec(cache)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	// The script's line, run by the shell with echo in place of bwrap, gives the path back.
	line := strings.Replace(strings.TrimSpace(string(b)[strings.LastIndex(string(b), "exec bwrap"):]), `exec bwrap --dev-bind / / --tmpfs`, "printf %s", 1)
	line = strings.TrimSuffix(line, ` --die-with-parent -- "$@"`)
	out, err := exec.Command("/bin/sh", "-c", line).Output()
	if err != nil || string(out) != cache {
		t.Errorf("the shell reads the folder as %q (%v), want %q", out, err, cache)
	}
}

// TestJailCanaryKeptInItsCache: in the sandbox, every gate run plants the canary kept in
// the gate's cache folder, the same for every jail (every orchestrator) of that folder,
// so that Go's build cache keeps the compiled test packages of the packages a candidate
// did not change, from one run to the next; a jail of another cache folder draws its
// own; a kept canary a day old, or a file that holds no canary, is replaced. Without a
// sandbox, where an agent could read a previous run's gate.log, every run draws one.
func TestJailCanaryKeptInItsCache(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	cache := CacheDir()
	newJail := func(cache string) *Jail {
		j, err := NewJail(JailSpec{Env: PinnedEnv(os.Environ()), Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	root := copyFixture(t, filepath.Join("testdata", "go", "base"))
	token := func(j *Jail) string {
		in := Input{Root: root, Checkout: root, AttemptDir: t.TempDir(), Task: "TASK-C01", Attempt: 1,
			TestCommand: "go test ./...", Timeout: 5 * time.Minute, Jail: j}
		v, err := Verify(context.Background(), in)
		if err != nil || !v.Pass {
			t.Fatalf("VERIFY: %v %s\n%s", err, v.Reason, v.Log.String())
		}
		for _, line := range strings.Split(v.Log.String(), "\n") {
			if tok, ok := strings.CutPrefix(line, "canary "); ok && strings.Contains(tok, ": planted ") {
				return strings.SplitN(tok, ":", 2)[0]
			}
		}
		t.Fatalf("no canary planted:\n%s", v.Log.String())
		return ""
	}
	j := newJail(cache)
	first, second := token(j), token(j)
	if first != second {
		t.Errorf("one jail planted %s, then %s", first, second)
	}
	if next := token(newJail(cache)); next != first {
		t.Errorf("the next jail of the same cache planted %s, want the kept %s", next, first)
	}
	other := t.TempDir()
	if c := jailCanary(other, time.Now()); c.Token == first || !c.WellFormed() {
		t.Errorf("another cache folder's canary is %+v, want one of its own", c)
	}
	if a, b := token(nil), token(nil); a == b || a == first {
		t.Errorf("runs without a sandbox planted %s and %s (the jail's: %s)", a, b, first)
	}

	if kept := jailCanary(cache, time.Now()); kept.Token != first {
		t.Fatalf("the kept canary is %s, want %s", kept.Token, first)
	}
	// The rest on the other folder's file: the shared cache's stays as other runs keep it.
	kept := jailCanary(other, time.Now())
	aged := jailCanary(other, time.Now().Add(canaryLife+time.Minute))
	if aged == kept || !aged.WellFormed() {
		t.Errorf("a day later: %+v, want a new canary", aged)
	}
	for _, bad := range []string{`{"token":"brol","message":"x","drawn":"2026-01-01T00:00:00Z"}`,
		`{"token":"Brolvatun","message":"Brolvatun(7) = 60, want 400"}`, "not json"} {
		if err := os.WriteFile(filepath.Join(other, canaryFile), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		c := jailCanary(other, time.Now())
		if !c.WellFormed() || strings.Contains(bad, c.Token) {
			t.Errorf("from %s: %+v, want a new canary", bad, c)
		}
		if again := jailCanary(other, time.Now()); again != c {
			t.Errorf("from %s: %+v, then %+v; want the new one kept", bad, c, again)
		}
	}
}

// requireBwrap skips a test that needs bubblewrap where it cannot run, and fails it in CI.
func requireBwrap(t *testing.T) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap: %v", err)
		}
		t.Skipf("bubblewrap: %v", err)
	}
}
