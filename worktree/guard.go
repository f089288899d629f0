package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A ConfigPrint is a fingerprint of the repository's own configuration, the files that
// change what git does in it (SPEC §15.2 item 4): .git/config (and config.worktree),
// info/attributes, the hooks folder and the folder core.hooksPath names. It maps each file
// (by the name people know it by) to a hash of its content and mode; a folder's files are
// listed one by one.
type ConfigPrint map[string]string

// ConfigPrint fingerprints the repository's own configuration now.
func (r *Repo) ConfigPrint(ctx context.Context) (ConfigPrint, error) {
	p := ConfigPrint{}
	files := []string{
		filepath.Join(r.Common, "config"),
		filepath.Join(r.Common, "config.worktree"),
		filepath.Join(r.gitDir, "config.worktree"),
		filepath.Join(r.Common, "info", "attributes"),
	}
	for _, f := range files {
		if err := r.prints.add(p, r.Root, f); err != nil {
			return nil, err
		}
	}
	dirs := []string{filepath.Join(r.Common, "hooks")}
	// core.hooksPath as the person's git reads it (the orchestrator's own commands set it
	// to /dev/null on their command line, which is left out).
	// A configuration git cannot read is left to the files' fingerprints to show.
	entries, _ := readConfig(ctx, r.Root, nil)
	hooks := ""
	for _, e := range entries {
		if e.key == "core.hookspath" && e.file != "" {
			hooks = e.value
		}
	}
	if d := strings.TrimSpace(hooks); d != "" {
		if strings.HasPrefix(d, "~/") {
			if home, err := os.UserHomeDir(); err == nil {
				d = filepath.Join(home, d[2:])
			}
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.Root, d)
		}
		dirs = append(dirs, d)
		p["core.hooksPath"] = d
	}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if e.IsDir() {
				return nil
			}
			return r.prints.add(p, r.Root, path)
		})
		if err != nil {
			return nil, fmt.Errorf("fingerprint %s: %w", d, err)
		}
	}
	return p, nil
}

// printCache remembers the hash of each file ConfigPrint read, with the file's stamp then
// (device, inode, size, mode, modification and change times): the hooks folder alone is a
// dozen files, and the loop fingerprints the configuration twice per attempt. A file whose
// change time is within racyWindow of its reading is read again next time, as git's index
// does with a racily clean file: a second write in the same tick of the clock would leave
// its stamp as it was.
type printCache struct {
	mu sync.Mutex
	m  map[string]printed
}

type printed struct{ stamp, sum string }

// racyWindow is how old a file's change time must be for its hash to be remembered.
var racyWindow = time.Second

// add records the file at path in the fingerprint p, under its name relative to root when
// it is inside it. A file that does not exist is not recorded.
func (c *printCache) add(p ConfigPrint, root, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	name := path
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		name = rel
	}
	stamp, changed, stamped := fileStamp(fi)
	c.mu.Lock()
	known, ok := c.m[path]
	c.mu.Unlock()
	if stamped && ok && known.stamp == stamp {
		p[name] = known.sum
		return nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%v\x00", fi.Mode())
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		io.WriteString(h, target)
	case fi.Mode().IsRegular():
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	p[name] = sum
	if stamped && time.Since(changed) > racyWindow {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]printed{}
		}
		c.m[path] = printed{stamp, sum}
		c.mu.Unlock()
	}
	return nil
}

// Changed lists what differs from p in now: files changed, added or removed, by name.
func (p ConfigPrint) Changed(now ConfigPrint) []string {
	var out []string
	for name, sum := range p {
		got, ok := now[name]
		switch {
		case !ok:
			out = append(out, name+" (removed)")
		case got != sum && name == "core.hooksPath":
			out = append(out, "core.hooksPath (now "+got+")")
		case got != sum:
			out = append(out, name+" (changed)")
		}
	}
	for name := range now {
		if _, ok := p[name]; !ok {
			out = append(out, name+" (added)")
		}
	}
	slices.Sort(out)
	return out
}

// A ConfigChangedError means the repository's own configuration changed while an attempt
// ran, or its gate did (SPEC §15.2 item 4): git commands the person runs later would run
// what was put there. The run stops (exit 2).
type ConfigChangedError struct {
	// During says when: "attempt 2 of TASK-001", say.
	During string
	// Paths names what changed, each with how.
	Paths []string
}

func (e *ConfigChangedError) Error() string {
	return fmt.Sprintf("the repository's own configuration changed during %s: %s; the run stops so that a person looks at it (git commands run there would run what was put there)",
		e.During, strings.Join(e.Paths, ", "))
}

