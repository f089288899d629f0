package seal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orchestrator/orchestrator/seal"
)

// TestMain keeps every test away from the person's own key: the key folder is a temporary
// one.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seal-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestUserKeyMadePrivate: the first use makes the key in $XDG_CONFIG_HOME/orchestrator,
// mode 0600 in a 0700 folder, and later uses read the same key.
func TestUserKeyMadePrivate(t *testing.T) {
	path, err := seal.UserPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "orchestrator", "key"); path != want {
		t.Fatalf("UserPath() = %s, want %s", path, want)
	}
	k, err := seal.User()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Errorf("key file: mode %04o, %d bytes; want 0600, 32", fi.Mode().Perm(), fi.Size())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("key folder: mode %04o, want 0700", di.Mode().Perm())
	}
	again, err := seal.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if k.Sum(seal.KindResult, []byte("x")) != again.Sum(seal.KindResult, []byte("x")) {
		t.Error("the key read again seals differently: it was made anew")
	}
}

// TestUserPathWithoutXDG: without XDG_CONFIG_HOME, the key is in ~/.config.
func TestUserPathWithoutXDG(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	path, err := seal.UserPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".config", "orchestrator", "key"); path != want {
		t.Errorf("UserPath() = %s, want %s", path, want)
	}
}

// TestKeyExposedRefused: a key file others may read (or write) is refused, naming the file
// and the fix; so is one of the wrong size. A private one is used.
func TestKeyExposedRefused(t *testing.T) {
	tests := []struct {
		name string
		mode os.FileMode
		size int
		want string // "" for a key that is used
	}{
		{name: "private", mode: 0o600, size: 32},
		{name: "owner read-only", mode: 0o400, size: 32},
		{name: "world-readable", mode: 0o644, size: 32, want: "mode 0644"},
		{name: "group-readable", mode: 0o640, size: 32, want: "mode 0640"},
		{name: "world-writable", mode: 0o602, size: 32, want: "mode 0602"},
		{name: "truncated", mode: 0o600, size: 5, want: "5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, bytes.Repeat([]byte{7}, tt.size), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			k, err := seal.Load(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if k != nil || !errors.Is(err, seal.ErrKeyExposed) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, %v; want ErrKeyExposed naming %s and %q", k, err, path, tt.want)
			}
		})
	}
}

// TestKeyMadeOnceByRacers: processes that start at once agree on one key; none replaces
// another's.
func TestKeyMadeOnceByRacers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf", "orchestrator", "key")
	const n = 8
	sums := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := seal.Load(path)
			if err != nil {
				t.Error(err)
				return
			}
			sums[i] = k.Sum(seal.KindBaseline, []byte("same"))
		}()
	}
	wg.Wait()
	for i := range sums {
		if sums[i] != sums[0] {
			t.Fatalf("racers disagree on the key: %v", sums)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the key folder holds %d files, want the key alone: %v", len(entries), entries)
	}
}

// TestSealJSON: a sealed record opens to the bytes that were sealed; its readable copy is
// those bytes; an edit anywhere, a seal of another kind or key, or no seal at all, is not
// evidence.
func TestSealJSON(t *testing.T) {
	k, err := seal.New()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := seal.New()
	doc, _ := json.MarshalIndent(map[string]any{"task": "TASK-001", "commit": "abc", "passed": 3}, "", "  ")
	sealed, err := k.SealJSON(seal.KindResult, doc)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(sealed) {
		t.Fatalf("sealed record is not JSON:\n%s", sealed)
	}
	if got, err := k.OpenJSON(seal.KindResult, sealed); err != nil || !bytes.Equal(got, doc) {
		t.Fatalf("OpenJSON = %q, %v; want the sealed bytes", got, err)
	}
	if got := seal.Strip(sealed); !bytes.Equal(got, doc) {
		t.Errorf("Strip = %q, want %q", got, doc)
	}
	otherSeal, _ := other.SealJSON(seal.KindResult, doc)
	tests := []struct {
		name string
		data []byte
		kind string
		want error
	}{
		{name: "value edited", data: bytes.Replace(sealed, []byte(`"abc"`), []byte(`"abd"`), 1), kind: seal.KindResult, want: seal.ErrBroken},
		{name: "member added", data: bytes.Replace(sealed, []byte(`"passed"`), []byte(`"passed": 9, "x"`), 1), kind: seal.KindResult, want: seal.ErrBroken},
		{name: "seal of another kind", data: sealed, kind: seal.KindBaseline, want: seal.ErrBroken},
		{name: "sealed with another key", data: otherSeal, kind: seal.KindResult, want: seal.ErrBroken},
		{name: "no seal", data: doc, kind: seal.KindResult, want: seal.ErrUnsealed},
		{name: "seal moved to the end", data: append(bytes.TrimSuffix(doc, []byte("}")), []byte(`, "seal": "`+strings.Repeat("0", 64)+`"}`)...), kind: seal.KindResult, want: seal.ErrUnsealed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := k.OpenJSON(tt.kind, tt.data); !errors.Is(err, tt.want) {
				t.Errorf("OpenJSON = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := k.SealJSON(seal.KindResult, []byte("{}")); err == nil {
		t.Error("an empty object was sealed")
	}
}

// TestReadJSONNamesTheRecord: a file that fails its seal is an EditedError naming it.
func TestReadJSONNamesTheRecord(t *testing.T) {
	k, _ := seal.New()
	path := filepath.Join(t.TempDir(), "baseline.json")
	os.WriteFile(path, []byte("{\n  \"passing_tests\": []\n}\n"), 0o644)
	_, err := k.ReadJSON(seal.KindBaseline, path)
	var ee *seal.EditedError
	if !errors.As(err, &ee) || ee.Record != path || !strings.Contains(err.Error(), "edited outside the orchestrator") {
		t.Errorf("ReadJSON = %v, want an EditedError naming %s", err, path)
	}
}

// TestSealMessage: a landing's seal covers its trailers and its tree.
func TestSealMessage(t *testing.T) {
	k, _ := seal.New()
	msg := "TASK-001: add\n\nOrchestrator-Task: TASK-001\nOrchestrator-Attempt: 1\nOrchestrator-Gate: GREEN 3 passed\n"
	sealed := k.SealMessage(msg, "tree1")
	if err := k.CheckMessage(sealed, "tree1"); err != nil {
		t.Fatalf("CheckMessage of the sealed message: %v", err)
	}
	tests := []struct {
		name, msg, tree string
		want            error
	}{
		{name: "other tree", msg: sealed, tree: "tree2", want: seal.ErrBroken},
		{name: "task changed", msg: strings.Replace(sealed, "Task: TASK-001", "Task: TASK-002", 1), tree: "tree1", want: seal.ErrBroken},
		{name: "trailer added", msg: sealed + "Orchestrator-Red: abc\n", tree: "tree1", want: seal.ErrBroken},
		{name: "two seals", msg: sealed + k.SealMessage("", "tree1")[len("\n"):], tree: "tree1", want: seal.ErrBroken},
		{name: "subject changed", msg: strings.Replace(sealed, "add", "subtract", 1), tree: "tree1"},
		{name: "no seal", msg: msg, tree: "tree1", want: seal.ErrUnsealed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := k.CheckMessage(tt.msg, tt.tree); !errors.Is(err, tt.want) {
				t.Errorf("CheckMessage = %v, want %v", err, tt.want)
			}
		})
	}
}
