package testrun

import (
	"errors"
	"fmt"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// A Canary is a pair of tests that the gate plants beside the tests a command runs (SPEC
// §7.6): one that must pass and one that must fail, named after a random Token, the failing
// one with a random Message. A runner's report that does not show exactly those outcomes
// was rewritten by something in the run (a TestMain, an init function, a conftest.py hook,
// a plugin), and cannot be trusted. Nothing of their names is fixed (canaryname.go): they
// are named like the tests beside them, so that a forger cannot spare them.
type Canary struct {
	// Token is a word of lower-case letters, chosen at random: it names the canary files
	// and tests (with a capital first letter in a Go test's name, see Holds), and the
	// failing one's message holds it, so that what the runner prints about a canary can
	// be told from what it prints about the project's tests.
	Token string
	// Message is the failing canary's failure message, chosen at random; it holds Token.
	Message string
}

// A Planted canary is a Canary written into a checkout for one test command: the files,
// the command to run instead (the same command, with the canaries added where it selects
// tests by name or file), and what the runner's report must then say.
type Planted struct {
	Canary
	Runner Runner
	// Command is the command to run: the given one, or, where it selects tests (go test
	// -run, pytest -k and file arguments, vitest and jest file filters and -t, cargo test
	// filters and targets), the same with the canaries selected too.
	Command string
	// Files are the files planted, relative to the root, in the order written.
	Files []string
	// Skip says why no canary could be planted ("" when one was): a command judged by its
	// exit code, or one whose options leave no room for a canary.
	Skip string

	root  string
	dirs  []string // folders made for the canaries, deepest last
	junk  []string // patterns of what a runner builds from the canaries (cargo's target/)
	units []canaryUnit
	seen  map[string]bool // Go packages whose canaries Check found reported as planted
	// goNames are the names of the Go canaries planted in each folder.
	goNames map[string][]string
}

// A canaryUnit is one place a pair of canaries was planted: a Go package, a folder of
// pytest tests, a JavaScript test file, a cargo integration test.
type canaryUnit struct {
	where      string // for messages: the package, folder or file
	pass, fail string // the canaries' test IDs, or their endings (see matches)
	pkg        string // a Go unit's import path
	// own reports whether a test of the run belongs to the same unit (its package, its
	// folder): a unit that reported no test at all did not run.
	own func(Test) bool
}

// matches reports whether a test of the run is the canary with ID want: Go and cargo
// canaries are named exactly, pytest and JavaScript ones by their file's name and the
// test's, after the folder the runner names the file from.
func matches(id, want string) bool {
	return id == want || strings.HasSuffix(id, "/"+want)
}

// PlantCanary writes the canary c into root for command, named like the tests beside it
// (canaryname.go): a <word>_<token>_test.go in every Go package folder that go test would
// test and that holds test files, with tests Test<Word><Token>; a test_<word>_<token>.py
// in every folder of the pytest tests it runs, with tests test_<word>_<token>; one
// <word>-<token>.test.js (or .ts, .spec, as the tests beside it) next to the first vitest
// or jest test it runs; tests/<word>_<token>.rs for cargo test. Where the token is met in
// the project's tests already, it draws another canary. For a command that no runner reads
// (Exit), or whose options leave no room for a canary, it plants nothing and says why in
// Skip. Remove takes the files away again.
func PlantCanary(root, command string, c Canary) (*Planted, error) {
	for range 8 {
		p, err := plantCanary(root, command, c)
		if !errors.Is(err, errTokenTaken) {
			return p, err
		}
		c = NewCanary()
	}
	return nil, fmt.Errorf("plant canary: %w, for every token drawn", errTokenTaken)
}

func plantCanary(root, command string, c Canary) (*Planted, error) {
	p := &Planted{Canary: c, Runner: Detect(command), Command: command, root: root}
	if p.Runner == Exit {
		p.Skip = "the command is judged by its exit code alone: there is no report a canary could be checked in"
		return p, nil
	}
	sites := canarySites(command)
	var edits []edit
	for _, s := range sites {
		if s.runner != p.Runner {
			continue
		}
		if s.next == "&&" {
			// A failing canary would keep what follows from running.
			p.Skip = fmt.Sprintf("%q is followed by &&: a canary that fails would keep the rest of the command from running", s.text(command))
			return p, nil
		}
		dir := s.cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		var e []edit
		var skip string
		var err error
		switch p.Runner {
		case Go:
			e, skip, err = p.plantGo(s.site, dir)
		case Pytest:
			e, skip, err = p.plantPytest(s.site, dir)
		case Vitest, Jest:
			e, skip, err = p.plantJS(s.site, dir)
		case Cargo:
			e, skip, err = p.plantCargo(s.site, dir)
		}
		if err != nil {
			_ = p.Remove()
			return nil, err
		}
		if skip != "" {
			_ = p.Remove()
			p.Files, p.units, p.dirs, p.Skip, p.Command = nil, nil, nil, skip, command
			return p, nil
		}
		edits = append(edits, e...)
	}
	if len(p.units) == 0 {
		p.Skip = "the command runs no folder that holds tests, so there was nowhere to plant a canary"
		return p, nil
	}
	p.Command = applyEdits(command, edits)
	return p, nil
}

// Remove deletes the planted files, what the runner compiled from them beside them
// (Python's __pycache__ entries, cargo's test binary in target/), and the folders made
// for them.
func (p *Planted) Remove() error {
	var errs []error
	for _, f := range p.Files {
		abs := filepath.Join(p.root, filepath.FromSlash(f))
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if strings.HasSuffix(f, ".py") {
			stem := strings.TrimSuffix(filepath.Base(abs), ".py")
			cached, _ := filepath.Glob(filepath.Join(filepath.Dir(abs), "__pycache__", stem+".*"))
			for _, c := range cached {
				_ = os.Remove(c)
			}
		}
	}
	for _, pattern := range p.junk {
		found, _ := filepath.Glob(pattern)
		for _, f := range found {
			_ = os.RemoveAll(f)
		}
	}
	for i := len(p.dirs) - 1; i >= 0; i-- {
		_ = os.Remove(p.dirs[i]) // only when empty
	}
	return errors.Join(errs...)
}

// A ForgedError says how a run's report disagreed with its canaries.
type ForgedError struct {
	// Where is the package, folder or file whose canaries were misreported.
	Where string
	// What says what the report showed, without the canary's random names, so that the
	// same forgery reads the same in every run.
	What string
	// Stream: the report contradicted itself (a test reported twice, a report after the run
	// ended), rather than misreporting the canaries.
	Stream bool `json:"stream,omitempty"`
}

func (e *ForgedError) Error() string {
	return fmt.Sprintf("the test report cannot be trusted: %s (%s)", e.What, e.Where)
}

// Check compares a run's result with the planted canaries. When the report shows them as
// planted (the passing one passed, the failing one failed with the canary's message), or
// does not show them because the unit they were planted in did not run at all (a package
// that did not build, a collection error: then the command failed anyway), it removes them
// from res: their tests, their lines of output, and their failure from the exit code, which
// is then 0 when the run's own tests decide so (none failed, no build error) and the
// command failed the way a runner fails for failing tests; it classifies res again. When
// the report does not, it returns a *ForgedError and leaves res as it was. A Planted with
// nothing planted (Skip) accepts every result whose report says nothing against itself; a
// result whose report does (Result.Forged) is refused with it, canaries or not.
func (p *Planted) Check(res *Result) error {
	if res != nil && res.Forged != nil {
		return res.Forged
	}
	if p.Skip != "" || res == nil {
		return nil
	}
	allSeen := true
	for _, u := range p.units {
		var pass, fail []Test
		own, ownFailed := false, false
		for _, t := range res.Tests {
			switch {
			case matches(t.ID, u.pass):
				pass = append(pass, t)
			case matches(t.ID, u.fail):
				fail = append(fail, t)
			case !p.Holds(t.ID) && u.own(t):
				own = true
				ownFailed = ownFailed || t.Status == Failed
			}
		}
		switch {
		case len(pass) == 0 && len(fail) == 0:
			// A unit whose own test failed and cut the run short (a Go test that panics
			// ends its test binary before the canaries run) is no forgery: the run fails
			// anyway, so nothing passes that should not.
			if (own && !ownFailed) || res.ExitCode == 0 {
				return &ForgedError{Where: u.where, What: "the run reported neither of the orchestrator's canary tests, a test that must pass and one that must fail, though they were planted beside the tests it ran"}
			}
			allSeen = false // the unit did not run: the command failed without it
			continue
		case len(pass) == 0:
			return &ForgedError{Where: u.where, What: "the run did not report the orchestrator's canary test that must pass"}
		case len(fail) == 0:
			return &ForgedError{Where: u.where, What: "the run did not report the orchestrator's canary test that must fail"}
		}
		for _, t := range pass {
			if t.Status != Passed {
				return &ForgedError{Where: u.where, What: fmt.Sprintf("the orchestrator's canary test that must pass was reported %s", t.Status)}
			}
		}
		for _, t := range fail {
			if t.Status != Failed {
				return &ForgedError{Where: u.where, What: fmt.Sprintf("the orchestrator's canary test that must fail was reported %s", t.Status)}
			}
			if !strings.Contains(t.Output, p.Message) {
				return &ForgedError{Where: u.where, What: "the orchestrator's canary test that must fail was reported failed, but without the message it fails with"}
			}
		}
		if u.pkg != "" {
			if p.seen == nil {
				p.seen = map[string]bool{}
			}
			p.seen[u.pkg] = true
		}
	}
	p.strip(res, allSeen)
	return nil
}

// strip removes the canaries from a result whose report was honest about them.
func (p *Planted) strip(res *Result, allSeen bool) {
	tests := res.Tests[:0:0]
	for _, t := range res.Tests {
		if !p.Holds(t.ID) {
			tests = append(tests, t)
		}
	}
	res.Tests = tests
	res.Output = dropLines(res.Output, p.Canary)
	if res.Runner == Go {
		res.Output = p.passGoPackages(res)
		p.passPackages(res)
	}
	errs := res.BuildErrors[:0:0]
	for _, e := range res.BuildErrors {
		if !p.Holds(e) {
			errs = append(errs, e)
		}
	}
	res.BuildErrors = errs
	if allSeen && res.ExitCode != 0 && !res.TimedOut && (res.ExitCode == 1 || res.ExitCode == failCode[res.Runner]) &&
		len(res.Failed()) == 0 && len(res.BuildErrors) == 0 {
		// The failing canary is why the command failed: the run's own tests decide.
		res.ExitCode = 0
	}
	res.Class, res.Reason = Classify(res, nil)
}

// passGoPackages returns res.Output with the failure of each Go package whose only failed
// test was the canary told as go test tells a package that passed: go test ends a package
// whose test failed with "FAIL" and "FAIL\tpkg\ttime", which hold no canary name and would
// otherwise name, in every excerpt of the output, a package the agent never touched.
func (p *Planted) passGoPackages(res *Result) string {
	failed := map[string]bool{}
	for _, t := range res.Tests {
		if t.Status == Failed {
			if pkg, _, ok := SplitGoID(t.ID, ""); ok {
				failed[pkg] = true
			}
		}
	}
	passed := map[string]bool{}
	for _, u := range p.units {
		if u.pkg != "" && !failed[u.pkg] {
			passed[u.pkg] = true
		}
	}
	if len(passed) == 0 {
		return res.Output
	}
	lines := strings.SplitAfter(res.Output, "\n")
	// Each package that failed printed a bare "FAIL" before its "FAIL\tpkg" line, not
	// always just before: the lines of packages that end together may come between. Each
	// package line takes the nearest bare "FAIL" before it that no later one took.
	drop := map[int]bool{}
	var bare []int
	for i, l := range lines {
		if l == "FAIL\n" {
			bare = append(bare, i)
			continue
		}
		if pkg, ok := goFailLine(l); ok && len(bare) > 0 {
			drop[bare[len(bare)-1]] = passed[pkg]
			bare = bare[:len(bare)-1]
		}
	}
	var out []string
	for i, l := range lines {
		if drop[i] {
			continue
		}
		if pkg, ok := goFailLine(l); ok && passed[pkg] {
			l = "ok  " + strings.TrimPrefix(l, "FAIL")
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// goFailLine returns the package of a line with which go test ends a package that failed,
// "FAIL\tpkg\ttime".
func goFailLine(l string) (string, bool) {
	rest, ok := strings.CutPrefix(l, "FAIL\t")
	if !ok {
		return "", false
	}
	pkg, _, _ := strings.Cut(strings.TrimRight(rest, "\n"), "\t")
	return pkg, pkg != ""
}

// passPackages counts as Passed, in res.Packages, each Go package whose canaries were
// reported as planted and whose own tests did not fail: its test binary failed for the
// failing canary alone. A package whose canaries were not seen (its binary did not build,
// or died before they ran) keeps the failure go test gave it.
func (p *Planted) passPackages(res *Result) {
	if len(res.Packages) == 0 {
		return
	}
	failed := map[string]bool{}
	for _, t := range res.Tests {
		if t.Status == Failed {
			if pkg, _, ok := SplitGoID(t.ID, ""); ok {
				failed[pkg] = true
			}
		}
	}
	for pkg := range p.seen {
		if _, ok := res.Packages[pkg]; ok && !failed[pkg] {
			res.Packages[pkg] = Passed
		}
	}
}

// failCode is the exit code of a run of each runner whose tests failed (1 for the others).
var failCode = map[Runner]int{Cargo: 101}

// dropLines removes the lines of s that hold the canary's token.
func dropLines(s string, c Canary) string {
	if !c.Holds(s) {
		return s
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !c.Holds(l) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// A canarySite is a simple command of a command line that runs a runner, with the folder
// it runs in (after the line's cd commands, relative to the root unless absolute) and the
// control operator that follows it.
type canarySite struct {
	site
	cwd  string
	next string
}

func (s canarySite) text(command string) string {
	return command[s.words[0].start:s.words[len(s.words)-1].end]
}

// canarySites reads a command line's simple commands, following "cd DIR".
func canarySites(command string) []canarySite {
	var out []canarySite
	cwd := "."
	var cmd []word
	flush := func(op string) {
		if s, ok := siteOf(cmd); ok {
			out = append(out, canarySite{site: s, cwd: cwd, next: op})
		} else if len(cmd) == 2 && cmd[0].text == "cd" {
			if filepath.IsAbs(cmd[1].text) {
				cwd = filepath.Clean(cmd[1].text)
			} else {
				cwd = filepath.Join(cwd, cmd[1].text)
			}
		}
		cmd = nil
	}
	for _, w := range lex(command) {
		switch {
		case w.op:
			flush(w.text)
		case !w.redir:
			cmd = append(cmd, w)
		}
	}
	flush("")
	return out
}

// applyEdits applies edits that do not overlap, from the end.
func applyEdits(s string, edits []edit) string {
	slices.SortStableFunc(edits, func(a, b edit) int { return b.start - a.start })
	for _, e := range edits {
		s = s[:e.start] + e.text + s[e.end:]
	}
	return s
}

// An option is a runner's option as a command line gives it.
type option struct {
	name  string // "-run", "--testNamePattern"
	value string
	w     int // index in the site's words of the option's word
	vw    int // index of the word that holds the value: w, or w+1
	eq    bool
}

// argsOf splits a site's words after the runner into options and positional arguments.
// valued says which options take a value (as the next word when not written with "=");
// short options of one letter may carry it joined ("-kexpr") when joined is true. Words
// after "--" are left out (stop is where they start, or len(words)).
func argsOf(s site, valued func(string) bool, joined bool) (opts []option, pos []int, stop int) {
	ws := s.words
	i := s.at + 1
	for i < len(ws) {
		t := ws[i].text
		switch {
		case t == "--":
			return opts, pos, i
		case strings.HasPrefix(t, "-") && len(t) > 1:
			name, val, eq := strings.Cut(t, "=")
			o := option{name: name, w: i, vw: i, eq: eq, value: val}
			if !eq && joined && len(name) > 2 && name[1] != '-' && valued(name[:2]) {
				o.name, o.value, o.eq = name[:2], name[2:], true
			} else if !eq && valued(name) && i+1 < len(ws) {
				o.vw, o.value = i+1, ws[i+1].text
				i++
			}
			opts = append(opts, o)
		default:
			pos = append(pos, i)
		}
		i++
	}
	return opts, pos, len(ws)
}

// find returns the last of opts named one of names.
func find(opts []option, names ...string) (option, bool) {
	for i := len(opts) - 1; i >= 0; i-- {
		if slices.Contains(names, opts[i].name) {
			return opts[i], true
		}
	}
	return option{}, false
}

// replaceValue returns the edit that sets an option's value.
func replaceValue(s site, o option, value string) edit {
	w := s.words[o.vw]
	if o.vw == o.w {
		return edit{w.start, w.end, quote(o.name + "=" + value)}
	}
	return edit{w.start, w.end, quote(value)}
}

// goValued are the go test and build flags that take a value.
var goValued = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`run skip bench benchtime count cpu parallel timeout list fuzz
		fuzztime fuzzminimizetime coverprofile covermode coverpkg cpuprofile memprofile
		memprofilerate blockprofile blockprofilerate mutexprofile mutexprofilefraction trace
		outputdir shuffle o exec vet p tags ldflags gcflags asmflags mod modfile C toolexec
		pkgdir overlay pgo buildmode compiler gccgoflags installsuffix`) {
		goValued["-"+f], goValued["--"+f], goValued["-test."+f] = true, true, true
	}
}

// plantGo plants a Go canary in every package folder the site tests that holds test files.
func (p *Planted) plantGo(s site, dir string) ([]edit, string, error) {
	opts, pos, _ := argsOf(s, func(n string) bool { return goValued[n] }, false)
	for _, i := range pos {
		if s.words[i].text == "-args" {
			pos = pos[:slices.Index(pos, i)]
			break
		}
	}
	if o, ok := find(opts, "-C", "--C"); ok {
		dir = filepath.Join(dir, o.value)
	}
	if _, ok := find(opts, "-list", "--list", "-test.list"); ok {
		return nil, "go test -list runs no test", nil
	}
	var skip *regexp.Regexp
	if o, ok := find(opts, "-skip", "--skip", "-test.skip"); ok {
		skip, _ = regexp.Compile(o.value)
	}
	var pkgs []string
	if len(pos) == 0 {
		pkgs = []string{"."}
	}
	for _, i := range pos {
		pkgs = append(pkgs, s.words[i].text)
	}
	var dirs []string
	for _, arg := range pkgs {
		if strings.HasSuffix(arg, ".go") {
			return nil, "go test with .go files as arguments compiles only those files", nil
		}
		dirs = append(dirs, goPackageDirs(dir, arg)...)
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var run []string // the canaries' names, for -run
	for _, d := range dirs {
		if names, ok := p.goNames[d]; ok {
			run = append(run, names...) // planted by an earlier go test of the line
			continue
		}
		testFiles, _ := filepath.Glob(filepath.Join(d, "*_test.go"))
		words, err := p.nameWords(testFiles, goTestFuncRE())
		if err != nil {
			return nil, "", err
		}
		pkg, ok := goTestPackage(testFiles, p.Canary)
		if !ok {
			continue
		}
		importPath, ok := goImportPath(d)
		if !ok {
			continue
		}
		n := p.names(words, importPath)
		pass, fail := "Test"+title(n.pass)+title(p.Token), "Test"+title(n.fail)+title(p.Token)
		if skip != nil && (skip.MatchString(pass) || skip.MatchString(fail)) {
			return nil, fmt.Sprintf("go test -skip %s would skip the canaries", skip), nil
		}
		src := fmt.Sprintf("package %s\n\nimport \"testing\"\n\n"+
			"func %s(t *testing.T) {}\n\n"+
			"func %s(t *testing.T) {\n\tt.Fatal(%q)\n}\n", pkg, pass, fail, p.Message)
		if err := p.write(filepath.Join(d, n.file+"_"+p.Token+"_test.go"), src); err != nil {
			return nil, "", err
		}
		run = append(run, pass, fail)
		if p.goNames == nil {
			p.goNames = map[string][]string{}
		}
		p.goNames[d] = []string{pass, fail}
		prefix := importPath + "."
		p.units = append(p.units, canaryUnit{
			where: "package " + importPath, pass: prefix + pass, fail: prefix + fail, pkg: importPath,
			own: func(t Test) bool {
				rest, ok := strings.CutPrefix(t.ID, prefix)
				return ok && goTestNameRE().MatchString(rest)
			},
		})
	}
	var edits []edit
	if o, ok := find(opts, "-run", "--run", "-test.run"); ok && len(run) > 0 {
		slices.Sort(run)
		edits = append(edits, replaceValue(s, o, o.value+"|^(?:"+strings.Join(slices.Compact(run), "|")+")$"))
	}
	// -failfast would end a test binary at its failing canary, before the project's tests
	// that come after it in the file order: the failures of a run are the same without it.
	for _, o := range opts {
		if o.name == "-failfast" || o.name == "--failfast" || o.name == "-test.failfast" {
			edits = append(edits, edit{s.words[o.w-1].end, s.words[o.w].end, ""})
		}
	}
	return edits, "", nil
}

// goTestFuncRE matches a Go test function, its name after Test in the first group.
var goTestFuncRE = lazyre.New(`(?m)^func Test([A-Za-z0-9_]*)\(`)

// goPackageDirs returns the folders a go test package argument names, relative to dir:
// "./...", "./x/...", ".", "./x", an import path of dir's module ("example.com/m/x/...").
func goPackageDirs(dir, arg string) []string {
	if arg == "all" {
		arg = "./..."
	}
	if !strings.HasPrefix(arg, ".") && !filepath.IsAbs(arg) {
		// An import path: of the module dir is in, or not one of the project's.
		root, mod := goModule(dir)
		switch {
		case mod == "":
			return nil
		case arg == mod || arg == mod+"/...":
			arg = "." + strings.TrimPrefix(arg, mod)
		case strings.HasPrefix(arg, mod+"/"):
			arg = "./" + strings.TrimPrefix(arg, mod+"/")
		default:
			return nil
		}
		dir = root
	}
	base, recursive := strings.CutSuffix(arg, "/...")
	if arg == "..." {
		base, recursive = ".", true
	}
	start := base
	if !filepath.IsAbs(start) {
		start = filepath.Join(dir, base)
	}
	if !recursive {
		return []string{start}
	}
	var out []string
	_ = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != start && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || fileExists(filepath.Join(p, "go.mod"))) {
			return filepath.SkipDir
		}
		out = append(out, p)
		return nil
	})
	return out
}

// goModule returns the folder of the go.mod that dir is in, and its module path.
func goModule(dir string) (string, string) {
	for d := dir; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d, modulePath(d)
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// goImportPath returns the import path of the package in dir.
func goImportPath(dir string) (string, bool) {
	root, mod := goModule(dir)
	if mod == "" {
		return "", false
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return "", false
	}
	if rel == "." {
		return mod, true
	}
	return mod + "/" + filepath.ToSlash(rel), true
}

// goTestPackage returns the package a canary among a folder's test files belongs to: the
// package of one of them, chosen by the canary's token, so that the canaries run among the
// project's tests rather than always after them, where a forger would look for them. It
// reports false when there is no test file.
func goTestPackage(files []string, c Canary) (string, bool) {
	var names []string
	for _, f := range files {
		af, err := goparser.ParseFile(token.NewFileSet(), f, nil, goparser.PackageClauseOnly)
		if err != nil {
			continue
		}
		names = append(names, af.Name.Name)
	}
	if len(names) == 0 {
		return "", false
	}
	slices.Sort(names)
	return c.pick(slices.Compact(names), "package"), true
}

// pyValued are pytest's options that take a value.
var pyValued = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`-k -m -p -c -o -W -r -n --rootdir --junitxml --junit-xml
		--basetemp --confcutdir --deselect --ignore --ignore-glob --import-mode --maxfail
		--durations --durations-min --tb --log-level --log-file --log-format --log-cli-level
		--cov-report --cov-config --dist --timeout --capture --color --override-ini
		--show-capture --log-file-level --log-date-format --junit-prefix --config-file
		--inifile --pastebin --max-worker-restart --rsyncdir`) {
		pyValued[f] = true
	}
}

// plantPytest plants a pytest canary in every folder of tests the site collects.
func (p *Planted) plantPytest(s site, dir string) ([]edit, string, error) {
	opts, pos, stop := argsOf(s, func(n string) bool { return pyValued[n] }, true)
	if stop < len(s.words) {
		return nil, "pytest's arguments after -- cannot be told apart", nil
	}
	for _, o := range opts {
		switch {
		case o.name == "-m":
			return nil, "pytest -m selects tests by marker, which no canary carries", nil
		case o.name == "--pyargs":
			return nil, "pytest --pyargs names modules, not files", nil
		case o.name == "--co" || o.name == "--collect-only" || o.name == "--setup-plan" || o.name == "--setup-only":
			return nil, "pytest " + o.name + " runs no test", nil
		}
	}
	var edits []edit
	var dirs, files []string
	if len(pos) == 0 {
		for _, tp := range pyTestPaths(dir) {
			dirs = append(dirs, pyTestDirs(filepath.Join(dir, tp), p.Canary)...)
		}
		if len(dirs) == 0 {
			dirs = pyTestDirs(dir, p.Canary)
		}
	}
	for _, i := range pos {
		arg := s.words[i].text
		file, _, node := strings.Cut(arg, "::")
		abs := file
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, file)
		}
		st, err := os.Stat(abs)
		switch {
		case err != nil:
			continue // not a path; pytest will say so
		case st.IsDir() && !node:
			dirs = append(dirs, pyTestDirs(abs, p.Canary)...)
		default:
			files = append(files, filepath.Dir(abs))
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	slices.Sort(files)
	files = slices.Compact(files)
	var appendArgs []string
	var used []string // the words of the files planted: pytest wants their names distinct
	plant := func(d string, explicit bool) error {
		words, err := p.nameWords(pyTestFiles(d), pyTestFuncRE())
		if err != nil {
			return err
		}
		n := p.names(words, p.rel(d))
		n.file = p.pick(words, p.rel(d)+"\x00file", used...)
		used = append(used, n.file)
		name := "test_" + n.file + "_" + p.Token + ".py"
		if slices.Contains(used[:len(used)-1], n.file) {
			name = fmt.Sprintf("test_%s_%s%d.py", n.file, p.Token, len(used))
		}
		pass, fail := "test_"+n.pass+"_"+p.Token, "test_"+n.fail+"_"+p.Token
		src := fmt.Sprintf("def %s():\n    pass\n\n\ndef %s():\n    raise AssertionError(%q)\n", pass, fail, p.Message)
		abs := filepath.Join(d, name)
		if err := p.write(abs, src); err != nil {
			return err
		}
		if explicit {
			rel, err := filepath.Rel(dir, abs)
			if err != nil {
				rel = abs
			}
			appendArgs = append(appendArgs, rel)
		}
		folder := d
		p.units = append(p.units, canaryUnit{
			where: "folder " + p.rel(folder),
			pass:  name + "::" + pass, fail: name + "::" + fail,
			own: func(t Test) bool {
				f := t.File
				if f == "" {
					f, _, _ = strings.Cut(t.ID, "::")
				}
				return f != "" && filepath.Clean(filepath.Join(p.root, filepath.Dir(filepath.FromSlash(f)))) == folder
			},
		})
		return nil
	}
	for _, d := range dirs {
		if err := plant(d, false); err != nil {
			return nil, "", err
		}
	}
	for _, d := range files {
		if slices.Contains(dirs, d) {
			continue
		}
		if err := plant(d, true); err != nil {
			return nil, "", err
		}
	}
	if len(appendArgs) > 0 {
		var b strings.Builder
		for _, a := range appendArgs {
			b.WriteString(" " + quote(a))
		}
		end := s.words[len(s.words)-1].end
		edits = append(edits, edit{end, end, b.String()})
	}
	if o, ok := find(opts, "-k"); ok {
		edits = append(edits, replaceValue(s, o, "("+o.value+") or "+p.Token))
	}
	// -x and --maxfail stop at the first failures: let the canary's failure be one more.
	maxfail := 0
	for _, o := range opts {
		switch {
		case o.name == "-x" || o.name == "--exitfirst":
			maxfail = 1
		case o.name == "--maxfail":
			maxfail, _ = strconv.Atoi(o.value)
		case strings.HasPrefix(o.name, "-") && !strings.HasPrefix(o.name, "--") && !o.eq && strings.Contains(o.name[1:], "x") && !pyValued[o.name[:2]]:
			maxfail = 1 // -qx
		}
	}
	if maxfail > 0 {
		end := s.words[len(s.words)-1].end
		edits = append(edits, edit{end, end, " --maxfail=" + strconv.Itoa(maxfail+1)})
	}
	return edits, "", nil
}

// pyTestPaths reads the testpaths of the pytest configuration in dir (pytest.ini,
// pyproject.toml, tox.ini, setup.cfg, the first that configures pytest); nil when none.
func pyTestPaths(dir string) []string {
	v := pytestIniValues(dir, "testpaths")
	if len(v) == 0 {
		return nil
	}
	return iniWords(v[0])
}

// pyNoRecurse are the folders pytest does not look into by default (norecursedirs).
var pyNoRecurse = map[string]bool{"build": true, "dist": true, "node_modules": true, "venv": true, "CVS": true, "_darcs": true, "{arch}": true, "__pycache__": true}

// pyTestFuncRE matches a pytest test function, its name after test_ in the first group.
var pyTestFuncRE = lazyre.New(`(?m)^\s*(?:async\s+)?def test_?(\w*)\(`)

// pyTestFiles returns the pytest files (test_*.py, *_test.py) in dir.
func pyTestFiles(dir string) []string {
	a, _ := filepath.Glob(filepath.Join(dir, "test_*.py"))
	b, _ := filepath.Glob(filepath.Join(dir, "*_test.py"))
	return append(a, b...)
}

// pyTestDirs returns the folders under start that hold pytest files (test_*.py, *_test.py),
// not counting the files of canary c.
func pyTestDirs(start string, c Canary) []string {
	var out []string
	_ = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != start && (strings.HasPrefix(name, ".") || pyNoRecurse[name] || strings.HasSuffix(name, ".egg") || fileExists(filepath.Join(p, "pyvenv.cfg"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".py") && (strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py")) && !c.Holds(name) {
			if len(out) == 0 || out[len(out)-1] != filepath.Dir(p) {
				out = append(out, filepath.Dir(p))
			}
		}
		return nil
	})
	return out
}

// jsValued are the vitest and jest options that take a value.
var jsValued = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`-t --testNamePattern -c --config --root --dir -r --reporter
		--outputFile --project --environment --pool --shard --testTimeout --maxWorkers
		--rootDir --roots --testPathPattern --testPathPatterns --testPathIgnorePatterns
		--testRegex --testMatch --selectProjects --coverageDirectory -w --mode --exclude
		--seed --sequence.seed`) {
		jsValued[f] = true
	}
}

