package worktree

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Adversarial cases for the orchestrator's own staging (stage.go, ignore.go): working trees
// an agent controls, each staged by stageTree and by git (`git add -A`, `git write-tree`).

// advResult is what both stagings made of one working tree.
type advResult struct {
	tree, left string
	gitTree    string
	gitErr     error
}

// advStage makes a repository (newGitRepo, plus base's files committed when base is not
// nil), a slot at its head, lets mutate change the slot's working tree, and stages it both
// ways.
func advStage(t *testing.T, base map[string]string, mutate func(dir string)) advResult {
	t.Helper()
	ctx := context.Background()
	dir, r := newGitRepo(t)
	if base != nil {
		for p, text := range base {
			writeOver(dir, p, text)
		}
		gitT(t, dir, "add", "-A", "-f")
		gitT(t, dir, "commit", "-q", "-m", "base")
	}
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := resetSlot(t, r, "job-1", head)
	mutate(s.Dir)
	var res advResult
	res.tree, res.left, err = s.stageTree(ctx, s.index, nil)
	if err != nil {
		t.Fatalf("stageTree: %v", err)
	}
	res.gitTree, res.gitErr = s.gitStagedTree(ctx, nil)
	if res.left == "" && res.gitErr == nil && res.tree != res.gitTree {
		t.Logf("diff git..ours:\n%s", gitT(t, dir, "diff-tree", "-r", res.gitTree, res.tree))
	}
	return res
}

// wantSame fails unless stageTree staged (left == "") and made git's tree.
func (res advResult) wantSame(t *testing.T) {
	t.Helper()
	switch {
	case res.left != "":
		t.Errorf("left to git (%s); expected the orchestrator to stage this", res.left)
	case res.gitErr != nil:
		t.Errorf("staged tree %s, but git refuses the working tree: %v", res.tree, res.gitErr)
	case res.tree != res.gitTree:
		t.Errorf("staged tree %s, git's %s", res.tree, res.gitTree)
	}
}

// wantLeft fails unless stageTree left the tree to git.
func (res advResult) wantLeft(t *testing.T) {
	t.Helper()
	if res.left == "" {
		t.Errorf("staged tree %s (git's %s, %v); expected it left to git", res.tree, res.gitTree, res.gitErr)
	}
}

func put(dir, rel, text string) { writeOver(dir, rel, text) }

// --- Divergences ---

// TestStagingAdvNulInGitignore: git reads a .gitignore line as a C string, so "secret\0junk" is the pattern "secret".
func TestStagingAdvNulInGitignore(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*.log\nsecret\x00junk\n")
		put(dir, "secret", "s\n")
		put(dir, "other", "o\n")
	}).wantSame(t)
}

// TestStagingAdvStarStarAfterLiteral: git matches a pattern's literal prefix apart, so "a**/b"'s "**" acts as "**/" (any depth).
func TestStagingAdvStarStarAfterLiteral(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*.log\nsrc/gen**/out\n")
		put(dir, "src/genx/deep/out", "ignored by git\n")
		put(dir, "src/genx/out", "ignored by both\n")
		put(dir, "src/keep.go", "package src\n")
	}).wantSame(t)
}

// TestStagingAdvStarStarTrailingNegated: "!d/a**" re-includes d/ab/c.o for git ("**" after the literal prefix crosses folders).
func TestStagingAdvStarStarTrailingNegated(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*.o\n!d/a**\n")
		put(dir, "d/ab/c.o", "obj\n")
		put(dir, "d/x.o", "obj\n")
	}).wantSame(t)
}

// TestStagingAdvSpaceClassVerticalTab: git's [[:space:]] is " \t\n\r" only; a name holding \v or \f is not ignored by it.
func TestStagingAdvSpaceClassVerticalTab(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "a[[:space:]]b\n")
		put(dir, "a\vb", "vt\n")
		put(dir, "a\fb", "ff\n")
		put(dir, "a\tb", "tab\n")
	}).wantSame(t)
}

