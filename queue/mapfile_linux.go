package queue

import (
	"os"

	"golang.org/x/sys/unix"
)

// MapFile gives the bytes of a queue file for a command that only reads them, such as
// validate, without copying a large file: it maps the file into memory. A process that
// opens the file to write or truncate it meanwhile waits (up to the kernel's lease break
// time) until release is called, because MapFile holds a read lease on it; so the mapped
// pages cannot vanish under a reader. When the file is small, or cannot be leased (it is
// open for writing, belongs to another user, or its file system has no leases), MapFile
// reads it as ReadFile does. The bytes must not be used after release.
func MapFile(path string) (src []byte, release func(), err error) {
	read := func() ([]byte, func(), error) {
		src, err := ReadFile(path)
		return src, func() {}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || st.Size() < parallelMin || !st.Mode().IsRegular() {
		f.Close()
		return read()
	}
	fd := uintptr(f.Fd())
	if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		f.Close()
		return read()
	}
	unlease := func() {
		unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
		f.Close()
	}
	// The size now, under the lease: the file may have changed before it was taken.
	if st, err = f.Stat(); err == nil && st.Size() > 0 && st.Size() <= maxSize {
		src, err = unix.Mmap(int(fd), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	if err != nil || src == nil {
		unlease()
		return read()
	}
	return src, func() {
		unix.Munmap(src)
		unlease()
	}, nil
}
