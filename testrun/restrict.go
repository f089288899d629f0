package testrun

import (
	"path"
	"slices"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// Restrict returns the project test command narrowed to the test files given (relative to
// the repository root, slash-separated), run the way the command runs its runner, with its
// flags kept (SPEC §7.2): for go test, the packages that hold the Go test files ("go test
// -count=1 ./..." with calc/mul_test.go gives "go test -count=1 ./calc"); for pytest, the
// Python files; for vitest and jest, the JavaScript and TypeScript test files; for cargo
// test, --test with the name of each integration test file. The command's own package,
// path or filter arguments are replaced; a leading "cd DIR &&" is honoured (files outside
// DIR are left out). Every simple command of the line that runs a known runner is narrowed
// to the files of its language, and one that has none of them is replaced by "true".
//
// It reports false, and returns the command unchanged, when the command runs no known
// runner (its tests cannot be told apart) or when no file given is a test of its runners.
func Restrict(command string, files []string) (string, bool) {
	words := lex(command)
	sites := findSites(words)
	if len(sites) == 0 {
		return command, false
	}
	var edits []edit
	narrowed := false
	for _, s := range sites {
		dir := cdBefore(words, s.words[0].start)
		args := restrictArgs(s.runner, inDir(files, dir))
		if len(args) == 0 {
			// None of the files is this runner's: it has nothing to run.
			edits = append(edits, edit{s.words[0].start, s.words[len(s.words)-1].end, "true"})
			continue
		}
		narrowed = true
		edits = append(edits, narrow(s, args)...)
	}
	if !narrowed {
		return command, false
	}
	// Apply from the end, so that earlier offsets stay right; at one offset, a removal
	// before the insertion that takes its place.
	slices.SortStableFunc(edits, func(a, b edit) int {
		if a.start != b.start {
			return b.start - a.start
		}
		return b.end - a.end
	})
	out := command
	for _, e := range edits {
		out = out[:e.start] + e.text + out[e.end:]
	}
	return out, true
}

// An edit replaces the bytes [start, end) of a command line with text.
type edit struct {
	start, end int
	text       string
}

// narrow returns the edits that replace a site's positional arguments (packages, paths,
// filters) with args: the positional words are removed, and args go where the first of them
// was, or after the runner's last own word (before go test's -args, cargo's --).
func narrow(s site, args []string) []edit {
	pos, stop := positionals(s)
	var text strings.Builder
	for _, a := range args {
		text.WriteString(" ")
		text.WriteString(quote(a))
	}
	at := s.words[stop-1].end
	if len(pos) > 0 {
		at = s.words[pos[0]-1].end
	}
	edits := []edit{{at, at, text.String()}}
	// Each positional word goes with the blank before it.
	for _, i := range pos {
		edits = append(edits, edit{s.words[i-1].end, s.words[i].end, ""})
	}
	return edits
}

// positionals returns the indexes in s.words of the site's positional arguments, and the
// index where the runner's own arguments stop (go test's -args, cargo's "--"; len(s.words)
// when nothing stops them).
func positionals(s site) ([]int, int) {
	valued := valueFlags[s.runner]
	var pos []int
	stop := len(s.words)
	for i := s.at + 1; i < len(s.words); i++ {
		t := s.words[i].text
		switch {
		case s.runner == Go && (t == "-args" || t == "--args"), s.runner == Cargo && t == "--":
			return pos, i
		case t == "--":
			continue
		case strings.HasPrefix(t, "-"):
			if !strings.Contains(t, "=") && valued(t) {
				i++ // the flag's value
			}
		case s.runner == Cargo:
			// cargo test's positional argument is a test name filter: keep it.
		default:
			pos = append(pos, i)
		}
	}
	return pos, stop
}

// valueFlags tell, per runner, whether a flag written without "=" takes the next word as its
// value.
var valueFlags = map[Runner]func(string) bool{
	Go: func(f string) bool {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "-"), "-")
		f = strings.TrimPrefix(f, "test.")
		return goValueFlags[f]
	},
	Pytest: func(f string) bool {
		if len(f) == 2 && f[0] == '-' { // -k EXPR, -m MARK, -c FILE, -o OPT, -p PLUGIN, -W, -n
			return strings.ContainsRune("kmcopWn", rune(f[1]))
		}
		return pytestValueFlags[f]
	},
	Vitest: func(f string) bool { return jsValueFlags[f] },
	Jest:   func(f string) bool { return jsValueFlags[f] },
	Cargo: func(f string) bool {
		return slices.Contains([]string{"-p", "--package", "--test", "--bench", "--example", "--bin",
			"--features", "-F", "--target", "--target-dir", "--manifest-path", "-j", "--jobs", "--profile", "--exclude", "--color", "--config", "-Z"}, f)
	},
}

