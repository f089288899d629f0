package testrun

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// defaultInvocation is how RegressionCommand runs each runner.
var defaultInvocation = map[Runner]string{
	Go:     "go test",
	Pytest: "pytest",
	Vitest: "npx vitest run",
	Jest:   "npx jest",
	Cargo:  "cargo test",
}

// RegressionCommand returns a command line, to run with sh -c in root, that runs exactly
// the tests ids of runner r and exits non-zero if any of them fails; "" when there is
// nothing to run (no ids, or the Exit runner, which has no test names).
//
//   - Go: one go test per package, with a -run pattern that selects the named tests and
//     subtests and no others, e.g. go test ./pkg/a -run '^(TestA|TestB)$|^TestC$/^(x|y)$'.
//     Packages are named relative to the module of root's go.mod ("./pkg/a"). With more
//     than one package every package runs, and the line exits non-zero if any failed.
//   - pytest: pytest -q with the node IDs.
//   - vitest, jest: the test files, and -t with a pattern of the tests' full names.
//   - cargo: cargo test -- --exact with the test names.
func RegressionCommand(root string, r Runner, ids []string) string {
	inv, ok := defaultInvocation[r]
	if !ok || len(ids) == 0 {
		return ""
	}
	return regressionBody(root, r, inv, ids)
}

// RegressionCommandFor is RegressionCommand for the runner of a project's test command, run
// the way that command runs it: "/usr/bin/python3 -m pytest -q tests/" gives
// "/usr/bin/python3 -m pytest -q <ids>", "cd web && npx vitest run" gives
// "cd web && npx vitest run <files> -t <pattern>". Flags and arguments after the runner are
// left out. For a command that is not a known runner (Exit), it returns the command itself:
// re-running it is the only check there is.
func RegressionCommandFor(root, command string, ids []string) string {
	sites := findSites(lex(command))
	if len(sites) == 0 {
		return command
	}
	s := sites[0]
	if len(ids) == 0 {
		return ""
	}
	lead := command[:s.words[0].start]
	inv := command[s.words[0].start:s.words[s.at].end]
	if s.runner == Vitest && s.at == s.lead {
		inv += " run"
	}
	body := regressionBody(root, s.runner, inv, ids)
	if strings.TrimSpace(lead) == "" {
		return body
	}
	if strings.Contains(body, "; ") {
		body = "{ " + body + "; }"
	}
	return lead + body
}

func regressionBody(root string, r Runner, inv string, ids []string) string {
	switch r {
	case Go:
		return goRegression(root, inv, ids)
	case Pytest:
		var b strings.Builder
		b.WriteString(inv)
		if !strings.Contains(" "+inv+" ", " -q ") {
			b.WriteString(" -q")
		}
		for _, id := range ids {
			b.WriteString(" ")
			b.WriteString(quote(id))
		}
		return b.String()
	case Vitest, Jest:
		return jsRegression(r, inv, ids)
	case Cargo:
		var b strings.Builder
		b.WriteString(inv)
		b.WriteString(" -- --exact")
		for _, id := range ids {
			b.WriteString(" ")
			b.WriteString(quote(id))
		}
		return b.String()
	}
	return ""
}

// goRegression runs the Go tests ids: one go test per package.
func goRegression(root, inv string, ids []string) string {
	mod := modulePath(root)
	byPkg := map[string][]string{}
	for _, id := range ids {
		pkg, name, ok := SplitGoID(id, mod)
		if !ok {
			continue
		}
		byPkg[pkg] = append(byPkg[pkg], name)
	}
	cmds := make([]string, 0, len(byPkg))
	for _, p := range slices.Sorted(maps.Keys(byPkg)) {
		cmds = append(cmds, inv+" "+quote(goPackageArg(mod, p))+" -run "+quote(GoRunPattern(byPkg[p])))
	}
	switch len(cmds) {
	case 0:
		return ""
	case 1:
		return cmds[0]
	}
	// Every package runs, so that one failing package does not hide another's failures.
	var b strings.Builder
	b.WriteString("f=0")
	for _, c := range cmds {
		b.WriteString("; ")
		b.WriteString(c)
		b.WriteString(" || f=1")
	}
	b.WriteString("; [ $f = 0 ]")
	return b.String()
}

// goTestNameRE matches the start of a Go test function's name, after its package.
var goTestNameRE = lazyre.New(`^(?:Test|Fuzz|Example|Benchmark)[\p{L}\p{N}_]*(?:/|$)`)

