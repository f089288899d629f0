package worktree

import (
	"bytes"
	"strings"
)

// Ignore rules as git reads them (Documentation/gitignore.txt), for staging a slot's
// working tree without a git process (stage.go): the patterns of .gitignore files, of the
// repository's info/exclude and of core.excludesFile, matched with git's own wildmatch.

// An ignoreList is the patterns of one file, in its order; base is the folder they are
// relative to, slash-separated, "" for the root or ending in "/".
type ignoreList struct {
	base     string
	patterns []ignorePattern
}

// An ignorePattern is one line of an ignore file, parsed as git's parse_path_pattern does.
type ignorePattern struct {
	glob     string // without its "!", its trailing "/" and, where it has a slash, its leading one
	negative bool   // "!": a match says not ignored
	dirOnly  bool   // a trailing "/": matches folders only
	basename bool   // no slash: matched against the last component of a path, at any depth
}

// parseIgnore parses the content of an ignore file of the folder base.
func parseIgnore(base string, b []byte) ignoreList {
	l := ignoreList{base: base}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // git skips a UTF-8 byte order mark
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i] // git reads each line as a C string
		}
		if p, ok := parsePattern(trimTrailingSpaces(string(line))); ok {
			l.patterns = append(l.patterns, p)
		}
	}
	return l
}

// trimTrailingSpaces drops the spaces at the end of a line that no backslash quotes (git's
// trim_trailing_spaces).
func trimTrailingSpaces(s string) string {
	last := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if last < 0 {
				last = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			last = -1
		default:
			last = -1
		}
	}
	if last >= 0 {
		return s[:last]
	}
	return s
}

// parsePattern parses one pattern; ok is false for one that matches nothing.
func parsePattern(s string) (p ignorePattern, ok bool) {
	if strings.HasPrefix(s, "!") {
		p.negative, s = true, s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.dirOnly, s = true, s[:len(s)-1]
	}
	p.basename = !strings.Contains(s, "/")
	if !p.basename {
		s = strings.TrimPrefix(s, "/")
	}
	p.glob = s
	return p, s != ""
}

// ignored reports whether the path (slash-separated, from the root of the working tree),
// a folder when dir, is ignored by lists, the first of which takes precedence: git asks
// the .gitignore files from the deepest folder up, then info/exclude, then
// core.excludesFile, and in each the last pattern that matches decides.
func ignored(lists []*ignoreList, path string, dir bool) bool {
	name := path[strings.LastIndexByte(path, '/')+1:]
	for _, l := range lists {
		for i := len(l.patterns) - 1; i >= 0; i-- {
			p := &l.patterns[i]
			if p.dirOnly && !dir {
				continue
			}
			var match bool
			if p.basename {
				match = wildmatch(p.glob, name, false)
			} else if rel, ok := strings.CutPrefix(path, l.base); ok {
				match = matchPathname(p.glob, rel)
			}
			if match {
				return !p.negative
			}
		}
	}
	return false
}

// matchPathname matches a pattern with a slash against a path from its file's folder as
// git's match_pathname does: the pattern's part before its first special byte is compared
// as it is, and wildmatch matches the rest against the rest of the path, so that a "**"
// right after that part begins the pattern wildmatch sees ("src/gen**/out" matches
// "src/genx/deep/out").
func matchPathname(glob, rel string) bool {
	prefix := strings.IndexAny(glob, "*?[\\")
	if prefix < 0 {
		return glob == rel
	}
	if !strings.HasPrefix(rel, glob[:prefix]) {
		return false
	}
	return wildmatch(glob[prefix:], rel[prefix:], true)
}

// The results of dowild.
const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

// wildmatch reports whether text matches pattern as git's wildmatch does, with WM_PATHNAME
// when pathname (a "*" or "?" never matches "/", and "**" between slashes matches any
// number of folders).
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

