package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/orchestrator/orchestrator/internal/ownfile"
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
// Editors take no lock, so a person may save the file between our read and our swap. Update
// checks the file just before the swap, and swaps with RENAME_EXCHANGE, which hands back
// what it displaced: if that is not the file we read, a person saved in the moment between
// check and swap, and their version goes straight back, before anything else is done (the
// one system call between the two swaps tells what was displaced). Only then are the edits
// applied to their version, and the same steps taken again. So a person's edit is never
// lost, and a version without it is never visible for longer than that one system call: an
// editor that read it could save on top of it, and the edit would be gone. An edit that no longer applies (a compare-and-set that declines) leaves their
// version in place.
func Update(ctx context.Context, path string, kind Kind, edit EditFunc) (bool, error) {
	return UpdateRecords(ctx, path, kind, nil, edit)
}

// UpdateRecords is Update for edits that touch only the records named by ids: the file is
// still checked whole, but only those records keep their fields in the Doc (see ParseOnly).
func UpdateRecords(ctx context.Context, path string, kind Kind, ids []string, edit EditFunc) (bool, error) {
	return updateUnder(ctx, path, kind, ids, nil, edit)
}

// UpdateAfter is Update whose new version takes the file's place only once ready has
// returned: what must be written before the file says so (an attempt's record, before its
// task's status) is written beside the lock, the read, the parse and the temp file's write
// and sync. ready is called once, just before the first swap, and not at all when the edits
// change nothing or fail; an error from it is returned, and the file is left as it was.
func UpdateAfter(ctx context.Context, path string, kind Kind, ready func() error, edit EditFunc) (bool, error) {
	return updateUnder(ctx, path, kind, nil, ready, edit)
}

// updateUnder takes the folder's lock and updates path under it.
func updateUnder(ctx context.Context, path string, kind Kind, ids []string, ready func() error, edit EditFunc) (bool, error) {
	l, err := Lock(ctx, filepath.Dir(path))
	if err != nil {
		return false, err
	}
	defer l.Unlock()
	return updateLocked(path, kind, ids, ready, edit)
}

// Tests set these to act in the moment just before and just after the swap.
var beforeSwap, afterSwap func()

// maxRounds bounds how often Update starts again because the file changed under it.
const maxRounds = 50

func updateLocked(path string, kind Kind, ids []string, ready func() error, edit EditFunc) (bool, error) {
	dir := filepath.Dir(path)
	var (
		base *basis    // the file our version is computed from
		ours *tempFile // our version, in a temp file beside path
	)
	defer func() {
		if ours != nil {
			keepSpare(path, ours) // our version, or the one we displaced
		}
	}()
	for round := 0; ; round++ {
		if round == maxRounds {
			return false, fmt.Errorf("%s: the file keeps changing; giving up", path)
		}
		b, err := readBasis(path)
		if err != nil {
			return false, err
		}
		// The same bytes give the same version: a save that changed nothing but the
		// file's stat costs no new temp file.
		if ours == nil || b.mode != base.mode || !bytes.Equal(b.src, base.src) {
			if ours != nil {
				os.Remove(ours.name)
				ours = nil
			}
			p, err := compute(path, b.src, kind, ids, edit)
			if err != nil || p == nil {
				return false, err
			}
			if ours, err = writeTemp(path, p, b.mode); err != nil {
				return false, err
			}
		}
		base = b
		if ready != nil {
			if err := ready(); err != nil {
				return false, err
			}
			ready = nil
		}
		// Writing and syncing the temp file took a while (and so may ready): look again
		// before the swap, so that a save made meanwhile is found without ever being
		// displaced.
		if still, err := base.still(path); err != nil || !still {
			if err != nil {
				return false, err
			}
			continue
		}
		if beforeSwap != nil {
			beforeSwap()
		}
		ours.swapped = true // from here on, ours.name may hold a version that stood at path
		err = unix.Renameat2(unix.AT_FDCWD, ours.name, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
		if afterSwap != nil && err == nil {
			afterSwap()
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			// No exchange on this file system: the check above is all there is.
			if err := os.Rename(ours.name, path); err != nil {
				return false, err
			}
			ours = nil
			return true, syncDir(dir)
		}
		if err != nil {
			return false, fmt.Errorf("replace %s: %w", path, err)
		}
		// ours.name now holds what we displaced.
		still, displaced, err := base.stillID(ours.name)
		if still && err == nil {
			// The folder is synced first, and the old file removed after (deferred):
			// syncing its removal too would cost a few milliseconds for a large file.
			return true, syncDir(dir)
		}
		// A person saved between the check and the swap: their version goes back first.
		back, err := putBack(ours.name, path, ours.id, displaced)
		if err != nil {
			return false, err
		}
		if !back {
			// Ours was replaced while it was at path: what came back is an older save.
			os.Remove(ours.name)
			ours = nil
			continue
		}
		ours.swapped = false // ours.name holds our version again
	}
}

// putBack undoes the exchange of tmp and path just made, so that path holds again what the
// exchange displaced (now at tmp, identified by displaced when known), and tmp the file
// identified by ours, which it reports. Should someone save over ours in the moment it was
// at path, their file comes back to tmp instead: it is the newest save, so it is exchanged
// back in turn, and so on. It then reports false.
func putBack(tmp, path string, ours, displaced fileID) (bool, error) {
	var st unix.Stat_t
	if displaced == (fileID{}) {
		if err := unix.Stat(tmp, &st); err != nil {
			return false, fmt.Errorf("put back %s: %w", path, err)
		}
		displaced = idOf(&st)
	}
	want, atTmp := ours, displaced
	for range maxRounds {
		if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
			return false, fmt.Errorf("put back %s: %w", path, err)
		}
		if err := unix.Stat(tmp, &st); err != nil {
			return false, fmt.Errorf("put back %s: %w", path, err)
		}
		got := idOf(&st)
		if got == want {
			return got == ours, nil
		}
		want, atTmp = atTmp, got
	}
	return false, fmt.Errorf("%s: the file keeps changing; giving up", path)
}

