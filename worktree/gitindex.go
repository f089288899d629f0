package worktree

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"syscall"
	"time"
)

// The orchestrator reads and writes git's index itself where a git process would cost more
// than the work (SPEC §7.7 git overhead): the slot's checkout (checkout.go) and the tree of
// a candidate (writetree.go). The format is git's own (Documentation/gitformat-index.txt),
// versions 2 to 4, object names of either format; what the orchestrator does not handle
// (conflict stages, sparse or split indexes, entries marked assume-valid, skip-worktree or
// intent-to-add) is errUnhandled, and the caller asks git instead.

// errUnhandled is what readIndex returns for an index it leaves to git.
var errUnhandled = errors.New("index left to git")

// An indexEntry is one path of the index at stage 0: its object, its mode, and the stat
// data of its file when git or the orchestrator last looked at it.
type indexEntry struct {
	ctimeSec, ctimeNsec, mtimeSec, mtimeNsec uint32
	dev, ino, mode, uid, gid, size           uint32
	id                                       string // hex
	path                                     string
}

// A gitIndex is an index file as read: its entries in its order (by path), the cache of
// tree names (nil when it has none) and the file's modification time, against which an
// entry's is racy (racy).
type gitIndex struct {
	entries []indexEntry
	tree    *cacheTree
	mtime   time.Time
	raw     []byte // the file's bytes
}

// A cacheTree is one node of the index's TREE extension: a folder (name is its last
// component, "" for the root), the number of index entries under it and its tree's object
// name, or count -1 when a change since invalidated it.
type cacheTree struct {
	name  string
	count int
	id    string
	subs  []*cacheTree
}

const (
	flagAssumeValid = 0x8000
	flagExtended    = 0x4000
	flagStage       = 0x3000
	flagNameMask    = 0x0fff
)

// newHash returns the hash of the object format of a name of size bytes.
func newHash(size int) hash.Hash {
	if size == 32 {
		return sha256.New()
	}
	return sha1.New()
}

// readIndex reads the index file at path of a repository whose object names are size bytes.
func readIndex(path string, size int) (*gitIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	idx, err := parseIndex(b, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	idx.mtime, idx.raw = fi.ModTime(), b
	return idx, nil
}

// parseIndex parses the bytes of an index file.
func parseIndex(b []byte, size int) (*gitIndex, error) {
	if len(b) < 12+size {
		return nil, errors.New("index too short")
	}
	body, sum := b[:len(b)-size], b[len(b)-size:]
	if !allZero(sum) { // index.skipHash writes zeros
		h := newHash(size)
		h.Write(body)
		if !bytes.Equal(h.Sum(nil), sum) {
			return nil, errors.New("index checksum does not match")
		}
	}
	if string(body[:4]) != "DIRC" {
		return nil, errors.New("not an index file")
	}
	version := binary.BigEndian.Uint32(body[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d: %w", version, errUnhandled)
	}
	n := int(binary.BigEndian.Uint32(body[8:]))
	idx := &gitIndex{entries: make([]indexEntry, 0, min(n, len(body)/62))}
	off := 12
	fixed := 40 + size + 2
	prev := ""
	for i := 0; i < n; i++ {
		start := off
		if len(body) < off+fixed {
			return nil, errors.New("index entry cut short")
		}
		var e indexEntry
		u := func(k int) uint32 { return binary.BigEndian.Uint32(body[off+4*k:]) }
		e.ctimeSec, e.ctimeNsec, e.mtimeSec, e.mtimeNsec = u(0), u(1), u(2), u(3)
		e.dev, e.ino, e.mode, e.uid, e.gid, e.size = u(4), u(5), u(6), u(7), u(8), u(9)
		e.id = hex.EncodeToString(body[off+40 : off+40+size])
		flags := binary.BigEndian.Uint16(body[off+40+size:])
		off += fixed
		if flags&(flagAssumeValid|flagStage) != 0 {
			return nil, errUnhandled
		}
		if flags&flagExtended != 0 {
			if version < 3 || len(body) < off+2 {
				return nil, errors.New("index entry cut short")
			}
			if binary.BigEndian.Uint16(body[off:]) != 0 { // skip-worktree, intent-to-add
				return nil, errUnhandled
			}
			off += 2
		}
		if version == 4 {
			strip, k := varint(body[off:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, errors.New("index entry name unreadable")
			}
			off += k
			nul := bytes.IndexByte(body[off:], 0)
			if nul < 0 {
				return nil, errors.New("index entry name unreadable")
			}
			e.path = prev[:len(prev)-int(strip)] + string(body[off:off+nul])
			off += nul + 1
		} else {
			nul := bytes.IndexByte(body[off:], 0)
			if nul < 0 {
				return nil, errors.New("index entry name unreadable")
			}
			if l := int(flags & flagNameMask); l != flagNameMask && l != nul {
				return nil, errors.New("index entry name length does not match")
			}
			e.path = string(body[off : off+nul])
			// Each entry is padded with 1 to 8 NULs to a multiple of eight bytes.
			hdr := off - start
			off = start + (hdr+nul+8)&^7
			if off > len(body) {
				return nil, errors.New("index entry cut short")
			}
		}
		if e.path == "" || (i > 0 && e.path <= prev) {
			return nil, errors.New("index entries out of order")
		}
		prev = e.path
		idx.entries = append(idx.entries, e)
	}
	for off < len(body) {
		if len(body) < off+8 {
			return nil, errors.New("index extension cut short")
		}
		sig, n := string(body[off:off+4]), int(binary.BigEndian.Uint32(body[off+4:]))
		off += 8
		if n < 0 || len(body) < off+n {
			return nil, errors.New("index extension cut short")
		}
		data := body[off : off+n]
		off += n
		switch {
		case sig == "TREE":
			t, rest, err := parseCacheTree(data, size)
			if err != nil {
				return nil, err
			}
			if len(rest) != 0 {
				return nil, errors.New("index TREE extension unreadable")
			}
			idx.tree = t
		case sig[0] >= 'A' && sig[0] <= 'Z':
			// Optional: ignored, and not written again.
		default:
			return nil, fmt.Errorf("index extension %q: %w", sig, errUnhandled)
		}
	}
	return idx, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// varint decodes git's offset encoding of an index v4 name's strip length; k is 0 when b
// holds none.
func varint(b []byte) (v uint64, k int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 127)
	k = 1
	for c&128 != 0 {
		if k >= len(b) || k > 9 {
			return 0, 0
		}
		v++
		c = b[k]
		v = v<<7 + uint64(c&127)
		k++
	}
	return v, k
}

// parseCacheTree parses one node of a TREE extension and its subtrees, returning the rest.
func parseCacheTree(b []byte, size int) (*cacheTree, []byte, error) {
	bad := errors.New("index TREE extension unreadable")
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, nil, bad
	}
	t := &cacheTree{name: string(b[:nul])}
	b = b[nul+1:]
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, nil, bad
	}
	count, subs, ok := bytes.Cut(b[:nl], []byte(" "))
	if !ok {
		return nil, nil, bad
	}
	var err error
	if t.count, err = strconv.Atoi(string(count)); err != nil {
		return nil, nil, bad
	}
	n, err := strconv.Atoi(string(subs))
	if err != nil || n < 0 || n > len(b) {
		return nil, nil, bad
	}
	b = b[nl+1:]
	if t.count >= 0 {
		if len(b) < size {
			return nil, nil, bad
		}
		t.id = hex.EncodeToString(b[:size])
		b = b[size:]
	}
	for range n {
		var sub *cacheTree
		if sub, b, err = parseCacheTree(b, size); err != nil {
			return nil, nil, err
		}
		t.subs = append(t.subs, sub)
	}
	return t, b, nil
}

// encode writes the index: version 2, entries as given (sorted by path), the cache of
// tree names when there is one, and the checksum.
func (idx *gitIndex) encode(size int) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("DIRC")
	b.Write(binary.BigEndian.AppendUint32(nil, 2))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(idx.entries))))
	fixed := 40 + size + 2
	for _, e := range idx.entries {
		id, err := hexID(e.id, size)
		if err != nil {
			return nil, err
		}
		var h []byte
		for _, v := range []uint32{e.ctimeSec, e.ctimeNsec, e.mtimeSec, e.mtimeNsec, e.dev, e.ino, e.mode, e.uid, e.gid, e.size} {
			h = binary.BigEndian.AppendUint32(h, v)
		}
		h = append(h, id...)
		h = binary.BigEndian.AppendUint16(h, uint16(min(len(e.path), flagNameMask)))
		b.Write(h)
		b.WriteString(e.path)
		b.Write(make([]byte, (fixed+len(e.path)+8)&^7-fixed-len(e.path)))
	}
	if idx.tree != nil {
		var t bytes.Buffer
		if err := idx.tree.encode(&t, size); err != nil {
			return nil, err
		}
		b.WriteString("TREE")
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(t.Len())))
		b.Write(t.Bytes())
	}
	h := newHash(size)
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	return b.Bytes(), nil
}