// A CheckoutError means a file of a checkout the orchestrator made is not the commit's
// blob: a filter, an attribute or a process changed it (SPEC §7.6). The run stops (exit 2).
type CheckoutError struct {
	Commit string
	// Path is the file, relative to the checkout; Why says how it differs.
	Path, Why string
}

func (e *CheckoutError) Error() string {
	return fmt.Sprintf("the gate's checkout of %.12s is not the commit: %s %s; the run stops (a filter or attribute in the repository's configuration may rewrite files)", e.Commit, e.Path, e.Why)
}

// CheckCheckout checks that every file of the slot's working tree that commit tracks holds
// the commit's bytes: its git blob hash, computed here from the bytes on disk, is the one
// the commit's tree names (a symbolic link's target for a link). The first file that differs is
// a *CheckoutError.
//
// A file an earlier check of the slot found holding the same blob is not read again when
// nothing of its status changed since: not its inode, size or modification time, nor its
// change time, which the kernel sets on every write, rename or link and no process can set
// back. So a reset that leaves most files alone costs a stat of those, not a hash.
func (s *Slot) CheckCheckout(ctx context.Context, commit string) error {
	if err := s.made(); err != nil {
		return err
	}
	format, err := s.repo.objectFormat(ctx)
	if err != nil {
		return err
	}
	files, err := s.repo.listTree(ctx, commit)
	if err != nil {
		return err
	}
	for _, tf := range files {
		if tf.kind != "blob" {
			continue // a submodule's commit: not ours to check
		}
		mode, want, path := tf.mode, tf.id, tf.path
		full := filepath.Join(s.Dir, filepath.FromSlash(path))
		var data []byte
		fi, err := os.Lstat(full)
		if err == nil {
			if c, ok := s.checked[path]; ok && c.blob == want {
				if st, ok := statusOf(fi); ok && c.stat == st {
					continue
				}
			}
		}
		switch {
		case err != nil:
			return &CheckoutError{Commit: commit, Path: path, Why: "is missing"}
		case mode == "120000":
			if fi.Mode()&fs.ModeSymlink == 0 {
				return &CheckoutError{Commit: commit, Path: path, Why: "is not a symbolic link"}
			}
			target, err := os.Readlink(full)
			if err != nil {
				return err
			}
			data = []byte(target)
		case !fi.Mode().IsRegular():
			return &CheckoutError{Commit: commit, Path: path, Why: "is not a plain file"}
		default:
			if data, err = os.ReadFile(full); err != nil {
				return err
			}
		}
		if got := blobHash(format, data); got != want {
			delete(s.checked, path)
			return &CheckoutError{Commit: commit, Path: path, Why: fmt.Sprintf("differs from its blob (%.12s on disk, %.12s in the commit)", got, want)}
		}
		if st, ok := statusOf(fi); ok {
			if s.checked == nil {
				s.checked = make(map[string]checkedFile, len(files))
			}
			s.checked[path] = checkedFile{blob: want, stat: st}
		}
	}
	return nil
}

// A checkedFile is a file CheckCheckout found holding its blob.
type checkedFile struct {
	blob string
	stat fileStatus
}

// fileStatus is what a file's status says of its bytes having changed: any write, rename,
// link or change of mode sets its change time.
type fileStatus struct {
	dev, ino     uint64
	size         int64
	mode         fs.FileMode
	mtime, ctime syscall.Timespec
}

// statusOf returns the status of fi, false where the system does not tell its change time.
func statusOf(fi fs.FileInfo) (fileStatus, bool) {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStatus{}, false
	}
	return fileStatus{dev: uint64(sys.Dev), ino: sys.Ino, size: fi.Size(), mode: fi.Mode(), mtime: sys.Mtim, ctime: sys.Ctim}, true
}

// objectFormat returns the repository's hash, sha1 or sha256.
func (r *Repo) objectFormat(ctx context.Context) (string, error) {
	if r.format == "" {
		out, err := r.git(ctx, r.Root, nil, "rev-parse", "--show-object-format")
		if err != nil {
			return "", err
		}
		r.format = strings.TrimSpace(out)
	}
	return r.format, nil
}

// blobHash returns git's object name of a blob holding data: the hash of
// "blob <len>\0<data>".
func blobHash(format string, data []byte) string {
	size := 20
	if format == "sha256" {
		size = 32
	}
	return objectName(size, "blob", data)
}