// A fileID identifies a file: its device and inode numbers.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{uint64(st.Dev), st.Ino} }

// A basis is the file an edit is computed from: its bytes, and its stat from before they
// were read.
type basis struct {
	src    []byte
	id     fileID
	size   int64
	mtime  unix.Timespec
	mode   os.FileMode
	readAt time.Time // when we started reading: before the stat
}

// readBasis reads the file at path and its stat.
func readBasis(path string) (*basis, error) {
	readAt := time.Now()
	src, fi, err := readStat(path)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no file status", path)
	}
	return &basis{
		src:    src,
		id:     fileID{uint64(st.Dev), st.Ino},
		size:   st.Size,
		mtime:  unix.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec},
		mode:   fi.Mode(),
		readAt: readAt,
	}, nil
}

// still reports whether the file at name is the one b was read from, unchanged. The same
// inode, size and modification time tell, when that time is settled: far enough before we
// read that a write since would have moved it. File times come from a coarse clock, so two
// writes close together can have the same one; when the time is not settled, the bytes are
// compared.
func (b *basis) still(name string) (bool, error) {
	still, _, err := b.stillID(name)
	return still, err
}

// stillID is still that also returns the identity of the file at name, when it got it.
func (b *basis) stillID(name string) (bool, fileID, error) {
	same, id, err := b.sameStat(name)
	if err != nil || !same || settled(b.mtime, b.readAt) {
		return same, id, err
	}
	now, err := os.ReadFile(name)
	if err != nil || !bytes.Equal(now, b.src) {
		return false, id, err
	}
	// Once more, as the last thing: a caller may swap right after.
	return b.sameStat(name)
}

// sameStat reports whether the file at name has b's inode, size and modification time, and
// returns its identity.
func (b *basis) sameStat(name string) (bool, fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return false, fileID{}, err
	}
	id := idOf(&st)
	return id == b.id && st.Size == b.size && st.Mtim == b.mtime, id, nil
}

// settled reports whether a file modification time is older than the granularity of file
// times before readAt, so that a write after readAt cannot have left it as it is. A time in
// the future (a server's clock ahead of ours) is not settled.
func settled(mtime unix.Timespec, readAt time.Time) bool {
	return time.Unix(mtime.Unix()).Add(granularity(mtime)).Before(readAt)
}

