package gate

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/orchestrator/orchestrator/testrun"
)

// skipDirs are folders a snapshot does not look into: version control, the orchestrator's
// own state, and dependency or build output that agents do not author.
var skipDirs = map[string]bool{
	".git": true, ".orchestrator": true, "node_modules": true, "target": true, "vendor": true,
	"__pycache__": true, ".pytest_cache": true, ".venv": true, ".mypy_cache": true,
}

// A FileState is what a snapshot knows of one file.
type FileState struct {
	Size  int64  `json:"size"`
	ModNS int64  `json:"mod_ns"`
	Hash  string `json:"hash,omitempty"` // only for files modified just before the snapshot
}

// A Snapshot records the repository's files before an attempt, so that the files the agent
// changed can be listed afterwards.
type Snapshot struct {
	Taken time.Time            `json:"taken"`
	Files map[string]FileState `json:"files"`
}

// coarse bounds the granularity of file modification times: a file modified less than this
// before the snapshot could be modified again with the same time, so it is hashed.
const coarse = 50 * time.Millisecond

// Take snapshots the files under root.
func Take(root string) (*Snapshot, error) {
	s := &Snapshot{Taken: time.Now(), Files: map[string]FileState{}}
	err := walk(root, func(rel string, info fs.FileInfo) error {
		st := FileState{Size: info.Size(), ModNS: info.ModTime().UnixNano()}
		if s.Taken.Sub(info.ModTime()) < coarse {
			st.Hash, _ = testrun.HashFile(filepath.Join(root, rel))
		}
		s.Files[rel] = st
		return nil
	})
	return s, err
}

// Changed lists the files under root that were added, modified or deleted since the
// snapshot, sorted, as slash-separated paths relative to root.
func (s *Snapshot) Changed(root string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	err := walk(root, func(rel string, info fs.FileInfo) error {
		seen[rel] = true
		before, ok := s.Files[rel]
		switch {
		case !ok, before.Size != info.Size():
			out = append(out, rel)
		case before.ModNS != info.ModTime().UnixNano():
			out = append(out, rel)
		case before.Hash != "":
			if h, _ := testrun.HashFile(filepath.Join(root, rel)); h != before.Hash {
				out = append(out, rel)
			}
		}
		return nil
	})
	for rel := range s.Files {
		if !seen[rel] {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out, err
}

// Save writes the snapshot as JSON (for a restarted orchestrator).
func (s *Snapshot) Save(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadSnapshot reads a snapshot saved by Save.
func LoadSnapshot(path string) (*Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func walk(root string, fn func(rel string, info fs.FileInfo) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // a file that vanished meanwhile
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), info)
	})
}
