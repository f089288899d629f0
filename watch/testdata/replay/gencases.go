//go:build ignore

// Command gencases regenerates cases.json, the fixed case list of TestReplayHistory
// (watch/replay_test.go), from local mirrors of public repositories: bare git directories
// at <mirrors>/<owner>+<name>/repo (-mirrors, else $ORCHESTRATOR_REPLAY_MIRRORS). It holds no code of
// those repositories; it reads their history with git and runs their tests.
//
// For each repository it walks the history of the default branch's head, newest first
// (merged branches included), and
// keeps a commit when:
//
//   - it is not a merge, and changes tests and code together: at least one test file by the
//     project's conventions (Go: *_test.go and anything under testdata/; Python: anything
//     under tests/, test_*.py, *_test.py, conftest.py; Rust: anything under tests/, the
//     gate's default globs, so that a crate's unit tests inside src/ are code) and at least
//     one source file of the language that is not a test;
//   - it changes no symlink, submodule or file mode, adds no executable file (the replay's
//     agents write files without the executable bit), and changes at most 25 files;
//   - the parent's suite passes here, offline (the test command under unshare -n), and so
//     does the commit's.
//
// It also runs the suite on the RED state (the parent with the commit's test files) and
// records the tests that fail there, as facts for the person who judges each case by hand
// against SPEC §7.2. Judgements already in the output file ("expected", "judgement") are
// kept for the commits it selects again.
//
// Usage (from the module root):
//
//	go run watch/testdata/replay/gencases.go -mirrors DIR [-per 5] [-scan 150] [-repo owner/name [-commits SHA,SHA]]
//
// -commits looks only at those commits (prefixes of their hashes) of -repo's history, for a
// repository whose suite is too slow to try every commit.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// project is a repository the replay draws cases from.
type project struct {
	Repo, Lang, TestCommand string
	// NodeModules are the npm packages its test command needs (JavaScript: the runner),
	// installed once into ~/.cache/orchestrator-test/replay-node/<packages> and copied in as
	// the tree's node_modules, as TestReplayHistory does.
	NodeModules []string
}

// projects are small libraries nobody here wrote whose tests run offline with the standard
// library (Go), Debian's pytest (Python) or cargo (Rust: crates with no dependencies at
// all, optional and dev ones included, since cargo resolves them all and crates.io is not
// reached offline). The Python commands turn off what needs a plugin Debian does not ship
// (parse's --cov addopts) or put a src layout on the path.
var projects = []project{
	{"Masterminds/semver", "go", "go test ./...", nil},
	{"hashicorp/go-version", "go", "go test ./...", nil},
	{"dustin/go-humanize", "go", "go test ./...", nil},
	{"gomarkdown/markdown", "go", "go test ./...", nil},
	{"google/uuid", "go", "go test ./...", nil},
	{"spf13/pflag", "go", "go test ./...", nil},
	{"BurntSushi/toml", "go", "go test ./...", nil},
	{"andialbrecht/sqlparse", "python", "/usr/bin/python3 -m pytest -q", nil},
	// pytest 7 takes -o pythonpath only with an ini file; tomli's pyproject.toml has no
	// pytest section of its own.
	{"hukkin/tomli", "python", "/usr/bin/python3 -m pytest -q -c pyproject.toml -o pythonpath=src", nil},
	{"r1chardj0n3s/parse", "python", "/usr/bin/python3 -m pytest -q -o addopts=", nil},
	{"more-itertools/more-itertools", "python", "/usr/bin/python3 -m pytest -q", nil},
	{"rapidfuzz/strsim-rs", "rust", "cargo test", nil},
	// autocfg's integration tests run rustc on probes, whose expected compile errors
	// reach the output beside libtest's.
	{"cuviper/autocfg", "rust", "cargo test", nil},
	// ufo's tests import its TypeScript sources; vitest is all they need of its
	// devDependencies (pnpm's, with no npm lock file).
	{"unjs/ufo", "js", "npx vitest run", []string{"vitest@3.2.4"}},
}