var goValueFlags = map[string]bool{
	"run": true, "skip": true, "count": true, "timeout": true, "tags": true, "p": true, "parallel": true,
	"cpu": true, "bench": true, "benchtime": true, "coverprofile": true, "covermode": true, "coverpkg": true,
	"cpuprofile": true, "memprofile": true, "memprofilerate": true, "blockprofile": true, "blockprofilerate": true,
	"mutexprofile": true, "mutexprofilefraction": true, "outputdir": true, "trace": true, "exec": true,
	"o": true, "fuzz": true, "fuzztime": true, "fuzzminimizetime": true, "list": true, "shuffle": true,
	"ldflags": true, "gcflags": true, "asmflags": true, "gccgoflags": true, "mod": true, "modfile": true,
	"C": true, "pkgdir": true, "toolexec": true, "installsuffix": true, "overlay": true, "pgo": true,
	"vet": true, "compiler": true, "buildmode": true, "buildvcs": true,
}

var pytestValueFlags = map[string]bool{
	"--maxfail": true, "--tb": true, "--rootdir": true, "--confcutdir": true, "--basetemp": true,
	"--deselect": true, "--ignore": true, "--ignore-glob": true, "--junitxml": true, "--junit-xml": true,
	"--durations": true, "--durations-min": true, "--log-level": true, "--log-file": true,
	"--log-cli-level": true, "--log-format": true, "--log-date-format": true, "--import-mode": true,
	"--capture": true, "--cov-report": true, "--cov-config": true, "--cov-fail-under": true,
	"--dist": true, "--numprocesses": true, "--maxprocesses": true, "--color": true, "--code-highlight": true,
	"--pythonwarnings": true, "--override-ini": true, "--config-file": true,
	"--doctest-glob": true, "--doctest-report": true, "--show-capture": true, "--verbosity": true,
	"--timeout": true, "--reruns": true, "--randomly-seed": true, "--keyword": true,
	"--report-log": true,
}

var jsValueFlags = map[string]bool{
	"-t": true, "--testNamePattern": true, "-c": true, "--config": true, "-r": true, "--root": true,
	"--dir": true, "--project": true, "--environment": true, "--pool": true, "--reporter": true,
	"--outputFile": true, "--mode": true, "--shard": true, "--testTimeout": true, "--maxWorkers": true,
	"-w": true, "--minWorkers": true, "--rootDir": true, "--testPathPattern": true, "--testPathIgnorePatterns": true,
	"--selectProjects": true, "--reporters": true, "--coverageDirectory": true, "--retry": true, "--exclude": true, "--workspace": true, "--sequence.seed": true,
}

// cdBefore returns the folder a simple command starting at offset runs in, when the line
// changes into one before it ("cd app && go test ./..." runs in app), or "".
func cdBefore(words []word, offset int) string {
	dir := ""
	for i, w := range words {
		if w.start >= offset {
			break
		}
		if w.text == "cd" && !w.op && i+1 < len(words) && !words[i+1].op && words[i+1].start < offset {
			dir = path.Join(dir, cleanPath(words[i+1].text))
		}
	}
	if dir == "." {
		return ""
	}
	return dir
}

// inDir returns the files under dir, relative to it (all of them when dir is "").
func inDir(files []string, dir string) []string {
	var out []string
	for _, f := range files {
		f = cleanPath(f)
		if dir == "" {
			out = append(out, f)
		} else if rest, ok := strings.CutPrefix(f, dir+"/"); ok {
			out = append(out, rest)
		}
	}
	return out
}

// jsTestFileRE matches the file names vitest and jest collect by default.
var jsTestFileRE = lazyre.New(`\.(?:test|spec)\.[cm]?[jt]sx?$`)

// restrictArgs returns the arguments that make runner r run the tests of files, sorted and
// without duplicates: Go packages ("./calc", "."), pytest paths, vitest paths, jest path
// patterns, cargo --test names. Files that are not tests of r are left out.
func restrictArgs(r Runner, files []string) []string {
	var out []string
	for _, f := range files {
		base := path.Base(f)
		switch r {
		case Go:
			if strings.HasSuffix(base, "_test.go") {
				dir := path.Dir(f)
				if dir == "." {
					out = append(out, ".")
				} else {
					out = append(out, "./"+dir)
				}
			}
		case Pytest:
			// Support files are not tests: conftest.py is loaded by pytest itself.
			if strings.HasSuffix(base, ".py") && base != "conftest.py" && base != "__init__.py" {
				out = append(out, f)
			}
		case Vitest:
			if jsTestFileRE().MatchString(base) {
				out = append(out, f)
			}
		case Jest:
			if jsTestFileRE().MatchString(base) {
				// jest reads its path arguments as regular expressions.
				out = append(out, jsRegexpEscape(f))
			}
		case Cargo:
			if dir, name := path.Split(f); path.Base(dir) == "tests" && strings.HasSuffix(name, ".rs") {
				out = append(out, "--test", strings.TrimSuffix(name, ".rs"))
			}
		}
	}
	if r == Cargo {
		return out // pairs: sorting would break them
	}
	slices.Sort(out)
	return slices.Compact(out)
}
