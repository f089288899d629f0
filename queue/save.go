package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
)

// ErrLocked means another orchestrator process held the lock for too long.
var ErrLocked = errors.New("queue is locked by another process")

// LockTimeout is how long a writer waits for the lock before giving up with ErrLocked.
var LockTimeout = 30 * time.Second

// LockPath returns the lock file that guards the queue files in dir (SPEC §4.3).
func LockPath(dir string) string { return filepath.Join(dir, ".lock") }

// Lock takes the writers' lock of the queue folder dir. The caller must Unlock it.
func Lock(ctx context.Context, dir string) (*flock.Flock, error) {
	l := flock.New(LockPath(dir))
	ctx, cancel := context.WithTimeout(ctx, LockTimeout)
	defer cancel()
	ok, err := l.TryLockContext(ctx, time.Millisecond)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("lock %s: %w", LockPath(dir), err)
	}
	if !ok {
		return nil, fmt.Errorf("lock %s: %w", LockPath(dir), ErrLocked)
	}
	return l, nil
}

// An EditFunc computes the edits to make to a parsed queue file. Update may call it more
// than once: again on the newer bytes when a person saved the file meanwhile.
type EditFunc func(d *Doc) ([]Op, error)

// Update edits the queue file at path safely (SPEC §4.2, §4.3): under the folder's lock it
// reads the file, parses it, applies the edits to its bytes and, if anything changed, writes
// a temp file, fsyncs it and swaps it in, then fsyncs the folder. It reports whether the file
// changed.
//
// Editors take no lock. If a person saved the file between our read and our swap, the swap
// hands us their version back: we apply the edits to it instead and swap again, so a
// person's edit is never lost. An edit that no longer applies (a compare-and-set that
// declines) leaves their version in place.
func Update(ctx context.Context, path string, kind Kind, edit EditFunc) (bool, error) {
	l, err := Lock(ctx, filepath.Dir(path))
	if err != nil {
		return false, err
	}
	defer l.Unlock()
	return updateLocked(path, kind, edit)
}

func updateLocked(path string, kind Kind, edit EditFunc) (bool, error) {
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	base, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	atPath := base // what we believe the file holds now
	changed := false
	for round := 0; ; round++ {
		if round > 50 {
			return changed, fmt.Errorf("%s: the file keeps changing; giving up", path)
		}
		want, editErr := compute(path, base, kind, edit)
		if editErr != nil || want == nil {
			want = base // leave (or put back) the person's version
		}
		if bytes.Equal(want, atPath) {
			return changed, editErr
		}
		displaced, err := swapIn(path, want, info.Mode())
		if err != nil {
			return changed, err
		}
		if bytes.Equal(displaced, atPath) {
			return !bytes.Equal(want, base) || changed, editErr
		}
		// Someone saved the file after we read it: their bytes came back to us.
		changed = changed || !bytes.Equal(want, base)
		base, atPath = displaced, want
	}
}

// compute parses src and applies the edits. It returns nil when nothing changes.
func compute(path string, src []byte, kind Kind, edit EditFunc) ([]byte, error) {
	d, err := Parse(path, src, kind)
	if err != nil {
		return nil, err
	}
	ops, err := edit(d)
	if err != nil {
		return nil, err
	}
	out, err := Apply(d, ops...)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(out, src) {
		return nil, nil
	}
	if needsReparse(ops) {
		if _, err := Parse(path, out, kind); err != nil {
			return nil, fmt.Errorf("edit would make the file invalid: %w", err)
		}
	}
	return out, nil
}

// needsReparse reports whether the result of ops must be parsed again before it is written.
// A set splices a checked value into one cell; appended or replaced text could be anything.
func needsReparse(ops []Op) bool {
	for _, op := range ops {
		switch op.(type) {
		case SetField, CompareAndSet, Expect:
		default:
			return true
		}
	}
	return false
}

// swapIn writes data to a temp file beside path, fsyncs it and atomically exchanges it with
// path. It returns the bytes that were at path just before the exchange. Where the file
// system cannot exchange, it checks the file and renames instead.
func swapIn(path string, data []byte, mode os.FileMode) ([]byte, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	name := tmp.Name()
	defer os.Remove(name)
	// Write in moderate chunks: measured here, one multi-megabyte write(2) into a new file is
	// sometimes ten times slower than the same bytes in 64 KiB pieces.
	for off := 0; off < len(data); off += 64 << 10 {
		if _, err := tmp.Write(data[off:min(off+64<<10, len(data))]); err != nil {
			tmp.Close()
			return nil, err
		}
	}
	if err := tmp.Chmod(mode.Perm()); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	var displaced []byte
	err = unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		if displaced, err = os.ReadFile(name); err != nil {
			return nil, err
		}
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		// No exchange here: read the file just before renaming over it.
		if displaced, err = os.ReadFile(path); err != nil {
			return nil, err
		}
		if err := os.Rename(name, path); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("replace %s: %w", path, err)
	}
	return displaced, syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
