// Package ownfile holds temp files that the orchestrator makes ahead of the writes that use
// them. Making a file is finding a free inode, which costs up to a millisecond on a file
// system that many files were removed from (ext4 passes over inodes freed in the last
// minute); writing into a file that is there costs none. So the writes on the path from an
// agent's marker to its task's status (its records, its verified mark, the queue) go into
// files made while the agent ran, or after the write before.
//
// A file made ahead waits under a fixed name, so what is found there is only written into
// when it is a plain file of its own, with one name, that this user owns: a link to another
// file, a folder or another user's file is removed and never written through.
package ownfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Make makes an empty file at path, to be written later (Open), unless something is there:
// one that a write may be using is never touched.
func Make(path string, perm os.FileMode) {
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm); err == nil {
		f.Close()
	}
}

// ErrNotOwn is what Open found at a path: not a plain file of its own. It removed it.
var ErrNotOwn = errors.New("not a plain file of its own")

// Open opens the file at path for writing, emptied. With create, a file that is not there is
// made (perm); without, Open fails with an error matching fs.ErrNotExist. What is there that
// is not a plain file of its own with one name, owned by this user, is removed: with create
// the file is then made anew, without the error matches ErrNotOwn.
func Open(path string, create bool, perm os.FileMode) (*os.File, error) {
	flags := os.O_WRONLY | unix.O_NOFOLLOW
	if create {
		flags |= os.O_CREATE
	}
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, flags, perm)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err == nil && own(f) {
			if err := f.Truncate(0); err != nil {
				f.Close()
				return nil, err
			}
			return f, nil
		}
		if err == nil {
			f.Close()
			err = fmt.Errorf("%s: %w", path, ErrNotOwn)
		} else {
			err = fmt.Errorf("%w: %w", ErrNotOwn, err) // a link (ELOOP), a folder, ...
		}
		// A link, another's file, or what cannot be opened for writing: it goes.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, rerr
		}
		if !create || try == 1 {
			return nil, err
		}
	}
}

// own reports whether f is a plain file with one name, owned by this process's user.
func own(f *os.File) bool {
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 && int(st.Uid) == os.Geteuid()
}