// Case is one replayed commit. Its JSON form is the schema of cases.json.
type Case struct {
	Name        string   `json:"name"`
	Repo        string   `json:"repo"`
	Lang        string   `json:"lang"`
	Commit      string   `json:"commit"`
	Parent      string   `json:"parent"`
	Subject     string   `json:"subject"`
	TestCommand string   `json:"test_command"`
	TestFiles   []string `json:"test_files"`
	TestDeleted []string `json:"test_deleted,omitempty"`
	CodeFiles   []string `json:"code_files"`
	CodeDeleted []string `json:"code_deleted,omitempty"`
	// NodeModules are the project's NodeModules, which TestReplayHistory installs.
	NodeModules []string `json:"node_modules,omitempty"`
	// RedFailing are the tests that fail on the parent with the commit's test files (go
	// test's package/Test names, pytest's node IDs); "(build) pkg" for a Go package that
	// does not build. Facts for the judgement, not read by the test.
	RedFailing []string `json:"red_failing"`
	// Expected is the outcome SPEC §7.2 (as rewritten for issue 24) asks for, judged by
	// hand: "land", or "refuse: <failure type>: <why>", or "refuse: <failure type>
	// (<phrase the reason must hold>): <why>". Judgement says why.
	Expected  string `json:"expected"`
	Judgement string `json:"judgement,omitempty"`
}

// File is cases.json.
type File struct {
	Comment string  `json:"comment"`
	Cases   []*Case `json:"cases"`
}

func main() {
	mirrors := flag.String("mirrors", os.Getenv("ORCHESTRATOR_REPLAY_MIRRORS"), "folder of the mirrors, <owner>+<name>/repo")
	per := flag.Int("per", 5, "cases per repository at most")
	scan := flag.Int("scan", 150, "commits per repository to look at, newest first")
	out := flag.String("o", "watch/testdata/replay/cases.json", "output file")
	only := flag.String("repo", "", "regenerate only this repository's cases (owner/name); keep the others")
	commits := flag.String("commits", "", "with -repo: look only at these commits (comma-separated hash prefixes)")
	flag.Parse()
	var pick []string
	if *commits != "" {
		if *only == "" {
			fatal(fmt.Errorf("-commits needs -repo"))
		}
		pick = strings.Split(*commits, ",")
	}
	old := map[string]*Case{}
	var kept []*Case
	if b, err := os.ReadFile(*out); err == nil {
		var f File
		if err := json.Unmarshal(b, &f); err != nil {
			fatal(fmt.Errorf("%s: %w", *out, err))
		}
		for _, c := range f.Cases {
			old[c.Commit] = c
			if *only != "" && c.Repo != *only {
				kept = append(kept, c)
			}
		}
	}
	f := File{Comment: "Cases of TestReplayHistory (watch/replay_test.go), made by gencases.go; expected and judgement are by hand (SPEC §7.2)."}
	for _, p := range projects {
		if *only != "" && p.Repo != *only {
			for _, c := range kept {
				if c.Repo == p.Repo {
					f.Cases = append(f.Cases, c)
				}
			}
			continue
		}
		gitDir := filepath.Join(*mirrors, strings.Replace(p.Repo, "/", "+", 1), "repo")
		cases, err := selectCases(p, gitDir, *per, *scan, pick)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", p.Repo, err))
		}
		for _, c := range cases {
			if o := old[c.Commit]; o != nil {
				c.Expected, c.Judgement = o.Expected, o.Judgement
			}
			if c.Expected == "" {
				c.Expected = "land"
				c.Judgement = "not judged yet"
			}
		}
		f.Cases = append(f.Cases, cases...)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		fatal(err)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%d cases written to %s\n", len(f.Cases), *out)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gencases:", err)
	os.Exit(1)
}

