package tdd

// What an implementer is shown of its cycle (SPEC §10.2): its own AC's text, tests and
// RED output, with nothing of the other ACs.

import (
	"strings"

	"github.com/orchestrator/orchestrator/gate"
)

// Scrub drops the lines of s that hold one of ids (an AC's ID, or the token its tests are
// named after, TestToken) as a word, or one of texts (the other ACs' texts, those of 12 characters
// or more, compared without case and spacing), or a line of 20 characters or more that is
// part of one of them.
func Scrub(s string, texts, ids []string) string {
	if s == "" {
		return s
	}
	var tokens []string
	for _, id := range ids {
		// The token of its tests' names stands alone in pytest's test_ac_x_1, but is glued
		// to the prefix in Go's TestAC_X_1.
		tokens = append(tokens, strings.ToLower(id), TestToken(id), "test"+TestToken(id))
	}
	norm := func(x string) string { return strings.Join(strings.Fields(strings.ToLower(x)), " ") }
	var others []string
	for _, t := range texts {
		if n := norm(t); len(n) >= 12 {
			others = append(others, n)
		}
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, line := range lines {
		if !holdsAny(strings.ToLower(line), norm(strings.Trim(line, " \t#/*\"'`-")), tokens, others) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// holdsAny reports whether a line (low: lower-cased; n: normalised) holds one of tokens as
// a word or one of others, or is a long part of one of others.
func holdsAny(low, n string, tokens, others []string) bool {
	for _, tok := range tokens {
		if containsWord(low, tok) {
			return true
		}
	}
	for _, o := range others {
		if strings.Contains(n, o) || len(n) >= 20 && strings.Contains(o, n) {
			return true
		}
	}
	return false
}

// RedactIDs writes "[another AC]" for each of ids in s: an AC's text that refers to
// another keeps its own words and loses the reference.
func RedactIDs(s string, ids []string) string {
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "[another AC]")
	}
	return s
}

// containsWord reports whether tok occurs in s not inside a longer word or number.
func containsWord(s, tok string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(tok)
		if (j == 0 || !alnum(s[j-1])) && (end == len(s) || !alnum(s[end])) {
			return true
		}
		i = j + 1
	}
}

func alnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// BareNames returns the test names of test IDs: TestX of pkg.TestX, test_x of
// file::test_x, the title of file > title; without a subtest or a parameter.
func BareNames(ids []string) []string {
	var out []string
	for _, id := range ids {
		name := id
		switch {
		case strings.Contains(name, "::"):
			name = name[strings.LastIndex(name, "::")+2:]
		case strings.Contains(name, " > "):
			name = name[strings.LastIndex(name, " > ")+3:]
		default:
			if i := strings.LastIndex(name, "."); i >= 0 && strings.HasPrefix(name[i+1:], "Test") {
				name = name[i+1:]
			}
		}
		if i := strings.IndexAny(name, "[/"); i > 0 {
			name = name[:i]
		}
		out = append(out, name)
	}
	return out
}

// RedOutput returns the RED output of the tests ids of the RED hand-off m: their own
// outputs when the runner reported them, else (the build failed before any test ran) the
// run's output.
func RedOutput(m *gate.Manifest, ids []string) string {
	var parts []string
	for _, id := range ids {
		if out := m.Outputs[id]; out != "" {
			parts = append(parts, "--- "+id+"\n"+strings.TrimRight(out, "\n"))
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n") + "\n"
	}
	return m.RunnerOutput
}