// TestStagingAdvGitmodulesShortNameLink: git refuses a symbolic link named as .gitmodules' NTFS short name ("gi7eba~1").
func TestStagingAdvGitmodulesShortNameLink(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		os.Symlink("calc.go", filepath.Join(dir, "gi7eba~1"))
	}).wantLeft(t)
}

// TestStagingAdvGitmodulesFallbackShortNameLink: the same for the fall-back short name form "gi~12345".
func TestStagingAdvGitmodulesFallbackShortNameLink(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, "sub/x", "x\n")
		os.Symlink("x", filepath.Join(dir, "sub", "gi~12345"))
	}).wantLeft(t)
}

// --- Cases that match git (kept: they cover what the other tests do not) ---

// TestStagingAdvTrackedGitmodulesMadeLink: a tracked .gitmodules (no submodule) replaced by a link: git replaces the entry without checking the name, as stageTree does.
func TestStagingAdvTrackedGitmodulesMadeLink(t *testing.T) {
	t.Parallel()
	advStage(t, map[string]string{".gitmodules": "# none\n"}, func(dir string) {
		os.Remove(filepath.Join(dir, ".gitmodules"))
		os.Symlink("calc.go", filepath.Join(dir, ".gitmodules"))
	}).wantSame(t)
}

// TestStagingAdvGitignoreEncodings: BOM, CRLF, trailing spaces and tabs, escaped trailing space, comment and blank-looking lines.
func TestStagingAdvGitignoreEncodings(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "\xef\xbb\xbf#bom-comment\r\nbom1\r\nsp1   \r\ntab1\t\nesc\\ \nesc2\\ \\  \n\r\n \n\\#hash\n\xef\xbb\xbfbom2\nlast\r")
		for _, n := range []string{"#bom-comment", "bom1", "sp1", "sp1   ", "tab1", "tab1\t", "esc ", "esc", "esc2  ", "esc2 ", "#hash", "\xef\xbb\xbfbom2", "bom2", "last", "last\r", " "} {
			put(dir, "f/"+n, "x\n")
			put(dir, n, "x\n")
		}
	}).wantSame(t)
}

// TestStagingAdvLongPattern: a pattern of 70,000 bytes (git sets no limit).
func TestStagingAdvLongPattern(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "b"+strings.Repeat("*", 70000)+"\n"+strings.Repeat("x", 5000)+"\nl"+strings.Repeat("?", 200)+"\n")
		put(dir, "bar", "x\n")
		put(dir, "l"+strings.Repeat("q", 200), "x\n")
		put(dir, "l"+strings.Repeat("q", 201), "x\n")
	}).wantSame(t)
}

// TestStagingAdvSubfolderPatterns: patterns of a sub-folder's .gitignore are relative to it: anchored, with a slash, "**" at each place.
func TestStagingAdvSubfolderPatterns(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, "s/.gitignore", "/top\nx/y\n**/z\nm/**\na/**/b\n/s\n*.o\n!keep.o\n")
		for _, p := range []string{"top", "s/top", "s/d/top", "s/x/y", "s/d/x/y", "x/y", "s/z", "s/d/e/z", "z", "s/m/1", "s/d/m/1", "s/a/b", "s/a/q/r/b", "s/s/f", "s/s", "s/q.o", "s/keep.o", "s/d/keep.o", "q.o"} {
			put(dir, p, "x\n")
		}
	}).wantSame(t)
}

// TestStagingAdvReincludeFolders: "*" then "!*/" then "!*.go": every folder walked, only .go files staged.
func TestStagingAdvReincludeFolders(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*\n!*/\n!*.go\n!.gitignore\n")
		for _, p := range []string{"n/a.go", "n/a.txt", "n/m/b.go", "n/m/c", "top.go", "top.txt"} {
			put(dir, p, "x\n")
		}
	}).wantSame(t)
}

// TestStagingAdvIgnoredFolderGitignore: a .gitignore in an ignored folder that holds tracked files cannot re-include anything.
func TestStagingAdvIgnoredFolderGitignore(t *testing.T) {
	t.Parallel()
	advStage(t, map[string]string{"build/tracked.o": "t\n", "build/sub/t2": "t\n"}, func(dir string) {
		put(dir, ".gitignore", "*.log\nbuild/\n")
		put(dir, "build/.gitignore", "!*\n!new.o\n")
		put(dir, "build/new.o", "n\n")
		put(dir, "build/tracked.o", "changed\n")
		put(dir, "build/sub/new", "n\n")
		os.Remove(filepath.Join(dir, "build/sub/t2"))
	}).wantSame(t)
}

