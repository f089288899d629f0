package markers

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestPath(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		kind    Kind
		want    string
		wantErr error
	}{
		{"done", "TASK-001", Done, "m/TASK-001.done", nil},
		{"failed", "TASK-T01", Failed, "m/TASK-T01.failed", nil},
		{"kill", "ISSUE-20260107-032", Kill, "m/ISSUE-20260107-032.kill", nil},
		{"parent", "../x", Done, "", ErrInvalidID},
		{"parent id", "../TASK-001", Done, "", ErrInvalidID},
		{"slash", "A/B", Done, "", ErrInvalidID},
		{"slash in valid shape", "TASK-1/TASK-2", Done, "", ErrInvalidID},
		{"absolute", "/etc/passwd", Done, "", ErrInvalidID},
		{"dot", ".", Done, "", ErrInvalidID},
		{"empty", "", Done, "", ErrInvalidID},
		{"lower case", "task-001", Done, "", ErrInvalidID},
		{"no dash", "TASK", Done, "", ErrInvalidID},
		{"dot in id", "TASK-1.done", Done, "", ErrInvalidID},
		{"newline", "TASK-1\n", Done, "", ErrInvalidID},
		{"bad kind", "TASK-001", Kind("txt"), "", ErrInvalidKind},
		{"kind with slash", "TASK-001", Kind("done/../../x"), "", ErrInvalidKind},
		{"empty kind", "TASK-001", Kind(""), "", ErrInvalidKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Path("m", tt.id, tt.kind)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Path(%q, %q) error = %v, want %v", tt.id, tt.kind, err, tt.wantErr)
			}
			if got != filepath.FromSlash(tt.want) {
				t.Errorf("Path(%q, %q) = %q, want %q", tt.id, tt.kind, got, tt.want)
			}
		})
	}
}

func TestParseName(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		kind   Kind
		wantOK bool
	}{
		{"TASK-001.done", "TASK-001", Done, true},
		{"TASK-001.failed", "TASK-001", Failed, true},
		{"TASK-001.kill", "TASK-001", Kill, true},
		{"TASK-001", "", "", false},
		{"TASK-001.", "", "", false},
		{"TASK-001.txt", "", "", false},
		{"TASK-001.done.tmp", "", "", false},
		{".TASK-001.done.tmp-123", "", "", false},
		{"TASK-001.done~", "", "", false},
		{"../TASK-001.done", "", "", false},
		{"sub/TASK-001.done", "", "", false},
		{"task-001.done", "", "", false},
		{".done", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, k, ok := ParseName(tt.name)
			if id != tt.id || k != tt.kind || ok != tt.wantOK {
				t.Errorf("ParseName(%q) = %q, %q, %v; want %q, %q, %v", tt.name, id, k, ok, tt.id, tt.kind, tt.wantOK)
			}
		})
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		wantKind  Kind
		wantBody  string
		wantClaim string
	}{
		{"none", nil, "", "", ""},
		{"done word", map[string]string{"TASK-1.done": "done\n"}, Done, "done\n", "done"},
		{"done empty", map[string]string{"TASK-1.done": ""}, Done, "", "done"},
		{"failed", map[string]string{"TASK-1.failed": "failed"}, Failed, "failed", "failed"},
		{"both: failed wins", map[string]string{"TASK-1.done": "done", "TASK-1.failed": "failed"}, Failed, "failed", "failed"},
		{"done file says failed", map[string]string{"TASK-1.done": "  FAILED \n"}, Done, "  FAILED \n", "failed"},
		{"block body", map[string]string{"TASK-1.done": "```tdd-result\nrole: implementer\n```\n"}, Done, "```tdd-result\nrole: implementer\n```\n", "done"},
		{"kill only", map[string]string{"TASK-1.kill": "kill"}, "", "", ""},
		{"other task", map[string]string{"TASK-2.done": "done"}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.files {
				write(t, filepath.Join(dir, name), body)
			}
			m, err := Find(dir, "TASK-1")
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantKind == "" {
				if m != nil {
					t.Fatalf("Find = %+v, want nil", m)
				}
				return
			}
			if m == nil {
				t.Fatal("Find = nil")
			}
			if m.ID != "TASK-1" || m.Kind != tt.wantKind || string(m.Body) != tt.wantBody {
				t.Errorf("Find = %+v, want kind %s body %q", m, tt.wantKind, tt.wantBody)
			}
			if want := filepath.Join(dir, "TASK-1."+string(tt.wantKind)); m.Path != want {
				t.Errorf("Path = %q, want %q", m.Path, want)
			}
			if got := m.Claim(); got != tt.wantClaim {
				t.Errorf("Claim() = %q, want %q", got, tt.wantClaim)
			}
		})
	}
}

func TestFindMissingFolder(t *testing.T) {
	m, err := Find(filepath.Join(t.TempDir(), "nope"), "TASK-1")
	if m != nil || err != nil {
		t.Errorf("Find in missing folder = %v, %v; want nil, nil", m, err)
	}
}