// selectCases walks p's history newest first and returns up to per cases, of the commits
// whose hash starts with one of pick when pick is not empty.
func selectCases(p project, gitDir string, per, scan int, pick []string) ([]*Case, error) {
	log, err := git(gitDir, "log", "--no-merges", "-n", fmt.Sprint(scan), "--format=%H %P")
	if err != nil {
		return nil, err
	}
	var cases []*Case
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if len(cases) == per {
			break
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if len(pick) > 0 && !slices.ContainsFunc(pick, func(h string) bool { return h != "" && strings.HasPrefix(f[0], h) }) {
			continue
		}
		c, ok, err := candidate(p, gitDir, f[0], f[1])
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		fmt.Fprintf(os.Stderr, "%s %s: %s ... ", p.Repo, c.Commit[:10], c.Subject)
		if why := c.check(gitDir); why != "" {
			fmt.Fprintln(os.Stderr, "skipped:", why)
			continue
		}
		fmt.Fprintf(os.Stderr, "kept; RED state fails %d tests\n", len(c.RedFailing))
		cases = append(cases, c)
	}
	return cases, nil
}

// candidate reads the change of commit against parent and returns it as a case when it
// changes tests and code together and nothing a scripted agent cannot write.
func candidate(p project, gitDir, commit, parent string) (*Case, bool, error) {
	raw, err := git(gitDir, "diff-tree", "-r", "--no-renames", "--raw", "-z", parent, commit)
	if err != nil {
		return nil, false, err
	}
	c := &Case{Repo: p.Repo, Lang: p.Lang, Commit: commit, Parent: parent, TestCommand: p.TestCommand, NodeModules: p.NodeModules}
	fields := strings.Split(strings.TrimSuffix(raw, "\x00"), "\x00")
	code := 0
	for i := 0; i+1 < len(fields); i += 2 {
		// ":oldmode newmode oldsha newsha status", then the path.
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		file := fields[i+1]
		if len(meta) != 5 {
			return nil, false, fmt.Errorf("diff-tree line %q", fields[i])
		}
		oldMode, newMode, status := meta[0], meta[1], meta[4]
		if status == "D" {
			newMode = oldMode
		}
		if status == "A" {
			oldMode = newMode
		}
		if oldMode != newMode || newMode != "100644" && newMode != "100755" {
			return nil, false, nil // a mode change, symlink or submodule
		}
		if status == "A" && newMode == "100755" {
			return nil, false, nil // the replay's agents write new files without the executable bit
		}
		isTest := isTestFile(p.Lang, file)
		switch {
		case isTest && status == "D":
			c.TestDeleted = append(c.TestDeleted, file)
		case isTest:
			c.TestFiles = append(c.TestFiles, file)
		case status == "D":
			c.CodeDeleted = append(c.CodeDeleted, file)
		default:
			c.CodeFiles = append(c.CodeFiles, file)
		}
		if !isTest && isSource(p.Lang, file) {
			code++
		}
	}
	n := len(c.TestFiles) + len(c.TestDeleted) + len(c.CodeFiles) + len(c.CodeDeleted)
	if len(c.TestFiles)+len(c.TestDeleted) == 0 || code == 0 || n > 25 {
		return nil, false, nil
	}
	if p.Lang == "go" {
		// Before modules, go test ./... does not run outside GOPATH.
		if _, err := git(gitDir, "cat-file", "-e", parent+":go.mod"); err != nil {
			return nil, false, nil
		}
	}
	if c.Subject, err = git(gitDir, "log", "-1", "--format=%s", commit); err != nil {
		return nil, false, err
	}
	c.Subject = strings.TrimSpace(c.Subject)
	c.Name = path.Base(p.Repo) + "-" + commit[:8]
	return c, true, nil
}