// SplitGoID splits a Go test ID ("example.com/calc.TestAdd/sub") into its import path
// ("example.com/calc") and test name ("TestAdd/sub"). module, when not empty, is the
// module path the package is expected to be in; it settles IDs whose import path itself
// holds ".Test".
func SplitGoID(id, module string) (pkg, name string, ok bool) {
	first := -1
	for i := 0; i < len(id); i++ {
		if id[i] != '.' || !goTestNameRE().MatchString(id[i+1:]) {
			continue
		}
		p := id[:i]
		if module == "" || p == module || strings.HasPrefix(p, module+"/") {
			return p, id[i+1:], true
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return "", "", false
	}
	return id[:first], id[first+1:], true
}

// goPackageArg names a package for go test: relative to the module ("./pkg/a", ".") when
// it is in it, else by import path.
func goPackageArg(module, pkg string) string {
	switch {
	case module == "":
		return pkg
	case pkg == module:
		return "."
	case strings.HasPrefix(pkg, module+"/"):
		return "./" + pkg[len(module)+1:]
	}
	return pkg
}

// ModulePath reads the module path from root's go.mod; "" if there is none.
func ModulePath(root string) string { return modulePath(root) }

// modulePath reads the module path from root's go.mod; "" if there is none.
func modulePath(root string) string {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '"') {
			continue
		}
		rest = strings.TrimSpace(rest)
		if u, err := strconv.Unquote(rest); err == nil {
			return u
		}
		return rest
	}
	return ""
}

// GoRunPattern returns a go test -run pattern that selects exactly the named tests of one
// package ("TestA", "TestB/case_1") and, for a named test, all of its subtests. A subtest
// whose parent is named too is left to its parent. The pattern uses -run's top-level
// alternation: "^(TestA|TestB)$|^TestC$/^(x|y)$" runs TestA and TestB whole, and of TestC
// only its subtests x and y.
func GoRunPattern(names []string) string {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	covered := func(n string) bool {
		for i := 0; i < len(n); i++ {
			if n[i] == '/' && set[n[:i]] {
				return true
			}
		}
		return false
	}
	// Group the tests to run by their parent: "" for top-level tests.
	groups := map[string][]string{}
	for n := range set {
		if covered(n) {
			continue
		}
		parent, last := "", n
		if i := strings.LastIndexByte(n, '/'); i >= 0 {
			parent, last = n[:i], n[i+1:]
		}
		groups[parent] = append(groups[parent], last)
	}
	alts := make([]string, 0, len(groups))
	for _, p := range slices.Sorted(maps.Keys(groups)) {
		var b strings.Builder
		if p != "" {
			for _, elem := range strings.Split(p, "/") {
				b.WriteString("^" + regexp.QuoteMeta(elem) + "$/")
			}
		}
		b.WriteString(anchoredAlternation(groups[p], regexp.QuoteMeta))
		alts = append(alts, b.String())
	}
	return strings.Join(alts, "|")
}

// anchoredAlternation returns ^name$ or ^(a|b|...)$ for names, sorted, each escaped.
func anchoredAlternation(names []string, escape func(string) string) string {
	sort.Strings(names)
	if len(names) == 1 {
		return "^" + escape(names[0]) + "$"
	}
	var b strings.Builder
	b.WriteString("^(")
	for i, n := range names {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(escape(n))
	}
	b.WriteString(")$")
	return b.String()
}

// jsRegression runs the vitest or jest tests ids ("file > describe > name"): their files,
// and -t with their full names (describe and test titles joined by spaces), which is what
// both runners match -t against.
func jsRegression(r Runner, inv string, ids []string) string {
	var files, names []string
	seenFile, seenName := map[string]bool{}, map[string]bool{}
	for _, id := range ids {
		parts := strings.Split(id, jsSep)
		if len(parts) < 2 {
			continue
		}
		if !seenFile[parts[0]] {
			seenFile[parts[0]] = true
			files = append(files, parts[0])
		}
		full := strings.Join(parts[1:], " ")
		if !seenName[full] {
			seenName[full] = true
			names = append(names, full)
		}
	}
	if len(files) == 0 {
		return ""
	}
	sort.Strings(files)
	var b strings.Builder
	b.WriteString(inv)
	for _, f := range files {
		if r == Jest {
			// jest reads its path arguments as regular expressions.
			f = jsRegexpEscape(f)
		}
		b.WriteString(" ")
		b.WriteString(quote(f))
	}
	b.WriteString(" -t ")
	b.WriteString(quote(anchoredAlternation(names, jsRegexpEscape)))
	return b.String()
}

// jsRegexpEscape escapes the characters that are special in a JavaScript regular expression.
func jsRegexpEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`\^$.*+?()[]{}|/`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