// plantJS plants one vitest or jest canary file next to the first test file the site runs.
func (p *Planted) plantJS(s site, dir string) ([]edit, string, error) {
	if s.words[s.at].text == "related" {
		return nil, "vitest related runs the tests of named source files", nil
	}
	opts, pos, _ := argsOf(s, func(n string) bool { return jsValued[n] }, false)
	for _, o := range opts {
		switch o.name {
		case "--bail", "-b":
			return nil, o.name + " stops at the first failing test file, which a canary may be", nil
		case "--listTests", "--list", "--findRelatedTests", "--onlyChanged", "-o", "--changed", "--lastCommit", "--testPathPattern", "--testPathPatterns", "--testRegex", "--selectProjects", "--project", "--shard":
			return nil, o.name + " selects test files in a way a canary cannot follow", nil
		}
	}
	var filters []string
	for _, i := range pos {
		filters = append(filters, s.words[i].text)
	}
	neighbour := firstJSTest(dir, filters, p.Runner, p.Canary)
	if neighbour == "" {
		return nil, "", nil
	}
	base := filepath.Base(neighbour)
	infix, ext := ".test", path.Ext(base)
	if strings.Contains(base, ".spec.") {
		infix = ".spec"
	}
	if p.plantedIn(filepath.Dir(neighbour)) {
		return nil, "", nil
	}
	words, err := p.nameWords([]string{neighbour}, jsTestTitleRE())
	if err != nil {
		return nil, "", err
	}
	stem, _, _ := strings.Cut(base, ".")
	n := p.names(words, p.rel(neighbour))
	n.file = p.pick(splitWords(stem), "file")
	name := n.file + "-" + p.Token + infix + ext
	abs := filepath.Join(filepath.Dir(neighbour), name)
	// Every line holds the token: vitest and jest print the lines around a failure.
	head := ""
	if p.Runner == Vitest {
		head = "import { test } from \"vitest\"; "
	}
	passTitle, failTitle := n.pass+" "+p.Token, n.fail+" "+p.Token
	src := head + fmt.Sprintf("test(%q, () => {});\n"+
		"test(%q, () => { throw new Error(%q); });\n", passTitle, failTitle, p.Message)
	if err := p.write(abs, src); err != nil {
		return nil, "", err
	}
	rel := p.rel(abs)
	p.units = append(p.units, canaryUnit{
		where: "file " + rel, pass: name + jsSep + passTitle, fail: name + jsSep + failTitle,
		own: func(Test) bool { return true },
	})
	var edits []edit
	if len(filters) > 0 {
		arg, err := filepath.Rel(dir, abs)
		if err != nil {
			arg = abs
		}
		if p.Runner == Jest {
			arg = jsRegexpEscape(arg)
		}
		w := s.words[pos[len(pos)-1]]
		edits = append(edits, edit{w.end, w.end, " " + quote(arg)})
	}
	if o, ok := find(opts, "-t", "--testNamePattern"); ok {
		edits = append(edits, replaceValue(s, o, "(?:"+o.value+")|^(?:"+passTitle+"|"+failTitle+")$"))
	}
	return edits, "", nil
}

