package seal

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// An Audit remembers the record files an audit found sealed, by the file's identity and
// change time, so that an audit that runs again (the watch's runs after every attempt)
// reads and checks only the records written or changed since: without it, each audit read
// every record of the run, a cost that grew with each attempt (11 ms an attempt at 200
// tasks, 17 ms by the last).
//
// A file changed in any way has another change time, or another inode when one was renamed
// over it; neither can be set back by its owner. A file whose change time is less than
// racyWindow old is checked again all the same, since file times have a coarse clock: a
// write in the same tick as the check would keep the time. Only an audit (a report of
// edited records) may use it: a record read as evidence is checked each time it is read.
//
// The zero value is ready; a nil *Audit remembers nothing.
type Audit struct {
	mu   sync.Mutex
	good map[string]fileStamp
}

// racyWindow is how old a file's change time must be for its check to be remembered.
var racyWindow = time.Second

type fileStamp struct {
	dev, ino     uint64
	size         int64
	ctime, mtime int64
}

// stampOf returns the identity and times of the file at path; ok is false when they
// cannot be known. An error is the file's absence.
func stampOf(path string) (st fileStamp, ok bool, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}, false, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, false, nil
	}
	return fileStamp{
		dev: uint64(sys.Dev), ino: sys.Ino, size: sys.Size,
		ctime: time.Unix(sys.Ctim.Unix()).UnixNano(), mtime: time.Unix(sys.Mtim.Unix()).UnixNano(),
	}, true, nil
}

// Check returns verify's error for the record at path, or nil without calling it when
// there is no file at path, or when the file is as it was when verify last passed for it.
// A nil Audit checks every record that is there.
func (a *Audit) Check(path string, verify func() error) error {
	before, ok, err := stampOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no record: nothing edited
	}
	if a == nil {
		return verify()
	}
	a.mu.Lock()
	known, seen := a.good[path]
	a.mu.Unlock()
	if ok && seen && known == before {
		return nil
	}
	if err := verify(); err != nil {
		a.mu.Lock()
		delete(a.good, path)
		a.mu.Unlock()
		return err
	}
	after, ok2, _ := stampOf(path)
	if ok && ok2 && after == before && time.Since(time.Unix(0, before.ctime)) > racyWindow {
		a.mu.Lock()
		if a.good == nil {
			a.good = map[string]fileStamp{}
		}
		a.good[path] = before
		a.mu.Unlock()
	}
	return nil
}
