package worktree

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Patterns, folders and names the staging tests draw from: every form of git's ignore
// patterns (anchored, folder-only, negated, "**" at each place, classes, escapes, trailing
// spaces) and names that each of them matches or nearly matches.
var (
	stagePatterns = []string{
		"*.log", "!keep.log", "build/", "/build", "tmp", "**/cache", "docs/**", "a/**/b", "*.o",
		"/*.txt", "src/*.gen", "**/*.tmp", "out*/", "[ab].md", "[!a]*.md", "x?y", "\\#lit",
		"trail ", "trail\\ ", "d1/d2", "!d1/", "d1/*", "!d1/keep", "*/*.c", "foo/**/", "[[:digit:]]*",
		"\\!bang", "sub/", "**/d2/**", "*.md/", "é*", "?.go", "**", "!*.go", "d2", "/d1/d2/", "a*b*c",
		"**/", "*[", "[z-a]*", "build/**/*.o", "#comment", "", "/", "!", "src/", "!src/keep/",
	}
	stageDirs  = []string{"src", "build", "d1", "d2", "a", "b", "docs", "out1", "tmp", "cache", "sub", "x.md", "foo", "src/keep"}
	stageNames = []string{
		"a.go", "x.log", "keep.log", "b.md", "a.md", "c.md", "1.txt", "x.o", "cache", "tmp", "build", "xzy", "xay",
		"#lit", "!bang", "é.txt", "f.tmp", "main.c", "trail", "trail ", "n.gen", "keep", "abc", "a1b2c3", "z.md", "[",
	}
)

// randomPath returns a file path of the staging tests, up to three folders deep.
func randomPath(rng *rand.Rand) string {
	var parts []string
	for i := rng.Intn(4); i > 0; i-- {
		parts = append(parts, stageDirs[rng.Intn(len(stageDirs))])
	}
	return strings.Join(append(parts, stageNames[rng.Intn(len(stageNames))]), "/")
}

// randomIgnore returns the lines of an ignore file of the staging tests.
func randomIgnore(rng *rand.Rand) string {
	var b strings.Builder
	for i := 1 + rng.Intn(5); i > 0; i-- {
		b.WriteString(stagePatterns[rng.Intn(len(stagePatterns))])
		if rng.Intn(8) == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeOver writes a file at rel under dir, making its folders, whatever is in the way: a
// file where a folder is needed, a folder where the file goes.
func writeOver(dir, rel, text string) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	for d := filepath.Dir(p); d != dir; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
			os.Remove(d)
		}
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		os.RemoveAll(p)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(text), 0o644)
}