// TestPathTraversal plants files where a traversing ID would lead and checks that no
// function reads, writes or removes them.
func TestPathTraversal(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "complete")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "x.done"), "done")
	write(t, filepath.Join(root, "x.kill"), "kill")
	write(t, filepath.Join(root, "secret.failed"), "failed")
	for _, id := range []string{"../x", "../secret", "A/B", "..", "/etc/passwd", "../TASK-1", "TASK-1/../../x"} {
		if m, err := Find(dir, id); m != nil || !errors.Is(err, ErrInvalidID) {
			t.Errorf("Find(%q) = %v, %v; want nil, ErrInvalidID", id, m, err)
		}
		if err := WriteKill(dir, id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("WriteKill(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := Write(dir, id, Done, []byte("done")); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Write(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := Clear(dir, id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Clear(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	for _, name := range []string{"x.done", "x.kill", "secret.failed"} {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s was touched: %v", name, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("marker folder holds %d entries, want none", len(entries))
	}
}

func TestFindRefusesSymlinkAndFolder(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "done")
	if err := os.Symlink(secret, filepath.Join(dir, "TASK-1.done")); err != nil {
		t.Fatal(err)
	}
	if m, err := Find(dir, "TASK-1"); err == nil {
		t.Errorf("Find through symlink = %+v, want error", m)
	}
	if err := os.Mkdir(filepath.Join(dir, "TASK-2.failed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if m, err := Find(dir, "TASK-2"); err == nil {
		t.Errorf("Find of a folder = %+v, want error", m)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "TASK-3.done"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := Find(dir, "TASK-3"); err == nil {
		t.Errorf("Find of a FIFO = %+v, want error", m)
	}
}

func TestFindCapsBody(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, MaxBody+100)
	if err := os.WriteFile(filepath.Join(dir, "TASK-1.done"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Find(dir, "TASK-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Body) != MaxBody {
		t.Errorf("body is %d bytes, want %d", len(m.Body), MaxBody)
	}
}

func TestKillAndClear(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "complete") // WriteKill creates it
	if err := WriteKill(dir, "TASK-1"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "TASK-1.kill")); err != nil || string(b) != "kill\n" {
		t.Fatalf("TASK-1.kill after WriteKill = %q, %v", b, err)
	}
	write(t, filepath.Join(dir, "TASK-1.done"), "done")
	write(t, filepath.Join(dir, "TASK-1.failed"), "failed")
	write(t, filepath.Join(dir, "TASK-2.done"), "done")
	if err := Clear(dir, "TASK-1"); err != nil {
		t.Fatal(err)
	}
	if err := Clear(dir, "TASK-1"); err != nil {
		t.Fatalf("second Clear: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "TASK-2.done" {
		t.Errorf("after Clear the folder holds %v, want [TASK-2.done]", names)
	}
}

func TestWriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "TASK-1", Failed, []byte("failed\n")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "TASK-1.failed" {
		t.Fatalf("folder holds %v", entries)
	}
	m, err := Find(dir, "TASK-1")
	if err != nil || m == nil || m.Claim() != "failed" {
		t.Fatalf("Find = %+v, %v", m, err)
	}
	if err := Write(dir, "TASK-1", Kind("x"), nil); !errors.Is(err, ErrInvalidKind) {
		t.Errorf("Write with bad kind = %v", err)
	}
}

func TestConsume(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "complete")
	if err := Write(dir, "TASK-1", Done, []byte("done")); err != nil {
		t.Fatal(err)
	}
	m, err := Find(dir, "TASK-1")
	if err != nil || m == nil {
		t.Fatalf("Find = %v, %v", m, err)
	}
	attempt := filepath.Join(root, "runs", "TASK-1", "1")
	if err := m.Consume(attempt); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(attempt, "TASK-1.done")
	if m.Path != want {
		t.Errorf("Path after Consume = %q, want %q", m.Path, want)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "done" {
		t.Errorf("consumed marker = %q, %v", b, err)
	}
	if again, err := Find(dir, "TASK-1"); again != nil || err != nil {
		t.Errorf("Find after Consume = %v, %v; want nil, nil", again, err)
	}
	if err := m.Consume(attempt); err != nil {
		t.Errorf("Consume into the folder it is in: %v", err)
	}
	gone := &Marker{ID: "TASK-9", Kind: Done, Path: filepath.Join(dir, "TASK-9.done")}
	if err := gone.Consume(attempt); err == nil {
		t.Error("Consume of a missing marker succeeded")
	}
}

func TestClaim(t *testing.T) {
	tests := []struct {
		kind Kind
		body string
		want string
	}{
		{Done, "done", "done"},
		{Done, "", "done"},
		{Done, "failed\n", "failed"},
		{Failed, "done", "done"},
		{Failed, "anything else", "failed"},
		{Done, "done done", "done"},
		{Kill, "kill", ""},
	}
	for _, tt := range tests {
		m := &Marker{ID: "TASK-1", Kind: tt.kind, Body: []byte(tt.body)}
		if got := m.Claim(); got != tt.want {
			t.Errorf("Claim(kind %s, body %q) = %q, want %q", tt.kind, tt.body, got, tt.want)
		}
	}
}