// jsTestTitleRE matches the title of a vitest or jest test, in the first group.
var jsTestTitleRE = lazyre.New(`\b(?:test|it)\(\s*["'\x60]([^"'\x60]*)`)

// jsTestRE matches the test files vitest and jest find by default.
var jsTestRE = lazyre.New(`\.(?:test|spec)\.[cm]?[jt]sx?$`)

// firstJSTest returns the first test file under dir (outside node_modules and hidden
// folders, not one of canary c) in path order that every filter matches (a path substring
// for vitest, a regular expression for jest); "" when there is none.
func firstJSTest(dir string, filters []string, r Runner, c Canary) string {
	found := ""
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "dist" || name == "coverage" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !jsTestRE().MatchString(name) || c.Holds(name) {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for _, f := range filters {
			ok := strings.Contains(rel, strings.TrimPrefix(f, "./"))
			if r == Jest {
				if re, err := regexp.Compile(f); err == nil {
					ok = re.MatchString(rel)
				}
			}
			if !ok {
				return nil
			}
		}
		found = p
		return filepath.SkipAll
	})
	return found
}

// plantCargo plants tests/<word>_<token>.rs in the package the site tests.
func (p *Planted) plantCargo(s site, dir string) ([]edit, string, error) {
	cargoValued := func(n string) bool {
		switch n {
		case "-p", "--package", "--manifest-path", "--test", "--bin", "--example", "--bench", "--features", "-F",
			"--target", "--target-dir", "-j", "--jobs", "--profile", "--exclude", "--color", "--message-format", "-Z", "--config", "--lockfile-path":
			return true
		}
		return false
	}
	opts, pos, stop := argsOf(s, cargoValued, false)
	for _, o := range opts {
		switch o.name {
		case "--doc":
			return nil, "cargo test --doc runs documentation tests only", nil
		case "-p", "--package", "--manifest-path", "--exclude":
			return nil, "cargo test " + o.name + " names packages; the canary is planted in the root package only", nil
		}
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "Cargo.toml"))
	if err != nil || !regexp.MustCompile(`(?m)^\[package\]`).Match(manifest) {
		return nil, "the Cargo.toml here declares no package (a workspace of members): the canary goes in a package's tests folder", nil
	}
	tests := filepath.Join(dir, "tests")
	if p.plantedIn(tests) {
		return nil, "", nil
	}
	rsFiles, _ := filepath.Glob(filepath.Join(tests, "*.rs"))
	words, err := p.nameWords(rsFiles, rsTestFuncRE())
	if err != nil {
		return nil, "", err
	}
	for _, f := range rsFiles {
		words = append(words, splitWords(strings.TrimSuffix(filepath.Base(f), ".rs"))...)
	}
	n := p.names(words, "tests")
	stem := n.file + "_" + p.Token
	if !fileExists(tests) {
		if err := os.Mkdir(tests, 0o755); err != nil {
			return nil, "", err
		}
		p.dirs = append(p.dirs, tests)
	}
	pass, fail := n.pass+"_"+p.Token, n.fail+"_"+p.Token
	src := fmt.Sprintf("#[test]\nfn %s() {}\n\n#[test]\nfn %s() {\n    panic!(%q);\n}\n", pass, fail, p.Message)
	abs := filepath.Join(tests, stem+".rs")
	if err := p.write(abs, src); err != nil {
		return nil, "", err
	}
	file := p.rel(abs)
	// cargo builds a test binary of its own from the canary: it goes too.
	for _, sub := range []string{"deps/*" + stem + "*", "incremental/*" + stem + "*", ".fingerprint/*/*" + stem + "*"} {
		p.junk = append(p.junk, filepath.Join(dir, "target", "*", filepath.FromSlash(sub)))
	}
	p.units = append(p.units, canaryUnit{where: "file " + file, pass: pass, fail: fail, own: func(Test) bool { return true }})
	var edits []edit
	targeted := false
	for _, o := range opts {
		switch o.name {
		case "--lib", "--bin", "--bins", "--test", "--example", "--examples", "--bench", "--benches":
			targeted = true
		case "--tests", "--all-targets":
			targeted = false
			goto decided
		}
	}