// TestStageMatchesGit: the orchestrator's own staging of a slot makes, for each of many
// random working trees, the tree that `git add -A` and `git write-tree` make: tracked
// files changed (content, size kept, only touched, mode, made links, made folders, put
// under a link, removed), untracked files added under .gitignore files at several depths
// and info/exclude with every form of pattern, ignored folders holding tracked files, and
// the orchestrator's own links left out. Where it leaves a tree to git (attributes, a
// nested repository) it is staged by git instead; where what it would leave is in a folder
// git does not look into, it stages it, and must make git's tree (attributes that turn
// CRLF into LF make a different one).
func TestStageMatchesGit(t *testing.T) {
	ctx := context.Background()
	cases := 48
	if testing.Short() {
		cases = 12
	}
	var staged, leftToGit int
	for seed := range cases {
		rng := rand.New(rand.NewSource(int64(seed)))
		dir, r := newGitRepo(t)
		for i := 5 + rng.Intn(20); i > 0; i-- {
			writeOver(dir, randomPath(rng), fmt.Sprintf("base %d\n", rng.Int()))
		}
		for i := rng.Intn(3); i >= 0; i-- {
			folder := ""
			if i > 0 {
				folder = stageDirs[rng.Intn(len(stageDirs))] + "/"
			}
			writeOver(dir, folder+".gitignore", randomIgnore(rng))
		}
		// Tracked files an ignore rule matches: added before the rule.
		writeOver(dir, "build/tracked.o", "tracked\n")
		gitT(t, dir, "add", "-A")
		gitT(t, dir, "add", "-f", "build/tracked.o")
		gitT(t, dir, "commit", "-q", "-m", "base")
		head, err := r.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := resetSlot(t, r, "job-1", head)
		os.MkdirAll(filepath.Join(r.Common, "info"), 0o755)
		os.WriteFile(filepath.Join(r.Common, "info", "exclude"), []byte(randomIgnore(rng)), 0o644)
		var tracked []string
		for _, p := range strings.Split(gitT(t, dir, "ls-files", "-z"), "\x00") {
			if p != "" {
				tracked = append(tracked, p)
			}
		}
		want := "ok"
		for i := 2 + rng.Intn(12); i > 0; i-- {
			p := filepath.Join(s.Dir, filepath.FromSlash(tracked[rng.Intn(len(tracked))]))
			switch rng.Intn(12) {
			case 0: // content, a new size
				os.WriteFile(p, []byte(fmt.Sprintf("changed %d and more\n", rng.Int())), 0o644)
			case 1: // content, the same size
				if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
					b[0] ^= 1
					os.WriteFile(p, b, 0o644)
				}
			case 2: // touched only
				os.Chtimes(p, nowPlus(rng), nowPlus(rng))
			case 3:
				os.Chmod(p, 0o755)
			case 4:
				os.Remove(p)
			case 5: // a link in its place
				os.Remove(p)
				os.Symlink("../somewhere", p)
			case 6: // a folder in its place
				os.Remove(p)
				writeOver(s.Dir, strings.TrimPrefix(p, s.Dir+"/")+"/inner.go", "package inner\n")
			case 7: // its folder made a link
				if d := filepath.Dir(p); d != s.Dir {
					os.RemoveAll(d)
					os.Symlink(t.TempDir(), d)
				}
			case 8: // its folder made a file
				if d := filepath.Dir(p); d != s.Dir {
					os.RemoveAll(d)
					os.WriteFile(d, []byte("now a file\n"), 0o644)
				}
			default: // untracked files, a new ignore file, an empty folder, a link
				writeOver(s.Dir, randomPath(rng), "new\n")
				writeOver(s.Dir, stageDirs[rng.Intn(len(stageDirs))]+"/"+randomPath(rng), "new deeper\n")
				if rng.Intn(3) == 0 {
					writeOver(s.Dir, stageDirs[rng.Intn(len(stageDirs))]+"/.gitignore", randomIgnore(rng))
				}
				os.MkdirAll(filepath.Join(s.Dir, "empty", stageDirs[rng.Intn(len(stageDirs))]), 0o755)
				os.Symlink("a.go", filepath.Join(s.Dir, "link-"+stageNames[rng.Intn(len(stageNames))]))
			}
		}
		// What the orchestrator leaves to git.
		switch seed % 16 {
		case 3: // attributes that change what is staged: line endings
			writeOver(s.Dir, "docs/.gitattributes", "* text=auto\n")
			writeOver(s.Dir, "docs/crlf.md", "one\r\ntwo\r\n")
			want = "git"
		case 5: // the same, where the index has a file under an ignored folder
			writeOver(s.Dir, "build/.gitattributes", "* text=auto\n")
			writeOver(s.Dir, "build/tracked.o", "one\r\ntwo\r\n")
			want = "git"
		case 7:
			writeOver(s.Dir, "nested/.git/HEAD", "ref: refs/heads/main\n")
			want = "git"
		case 9: // attributes that change nothing staged: the orchestrator's
			writeOver(s.Dir, ".gitattributes", "# kept\n*.md merge=union\n*.toml -text\nbuild/** binary linguist-generated\n*.c !text diff=cpp\n")
			writeOver(s.Dir, "crlf.md", "one\r\ntwo\r\n")
		case 11:
			syscall.Mkfifo(filepath.Join(s.Dir, "fifo"), 0o644) // untracked: git passes it by
		}
		var own []string
		if seed%5 == 0 {
			os.Remove(filepath.Join(s.Dir, "node_modules"))
			if os.Symlink(t.TempDir(), filepath.Join(s.Dir, "node_modules")) == nil {
				own = []string{"node_modules"}
			}
		}
		tree, left, err := s.stageTree(ctx, s.index, own)
		ok := left == ""
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		gitTree, err := s.gitStagedTree(ctx, own)
		if err != nil {
			t.Fatalf("seed %d: git: %v", seed, err)
		}
		if strings.HasPrefix(left, "a .gitignore that is not a file") {
			want = "git" // made a link by a change above
		}
		switch {
		case !ok && want == "ok":
			t.Errorf("seed %d: left to git a tree the orchestrator stages: %s", seed, left)
		case ok && tree != gitTree:
			t.Errorf("seed %d: staged tree %s, git's %s:\n%s", seed, tree, gitTree, gitT(t, dir, "diff-tree", "-r", gitTree, tree))
		}
		if ok {
			staged++
		} else {
			leftToGit++
		}
	}
	t.Logf("%d trees staged by the orchestrator as git does, %d left to git", staged, leftToGit)
}