// TestStagingAdvNegatedFolderInSubfolder: "!d/" in a sub-folder after "d" in the root re-includes the folder.
func TestStagingAdvNegatedFolderInSubfolder(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "d\n")
		put(dir, "s/.gitignore", "!d/\n")
		put(dir, "s/d/f", "x\n")
		put(dir, "s/t/d", "file d: ignored\n")
		put(dir, "d/f", "x\n")
	}).wantSame(t)
}

// TestStagingAdvOddNames: non-UTF-8 bytes, newline, tab, carriage return, leading dash, "...", ".git" look-alikes that git accepts.
func TestStagingAdvOddNames(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		for _, n := range []string{"\xff\xfe", "new\nline", "tab\there", "cr\r", "-rf", "--", "...", "..x", ".gitx", ".git.bak", "x.git", "gitx~1", ".gitignored", ".gitkeep", " lead", "trail ", "é", "\x01ctl", "[*?]", "a\"q"} {
			put(dir, n, "x\n")
			put(dir, "d"+n+"/f", "y\n")
		}
	}).wantSame(t)
}

// TestStagingAdvGitLookalikeNamesLeft: names git refuses (".GIT", ".git " , "git~1", ".gitmodules", backslash) are left to git.
func TestStagingAdvGitLookalikeNamesLeft(t *testing.T) {
	t.Parallel()
	for _, n := range []string{".GIT", ".git. ", "GIT~1", ".gitmodules", "a\\b", "x/.Git/y"} {
		t.Run(strings.ReplaceAll(n, "/", "_"), func(t *testing.T) {
			advStage(t, nil, func(dir string) { put(dir, n, "x\n") }).wantLeft(t)
		})
	}
}

// TestStagingAdvEmptyAndModes: empty files (tracked emptied, untracked empty), executable bits set and cleared, group-only x bit.
func TestStagingAdvEmptyAndModes(t *testing.T) {
	t.Parallel()
	advStage(t, map[string]string{"e/empty": "", "e/x.sh": "#!/bin/sh\n", "e/full": "full\n"}, func(dir string) {
		os.Chmod(filepath.Join(dir, "e/x.sh"), 0o755)
		os.WriteFile(filepath.Join(dir, "e/full"), nil, 0o644)
		put(dir, "e/new-empty", "")
		put(dir, "e/gx", "g\n")
		os.Chmod(filepath.Join(dir, "e/gx"), 0o654)
		put(dir, "e/ox", "o\n")
		os.Chmod(filepath.Join(dir, "e/ox"), 0o744)
		os.Chmod(filepath.Join(dir, "calc.go"), 0o711)
	}).wantSame(t)
}

// TestStagingAdvSameSizeRestoredTime: a tracked file changed at the same size, its modification time set back.
func TestStagingAdvSameSizeRestoredTime(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		p := filepath.Join(dir, "README.md")
		fi, _ := os.Stat(p)
		os.WriteFile(p, []byte("CALC\n"), 0o644)
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
	}).wantSame(t)
}

// TestStagingAdvSymlinks: links to a folder, to a file, dangling, absolute, a link named as a folder-only pattern, a tracked folder made a link.
func TestStagingAdvSymlinks(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*.log\nnode_modules/\nlinkdir/\n")
		os.Symlink("a", filepath.Join(dir, "to-dir"))
		os.Symlink("calc.go", filepath.Join(dir, "to-file"))
		os.Symlink("nowhere/at/all", filepath.Join(dir, "dangling"))
		os.Symlink("/etc", filepath.Join(dir, "abs"))
		os.Symlink("a", filepath.Join(dir, "linkdir"))
		os.Symlink("a", filepath.Join(dir, "x.log"))
		os.RemoveAll(filepath.Join(dir, "vendor"))
		os.Symlink("a", filepath.Join(dir, "vendor")) // vendor/dep/dep.go was tracked
		os.Symlink("\xff\n target", filepath.Join(dir, "odd-target"))
	}).wantSame(t)
}

