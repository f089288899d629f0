package prompts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// readFiles checks every path in in.Include and then reads them, in the order given. The
// checks come first so that a refused path stops the prompt before any file is read.
func readFiles(in Input) ([]File, error) {
	if len(in.Include) == 0 {
		return nil, nil
	}
	allowed := make(map[string]bool, len(in.Allowlist))
	for _, p := range in.Allowlist {
		allowed[p] = true
	}
	for _, p := range in.Include {
		if err := checkPath(p, allowed); err != nil {
			return nil, err
		}
	}
	if in.Root == "" {
		return nil, errors.New("files to include, but no repository root to read them from")
	}
	realRoot, err := filepath.EvalSymlinks(in.Root)
	if err != nil {
		return nil, fmt.Errorf("repository root: %w", err)
	}
	// Read through an os.Root as well as checking resolved paths: it refuses to follow a
	// symlink out of the root even if one appears between the check and the read.
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, fmt.Errorf("repository root: %w", err)
	}
	defer root.Close()

	out := make([]File, 0, len(in.Include))
	for _, p := range in.Include {
		if err := checkResolved(realRoot, p); err != nil {
			return nil, err
		}
		content, err := readFile(root, p)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: p, Content: content})
	}
	return out, nil
}

// checkPath refuses, by its text alone, a path that is empty, absolute, climbs out with
// "..", or is not on the allowlist exactly as written.
func checkPath(p string, allowed map[string]bool) error {
	native := filepath.FromSlash(p)
	switch {
	case p == "":
		return &NotAllowedError{Path: p, Reason: "empty path"}
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(native) || filepath.VolumeName(native) != "":
		return &NotAllowedError{Path: p, Reason: "absolute path; includes are relative to the repository root"}
	case !filepath.IsLocal(native):
		return &NotAllowedError{Path: p, Reason: "path leaves the repository root"}
	case !allowed[p]:
		return &NotAllowedError{Path: p, Reason: "not on the allowlist"}
	}
	return nil
}

// checkResolved refuses a path whose symlinks, resolved, lead out of the root.
func checkResolved(realRoot, p string) error {
	resolved, err := filepath.EvalSymlinks(filepath.Join(realRoot, filepath.FromSlash(p)))
	if err != nil {
		return fmt.Errorf("include %q: %w", p, err)
	}
	rel, err := filepath.Rel(realRoot, resolved)
	if err != nil || !filepath.IsLocal(rel) {
		return &NotAllowedError{Path: p, Reason: "symlink leads out of the repository root"}
	}
	return nil
}

// readFile reads one included file, which must be a regular file holding UTF-8 text: a
// prompt is text, and a device or a FIFO could block the read forever. A file longer than
// MaxValue gives its first MaxValue bytes and a note of how many were cut.
func readFile(root *os.Root, p string) (string, error) {
	// O_NONBLOCK: opening a FIFO would otherwise block until something writes to it. Checking
	// the opened file, not the path, leaves no gap in which the path could be swapped.
	f, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("include %q: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("include %q: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("include %q: not a regular file", p)
	}
	// No more than MaxValue bytes go into the prompt, so no more are read.
	b, err := io.ReadAll(io.LimitReader(f, MaxValue+1))
	if err != nil {
		return "", fmt.Errorf("include %q: %w", p, err)
	}
	cut := int64(0)
	if len(b) > MaxValue {
		keep := runeStart(b, MaxValue)
		cut = max(fi.Size(), int64(len(b))) - int64(keep)
		b = b[:keep]
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("include %q: not UTF-8 text", p)
	}
	content := string(b)
	if cut > 0 {
		if !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		content += cutNote(int(cut)) + "\n"
	}
	return content, nil
}