// nowPlus returns a time up to four seconds from now.
func nowPlus(rng *rand.Rand) time.Time {
	return time.Now().Add(time.Duration(rng.Intn(5)) * time.Second)
}

// TestIgnoreMatchesGit: each pattern of the staging tests, alone in a .gitignore, ignores
// what `git check-ignore` says it ignores, among files and folders of every name the
// patterns play on, at every depth.
func TestIgnoreMatchesGit(t *testing.T) {
	root := t.TempDir()
	var paths []string
	seen := map[string]bool{}
	add := func(p string, dir bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		paths = append(paths, p)
		full := filepath.Join(root, filepath.FromSlash(p))
		if dir {
			os.MkdirAll(full, 0o755)
			return
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, nil, 0o644)
	}
	for _, d := range stageDirs {
		add(d, true)
		for _, e := range stageDirs {
			add(d+"/"+e, true)
		}
	}
	for _, n := range stageNames {
		for _, d := range append([]string{""}, "src/", "d1/d2/", "a/x/b/", "build/d2/", "docs/", "foo/a/") {
			if !seen[strings.TrimSuffix(d+n, "/")] {
				add(d+n, false)
			}
		}
	}
	sort.Strings(paths)
	gitT(t, root, "init", "-q")
	for _, pattern := range stagePatterns {
		for _, sub := range []string{"", "d1/"} {
			os.Remove(filepath.Join(root, ".gitignore"))
			os.Remove(filepath.Join(root, "d1", ".gitignore"))
			os.WriteFile(filepath.Join(root, sub, ".gitignore"), []byte(pattern+"\n"), 0o644)
			cmd := exec.Command("git", "check-ignore", "--no-index", "--stdin", "-z")
			cmd.Dir = root
			cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
			out, _ := cmd.Output() // exit 1: nothing ignored
			gitSays := map[string]bool{}
			for _, p := range strings.Split(string(out), "\x00") {
				gitSays[p] = p != ""
			}
			l := parseIgnore(sub, []byte(pattern+"\n"))
			for _, p := range paths {
				if sub != "" && !strings.HasPrefix(p, sub) {
					continue
				}
				fi, err := os.Lstat(filepath.Join(root, p))
				if err != nil {
					t.Fatal(err)
				}
				if got := ignoredDirect(&l, p, fi.IsDir()); got != gitSays[p] {
					t.Errorf("pattern %q in %q/.gitignore, %s (folder %v): ignored %v, git says %v", pattern, sub, p, fi.IsDir(), got, gitSays[p])
				}
			}
		}
	}
}

// ignoredDirect is ignored for one list, the path asked as git check-ignore asks it: a
// path under an ignored folder is ignored, as the walk of stageTree never looks into one.
func ignoredDirect(l *ignoreList, p string, dir bool) bool {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		if ignored([]*ignoreList{l}, strings.Join(parts[:i], "/"), true) {
			return true
		}
	}
	return ignored([]*ignoreList{l}, p, dir)
}