// TestStagingAdvFileFolderSwaps: a tracked file made a folder (with an ignored and a kept file), a tracked folder made a file, a file deleted.
func TestStagingAdvFileFolderSwaps(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		os.Remove(filepath.Join(dir, "calc.go"))
		put(dir, "calc.go/inner.go", "package inner\n")
		put(dir, "calc.go/x.log", "ignored\n")
		os.RemoveAll(filepath.Join(dir, "a"))
		put(dir, "a", "now a file\n")
		os.Remove(filepath.Join(dir, "calc_test.go"))
	}).wantSame(t)
}

// TestStagingAdvTrackedFileMadeIgnoredFolder: a tracked file made a folder that .gitignore ignores.
func TestStagingAdvTrackedFileMadeIgnoredFolder(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*.log\nREADME.md/\n")
		os.Remove(filepath.Join(dir, "README.md"))
		put(dir, "README.md/inside", "x\n")
	}).wantSame(t)
}

// TestStagingAdvBareLookingFolder: a folder that looks like a bare repository (HEAD, objects, refs) is not a nested repository to git.
func TestStagingAdvBareLookingFolder(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, "bare/HEAD", "ref: refs/heads/main\n")
		put(dir, "bare/objects/info/x", "")
		put(dir, "bare/refs/heads/main", "0000000000000000000000000000000000000000\n")
		put(dir, "bare/config", "[core]\n\tbare = true\n")
	}).wantSame(t)
}

// TestStagingAdvNestedRepoInIgnoredFolder: a nested repository in an ignored folder is not looked at by git.
func TestStagingAdvNestedRepoInIgnoredFolder(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, ".gitignore", "*.log\nignored/\n")
		gitT(t, dir, "init", "-q", filepath.Join(dir, "ignored", "repo"))
	}).wantSame(t)
}

// --- Where git reads attributes, nested repositories or submodules: left to git ---

func TestStagingAdvLeft(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		base   map[string]string
		mutate func(t *testing.T, dir string)
	}{
		"root attributes":   {nil, func(t *testing.T, dir string) { put(dir, ".gitattributes", "* text=auto\n") }},
		"deep attributes":   {nil, func(t *testing.T, dir string) { put(dir, "q/r/.gitattributes", "* text=auto\n") }},
		"attributes link":   {nil, func(t *testing.T, dir string) { os.Symlink("README.md", filepath.Join(dir, ".gitattributes")) }},
		"attributes folder": {nil, func(t *testing.T, dir string) { put(dir, ".gitattributes/x", "y\n") }},
		"attributes in ignored folder with a tracked file": {map[string]string{"build/t.o": "t\n"}, func(t *testing.T, dir string) {
			put(dir, ".gitignore", "build/\n")
			put(dir, "build/.gitattributes", "*.o text\n")
			put(dir, "build/t.o", "a\r\nb\r\n")
		}},
		"attributes above an ignored folder with a tracked file": {map[string]string{"i/build/t.o": "t\n"}, func(t *testing.T, dir string) {
			put(dir, ".gitignore", "i/\n")
			put(dir, "i/.gitattributes", "*.o text\n")
			put(dir, "i/build/t.o", "a\r\nb\r\n")
		}},
		"attributes only in the index": {map[string]string{"k/.gitattributes": "* -text\n"}, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "k/.gitattributes"))
			put(dir, "k/f", "a\r\n")
		}},
		"nested repository": {nil, func(t *testing.T, dir string) { gitT(t, dir, "init", "-q", filepath.Join(dir, "inner")) }},
		"nested gitfile": {nil, func(t *testing.T, dir string) {
			put(dir, "inner/.git", "gitdir: /nowhere\n")
			put(dir, "inner/f", "x\n")
		}},
		"nested .git link": {nil, func(t *testing.T, dir string) {
			os.Mkdir(filepath.Join(dir, "inner"), 0o755)
			os.Symlink("/tmp", filepath.Join(dir, "inner", ".git"))
		}},
		"tracked file made a repo": {nil, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "README.md"))
			sub := filepath.Join(dir, "README.md")
			gitT(t, dir, "init", "-q", sub)
			put(sub, "f", "x\n")
			gitT(t, sub, "add", "f")
			gitT(t, sub, "commit", "-q", "-m", "x")
		}},
		"repo in a tracked folder": {nil, func(t *testing.T, dir string) { gitT(t, dir, "init", "-q", filepath.Join(dir, "vendor", "dep", "r")) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			advStage(t, c.base, func(dir string) { c.mutate(t, dir) }).wantLeft(t)
		})
	}
}