decided:
	// cargo stops at the first test binary that fails, which the canary's may be, before
	// the project's binaries that come after it: --no-fail-fast runs them all.
	var after string
	if _, ok := find(opts, "--no-fail-fast"); !ok {
		after = " --no-fail-fast"
	}
	if targeted {
		after += " --test " + quote(stem)
	}
	if after != "" {
		w := s.words[s.at]
		edits = append(edits, edit{w.end, w.end, after})
	}
	// Name filters (before or after --) select by name: the canaries are named too.
	filtered := len(pos) > 0
	for _, w := range s.words[min(stop+1, len(s.words)):] {
		if !strings.HasPrefix(w.text, "-") {
			filtered = true
		}
	}
	if filtered {
		end := s.words[len(s.words)-1].end
		text := " " + pass + " " + fail
		if stop == len(s.words) {
			text = " --" + text
		}
		edits = append(edits, edit{end, end, text})
	}
	return edits, "", nil
}

// rsTestFuncRE matches a Rust function, its name in the first group.
var rsTestFuncRE = lazyre.New(`\bfn\s+([A-Za-z0-9_]+)`)

// plantedIn reports whether a canary file was planted in the folder dir already.
func (p *Planted) plantedIn(dir string) bool {
	for _, f := range p.Files {
		if filepath.Join(p.root, filepath.Dir(filepath.FromSlash(f))) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// write writes a canary file and records it.
func (p *Planted) write(abs, src string) error {
	if fileExists(abs) {
		return fmt.Errorf("plant canary: %s exists", abs)
	}
	if err := os.WriteFile(abs, []byte(src), 0o644); err != nil {
		return fmt.Errorf("plant canary: %w", err)
	}
	p.Files = append(p.Files, p.rel(abs))
	return nil
}

// rel returns abs relative to the root, with slashes.
func (p *Planted) rel(abs string) string {
	if r, err := filepath.Rel(p.root, abs); err == nil {
		return filepath.ToSlash(r)
	}
	return abs
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
