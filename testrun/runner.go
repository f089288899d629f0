package testrun

import (
	"path"
	"strings"
)

// A Runner names a test runner whose output Run can read.
type Runner string

// The runners Detect knows. Exit stands for any other command, judged by its exit code only.
const (
	Go     Runner = "go"
	Pytest Runner = "pytest"
	Vitest Runner = "vitest"
	Jest   Runner = "jest"
	Cargo  Runner = "cargo"
	Exit   Runner = "exit"
)

// Detect names the runner of a test command line: "go test ./..." is Go, "pytest -q tests/",
// "python3 -m pytest" and "/usr/bin/python3 -m pytest" are Pytest, "npx vitest run" is Vitest,
// "npx jest" is Jest, "cargo test" is Cargo, and anything else is Exit. It reads the line as a
// shell would, one simple command at a time ("cd app && go test ./..." is Go), skipping
// variable assignments and wrappers such as env, time, npx, pnpm exec, uv run and poetry run.
// The first simple command that runs a known runner decides.
func Detect(command string) Runner {
	sites := findSites(lex(command))
	if len(sites) == 0 {
		return Exit
	}
	return sites[0].runner
}

// A word is one token of a shell command line.
type word struct {
	text       string // the word with its quotes removed
	start, end int    // its bytes in the command line
	op         bool   // a control operator: && || ; | |& & ( ) or a newline
	redir      bool   // a redirection operator (>, 2>&1, <) or its target
}

// lex splits a shell command line into words and control operators. It knows quotes,
// backslashes, comments and redirections; it expands nothing.
func lex(s string) []word {
	var words []word
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2 // a line continuation
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\n' || c == ';' || c == '(' || c == ')':
			words = append(words, word{text: s[i : i+1], start: i, end: i + 1, op: true})
			i++
		case c == '&' || c == '|':
			n := 1
			if i+1 < len(s) && (s[i+1] == c || (c == '|' && s[i+1] == '&')) {
				n = 2
			}
			words = append(words, word{text: s[i : i+n], start: i, end: i + n, op: true})
			i += n
		case c == '<' || c == '>':
			i = lexRedirect(s, i, i, &words)
		default:
			start := i
			var b strings.Builder
			digits := true
		loop:
			for i < len(s) {
				c := s[i]
				switch c {
				case ' ', '\t', '\r', '\n', ';', '&', '|', '(', ')':
					break loop
				case '<', '>':
					if digits && b.Len() > 0 {
						// "2>&1": the digits belong to the redirection.
						i = lexRedirect(s, start, i, &words)
						b.Reset()
						start = -1
					}
					break loop
				case '\'':
					j := strings.IndexByte(s[i+1:], '\'')
					if j < 0 {
						j = len(s) - i - 1
					}
					b.WriteString(s[i+1 : i+1+j])
					i += j + 2
				case '"':
					i++
					for i < len(s) && s[i] != '"' {
						if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
							i++
						}
						b.WriteByte(s[i])
						i++
					}
					i++
				case '\\':
					if i+1 < len(s) && s[i+1] != '\n' { // backslash-newline joins lines
						b.WriteByte(s[i+1])
					}
					i += 2
				default:
					b.WriteByte(c)
					i++
				}
				digits = digits && c >= '0' && c <= '9'
			}
			if start >= 0 {
				words = append(words, word{text: b.String(), start: start, end: min(i, len(s))})
			}
		}
	}
	return words
}

// lexRedirect reads a redirection operator that starts at start (its digits) and whose
// arrow is at i, and its target word, and returns the index after them.
func lexRedirect(s string, start, i int, words *[]word) int {
	i++
	if i < len(s) && (s[i] == '>' || s[i] == '<' || s[i] == '&' || s[i] == '|') {
		i++
	}
	*words = append(*words, word{text: s[start:i], start: start, end: i, redir: true})
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	// The target: the next word, lexed normally and marked.
	rest := lex(s[i:])
	if len(rest) > 0 && !rest[0].op && !rest[0].redir {
		t := rest[0]
		t.start += i
		t.end += i
		t.redir = true
		*words = append(*words, t)
		return t.end
	}
	return i
}

// A site is one simple command of a command line that runs a known runner.
type site struct {
	runner Runner
	words  []word // the command's words, redirections left out
	at     int    // index in words of the runner's last word: "test" of go test, "pytest", "run" of vitest run
	lead   int    // index in words of the first word of the invocation (after assignments)
}