// TestStagingAdvAttributesStaged: attributes git does not read (another case of the name, with
// core.ignoreCase false) or that change no content on its way in (merge, diff, -text,
// binary) leave staging to the orchestrator, and the tree is git's, CRLF kept.
func TestStagingAdvAttributesStaged(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(dir string){
		"another case of the name": func(dir string) {
			put(dir, "q/.GitAttributes", "* text=auto\n")
			put(dir, "q/f.md", "a\r\nb\r\n")
		},
		"attributes that change no content": func(dir string) {
			put(dir, ".gitattributes", "*.md merge=union diff=markdown\n*.bin binary\n* -text linguist-vendored\n")
			put(dir, "f.md", "a\r\nb\r\n")
			put(dir, "q/.gitattributes", "*.o !text export-ignore\n")
			put(dir, "q/g.o", "c\r\n")
		},
	} {
		t.Run(name, func(t *testing.T) { advStage(t, nil, mutate).wantSame(t) })
	}
}

// TestStagingAdvSubmoduleLeft: an index holding a submodule (a gitlink) is left to git.
func TestStagingAdvSubmoduleLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, r := newGitRepo(t)
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+gitT(t, dir, "rev-parse", "HEAD")+",sub")
	gitT(t, dir, "commit", "-q", "-m", "sub")
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	put(s.Dir, "new", "x\n")
	if _, left, err := s.stageTree(ctx, s.index, nil); err != nil || left == "" {
		t.Errorf("left %q, err %v: want it left to git", left, err)
	}
}

// commonDir returns the repository's common git folder, seen from the slot dir.
func commonDir(t *testing.T, dir string) string {
	c := gitT(t, dir, "rev-parse", "--git-common-dir")
	if !filepath.IsAbs(c) {
		c = filepath.Join(dir, c)
	}
	return c
}

// TestStagingAdvExcludePrecedence: a .gitignore beats info/exclude, which beats core.excludesFile ("~/" form); each reaches every depth.
func TestStagingAdvExcludePrecedence(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	os.WriteFile(filepath.Join(home, "ign"), []byte("g1\ng2\ng3\n/anch\nd/\n"), 0o644)
	advStage(t, nil, func(dir string) {
		gitT(t, dir, "config", "core.excludesFile", "~/ign")
		c := commonDir(t, dir)
		os.MkdirAll(filepath.Join(c, "info"), 0o755)
		os.WriteFile(filepath.Join(c, "info", "exclude"), []byte("\xef\xbb\xbf!g2\ne1\ne2\r\n!d/\n"), 0o644)
		put(dir, ".gitignore", "*.log\n!e2\ng3\n")
		for _, n := range []string{"g1", "g2", "g3", "e1", "e2", "anch", "s/anch", "s/g1", "d/f", "s/d/f"} {
			put(dir, n, "x\n")
		}
	}).wantSame(t)
}

// TestStagingAdvXDGIgnore: with core.excludesFile unset, $XDG_CONFIG_HOME/git/ignore applies.
func TestStagingAdvXDGIgnore(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	os.MkdirAll(filepath.Join(xdg, "git"), 0o755)
	os.WriteFile(filepath.Join(xdg, "git", "ignore"), []byte("xdg*\n!xdg-keep\n"), 0o644)
	advStage(t, nil, func(dir string) {
		put(dir, "xdg-a", "x\n")
		put(dir, "xdg-keep", "x\n")
		put(dir, "s/xdg-b", "x\n")
	}).wantSame(t)
}