// isTestFile says whether file is a test file or test data by the project's conventions.
func isTestFile(lang, file string) bool {
	base := path.Base(file)
	dirs := strings.Split(path.Dir(file), "/")
	has := func(d string) bool {
		for _, x := range dirs {
			if x == d {
				return true
			}
		}
		return false
	}
	if lang == "go" {
		return strings.HasSuffix(base, "_test.go") || has("testdata")
	}
	switch lang {
	case "rust":
		return has("tests")
	case "js":
		// The gate's default globs: test/**, tests/**, *.test.* and *.spec.* files.
		for _, suf := range []string{".test.", ".spec."} {
			if strings.Contains(base, suf) {
				return true
			}
		}
		return has("test") || has("tests") || has("__tests__")
	}
	return has("tests") || base == "conftest.py" ||
		strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py"))
}

func isSource(lang, file string) bool {
	switch lang {
	case "go":
		return strings.HasSuffix(file, ".go")
	case "rust":
		return strings.HasSuffix(file, ".rs")
	case "js":
		switch path.Ext(file) {
		case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
			return true
		}
		return false
	}
	return strings.HasSuffix(file, ".py")
}

// check runs the suite on the parent, on the commit and on the RED state; it returns why
// the case is not kept ("" when it is) and fills RedFailing.
func (c *Case) check(gitDir string) string {
	for _, rev := range []string{c.Parent, c.Commit} {
		dir, err := tree(gitDir, rev)
		if err != nil {
			return err.Error()
		}
		ok, out := c.suite(dir)
		os.RemoveAll(dir)
		if !ok {
			return fmt.Sprintf("the suite fails at %s: %s", rev[:10], lastLines(out, 3))
		}
	}
	dir, err := tree(gitDir, c.Parent)
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	for _, f := range c.TestFiles {
		b, err := exec.Command("git", "--git-dir", gitDir, "show", c.Commit+":"+f).Output()
		if err != nil {
			return fmt.Sprintf("git show %s: %v", f, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err.Error()
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err.Error()
		}
	}
	for _, f := range c.TestDeleted {
		os.Remove(filepath.Join(dir, filepath.FromSlash(f)))
	}
	_, out := c.suite(dir, c.detailFlags()...)
	c.RedFailing = failing(c.Lang, out)
	return ""
}

// detailFlags are added to the test command on the RED state, to read which tests fail.
func (c *Case) detailFlags() []string {
	switch c.Lang {
	case "go":
		return []string{"-json"}
	case "rust":
		return []string{"--no-fail-fast"}
	case "js":
		return []string{"--reporter=verbose"}
	}
	return []string{"-rfE"}
}

// suite runs the case's test command in dir, offline, with extra flags appended.
func (c *Case) suite(dir string, extra ...string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command := c.TestCommand
	if len(extra) > 0 {
		command = strings.Replace(command, " test", " test "+strings.Join(extra, " "), 1)
		if c.Lang == "python" || c.Lang == "js" {
			command = c.TestCommand + " " + strings.Join(extra, " ")
		}
	}
	if len(c.NodeModules) > 0 {
		nm, err := nodeModules(c.NodeModules)
		if err == nil {
			err = exec.Command("cp", "-a", nm, filepath.Join(dir, "node_modules")).Run()
		}
		if err != nil {
			return false, "node_modules: " + err.Error()
		}
		defer os.RemoveAll(filepath.Join(dir, "node_modules"))
	}
	cmd := exec.CommandContext(ctx, "unshare", "-n", "/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

// nodeModules returns the folder of npm packages pkgs, installed on first use into
// ~/.cache/orchestrator-test/replay-node/<pkgs> (the folder TestReplayHistory uses).
func nodeModules(pkgs []string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "orchestrator-test", "replay-node", strings.ReplaceAll(strings.Join(pkgs, "+"), "/", "_"))
	nm := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "installed")); err == nil {
		return nm, nil
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("npm", append([]string{"install", "--no-audit", "--no-fund", "--no-package-lock"}, pkgs...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s: %v: %s", strings.Join(pkgs, " "), err, lastLines(string(out), 3))
	}
	return nm, os.WriteFile(filepath.Join(dir, "installed"), nil, 0o644)
}

// pytestFailed reads a line of pytest's short summary (-rfE): "FAILED id - message"; a
// parametrized ID may hold blanks.
var pytestFailed = regexp.MustCompile(`^(FAILED|ERROR) (.+?)(?: - .*)?$`)

// cargoFailed reads libtest's line of a failed test; cargoBuild, a compile error of the
// crate ("error[E0425]: ..." or "error: ..."), whose location follows on a "-->" line.
var (
	cargoFailed = regexp.MustCompile(`^test (.+?) \.\.\. FAILED$`)
	cargoBuild  = regexp.MustCompile(`^error(\[E\d+\])?: (.*)$`)
	cargoLoc    = regexp.MustCompile(`^\s*--> (\S+?):\d+`)
	// vitestFailed reads a failure of vitest's summary: " FAIL  test/a.test.ts > name".
	vitestFailed = regexp.MustCompile(`^\s*FAIL\s+(\S.*?)\s*$`)
)

// failing reads the failing tests from the output of the suite's detailed run.
func failing(lang, out string) []string {
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	buildError := ""
	for sc.Scan() {
		line := sc.Bytes()
		if lang == "rust" {
			// A compile error, named by its location; "could not compile" sums it up. A
			// test that runs rustc on a program of its own (autocfg's probes, read from
			// standard input: "<anon>") prints such errors too, which are not the crate's.
			if m := cargoFailed.FindSubmatch(line); m != nil {
				seen[string(m[1])] = true
			} else if m := cargoBuild.FindSubmatch(line); m != nil && !bytes.Contains(line, []byte("could not compile")) && !bytes.Contains(line, []byte("test failed")) && !bytes.Contains(line, []byte("aborting due to")) {
				buildError = string(m[0])
			} else if m := cargoLoc.FindSubmatch(line); m != nil && buildError != "" {
				if string(m[1]) != "<anon>" {
					seen["(build) "+string(m[1])+": "+buildError] = true
				}
				buildError = ""
			}
			continue
		}
		if lang == "js" {
			// vitest's verbose reporter: "FAIL  file > suite > test" in its summary.
			if m := vitestFailed.FindSubmatch(line); m != nil {
				seen[string(m[1])] = true
			}
			continue
		}
		if lang == "python" {
			if m := pytestFailed.FindSubmatch(line); m != nil {
				seen[string(m[2])] = true
			}
			continue
		}
		var ev struct{ Action, Package, Test, Output, FailedBuild string }
		if !bytes.HasPrefix(line, []byte("{")) {
			if bytes.HasPrefix(line, []byte("FAIL\t")) {
				// A package that did not build reports no test events.
				if f := strings.Fields(string(line)); len(f) >= 2 && strings.Contains(string(line), "[build failed]") {
					seen["(build) "+f[1]] = true
				}
			}
			continue
		}
		if json.Unmarshal(line, &ev) != nil || ev.Action != "fail" {
			continue
		}
		if ev.Test != "" {
			seen[ev.Package+"."+ev.Test] = true
		} else if ev.FailedBuild != "" || strings.Contains(ev.Output, "build failed") {
			seen["(build) "+ev.Package] = true
		}
	}
	names := []string{}
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	// A Go test that fails in a subtest also fails itself: keep the subtests' parents out
	// when a subtest names the failure.
	out2 := []string{}
	for _, n := range names {
		parent := false
		for _, m := range names {
			if strings.HasPrefix(m, n+"/") {
				parent = true
			}
		}
		if !parent {
			out2 = append(out2, n)
		}
	}
	return out2
}

// tree writes the tree of rev into a new temporary folder.
func tree(gitDir, rev string) (string, error) {
	dir, err := os.MkdirTemp("", "gencases-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("sh", "-c", `git --git-dir="$1" archive "$2" | tar -x -C "$3"`, "sh", gitDir, rev, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("archive %s: %v: %s", rev, err, out)
	}
	return dir, nil
}

func git(gitDir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"--git-dir", gitDir}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
