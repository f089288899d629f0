package gate

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/seal"
)

// TestBaselineReusesSealedPasses: a start's baseline runs only the packages that no sealed
// record holds as a pass of the same inputs. A second checkout of the same module at
// another path (a clone, a worktree) runs only its failing package again, whose failure
// is never kept, and gets the same baseline; a change to one package runs that one and the
// failing one; a record whose seal fails has every package run.
func TestBaselineReusesSealedPasses(t *testing.T) {
	key, err := seal.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "impact")
	failing := func(root string) string {
		t.Helper()
		p := filepath.Join(root, "p03", "p03_test.go")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(b, "\nfunc TestBroken(t *testing.T) { t.Fatal(\"broken\") }\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	baseline := func(root, commit string) ([]string, string) {
		t.Helper()
		in := Input{Root: root, Timeout: 5 * time.Minute, Env: PinnedEnv(os.Environ()),
			Impact: &Impact{Dir: dir, Key: key, Commit: commit}}
		var how string
		b, unsealed, err := MakeBaseline(context.Background(), in, "go test ./...", globs, func(run, reuse string) {
			how = fmt.Sprintf("%s: %s", cmp.Or(run, "none"), reuse)
		})
		if err != nil || unsealed != nil {
			t.Fatalf("MakeBaseline: %v, unsealed %v", err, unsealed)
		}
		return b.PassingTests, how
	}

	first, how := baseline(failing(manyModule(t, 5)), "c0ffee000001")
	if how != "go test ./...: no package has a sealed pass of the same inputs" {
		t.Errorf("first baseline: %q", how)
	}
	if !slices.Contains(first, "example.com/many/p04.TestValue") || slices.Contains(first, "example.com/many/p03.TestBroken") {
		t.Fatalf("first baseline: %q", first)
	}

	clone := failing(manyModule(t, 5))
	again, how := baseline(clone, "c0ffee000002")
	if how != "go test ./p03: 4 of 5 packages have a sealed pass of the same inputs" {
		t.Errorf("the clone's baseline: %q, want the failing package alone run", how)
	}
	if !slices.Equal(sorted(again), sorted(first)) {
		t.Errorf("the clone's baseline:\n%q\nwant\n%q", again, first)
	}

	p02 := filepath.Join(clone, "p02", "more.go")
	if err := os.WriteFile(p02, []byte("package p02\n\n// More is more.\nfunc More() int { return 2 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, how := baseline(clone, "c0ffee000003"); how != "go test ./p02 ./p03: 3 of 5 packages have a sealed pass of the same inputs" {
		t.Errorf("after a change to p02: %q", how)
	}

	records, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(records) == 0 {
		t.Fatal("no record sealed")
	}
	for _, f := range records {
		if err := os.WriteFile(f, []byte(`{"package":"forged"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	after, how := baseline(clone, "c0ffee000004")
	if !strings.HasPrefix(how, "go test ./...: no sealed record used: ") {
		t.Errorf("with records whose seal fails: %q, want every package run", how)
	}
	if !slices.Equal(sorted(after), sorted(first)) {
		t.Errorf("with records whose seal fails:\n%q\nwant\n%q", after, first)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestImpactTrim: the shared records that no gate used for impactUnused go when a gate
// seals its results, at most once per impactTrimEvery; a record read is used.
func TestImpactTrim(t *testing.T) {
	dir := t.TempDir()
	im := &Impact{Dir: dir}
	old := time.Now().Add(-impactUnused - time.Hour)
	write := func(name string, at time.Time) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale, fresh, used := write("stale.json", old), write("fresh.json", time.Now()), write("used.json", old)
	other := write("notes.txt", old)
	im.used(used)
	im.trim(time.Now())
	for p, want := range map[string]bool{stale: false, fresh: true, used: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	// Trimmed a minute ago: the next look waits.
	again := write("again.json", old)
	im.trim(time.Now())
	if _, err := os.Stat(again); err != nil {
		t.Errorf("trimmed again within %v: %v", impactTrimEvery, err)
	}
	im.trim(time.Now().Add(impactTrimEvery + time.Minute))
	if _, err := os.Stat(again); err == nil {
		t.Errorf("not trimmed %v later", impactTrimEvery)
	}
}