// TestStagingAdvIgnoredFolderFileSwap: in an ignored folder, a tracked file made a folder and a tracked folder made a file.
func TestStagingAdvIgnoredFolderFileSwap(t *testing.T) {
	t.Parallel()
	advStage(t, map[string]string{"build/t.o": "t\n", "build/sub/u.o": "u\n"}, func(dir string) {
		put(dir, ".gitignore", "*.log\nbuild/\n")
		os.Remove(filepath.Join(dir, "build/t.o"))
		put(dir, "build/t.o/inner", "x\n")
		os.RemoveAll(filepath.Join(dir, "build/sub"))
		put(dir, "build/sub", "file\n")
	}).wantSame(t)
}

// TestStagingAdvTrackedGitignoreDeleted: a tracked .gitignore deleted: its rules no longer apply.
func TestStagingAdvTrackedGitignoreDeleted(t *testing.T) {
	t.Parallel()
	advStage(t, map[string]string{"s/.gitignore": "*.tmp\n", "s/k": "k\n"}, func(dir string) {
		os.Remove(filepath.Join(dir, "s/.gitignore"))
		os.Remove(filepath.Join(dir, ".gitignore"))
		put(dir, "s/a.tmp", "x\n")
		put(dir, "x.log", "x\n")
	}).wantSame(t)
}

// TestStagingAdvGitignoreIgnoresItself: a .gitignore that ignores itself and everything but one folder.
func TestStagingAdvGitignoreIgnoresItself(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		put(dir, "s/.gitignore", "*\n!keep/\n")
		put(dir, "s/keep/a", "x\n")
		put(dir, "s/keep/.gitignore", "!*\n")
		put(dir, "s/other", "x\n")
	}).wantSame(t)
}

// TestStagingAdvSpecialFiles: a fifo and a socket (untracked) are passed by, as git does.
func TestStagingAdvSpecialFiles(t *testing.T) {
	t.Parallel()
	advStage(t, nil, func(dir string) {
		syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
		if fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); err == nil {
			syscall.Bind(fd, &syscall.SockaddrUnix{Name: filepath.Join(dir, "sock")})
			syscall.Close(fd)
		}
		put(dir, "plain", "x\n")
	}).wantSame(t)
}

// --- Random cases (passing) ---