func (t *cacheTree) encode(b *bytes.Buffer, size int) error {
	fmt.Fprintf(b, "%s\x00%d %d\n", t.name, t.count, len(t.subs))
	if t.count >= 0 {
		id, err := hexID(t.id, size)
		if err != nil {
			return err
		}
		b.Write(id)
	}
	for _, s := range t.subs {
		if err := s.encode(b, size); err != nil {
			return err
		}
	}
	return nil
}

// hexID decodes an object name of size bytes.
func hexID(id string, size int) ([]byte, error) {
	if b, err := hex.DecodeString(id); err == nil && len(b) == size {
		return b, nil
	}
	return nil, fmt.Errorf("%q is not an object name", id)
}

// statOf returns the entry's stat data for the file fi describes (from os.Lstat).
func statOf(fi os.FileInfo) (e indexEntry, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return e, false
	}
	e.ctimeSec, e.ctimeNsec = uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec)
	e.mtimeSec, e.mtimeNsec = uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	e.dev, e.ino, e.uid, e.gid, e.size = uint32(st.Dev), uint32(st.Ino), st.Uid, st.Gid, uint32(st.Size)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		e.mode = 0o120000
	case fi.Mode().IsRegular() && fi.Mode()&0o100 != 0:
		e.mode = 0o100755
	case fi.Mode().IsRegular():
		e.mode = 0o100644
	default:
		return e, false
	}
	return e, true
}

// sameStat reports whether the file now has the stat data the entry recorded: times to the
// nanosecond (the change time too, which nobody can set back), inode, device, owner, size
// and kind. What git compares, and at least as strictly.
func (e *indexEntry) sameStat(now indexEntry) bool {
	return e.ctimeSec == now.ctimeSec && e.ctimeNsec == now.ctimeNsec &&
		e.mtimeSec == now.mtimeSec && e.mtimeNsec == now.mtimeNsec &&
		e.dev == now.dev && e.ino == now.ino && e.uid == now.uid && e.gid == now.gid &&
		e.size == now.size && e.mode == now.mode
}

// racy reports whether the entry's file may have changed after it was looked at without
// its stat data showing it: it was modified no earlier than the index was written (git's
// "racily clean" entries, whose content is compared instead).
func (idx *gitIndex) racy(e *indexEntry) bool {
	m := time.Unix(int64(e.mtimeSec), int64(e.mtimeNsec))
	return !m.Before(idx.mtime)
}