// TestStageLeavesLargeFiles: a file larger than maxStaged (sparse here) is staged by git,
// which streams it, not read whole by the orchestrator.
func TestStageLeavesLargeFiles(t *testing.T) {
	ctx := context.Background()
	_, r := newGitRepo(t)
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := resetSlot(t, r, "job-1", head)
	f, err := os.Create(filepath.Join(s.Dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxStaged + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, left, err := s.stageTree(ctx, s.index, nil); err != nil || !strings.Contains(left, "larger") {
		t.Errorf("stageTree: left %q, err %v; want it left to git", left, err)
	}
	os.Remove(filepath.Join(s.Dir, "big.bin"))
	if _, left, err := s.stageTree(ctx, s.index, nil); err != nil || left != "" {
		t.Errorf("stageTree without the large file: left %q, err %v", left, err)
	}
}

// TestPlainAttributes: the attributes that leave staging to the orchestrator are those that
// change no file's content on its way into git.
func TestPlainAttributes(t *testing.T) {
	for text, want := range map[string]bool{
		"":                                     true,
		"# * text\n":                           true,
		"*.go merge=union diff=golang\n":       true,
		"*.png binary\n*.toml -text -crlf\n":   true,
		"* !text !eol\n":                       true,
		"*.lfs filter=lfs -text\n":             true,
		"* text=auto\n":                        false,
		"*.sh eol=lf\n":                        false,
		"*.c text\n":                           false,
		"*.bat crlf\n":                         false,
		"*.c ident\n":                          false,
		"*.txt working-tree-encoding=UTF-16\n": false,
		"[attr]mine text\n*.x mine\n":          false,
		"\"a b\" -text\n":                      false,
		"*.md\ttext\r\n":                       false,
	} {
		if got := plainAttributes([]byte(text)); got != want {
			t.Errorf("plainAttributes(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestWildmatch: cases of git's own wildmatch tests (t3070), with WM_PATHNAME as the
// ignore rules use it.
func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          bool
	}{
		{"foo", "foo", true}, {"foo", "bar", false}, {"", "", true}, {"???", "foo", true}, {"??", "foo", false},
		{"*", "foo", true}, {"f*", "foo", true}, {"*f", "foo", false}, {"*foo*", "foo", true}, {"*ob*a*r*", "foobar", true},
		{"*ab", "aaaaaaabababab", true}, {"foo\\*", "foo*", true}, {"foo\\*bar", "foobar", false}, {"f\\\\oo", "f\\oo", true},
		{"*[al]?", "ball", true}, {"[ten]", "ten", false}, {"**[!te]", "ten", true}, {"**[!ten]", "ten", false},
		{"t[a-g]n", "ten", true}, {"t[!a-g]n", "ten", false}, {"t[!a-g]n", "ton", true}, {"t[^a-g]n", "ton", true},
		{"a[]]b", "a]b", true}, {"a[]-]b", "a-b", true}, {"a[]-]b", "a]b", true}, {"a[]-]b", "aab", false}, {"a[]a-]b", "aab", true},
		{"]", "]", true}, {"foo*bar", "foo/baz/bar", false}, {"foo**bar", "foo/baz/bar", false}, {"foo**bar", "foobazbar", true},
		{"foo/**/bar", "foo/baz/bar", true}, {"foo/**/**/bar", "foo/baz/bar", true}, {"foo/**/bar", "foo/b/a/z/bar", true},
		{"foo/**/**/bar", "foo/b/a/z/bar", true}, {"foo/**/bar", "foo/bar", true}, {"foo/**/**/bar", "foo/bar", true},
		{"foo?bar", "foo/bar", false}, {"foo[/]bar", "foo/bar", false}, {"foo[^a-z]bar", "foo/bar", false},
		{"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo/bar", false}, {"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo-bar", true},
		{"**/foo", "foo", true}, {"**/foo", "XXX/foo", true}, {"**/foo", "bar/baz/foo", true}, {"*/foo", "bar/baz/foo", false},
		{"**/bar*", "foo/bar/baz", false}, {"**/bar/*", "deep/foo/bar/baz", true}, {"**/bar/*", "deep/foo/bar/baz/", false},
		{"**/bar/**", "deep/foo/bar/baz/", true}, {"**/bar/*", "deep/foo/bar", false}, {"**/bar/**", "deep/foo/bar/", true},
		{"**/bar**", "foo/bar/baz", false}, {"*/bar/**", "foo/bar/baz/x", true}, {"*/bar/**", "deep/foo/bar/baz/x", false},
		{"**/bar/*/*", "deep/foo/bar/baz/x", true}, {"a[c-c]st", "acrt", false}, {"a[c-c]rt", "acrt", true},
		{"[!]-]", "]", false}, {"[!]-]", "a", true}, {"\\", "", false}, {"\\", "\\", false}, {"*/\\", "XXX/\\", false},
		{"*/\\\\", "XXX/\\", true}, {"foo", "foo", true}, {"@foo", "@foo", true}, {"@foo", "foo", false},
		{"\\[ab]", "[ab]", true}, {"[[]ab]", "[ab]", true}, {"[[:]ab]", "[ab]", true}, {"[[::]ab]", "[ab]", false},
		{"[[:digit]ab]", "[ab]", true}, {"[\\[:]ab]", "[ab]", true}, {"\\??\\?b", "?a?b", true}, {"\\a\\b\\c", "abc", true},
		{"", "foo", false}, {"**/t[o]", "foo/bar/baz/to", true}, {"[[:alpha:]][[:digit:]][[:upper:]]", "a1B", true},
		{"[[:digit:][:upper:][:space:]]", "a", false}, {"[[:digit:][:upper:][:space:]]", "A", true},
		{"[[:digit:][:upper:][:space:]]", "1", true}, {"[[:digit:][:upper:][:spaci:]]", "1", false},
		{"[[:digit:][:upper:][:space:]]", " ", true}, {"[[:digit:][:upper:][:space:]]", ".", false},
		{"[[:digit:][:punct:][:space:]]", ".", true}, {"[[:xdigit:]]", "5", true}, {"[[:xdigit:]]", "f", true},
		{"[[:xdigit:]]", "D", true}, {"[a-c[:digit:]x-z]", "5", true}, {"[a-c[:digit:]x-z]", "b", true},
		{"[a-c[:digit:]x-z]", "y", true}, {"[a-c[:digit:]x-z]", "q", false}, {"[\\\\-^]", "]", true}, {"[\\\\-^]", "[", false},
		{"[\\-_]", "-", true}, {"[\\]]", "]", true}, {"[\\]]", "\\]", false}, {"[\\]]", "\\", false}, {"a[]b", "ab", false},
		{"a[]b", "a[]b", false}, {"ab[", "ab[", false}, {"[!", "ab", false}, {"[-", "ab", false}, {"[-]", "-", true},
		{"[a-", "-", false}, {"[!a-", "-", false}, {"[--A]", "-", true}, {"[--A]", "5", true}, {"[ --]", " ", true},
		{"[ --]", "$", true}, {"[ --]", "-", true}, {"[ --]", "0", false}, {"[---]", "-", true}, {"[------]", "-", true},
		{"[a-e-n]", "j", false}, {"[a-e-n]", "-", true}, {"[!------]", "a", true}, {"[]-a]", "[", false}, {"[]-a]", "^", true},
		{"[!]-a]", "^", false}, {"[!]-a]", "[", true}, {"[a^bc]", "^", true}, {"[a-]b]", "-b]", true}, {"[\\]", "\\", false},
		{"[\\\\]", "\\", true}, {"[!\\\\]", "\\", false}, {"[A-\\\\]", "G", true}, {"b*a", "aaabbb", false}, {"*ba*", "aabcaa", false},
		{"[,]", ",", true}, {"[\\\\,]", ",", true}, {"[\\\\,]", "\\", true}, {"[,-.]", "-", true}, {"[,-.]", "+", false},
		{"[,-.]", "-.]", false}, {"[\\1-\\3]", "2", true}, {"[\\1-\\3]", "3", true}, {"[\\1-\\3]", "4", false},
		{"[[-\\]]", "\\", true}, {"[[-\\]]", "[", true}, {"[[-\\]]", "]", true}, {"[[-\\]]", "-", false},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1", false},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1", false},
		{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", true},
		{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/X/70/iso8859/1", false},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", true},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", false},
		{"*/*/*", "foo", false}, {"*/*/*", "foo/bar", false}, {"*/*/*", "foo/bba/arr", true}, {"*/*/*", "foo/bb/aa/rr", false},
		{"**/**/**", "foo/bb/aa/rr", true}, {"*X*i", "abcXdefXghi", true}, {"*X*i", "ab/cXd/efXg/hi", false},
		{"*/*X*/*/*i", "ab/cXd/efXg/hi", true}, {"**/*X*/**/*i", "ab/cXd/efXg/hi", true},
	} {
		if got := wildmatch(c.pattern, c.text, true); got != c.want {
			t.Errorf("wildmatch(%q, %q) = %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}
