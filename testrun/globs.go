package testrun

import (
	"path"
	"path/filepath"
	"strings"
)

// DefaultGlobs are the test file patterns used when config.yaml sets no test_globs: Go,
// Python, JavaScript/TypeScript and Rust test files. They are config.Default().TestGlobs.
var DefaultGlobs = []string{
	"**/*_test.go",
	"tests/**",
	"test/**",
	"**/test_*.py",
	"**/*_test.py",
	"**/*.test.ts",
	"**/*.test.js",
	"**/*.spec.ts",
	"**/*.spec.js",
	"**/tests/*.rs",
}

// IsTestFile reports whether a path, relative to the repository root, matches one of the
// globs. The globs have doublestar semantics: "/" separates path elements, "**" as a whole
// element matches any number of elements (none included), "*", "?" and "[...]" match within
// one element as in [path.Match], and "{a,b}" matches either alternative. A glob without
// "**" matches from the root only: "*.go" matches "x.go" but not "pkg/x.go".
func IsTestFile(p string, globs []string) bool {
	p = cleanPath(p)
	for _, g := range globs {
		if matchGlob(g, p) {
			return true
		}
	}
	return false
}

// matchGlob reports whether a slash-separated path matches one glob (see IsTestFile). A
// malformed glob matches nothing.
func matchGlob(glob, p string) bool {
	for _, g := range expandBraces(glob) {
		if matchParts(strings.Split(g, "/"), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

// cleanPath makes a path slash-separated and clean, without a leading "./".
func cleanPath(p string) string {
	p = path.Clean(filepath.ToSlash(p))
	return strings.TrimPrefix(p, "./")
}

func matchParts(glob, parts []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			// Collapse repeated **, then try every split.
			for len(glob) > 1 && glob[1] == "**" {
				glob = glob[1:]
			}
			if len(glob) == 1 {
				return true
			}
			for i := 0; i <= len(parts); i++ {
				if matchParts(glob[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, err := path.Match(glob[0], parts[0]); err != nil || !ok {
			return false
		}
		glob, parts = glob[1:], parts[1:]
	}
	return len(parts) == 0
}

// expandBraces expands the first {a,b} group of a glob, recursively, into the globs it
// stands for. A glob with unbalanced braces is returned as it is.
func expandBraces(glob string) []string {
	open := -1
	depth := 0
	for i := 0; i < len(glob); i++ {
		switch glob[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			var alts []string
			start, d := open+1, 0
			for j := open + 1; j < i; j++ {
				switch glob[j] {
				case '\\':
					j++
				case '{':
					d++
				case '}':
					d--
				case ',':
					if d == 0 {
						alts = append(alts, glob[start:j])
						start = j + 1
					}
				}
			}
			alts = append(alts, glob[start:i])
			var out []string
			for _, a := range alts {
				out = append(out, expandBraces(glob[:open]+a+glob[i+1:])...)
			}
			return out
		}
	}
	return []string{glob}
}