// dowild is git's dowild (wildmatch.c), byte for byte, without case folding.
func dowild(pat, text string, pathname bool) int {
	p, t := 0, 0
	at := func(s string, i int) byte { // C's NUL-terminated reads
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	for ; p < len(pat); p, t = p+1, t+1 {
		pc := pat[p]
		tc := at(text, t)
		if tc == 0 && pc != '*' {
			return wmAbortAll
		}
		switch pc {
		case '\\':
			p++
			if at(pat, p) != tc {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if at(pat, p) == '*' {
				prev := p - 2
				for p++; at(pat, p) == '*'; p++ {
				}
				switch {
				case !pathname:
					matchSlash = true
				case (prev < 0 || pat[prev] == '/') &&
					(p == len(pat) || pat[p] == '/' || (pat[p] == '\\' && at(pat, p+1) == '/')):
					if at(pat, p) == '/' && dowild(pat[p+1:], text[t:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				default:
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if p == len(pat) {
				// A trailing "**" matches everything, a trailing "*" only where no slash is left.
				if !matchSlash && strings.IndexByte(text[t:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			} else if !matchSlash && pat[p] == '/' {
				// One "*" and a slash match the rest of this folder's name.
				slash := strings.IndexByte(text[t:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				t += slash
				continue // the loop's step takes the slashes
			}
			for {
				if tc == 0 {
					break
				}
				// The text up to the literal after the star is the star's.
				if !globSpecial(pat[p]) {
					pc := pat[p]
					for tc = at(text, t); tc != 0 && (matchSlash || tc != '/'); tc = at(text, t) {
						if tc == pc {
							break
						}
						t++
					}
					if tc != pc {
						return wmNoMatch
					}
				}
				if matched := dowild(pat[p:], text[t:], pathname); matched != wmNoMatch {
					if !matchSlash || matched != wmAbortToStarStar {
						return matched
					}
				} else if !matchSlash && tc == '/' {
					return wmAbortToStarStar
				}
				t++
				tc = at(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			pc = at(pat, p)
			if pc == '^' {
				pc = '!'
			}
			negated := pc == '!'
			if negated {
				p++
				pc = at(pat, p)
			}
			var prev byte
			matched := false
			for {
				if pc == 0 {
					return wmAbortAll
				}
				switch {
				case pc == '\\':
					p++
					pc = at(pat, p)
					if pc == 0 {
						return wmAbortAll
					}
					if tc == pc {
						matched = true
					}
				case pc == '-' && prev != 0 && at(pat, p+1) != 0 && at(pat, p+1) != ']':
					p++
					pc = at(pat, p)
					if pc == '\\' {
						p++
						pc = at(pat, p)
						if pc == 0 {
							return wmAbortAll
						}
					}
					if tc <= pc && tc >= prev {
						matched = true
					}
					pc = 0 // prev becomes 0
				case pc == '[' && at(pat, p+1) == ':':
					p += 2
					s := p
					for pc = at(pat, p); pc != 0 && pc != ']'; pc = at(pat, p) {
						p++
					}
					if pc == 0 {
						return wmAbortAll
					}
					if i := p - s - 1; i < 0 || pat[p-1] != ':' {
						// No ":]": an ordinary "[" in the set.
						p, pc = s-2, '['
						if tc == pc {
							matched = true
						}
					} else {
						in, ok := charClass(pat[s:s+i], tc)
						if !ok {
							return wmAbortAll
						}
						if in {
							matched = true
						}
						pc = 0
					}
				default:
					if tc == pc {
						matched = true
					}
				}
				prev = pc
				p++
				pc = at(pat, p)
				if pc == ']' {
					break
				}
			}
			if matched == negated || (pathname && tc == '/') {
				return wmNoMatch
			}
			continue
		default:
			if tc != pc {
				return wmNoMatch
			}
			continue
		}
	}
	if t < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// globSpecial reports the bytes wildmatch gives a meaning (git's is_glob_special).
func globSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// charClass reports whether c is in the POSIX class named name ([:alpha:]), in the C
// locale; ok is false for a name that is none.
func charClass(name string, c byte) (in, ok bool) {
	upper, lower, digit := c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9'
	graph := c > ' ' && c < 0x7f
	switch name {
	case "alnum":
		return upper || lower || digit, true
	case "alpha":
		return upper || lower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < ' ' || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return graph, true
	case "lower":
		return lower, true
	case "print":
		return graph || c == ' ', true
	case "punct":
		return graph && !upper && !lower && !digit, true
	case "space": // git's own isspace: no vertical tab, no form feed
		return c == ' ' || c == '\t' || c == '\n' || c == '\r', true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F', true
	}
	return false, false
}
