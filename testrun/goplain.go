package testrun

import (
	"path"
	"slices"
	"strings"
)

// A GoTest is a project test command that is a plain go test over package patterns (SPEC
// §7.3, §7.6): one simple command "go test [flags] [packages]", with nothing before it (no
// cd, no variable assignments, no wrapper) and nothing after it (no other command, no
// redirection, no -args). The gate can run such a command on some of its packages and know
// that each package's tests are the ones the whole command would run.
type GoTest struct {
	// Command is the command line as given.
	Command string
	// Patterns are the package arguments ("./..." when the command names none: ".").
	Patterns []string
	// BuildFlags are the command's flags that go list takes too (-tags, -mod, -race, …):
	// they change which packages a test binary is built from.
	BuildFlags []string
}

// goTestOnlyFlags are go test's own flags (and the test binary's), which go list does not
// take. They change how tests run, not what they are built from.
var goTestOnlyFlags = map[string]bool{
	"run": true, "skip": true, "count": true, "timeout": true, "v": true, "short": true,
	"failfast": true, "parallel": true, "cpu": true, "json": true, "shuffle": true,
	"benchtime": true, "bench": true, "benchmem": true, "fullpath": true, "vet": true, "p": true,
}

// goTestRefused are flags whose meaning reaches beyond one package's inputs: files they
// name are not among a package's inputs (-modfile, -overlay, -pgo, -coverprofile and the
// profiles), programs they run (-exec, -toolexec), another folder (-C), packages of the
// others (-coverpkg), or a list of tests instead of a run (-list, -fuzz).
var goTestRefused = map[string]bool{
	"C": true, "modfile": true, "overlay": true, "pgo": true, "exec": true, "toolexec": true,
	"coverpkg": true, "coverprofile": true, "cpuprofile": true, "memprofile": true,
	"blockprofile": true, "mutexprofile": true, "trace": true, "outputdir": true, "o": true,
	"list": true, "fuzz": true, "fuzztime": true, "fuzzminimizetime": true, "c": true, "i": true,
	"args": true, "exec-args": true,
}

// PlainGoTest reads command as a plain go test (GoTest). It reports false for anything
// else: then the command runs whole.
func PlainGoTest(command string) (*GoTest, bool) {
	words := lex(command)
	sites := findSites(words)
	if len(sites) != 1 || sites[0].runner != Go {
		return nil, false
	}
	s := sites[0]
	if len(s.words) != len(words) || s.lead != 0 || s.at != 1 || path.Base(s.words[0].text) != "go" {
		return nil, false // another command, a redirection, an assignment or a wrapper
	}
	g := &GoTest{Command: command}
	ws := s.words
	for i := s.at + 1; i < len(ws); i++ {
		t := ws[i].text
		if t == "--" || !strings.HasPrefix(t, "-") {
			if t == "--" || strings.HasSuffix(t, ".go") {
				return nil, false
			}
			g.Patterns = append(g.Patterns, t)
			continue
		}
		name, value, eq := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(t, "-"), "-"), "=")
		name = strings.TrimPrefix(name, "test.")
		if goTestRefused[name] {
			return nil, false
		}
		takes := goValueFlags[name] && !eq
		if takes {
			if i+1 >= len(ws) {
				return nil, false
			}
			i++
			value = ws[i].text
		}
		if goTestOnlyFlags[name] {
			continue
		}
		if takes || eq {
			g.BuildFlags = append(g.BuildFlags, "-"+name+"="+value)
		} else {
			g.BuildFlags = append(g.BuildFlags, "-"+name)
		}
	}
	if len(g.Patterns) == 0 {
		g.Patterns = []string{"."}
	}
	return g, true
}

// Only returns the command narrowed to the packages in dirs (folders relative to the
// folder the command runs in, slash-separated; "." for that folder), flags kept, as
// Restrict narrows a command to test files.
func (g *GoTest) Only(dirs []string) string {
	args := make([]string, 0, len(dirs))
	for _, d := range dirs {
		d = path.Clean(d)
		if d == "." {
			args = append(args, ".")
		} else {
			args = append(args, "./"+d)
		}
	}
	slices.Sort(args)
	args = slices.Compact(args)
	s := findSites(lex(g.Command))[0]
	edits := narrow(s, args)
	// From the end; at one offset, the removal before the insertion that takes its place.
	slices.SortStableFunc(edits, func(a, b edit) int {
		if a.start != b.start {
			return b.start - a.start
		}
		return b.end - a.end
	})
	out := g.Command
	for _, e := range edits {
		out = out[:e.start] + e.text + out[e.end:]
	}
	return out
}
