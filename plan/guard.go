package plan

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// A fileState is what says that a file was not touched: its inode, size, mode and change
// time. The change time moves with every write, chmod, rename or link, and no program can set
// it back (touch -d sets the modification time only), so a planner cannot hide a write.
type fileState struct {
	ino, size   uint64
	mode        uint32
	ctimeSec    int64
	ctimeNsec   int64
	mtimeSec    int64
	mtimeNsec   int64
	isDir, link bool
}

// A snapshot lists the files of a tree with their state.
type snapshot map[string]fileState

// takeSnapshot lists the tree at root, but for the folders in skip (the run's own records,
// which the orchestrator writes while the agent runs) and git's index, which a `git status`
// refreshes.
func takeSnapshot(root string, skip []string) snapshot {
	s := snapshot{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile or unreadable: the next listing says so
		}
		if d.IsDir() && slices.Contains(skip, path) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if rel == filepath.Join(".git", "index") {
			return nil
		}
		info, err := os.Lstat(path)
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		s[rel] = fileState{
			ino: st.Ino, size: uint64(st.Size), mode: st.Mode,
			ctimeSec: st.Ctim.Sec, ctimeNsec: st.Ctim.Nsec, mtimeSec: st.Mtim.Sec, mtimeNsec: st.Mtim.Nsec,
			isDir: d.IsDir(), link: d.Type()&fs.ModeSymlink != 0,
		}
		return nil
	})
	return s
}

// changed returns the paths that were added, removed or changed between before and after,
// sorted. A folder counts as changed only when it was added or removed (its entries say the
// rest).
func changed(before, after snapshot) []string {
	var out []string
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, p)
		case a.isDir && b.isDir:
		case a != b:
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
