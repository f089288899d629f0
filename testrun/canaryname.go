package testrun

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// Canary names (SPEC §7.6). Code in the run that rewrites the runner's report (an init
// function that filters the test binary's output, a conftest.py hook, a patched report
// class) can spare whatever it recognises as a canary, so that the canaries are reported
// as planted beside its forgery. Nothing of a canary's name is fixed: its token is a
// word drawn at random for the run, and its files and tests are named as the tests beside
// them are, from the words of their own names, with the token where a project's test would
// name what it tests. A forger that wants to spare the canaries must know the names of the
// project's tests it forges, which the canaries cannot help with; a forger that rewrites
// every failure fails them.

// Syllables of canary tokens: an onset, a vowel and an ending each, about 10.5 bits.
var (
	tokOnsets  = strings.Fields("b c d f g h k l m n p r s t v w z br cr dr gr pr tr st")
	tokVowels  = strings.Fields("a e i o u ai ea ou")
	tokEndings = append(strings.Fields("n r l s m t x"), "")
)

// tokenSyllables is the number of syllables of a token: about 31 bits, so that a token
// is never guessed, and never met by chance in what a project prints.
const tokenSyllables = 3

// NewCanary returns a Canary with a random token and message.
func NewCanary() Canary {
	var b [2*tokenSyllables + 3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	var tok strings.Builder
	for i := range tokenSyllables {
		n := int(binary.BigEndian.Uint16(b[2*i:]))
		tok.WriteString(tokOnsets[n%len(tokOnsets)])
		n /= len(tokOnsets)
		tok.WriteString(tokVowels[n%len(tokVowels)])
		n /= len(tokVowels)
		tok.WriteString(tokEndings[n%len(tokEndings)])
	}
	t := tok.String()
	x := b[2*tokenSyllables:]
	return Canary{Token: t, Message: fmt.Sprintf("%s(%d) = %d, want %d", t, x[0]%50, 50+int(x[1]), 306+int(x[2]))}
}

// WellFormed reports whether c is a canary NewCanary could have drawn: a token of
// lower-case letters, and a message of the form NewCanary writes, about that token.
func (c Canary) WellFormed() bool {
	if len(c.Token) < 2*tokenSyllables || len(c.Token) > 5*tokenSyllables {
		return false
	}
	for _, r := range c.Token {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	rest, ok := strings.CutPrefix(c.Message, c.Token)
	var a, b, d int
	if n, _ := fmt.Sscanf(rest, "(%d) = %d, want %d", &a, &b, &d); !ok || n != 3 {
		return false
	}
	return c.Message == fmt.Sprintf("%s(%d) = %d, want %d", c.Token, a, b, d)
}

// Holds reports whether s holds the canary's token, as a file, test or message of the
// canary writes it: lower-case, or with a capital first letter in a Go test's name.
func (c Canary) Holds(s string) bool {
	return c.Token != "" && (strings.Contains(s, c.Token) || strings.Contains(s, title(c.Token)))
}

// errTokenTaken says that the token of a canary is met in the project's tests already: a
// canary named after it could collide with one of them, or be taken for one.
var errTokenTaken = errors.New("the canary's token is used by the project's tests")

// title returns s with its first letter upper-case.
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// canaryWords are the words canaries are named from where the tests beside them give too
// few of their own.
var canaryWords = strings.Fields("basic empty values order limits defaults format parse round update lookup merge")

// pick returns one of words, chosen by the canary's token and by what the choice is for,
// so that the same canary names the same place the same way. It avoids the words of not
// when it can.
func (c Canary) pick(words []string, what string, not ...string) string {
	var left []string
	for _, w := range words {
		if !slices.Contains(not, w) {
			left = append(left, w)
		}
	}
	if len(left) == 0 {
		for _, w := range canaryWords {
			if !slices.Contains(not, w) {
				left = append(left, w)
			}
		}
	}
	h := sha256.Sum256([]byte(c.Token + "\x00" + what))
	return left[binary.BigEndian.Uint64(h[:8])%uint64(len(left))]
}

// canaryNames are the names of one pair of canaries: the word of the file, and the words of
// the test that must pass and the test that must fail.
type canaryNames struct{ file, pass, fail string }

// names draws the names of the canaries of a place (where) from the words of the project's
// tests there.
func (c Canary) names(words []string, where string) canaryNames {
	file := c.pick(words, where+"\x00file")
	pass := c.pick(words, where+"\x00pass")
	fail := c.pick(words, where+"\x00fail", pass)
	return canaryNames{file: file, pass: pass, fail: fail}
}

// wordRE matches the words of a test's name: runs of letters, a capital starting a new one.
var wordRE = lazyre.New(`[A-Z]?[a-z]+|[A-Z]+`)

// nameWords returns the lower-case words, of 3 to 12 letters, of the test names the
// pattern's first group finds in the files, and reports errTokenTaken when a file's name
// or text holds the token.
func (c Canary) nameWords(files []string, pattern *regexp.Regexp) ([]string, error) {
	var words []string
	for _, f := range files {
		if c.Holds(strings.ToLower(filepath.Base(f))) {
			return nil, errTokenTaken
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if c.Holds(strings.ToLower(string(b))) {
			return nil, errTokenTaken
		}
		for _, m := range pattern.FindAllSubmatch(b, -1) {
			words = append(words, splitWords(string(m[1]))...)
		}
	}
	slices.Sort(words)
	return slices.Compact(words), nil
}

// splitWords returns the lower-case words of 3 to 12 letters of a name.
func splitWords(name string) []string {
	var out []string
	for _, w := range wordRE().FindAllString(name, -1) {
		if len(w) < 3 || len(w) > 12 || !isLetters(w) {
			continue
		}
		out = append(out, strings.ToLower(w))
	}
	return out
}

func isLetters(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}