// findSites returns the simple commands of a command line that run a known runner.
func findSites(words []word) []site {
	var sites []site
	var cmd []word
	flush := func() {
		if s, ok := siteOf(cmd); ok {
			sites = append(sites, s)
		}
		cmd = nil // the site keeps the old slice
	}
	for _, w := range words {
		switch {
		case w.op:
			flush()
		case !w.redir:
			cmd = append(cmd, w)
		}
	}
	flush()
	return sites
}

// wrappers run the command that follows them; their own options start with "-".
var wrappers = map[string]bool{
	"env": true, "time": true, "exec": true, "command": true, "nice": true, "nohup": true,
	"npx": true, "bunx": true, "pnpx": true, "!": true, "{": true, "if": true, "then": true,
	"else": true, "elif": true, "do": true, "while": true, "until": true, "xvfb-run": true,
}

// runWrappers run the command that follows their "run", "exec" or "dlx" word.
var runWrappers = map[string]bool{
	"uv": true, "poetry": true, "pipenv": true, "pdm": true, "hatch": true, "rye": true,
	"pnpm": true, "yarn": true, "npm": true, "bun": true,
}

// siteOf reports whether a simple command runs a known runner.
func siteOf(cmd []word) (site, bool) {
	i := 0
	for i < len(cmd) {
		t := cmd[i].text
		base := path.Base(t)
		switch {
		case isAssignment(t):
			i++
		case wrappers[base]:
			i++
			for i < len(cmd) && strings.HasPrefix(cmd[i].text, "-") {
				i++
			}
		case runWrappers[base] && i+1 < len(cmd) && (cmd[i+1].text == "run" || cmd[i+1].text == "exec" || cmd[i+1].text == "dlx"):
			if (base == "npm" || base == "pnpm" || base == "yarn" || base == "bun") && cmd[i+1].text == "run" {
				return site{}, false // a package.json script: its runner is unknown
			}
			i += 2
			for i < len(cmd) && strings.HasPrefix(cmd[i].text, "-") {
				i++
			}
		case base == "yarn" && i+1 < len(cmd) && (cmd[i+1].text == "vitest" || cmd[i+1].text == "jest"):
			i++
		default:
			return runnerAt(cmd, i)
		}
	}
	return site{}, false
}

// runnerAt reports whether the command word cmd[i] (with what follows) runs a known runner.
func runnerAt(cmd []word, i int) (site, bool) {
	s := site{words: cmd, lead: i}
	base := path.Base(cmd[i].text)
	next := func(j int) string {
		if j < len(cmd) {
			return cmd[j].text
		}
		return ""
	}
	switch {
	case base == "go" && next(i+1) == "test":
		s.runner, s.at = Go, i+1
	case base == "cargo":
		j := i + 1
		if strings.HasPrefix(next(j), "+") { // cargo +nightly test
			j++
		}
		if next(j) != "test" {
			return s, false
		}
		s.runner, s.at = Cargo, j
	case isPytest(base):
		s.runner, s.at = Pytest, i
	case strings.HasPrefix(base, "python") && next(i+1) == "-m" && isPytest(next(i+2)):
		s.runner, s.at = Pytest, i+2
	case base == "vitest" || base == "vitest.mjs":
		s.runner, s.at = Vitest, i
		switch next(i + 1) {
		case "run", "related", "watch", "dev":
			s.at = i + 1
		}
	case base == "jest" || base == "jest.js":
		s.runner, s.at = Jest, i
	default:
		return s, false
	}
	return s, true
}

func isPytest(base string) bool {
	switch base {
	case "pytest", "py.test", "pytest-3", "py.test-3":
		return true
	}
	return false
}

// isAssignment reports whether a word is a variable assignment such as CGO_ENABLED=0.
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i, c := range w[:eq] {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// has reports whether the site's words after the runner include one of flags, or one of
// them followed by "=".
func (s site) has(flags ...string) bool {
	return hasFlag(s.words[s.at+1:], flags...)
}

// hasFlag reports whether words include one of flags, or one of them followed by "=".
func hasFlag(words []word, flags ...string) bool {
	for _, w := range words {
		for _, f := range flags {
			if w.text == f || strings.HasPrefix(w.text, f+"=") {
				return true
			}
		}
	}
	return false
}

// quote quotes a word for sh when it needs it.
func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+@%^", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
