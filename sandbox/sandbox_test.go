package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	home := t.TempDir()
	inner := filepath.Join(home, ".cache")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	p := Profile{
		Hide:     []string{inner, home, "/usr", "relative", filepath.Join(home, "missing")},
		ReadOnly: []string{"/opt/go"},
		Writable: []string{"/work/checkout"},
		Fixed:    []string{"/work/checkout/.git"},
		Dir:      "/work/checkout/sub",
		Env:      []string{"PATH=/usr/bin", "A=b=c"},
	}
	got := strings.Join(p.Wrap([]string{"go", "test"}), " ")
	for _, want := range []string{
		"--tmpfs /tmp",
		"--tmpfs " + home + " --ro-bind-try /opt/go /opt/go --bind /work/checkout /work/checkout --ro-bind-try /work/checkout/.git /work/checkout/.git",
		"--unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent --as-pid-1 --chdir /work/checkout/sub",
		"--clearenv --setenv PATH /usr/bin --setenv A b=c -- /bin/sh -c",
		"sh go test",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Wrap = %s\nwant it to hold %q", got, want)
		}
	}
	// A folder inside a hidden one, a system folder, a relative or missing path: not
	// hidden on their own.
	for _, bad := range []string{"--tmpfs " + inner, "--tmpfs /usr", "relative", "missing"} {
		if strings.Contains(got, bad) {
			t.Errorf("Wrap = %s\nholds %q", got, bad)
		}
	}
	p.Network = true
	if got := strings.Join(p.Wrap([]string{"true"}), " "); strings.Contains(got, "--unshare-net") {
		t.Errorf("with Network, Wrap = %s", got)
	}
}

// TestWrapRuns runs a command in a real sandbox: a hidden folder is empty, a folder shown
// again inside it is read-only, a writable one is written, the environment is exactly
// Env, and a process left running is gone when the command returns.
func TestWrapRuns(t *testing.T) {
	need(t)
	home := t.TempDir()
	secret := filepath.Join(home, "secret")
	tools := filepath.Join(home, "tools")
	work := filepath.Join(home, "work")
	for _, d := range []string{tools, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{secret, filepath.Join(tools, "tool")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitFile := filepath.Join(work, ".git")
	if err := os.WriteFile(gitFile, []byte("gitdir: "+secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Profile{Hide: []string{home}, ReadOnly: []string{tools}, Writable: []string{work}, Fixed: []string{gitFile}, Dir: work,
		Env: []string{"PATH=/usr/bin:/bin", "ONLY=1"}}
	script := `test -e ` + secret + ` && echo secret-visible
{ echo x > .git; } 2>/dev/null && echo fixed-writable
rm -f .git 2>/dev/null; test -e .git || echo fixed-removed
mv out .git 2>/dev/null && echo fixed-replaced
test -e ` + tools + `/tool || echo tool-missing
touch ` + tools + `/new 2>/dev/null && echo tool-writable
echo ok > out || echo work-readonly
env | grep -v '^PWD=\|^SHLVL=\|^_=' | sort | tr '\n' ' '
`
	argv := p.Wrap([]string{"/bin/sh", "-c", script})
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "ONLY=1 PATH=/usr/bin:/bin"; got != want {
		t.Errorf("the sandboxed command said %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out")); err != nil || string(b) != "ok\n" {
		t.Errorf("the writable folder was not written: %q, %v", b, err)
	}
	if b, err := os.ReadFile(gitFile); err != nil || string(b) != "gitdir: "+secret+"\n" {
		t.Errorf("the fixed file changed: %q, %v", b, err)
	}
}

// need skips the test where bubblewrap does not run, and fails it under CI=true.
func need(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap does not run here (CI=true): %v", err)
		}
		t.Skipf("bubblewrap does not run here: %v", err)
	}
}

// TestHidden: a path is hidden when it is in a folder of the list that exists and is not a
// system folder (those Wrap replaces with an empty one).
func TestHidden(t *testing.T) {
	dir := t.TempDir()
	hide := []string{dir, "/usr", filepath.Join(dir, "missing-too"), "/no/such/folder"}
	for path, want := range map[string]bool{
		dir:                              true,
		filepath.Join(dir, "a", "b"):     true,
		dir + "x":                        false,
		"/usr/bin":                       false,
		"/no/such/folder/home":           false,
		filepath.Join(dir, "..", "else"): false,
	} {
		if got := Hidden(hide, path); got != want {
			t.Errorf("Hidden(%v, %s) = %v, want %v", hide, path, got, want)
		}
	}
}
