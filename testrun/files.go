package testrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// skipDirs are folders TestFiles does not enter, wherever they are.
var skipDirs = map[string]bool{
	".git": true, "node_modules": true, ".orchestrator": true, "target": true, "vendor": true,
}

// TestFiles walks root and returns the files that match globs (see IsTestFile), relative to
// root with slashes, sorted. It does not enter .git, node_modules, .orchestrator, target or
// vendor folders, nor follow symbolic links to folders.
func TestFiles(root string, globs []string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if IsTestFile(rel, globs) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find test files: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// HashFiles returns the SHA-256 of each file (relative to root), in hex, by the name given.
// A file that cannot be read is an error that wraps the cause (fs.ErrNotExist for a file
// that is gone).
func HashFiles(root string, files []string) (map[string]string, error) {
	sums := make(map[string]string, len(files))
	for _, f := range files {
		sum, err := HashFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("hash test file: %w", err)
		}
		sums[f] = sum
	}
	return sums, nil
}

// HashFile returns the SHA-256 of a file's content, in hex.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