// granularity returns how far apart two writes can be and still get the same modification
// time. Local file systems stamp times from the kernel's coarse clock, which ticks every 1 to
// 10 ms. Some keep whole seconds only (ext3 with small inodes, HFS+, many network file
// systems) or even two (FAT): on those, every time has no nanoseconds, and one that has none
// is taken to come from such a file system. (One in a billion fine times is rounded too, and
// costs only a comparison of bytes.)
func granularity(mtime unix.Timespec) time.Duration {
	if mtime.Nsec == 0 {
		return 2 * time.Second
	}
	return coarseClock
}

// A tempFile is a version written beside the queue file, synced, ready to be swapped in.
type tempFile struct {
	name string
	id   fileID
	// swapped: it may hold a version that stood at the file's path (what a swap displaced).
	swapped bool
}

// spares maps a queue folder to the folder its writes keep their spare temp files in
// (KeepSpares).
var spares sync.Map // folder -> folder

// KeepSpares makes the writes of the files of folder dir use a temp file made ahead of
// them, in folder keep, where each write makes the next one's once it is done, beside its
// caller: making a file is finding a free inode, which costs up to a millisecond on a file
// system that many files were removed from, and writing into one that is there costs none.
// A spare is always a new file, never one that stood at the file's path: a reader that
// still holds an older version open never sees it rewritten. keep is a folder that git
// never lists (the orchestrator's state), so that no stray file shows in the person's
// repository; on another file system than dir, where a file cannot be swapped across, it is
// not used. The loop asks for this for its own writes; a command that writes once does not.
func KeepSpares(dir, keep string) error {
	if err := os.MkdirAll(keep, 0o700); err != nil {
		return err
	}
	var a, b unix.Stat_t
	if err := unix.Stat(dir, &a); err != nil {
		return err
	}
	if err := unix.Stat(keep, &b); err != nil {
		return err
	}
	if a.Dev != b.Dev {
		spares.Delete(filepath.Clean(dir))
		return nil
	}
	spares.Store(filepath.Clean(dir), keep)
	return nil
}

// spareName is the temp file the writes of path keep between them (KeepSpares), or "".
func spareName(path string) string {
	keep, ok := spares.Load(filepath.Dir(path))
	if !ok {
		return ""
	}
	return filepath.Join(keep.(string), "."+filepath.Base(path)+".tmp-spare")
}

// sparing counts the spares being made beside their callers (tests wait for them).
var sparing sync.WaitGroup

// keepSpare is called, under the folder's lock, with the temp file that a write of path is
// done with: the version it displaced, which is removed, or its own when it did not swap (a
// spare it used stays one). A new spare is made beside the caller when path keeps one.
func keepSpare(path string, t *tempFile) {
	spare := spareName(path)
	if t.name == spare && !t.swapped {
		return
	}
	os.Remove(t.name)
	if spare == "" {
		return
	}
	sparing.Add(1)
	go func() {
		defer sparing.Done()
		ownfile.Make(spare, 0o600) // one that is there, which the next write may be using, stays
	}()
}

// openSpare opens the spare temp file of path (keepSpare) for writing, emptied; nil when
// there is none, or when what is there is not a plain file of its own (ownfile.Open, which
// removes it: the next write makes a new one).
func openSpare(path string) *os.File {
	spare := spareName(path)
	if spare == "" {
		return nil
	}
	f, err := ownfile.Open(spare, false, 0)
	if err != nil {
		return nil
	}
	return f
}

// writeTemp writes p to a temp file beside path (or to its spare, KeepSpares) with the
// given mode and fsyncs it.
func writeTemp(path string, p *patched, mode os.FileMode) (*tempFile, error) {
	f := openSpare(path)
	var err error
	if f == nil {
		if f, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"); err != nil {
			return nil, err
		}
	}
	var st unix.Stat_t
	err = writeAll(f, p, mode)
	if err == nil {
		err = unix.Fstat(int(f.Fd()), &st)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &tempFile{name: f.Name(), id: idOf(&st)}, nil
}

// compute parses src and applies the edits. It returns nil when nothing changes.
func compute(path string, src []byte, kind Kind, ids []string, edit EditFunc) (*patched, error) {
	d, err := parseCached(path, src, kind, ids)
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

// coarseClock bounds the granularity of file modification times on a local file system (the
// kernel stamps them from a clock that ticks every 1–10 ms).
const coarseClock = 15 * time.Millisecond
