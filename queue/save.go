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
// changed. A file that does not parse is left alone and its ParseErrors returned.
//
// Editors take no lock. If a person saved the file between our read and our swap, the swap
// hands us their version back: we apply the edits to it instead and swap again, so a
// person's edit is never lost. An edit that no longer applies (a compare-and-set that
// declines) leaves their version in place.
func Update(ctx context.Context, path string, kind Kind, edit EditFunc) (bool, error) {
	return UpdateRecords(ctx, path, kind, nil, edit)
}

// UpdateRecords is Update for edits that touch only the records named by ids: the file is
// still checked whole, but only those records keep their fields in the Doc (see ParseOnly).
func UpdateRecords(ctx context.Context, path string, kind Kind, ids []string, edit EditFunc) (bool, error) {
	l, err := Lock(ctx, filepath.Dir(path))
	if err != nil {
		return false, err
	}
	defer l.Unlock()
	return updateLocked(path, kind, ids, edit)
}

func updateLocked(path string, kind Kind, ids []string, edit EditFunc) (bool, error) {
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	readAt := time.Now()
	base, err := ReadFile(path)
	if err != nil {
		return false, err
	}
	p, err := compute(path, base, kind, ids, edit)
	if err != nil || p == nil {
		return false, err
	}
	displaced, same, err := swapIn(path, p, info.Mode(), base, info, readAt)
	if err != nil || same {
		return err == nil, err
	}
	// Someone saved the file after we read it, and their bytes came back to us. From here
	// on, work with whole copies: this is rare.
	atPath := p.Bytes()
	base = displaced
	for round := 0; ; round++ {
		if round > 50 {
			return true, fmt.Errorf("%s: the file keeps changing; giving up", path)
		}
		var want []byte
		p, editErr := compute(path, base, kind, ids, edit)
		switch {
		case editErr != nil || p == nil:
			want = base // put the person's version back as it is
		default:
			want = p.Bytes()
		}
		if bytes.Equal(want, atPath) {
			return true, editErr
		}
		displaced, same, err := swapIn(path, &patched{src: want}, info.Mode(), atPath, nil, readAt)
		if err != nil {
			return true, err
		}
		if same {
			return !bytes.Equal(want, base), editErr
		}
		base, atPath = displaced, want
	}
}

// compute parses src and applies the edits. It returns nil when nothing changes.
func compute(path string, src []byte, kind Kind, ids []string, edit EditFunc) (*patched, error) {
	var d *Doc
	var err error
	if ids != nil {
		d, err = ParseOnly(path, src, kind, ids...)
	} else {
		d, err = Parse(path, src, kind)
	}
	if err != nil {
		return nil, err
	}
	ops, err := edit(d)
	if err != nil {
		return nil, err
	}
	p, err := patch(d, ops)
	if err != nil || p == nil {
		return nil, err
	}
	if needsReparse(ops) {
		if _, err := Parse(path, p.Bytes(), kind); err != nil {
			return nil, fmt.Errorf("edit would make the file invalid: %w", err)
		}
	}
	return p, nil
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

// swapIn writes p to a temp file beside path, fsyncs it and atomically exchanges it with
// path. It reports whether what it displaced is expect (the bytes we based the edit on); when
// it is not, it returns those bytes. expectInfo, when given, is the file's stat from before
// reading expect: an untouched file is recognised by it without reading it back. Where the
// file system cannot exchange, swapIn checks the file and renames instead.
func swapIn(path string, p *patched, mode os.FileMode, expect []byte, expectInfo os.FileInfo, readAt time.Time) ([]byte, bool, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, false, err
	}
	name := tmp.Name()
	defer os.Remove(name)
	if err := writeAll(tmp, p, mode); err != nil {
		tmp.Close()
		return nil, false, err
	}
	if err := tmp.Close(); err != nil {
		return nil, false, err
	}
	err = unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		if unchanged(name, expectInfo, readAt) {
			return nil, true, syncDir(dir)
		}
		displaced, err := os.ReadFile(name)
		if err != nil {
			return nil, false, err
		}
		if bytes.Equal(displaced, expect) {
			return nil, true, syncDir(dir)
		}
		return displaced, false, syncDir(dir)
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		// No exchange here: check the file just before renaming over it.
		displaced, err := os.ReadFile(path)
		if err != nil {
			return nil, false, err
		}
		if err := os.Rename(name, path); err != nil {
			return nil, false, err
		}
		return displaced, bytes.Equal(displaced, expect), syncDir(dir)
	default:
		return nil, false, fmt.Errorf("replace %s: %w", path, err)
	}
}

// unchanged reports whether the file now at name is provably the one stat'ed as before:
// the same inode, size and modification time, and that time is well before we read it, so
// a write during our read would have moved it (the kernel's file clock is coarse, a few ms).
func unchanged(name string, before os.FileInfo, readAt time.Time) bool {
	if before == nil {
		return false
	}
	now, err := os.Stat(name)
	if err != nil {
		return false
	}
	return os.SameFile(before, now) && now.Size() == before.Size() &&
		now.ModTime().Equal(before.ModTime()) && before.ModTime().Before(readAt.Add(-coarseClock))
}

// writeAll writes p in moderate chunks, sets the mode and fsyncs. (Measured here: one
// multi-megabyte write(2) into a new file is sometimes ten times slower than 64 KiB ones.)
func writeAll(f *os.File, p *patched, mode os.FileMode) error {
	var werr error
	p.each(func(piece []byte) {
		for len(piece) > 0 && werr == nil {
			n := min(len(piece), 64<<10)
			_, werr = f.Write(piece[:n])
			piece = piece[n:]
		}
	})
	if werr != nil {
		return werr
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		return err
	}
	return f.Sync()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// coarseClock bounds the granularity of file modification times (the kernel stamps them from
// a clock that ticks every 1–10 ms).
const coarseClock = 15 * time.Millisecond
