package markers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orchestrator/orchestrator/queue"
)

// A Kind is the kind of a marker, which is also its file name extension.
type Kind string

// The marker kinds. Agents write Done and Failed; the orchestrator writes Kill.
const (
	Done   Kind = "done"
	Failed Kind = "failed"
	Kill   Kind = "kill"
)

// Valid reports whether k is one of Done, Failed and Kill.
func (k Kind) Valid() bool { return k == Done || k == Failed || k == Kill }

// MaxBody is the most bytes of a marker's body that Find reads; the rest is dropped. A
// tdd-result block is a few kilobytes, a bare word a few bytes.
const MaxBody = 1 << 20

// ErrInvalidID is returned (wrapped) for a task ID that does not match queue.IDPattern.
var ErrInvalidID = errors.New("invalid task ID")

// ErrInvalidKind is returned (wrapped) for a Kind other than Done, Failed and Kill.
var ErrInvalidKind = errors.New("invalid marker kind")

// Path returns the path of the marker of kind k for task id in the marker folder dir. It
// checks id against queue.IDPattern before it builds anything, so that no ID can point
// outside dir.
func Path(dir, id string, k Kind) (string, error) {
	if !queue.ValidID(id) {
		return "", fmt.Errorf("marker for %q: %w", id, ErrInvalidID)
	}
	if !k.Valid() {
		return "", fmt.Errorf("marker %s.%s: %w", id, k, ErrInvalidKind)
	}
	return filepath.Join(dir, id+"."+string(k)), nil
}

// ParseName reads a file name seen in the marker folder. ok is true only for a name of the
// form <ID>.<kind> with a valid ID and kind; editors' and our own temp files, and names with
// a folder in them, are not markers.
func ParseName(name string) (id string, k Kind, ok bool) {
	// IDs contain no dot, so the first dot separates ID and kind.
	i := strings.IndexByte(name, '.')
	if i < 0 {
		return "", "", false
	}
	id, k = name[:i], Kind(name[i+1:])
	if !queue.ValidID(id) || !k.Valid() {
		return "", "", false
	}
	return id, k, true
}

// A Marker is a completion marker found on disk.
type Marker struct {
	ID   string // the task ID
	Kind Kind   // Done or Failed
	Path string // where the file is now; Consume updates it
	Body []byte // the file's content, at most MaxBody bytes
}

// Find returns the .done or .failed marker of task id in dir, or nil, nil if there is none.
//
// If both exist, the .failed marker wins. An agent that wrote both has said it failed at
// least once, and believing the failure is the safe reading: a wrong "failed" costs one
// retry, a wrong "done" could be taken for success (the gate checks it anyway, but a claim
// of failure needs no check). It also covers a .done left over from an earlier run that
// Clear could not remove.
func Find(dir, id string) (*Marker, error) {
	for _, k := range []Kind{Failed, Done} {
		p, err := Path(dir, id, k)
		if err != nil {
			return nil, err
		}
		body, err := readMarker(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &Marker{ID: id, Kind: k, Path: p, Body: body}, nil
	}
	return nil, nil
}

// readMarker reads at most MaxBody bytes of the regular file at p. A symbolic link, folder
// or device named like a marker is refused: O_NOFOLLOW keeps an agent from pointing a marker
// at a file the orchestrator would then copy into the attempt folder and its logs.
func readMarker(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("marker %s: is a symbolic link", p)
		}
		return nil, fmt.Errorf("marker: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("marker: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("marker %s: not a regular file", p)
	}
	body, err := io.ReadAll(io.LimitReader(f, MaxBody))
	if err != nil {
		return nil, fmt.Errorf("marker: %w", err)
	}
	return body, nil
}

// Write writes the marker of kind k for task id into dir with the given body, creating dir
// if needed. It writes a temp file and renames it into place, so that a folder watcher never
// sees a marker without its body. Agents written in Go (the replay agent, the test agent)
// use it; the orchestrator itself writes only Kill markers, with WriteKill.
func Write(dir, id string, k Kind, body []byte) error {
	p, err := Path(dir, id, k)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	// The temp name starts with a dot, so ParseName does not take it for a marker.
	f, err := os.CreateTemp(dir, "."+id+"."+string(k)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write marker: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write marker %s: %w", p, err)
	}
	return nil
}

// WriteKill writes <ID>.kill into dir: the orchestrator is about to end the task's agent.
func WriteKill(dir, id string) error {
	return Write(dir, id, Kill, []byte("kill\n"))
}

// Clear removes the .done, .failed and .kill markers of task id from dir, so that a new
// attempt does not inherit the claim of an earlier one. Missing markers are not an error.
func Clear(dir, id string) error {
	var errs []error
	for _, k := range []Kind{Done, Failed, Kill} {
		p, err := Path(dir, id, k)
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("clear marker: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Claim returns what the marker claims, "done" or "failed". A body that is just one of
// those words (any case, surrounding white space ignored) decides, as claudestrator writes
// it; any other body, such as a tdd-result block, leaves the decision to the file's kind.
// For a Kill marker, which claims nothing, it returns "".
func (m *Marker) Claim() string {
	switch w := strings.ToLower(string(bytes.TrimSpace(m.Body))); w {
	case string(Done), string(Failed):
		return w
	}
	switch m.Kind {
	case Done, Failed:
		return string(m.Kind)
	}
	return ""
}

// Consume moves the marker into attemptDir, keeping its name, and updates m.Path. The
// attempt folder keeps it as the evidence of what the agent claimed, and the marker folder
// is left clean for the next attempt.
func (m *Marker) Consume(attemptDir string) error {
	if err := os.MkdirAll(attemptDir, 0o755); err != nil {
		return fmt.Errorf("consume marker: %w", err)
	}
	dst := filepath.Join(attemptDir, filepath.Base(m.Path))
	err := os.Rename(m.Path, dst)
	if errors.Is(err, syscall.EXDEV) {
		// A marker folder on another file system (a bind mount): copy, then remove.
		err = copyThenRemove(m.Path, dst)
	}
	if err != nil {
		return fmt.Errorf("consume marker: %w", err)
	}
	m.Path = dst
	return nil
}

func copyThenRemove(src, dst string) error {
	body, err := readMarker(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, body, 0o644); err != nil {
		return err
	}
	return os.Remove(src)
}