// TestStagingAdvIgnoreFuzz: random patterns over a richer alphabet (classes, escapes, ranges, spaces, slashes, "**"), in the root's
// .gitignore or a sub-folder's, against `git check-ignore` (with a "**" right after a pattern's literal part too,
// TestStagingAdvStarStarAfterLiteral).
func TestStagingAdvIgnoreFuzz(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	gitT(t, root, "init", "-q")
	names := []string{"a", "b", "ab", "a-b", "a]b", "[a", "a/b", "a/b/c", "ab/c", "b/a", "x/a/b", "a\\b", "]", "-", "^", "!", "a b", "a ", "*", "a*", "[a]", " ", "aa/bb/cc", "a/a/a", "a.b", "b/b", "ba/b", "a!b", "a^b", "c", "ca", "a/c/b"}
	isDir := map[string]bool{}
	seen := map[string]bool{}
	var paths []string
	for _, n := range names {
		parts := strings.Split(n, "/")
		for i := 1; i <= len(parts); i++ {
			p := strings.Join(parts[:i], "/")
			if i < len(parts) {
				isDir[p] = true
			}
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		full := filepath.Join(root, p)
		if isDir[p] {
			os.MkdirAll(full, 0o755)
		}
	}
	for _, p := range paths {
		if !isDir[p] {
			os.WriteFile(filepath.Join(root, p), nil, 0o644)
		}
	}
	alpha := []string{"a", "b", "c", "*", "**", "?", "[", "]", "!", "^", "-", "\\", "/", "[:alpha:]", "[!", "/**/", "**/", "/**", "[[:space:]]", "[]", "[a-c]", "[!a]", "\\*", "\\[", " ", "\\ ", "[[:punct:]]", "[--]", "[]-]"}
	rng := rand.New(rand.NewSource(seedAdv()))
	fails := 0
	for iter := 0; iter < 600 && fails < 20; iter++ {
		var b strings.Builder
		for i := 1 + rng.Intn(6); i > 0; i-- {
			b.WriteString(alpha[rng.Intn(len(alpha))])
		}
		pattern := b.String()
		sub := ""
		if rng.Intn(3) == 0 {
			sub = "a/"
		}
		os.Remove(filepath.Join(root, ".gitignore"))
		os.Remove(filepath.Join(root, "a", ".gitignore"))
		os.WriteFile(filepath.Join(root, sub, ".gitignore"), []byte(pattern+"\n"), 0o644)
		cmd := exec.Command("git", "check-ignore", "--no-index", "--stdin", "-z")
		cmd.Dir = root
		cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
		out, _ := cmd.Output()
		gitSays := map[string]bool{}
		for _, p := range strings.Split(string(out), "\x00") {
			gitSays[p] = p != ""
		}
		l := parseIgnore(sub, []byte(pattern+"\n"))
		for _, p := range paths {
			if sub != "" && !strings.HasPrefix(p, sub) {
				continue
			}
			if got := ignoredBase(&l, sub, p, isDir[p]); got != gitSays[p] {
				t.Errorf("pattern %q in %q: %s (dir %v): ours %v git %v", pattern, sub, p, isDir[p], got, gitSays[p])
				fails++
				break
			}
		}
	}
}

// seedAdv is the fuzz tests' seed: $ADVSEED, or 7.
func seedAdv() int64 {
	if v := os.Getenv("ADVSEED"); v != "" {
		var n int64
		for _, c := range v {
			n = n*10 + int64(c-'0')
		}
		return n
	}
	return 7
}

// ignoredBase is ignored for the one list l of the folder sub, the path asked as git check-ignore asks it.
func ignoredBase(l *ignoreList, sub, p string, dir bool) bool {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		q := strings.Join(parts[:i], "/")
		if !strings.HasPrefix(q+"/", sub) || q+"/" == sub {
			continue
		}
		if ignored([]*ignoreList{l}, q, true) {
			return true
		}
	}
	return ignored([]*ignoreList{l}, p, dir)
}

// TestStagingAdvStageFuzz: random .gitignore files at several depths (negated folders, anchors, "**"), staged both ways.
func TestStagingAdvStageFuzz(t *testing.T) {
	t.Parallel()
	pats := []string{"a", "b", "*", "!a", "!*/", "a/", "!b/", "/a", "a/b", "**/b", "a/**", "!a/b", "*/", "c", "!c", "b/", "/b/", "!/a", "x?", "[ab]", "**", "!**/", "a/*", "!a/*/"}
	names := []string{"a", "b", "c", "a/b", "a/c", "b/a", "b/b/c", "x/a/b", "c/a", "a/a/a", "xa", "xb/c", "b/x1", "a/b/c/d"}
	base := seedAdv()
	for seed := base; seed < base+15; seed++ {
		rng := rand.New(rand.NewSource(seed))
		gi := func() string {
			var b strings.Builder
			for i := rng.Intn(4) + 1; i > 0; i-- {
				b.WriteString(pats[rng.Intn(len(pats))] + "\n")
			}
			return b.String()
		}
		res := advStage(t, nil, func(dir string) {
			for _, n := range names {
				if rng.Intn(2) == 0 {
					put(dir, "t/"+n, "x\n")
				}
			}
			put(dir, "t/.gitignore", gi())
			for _, d := range []string{"t/a", "t/b", "t/x", "t/a/b"} {
				if rng.Intn(2) == 0 {
					if fi, err := os.Stat(filepath.Join(dir, d)); err == nil && fi.IsDir() {
						os.WriteFile(filepath.Join(dir, d, ".gitignore"), []byte(gi()), 0o644)
					}
				}
			}
		})
		if res.left == "" && (res.gitErr != nil || res.tree != res.gitTree) {
			t.Errorf("seed %d: ours %s git %s %v", seed, res.tree, res.gitTree, res.gitErr)
		}
	}
}
