package worktree

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Second round of adversarial cases for stageTree: the index's cache of tree names, stat
// data, repository setups and settings, many files and long paths. Each working tree is
// staged by stageTree, by gitStagedTree and by git alone (`git add -A --ignore-errors`
// then `git write-tree`, on a copy of the orchestrator's index).

// adv2 describes one case: how the repository is made, what the slot is reset to, and
// what is changed in the slot before it is staged.
type adv2 struct {
	// initArgs are extra arguments of `git init` (--object-format=sha256).
	initArgs []string
	// base are files committed on top of the start commit (force-added).
	base map[string]string
	// setup runs in the main worktree before the slot is made (settings, index version).
	setup func(t *testing.T, dir string)
	// settle resets the slot a second time once its files are older than the racy
	// window, so that the index's entries (but calc_test.go's) keep their sizes and are
	// not racy, the index written in a later second than the files.
	settle bool
	// again resets the slot a second time at once: the index is then the orchestrator's
	// checkout's (the first reset of a new slot is git's: it has no index yet).
	again bool
	// beforeStage runs on the slot after its reset (settings of the slot, its index).
	beforeStage func(t *testing.T, s *Slot)
	// mutate changes the slot's working tree.
	mutate func(t *testing.T, s *Slot)
	leave  []string
}

// adv2Result is what each staging made of the working tree.
type adv2Result struct {
	tree, left      string
	gitStaged       string // gitStagedTree's tree
	gitStagedErr    error
	gitTree, gitOut string // git write-tree's tree, and git add's output on failure
	gitErr          error
}

func (c adv2) run(t *testing.T) adv2Result {
	t.Helper()
	ctx := context.Background()
	dir, r := newGitRepo(t, c.initArgs...)
	if c.base != nil {
		for p, text := range c.base {
			writeOver(dir, p, text)
		}
		gitT(t, dir, "add", "-A", "-f")
		gitT(t, dir, "commit", "-q", "-m", "base")
	}
	if c.setup != nil {
		c.setup(t, dir)
	}
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := resetSlot(t, r, "job-1", head)
	if c.settle {
		// A later reset that rewrites one file, and so the index, a second or more after
		// the others were written: their entries are neither smudged nor racy. A wait on
		// the clock, not on an event: a file's change time cannot be set back.
		time.Sleep(racyWindow + 100*time.Millisecond)
		put(s.Dir, "calc_test.go", "package calc // changed\n")
		if err := s.Reset(ctx, head); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.again {
		if err := s.Reset(ctx, head); err != nil {
			t.Fatal(err)
		}
	}
	if c.beforeStage != nil {
		c.beforeStage(t, s)
	}
	if c.mutate != nil {
		c.mutate(t, s)
	}
	var res adv2Result
	res.tree, res.left, err = s.stageTree(ctx, s.index, c.leave)
	if err != nil {
		t.Fatalf("stageTree: %v", err)
	}
	res.gitStaged, res.gitStagedErr = s.gitStagedTree(ctx, c.leave)
	// Git alone, on its own copy of the index (its time kept: racy entries stay racy).
	tmp := s.index + ".adv2"
	if err := copyFile(s.index, tmp); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(tmp)
	env := s.env(tmp)
	res.gitOut, res.gitErr = r.git(ctx, s.Dir, env, "add", "-A", "--ignore-errors", "--", ".")
	if res.gitErr == nil && len(c.leave) > 0 {
		_, res.gitErr = r.git(ctx, s.Dir, env, append([]string{"update-index", "--force-remove", "--"}, c.leave...)...)
	}
	if res.gitErr == nil {
		var out string
		out, res.gitErr = r.git(ctx, s.Dir, env, "write-tree")
		res.gitTree = strings.TrimSpace(out)
	}
	if res.left != "" {
		t.Logf("left to git: %s", res.left)
	}
	if res.left == "" && res.gitErr == nil && res.tree != res.gitTree {
		if out, err := r.git(ctx, s.Dir, nil, "diff-tree", "-r", res.gitTree, res.tree); err == nil {
			t.Logf("diff git..ours:\n%s", out)
		}
	}
	if res.gitStagedErr == nil && res.gitErr == nil && res.gitStaged != res.gitTree {
		t.Logf("gitStagedTree %s differs from git write-tree %s", res.gitStaged, res.gitTree)
	}
	return res
}

// wantSame fails unless stageTree staged git's tree.
func (res adv2Result) wantSame(t *testing.T) {
	t.Helper()
	switch {
	case res.left != "":
		t.Errorf("left to git (%s); expected the orchestrator to stage this", res.left)
	case res.gitErr != nil:
		t.Errorf("staged tree %s, but git refuses the working tree: %v %s", res.tree, res.gitErr, res.gitOut)
	case res.tree != res.gitTree:
		t.Errorf("staged tree %s, git's %s", res.tree, res.gitTree)
	}
}

// wantSameOrLeft fails if stageTree staged a tree that is not git's, or one git refuses.
func (res adv2Result) wantSameOrLeft(t *testing.T) {
	t.Helper()
	if res.left == "" {
		res.wantSame(t)
	}
}

// wantLeft fails unless stageTree left the tree to git.
func (res adv2Result) wantLeft(t *testing.T) {
	t.Helper()
	if res.left == "" {
		t.Errorf("staged tree %s (git's %s, %v); expected it left to git", res.tree, res.gitTree, res.gitErr)
	}
}

// setConfig sets key to value in the repository's configuration at dir.
func setConfig(t *testing.T, dir, key, value string) {
	t.Helper()
	gitT(t, dir, "config", key, value)
}

// sameSizeKeepTime writes text (the file's size) over the slot's file rel and sets its
// modification time back to what it was: only its change time shows the edit.
func sameSizeKeepTime(t *testing.T, s *Slot, rel, text string) {
	t.Helper()
	p := filepath.Join(s.Dir, rel)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(text)) {
		t.Fatalf("%s: %d bytes, not %d", rel, fi.Size(), len(text))
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// --- Divergences: settings that change what git compares or accepts (failing) ---

// TestStagingAdv2TrustCtimeOff: core.trustctime=false: a same-size edit with the modification time put back is invisible to git.
func TestStagingAdv2TrustCtimeOff(t *testing.T) {
	t.Parallel()
	adv2{
		setup:  func(t *testing.T, dir string) { setConfig(t, dir, "core.trustctime", "false") },
		settle: true,
		mutate: func(t *testing.T, s *Slot) { sameSizeKeepTime(t, s, "README.md", "CALC\n") },
	}.run(t).wantLeft(t)
}

// TestStagingAdv2CheckStatMinimal: core.checkStat=minimal: git compares whole seconds only, so a same-size edit within the second is invisible to it.
func TestStagingAdv2CheckStatMinimal(t *testing.T) {
	t.Parallel()
	adv2{
		setup:  func(t *testing.T, dir string) { setConfig(t, dir, "core.checkStat", "minimal") },
		settle: true,
		mutate: func(t *testing.T, s *Slot) {
			p := filepath.Join(s.Dir, "README.md")
			fi, _ := os.Stat(p)
			sameSizeKeepTime(t, s, "README.md", "CALC\n")
			m := fi.ModTime()
			other := time.Unix(m.Unix(), int64((m.Nanosecond()+500_000_000)%1_000_000_000))
			os.Chtimes(p, other, other)
		},
	}.run(t).wantLeft(t)
}

// TestStagingAdv2TrustCtimeOffByEnv: the same, core.trustctime=false given in GIT_CONFIG_PARAMETERS.
func TestStagingAdv2TrustCtimeOffByEnv(t *testing.T) {
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.trustctime'='false'")
	adv2{
		settle: true,
		mutate: func(t *testing.T, s *Slot) { sameSizeKeepTime(t, s, "README.md", "CALC\n") },
	}.run(t).wantLeft(t)
}

// TestStagingAdv2ProtectHFS: core.protectHFS=true: git refuses ".g\u200cit" (a ".git" on HFS+), which stageTree stages.
func TestStagingAdv2ProtectHFS(t *testing.T) {
	t.Parallel()
	adv2{
		setup: func(t *testing.T, dir string) { setConfig(t, dir, "core.protectHFS", "true") },
		mutate: func(t *testing.T, s *Slot) {
			put(s.Dir, ".g\u200cit", "x\n")
			put(s.Dir, "sub/.GI\u200dT", "x\n")
		},
	}.run(t).wantLeft(t)
}

// TestStagingAdv2BadBooleanSetting: a core setting git parses on every command, given a value it cannot read: git stops.
func TestStagingAdv2BadBooleanSetting(t *testing.T) {
	t.Parallel()
	adv2{
		mutate: func(t *testing.T, s *Slot) {
			setConfig(t, s.Dir, "core.trustctime", "maybe")
			put(s.Dir, "new.go", "package calc\n")
		},
	}.run(t).wantLeft(t)
}

// --- The index's cache of tree names (matching git) ---

// treeBase are files whose folders the cache of tree names holds: deep nesting, names that
// sort apart byte-wise and as folders ("a-b", "a.b", "a/b", "a0"), a file and a folder whose
// names differ by a trailing character, executable files and links.
func treeBase() map[string]string {
	b := map[string]string{
		"n/a-b":             "1\n",
		"n/a.b":             "2\n",
		"n/a/b":             "3\n",
		"n/a0":              "4\n",
		"n/a/b0/c":          "5\n",
		"n/x":               "6\n",
		"n/x-/y":            "7\n",
		"n/x./y":            "8\n",
		"n/x0/y":            "9\n",
		"m/one/two/f":       "10\n",
		"m/one/two/g":       "11\n",
		"m/one/other":       "12\n",
		"m/moved/src":       "moving\n",
		"m/rm/only":         "13\n",
		"m/rm/dir/only":     "14\n",
		"m/mode/run.sh":     "#!/bin/sh\n",
		"m/mode/keep.sh":    "#!/bin/sh\n",
		"m/swap/f":          "15\n",
		"m/swap2":           "16\n",
		"same/x":            "17\n",
		"same/y/z":          "18\n",
		"keep/deep/er/file": "19\n",
	}
	deep := "d"
	for i := 0; i < 40; i++ {
		deep += fmt.Sprintf("/%d", i)
		b[deep+"/f"] = fmt.Sprintf("level %d\n", i)
	}
	return b
}

// treeMutations changes the slot of a treeBase repository under every folder but "keep"
// and "same": removals (a folder emptied), additions in new sub-folders, a mode-only change,
// a folder replaced by a file of its name and the other way round, a file moved between
// folders, an edit at the bottom of deep nesting.
func treeMutations(t *testing.T, s *Slot) {
	d := s.Dir
	os.Remove(filepath.Join(d, "m/rm/dir/only"))
	os.Remove(filepath.Join(d, "m/rm/only"))
	put(d, "m/one/two/new/deeper/h", "new\n")
	os.Chmod(filepath.Join(d, "m/mode/run.sh"), 0o755)
	os.RemoveAll(filepath.Join(d, "m/swap"))
	put(d, "m/swap", "a file now\n")
	os.Remove(filepath.Join(d, "m/swap2"))
	put(d, "m/swap2/inner", "a folder now\n")
	os.Rename(filepath.Join(d, "m/moved/src"), filepath.Join(d, "m/one/src"))
	os.Remove(filepath.Join(d, "n/a/b"))
	put(d, "n/a/b", "3 changed\n")
	put(d, "n/a.b/c", "") // a.b made a folder
	deep := "d"
	for i := 0; i < 40; i++ {
		deep += fmt.Sprintf("/%d", i)
	}
	put(d, deep+"/f", "changed at the bottom\n")
	put(d, deep+"/g", "new at the bottom\n")
}

// TestStagingAdv2CacheTreeGitIndex: the index git's reset wrote (the slot's first), its cache of tree names primed by git.
func TestStagingAdv2CacheTreeGitIndex(t *testing.T) {
	t.Parallel()
	adv2{base: treeBase(), mutate: treeMutations}.run(t).wantSame(t)
}

// TestStagingAdv2CacheTreeOwnIndex: the index the orchestrator's checkout wrote (cacheTreeOf).
func TestStagingAdv2CacheTreeOwnIndex(t *testing.T) {
	t.Parallel()
	adv2{base: treeBase(), again: true, mutate: treeMutations}.run(t).wantSame(t)
}

// TestStagingAdv2CacheTreeSettled: the same with entries neither smudged nor racy: the cache and the stat data are trusted.
func TestStagingAdv2CacheTreeSettled(t *testing.T) {
	t.Parallel()
	adv2{base: treeBase(), settle: true, mutate: treeMutations}.run(t).wantSame(t)
}

// TestStagingAdv2CacheTreeLeave: the paths left out (the orchestrator's links) in a folder whose cached tree is otherwise valid, and a tracked one.
func TestStagingAdv2CacheTreeLeave(t *testing.T) {
	t.Parallel()
	adv2{
		base:   treeBase(),
		settle: true,
		mutate: func(t *testing.T, s *Slot) {
			os.Symlink(t.TempDir(), filepath.Join(s.Dir, "keep/deep/node_modules"))
			os.Symlink(t.TempDir(), filepath.Join(s.Dir, "node_modules"))
		},
		leave: []string{"keep/deep/node_modules", "node_modules", "same/y/z"},
	}.run(t).wantSame(t)
}

// TestStagingAdv2CacheTreeOnlyModeChanges: only executable bits change (set and cleared), deep in folders otherwise valid.
func TestStagingAdv2CacheTreeOnlyModeChanges(t *testing.T) {
	t.Parallel()
	adv2{
		base:   treeBase(),
		settle: true,
		setup: func(t *testing.T, dir string) {
			os.Chmod(filepath.Join(dir, "m/mode/keep.sh"), 0o755)
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "x")
		},
		mutate: func(t *testing.T, s *Slot) {
			os.Chmod(filepath.Join(s.Dir, "m/mode/keep.sh"), 0o644)
			os.Chmod(filepath.Join(s.Dir, "d/0/1/2/3/f"), 0o744)
		},
	}.run(t).wantSame(t)
}

// TestStagingAdv2CacheTreeFolderToLink: a folder replaced by a link of the same name to a copy of itself (same count of files).
func TestStagingAdv2CacheTreeFolderToLink(t *testing.T) {
	t.Parallel()
	adv2{
		base:   treeBase(),
		settle: true,
		mutate: func(t *testing.T, s *Slot) {
			os.Rename(filepath.Join(s.Dir, "same/y"), filepath.Join(s.Dir, "same/y2"))
			os.Symlink("y2", filepath.Join(s.Dir, "same/y"))
		},
	}.run(t).wantSame(t)
}

// --- Repository setups (matching git, or left to it) ---

// indexVersion returns the version of the index file at p.
func indexVersion(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || len(b) < 8 {
		t.Fatalf("index %s: %v", p, err)
	}
	return int(b[7])
}

// TestStagingAdv2SHA256: a sha256 repository, both the git-written and the orchestrator-written index.
func TestStagingAdv2SHA256(t *testing.T) {
	t.Parallel()
	for _, again := range []bool{false, true} {
		adv2{initArgs: []string{"--object-format=sha256"}, base: treeBase(), again: again, mutate: treeMutations}.run(t).wantSame(t)
	}
}

// TestStagingAdv2IndexV4MainWorktree: the main worktree's index made version 4 before the slot is made: the slot's index is its own.
func TestStagingAdv2IndexV4MainWorktree(t *testing.T) {
	t.Parallel()
	adv2{
		base:   treeBase(),
		setup:  func(t *testing.T, dir string) { gitT(t, dir, "update-index", "--index-version", "4") },
		mutate: treeMutations,
	}.run(t).wantSame(t)
}

// TestStagingAdv2IndexV4Setting: index.version=4: git's reset writes the slot's first index as version 4 (prefix-compressed names).
func TestStagingAdv2IndexV4Setting(t *testing.T) {
	t.Parallel()
	adv2{
		base:  treeBase(),
		setup: func(t *testing.T, dir string) { setConfig(t, dir, "index.version", "4") },
		beforeStage: func(t *testing.T, s *Slot) {
			if v := indexVersion(t, s.index); v != 4 {
				t.Errorf("the slot's index is version %d", v)
			}
		},
		mutate: treeMutations,
	}.run(t).wantSame(t)
}

// TestStagingAdv2ManyFilesSetting: feature.manyFiles (index version 4, the untracked cache) on a slot of 2500 files, long paths.
func TestStagingAdv2ManyFilesSetting(t *testing.T) {
	t.Parallel()
	base := treeBase()
	long := strings.Repeat("long-folder-name-", 12)
	for i := 0; i < 2500; i++ {
		base[fmt.Sprintf("many/%02d/%s%d/file-%04d.txt", i%37, long, i%3, i)] = fmt.Sprintf("%d\n", i)
	}
	adv2{
		base:  base,
		setup: func(t *testing.T, dir string) { setConfig(t, dir, "feature.manyFiles", "true") },
		mutate: func(t *testing.T, s *Slot) {
			treeMutations(t, s)
			for i := 0; i < 2500; i += 97 {
				p := fmt.Sprintf("many/%02d/%s%d/file-%04d.txt", i%37, long, i%3, i)
				if i%2 == 0 {
					os.Remove(filepath.Join(s.Dir, p))
				} else {
					put(s.Dir, p, "changed\n")
				}
			}
			put(s.Dir, "many/new/"+long+long+long+"/x", "new\n")
		},
	}.run(t).wantSame(t)
}

// TestStagingAdv2UntrackedCache: core.untrackedCache=true and a status run in the slot with the orchestrator's index before the changes.
func TestStagingAdv2UntrackedCache(t *testing.T) {
	t.Parallel()
	adv2{
		base:  treeBase(),
		again: true,
		setup: func(t *testing.T, dir string) { setConfig(t, dir, "core.untrackedCache", "true") },
		beforeStage: func(t *testing.T, s *Slot) {
			put(s.Dir, "n/untracked", "u\n")
			for _, args := range [][]string{{"update-index", "--untracked-cache"}, {"status", "--porcelain"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir, cmd.Env = s.Dir, append(os.Environ(), s.env(s.index)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			if b, _ := os.ReadFile(s.index); !strings.Contains(string(b), "UNTR") {
				t.Error("no untracked cache in the slot's index")
			}
		},
		mutate: func(t *testing.T, s *Slot) {
			treeMutations(t, s)
			put(s.Dir, "n/untracked2", "u\n")
			put(s.Dir, "same/untracked", "u\n")
		},
	}.run(t).wantSameOrLeft(t)
}

// TestStagingAdv2SplitIndex: core.splitIndex=true: the slot's index is split by git (a "link" extension), left to git.
func TestStagingAdv2SplitIndex(t *testing.T) {
	t.Parallel()
	adv2{
		base:   treeBase(),
		setup:  func(t *testing.T, dir string) { setConfig(t, dir, "core.splitIndex", "true") },
		mutate: treeMutations,
	}.run(t).wantSameOrLeft(t)
}

// TestStagingAdv2Fsmonitor: core.fsmonitor set to a hook that says nothing changed (the orchestrator's git turns it off).
func TestStagingAdv2Fsmonitor(t *testing.T) {
	t.Parallel()
	adv2{
		base:   treeBase(),
		settle: true,
		setup: func(t *testing.T, dir string) {
			hook := filepath.Join(t.TempDir(), "fsmonitor")
			os.WriteFile(hook, []byte("#!/bin/sh\nprintf 'tok\\0'\n"), 0o755)
			setConfig(t, dir, "core.fsmonitor", hook)
			setConfig(t, dir, "core.fsmonitorHookVersion", "2")
		},
		mutate: treeMutations,
	}.run(t).wantSameOrLeft(t)
}

// --- Settings: where they come from, and their forms (matching git, or left to it) ---

// TestStagingAdv2ConfigSources: core.ignoreCase=true from GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS, an include and an includeIf: left to git.
func TestStagingAdv2ConfigSources(t *testing.T) {
	mutate := func(t *testing.T, s *Slot) {
		put(s.Dir, "README.MD", "calc upper\n")
		put(s.Dir, "New.go", "package calc\n")
	}
	t.Run("count", func(t *testing.T) {
		t.Setenv("GIT_CONFIG_COUNT", "1")
		t.Setenv("GIT_CONFIG_KEY_0", "core.ignoreCase")
		t.Setenv("GIT_CONFIG_VALUE_0", "true")
		adv2{mutate: mutate}.run(t).wantSameOrLeft(t)
	})
	t.Run("parameters", func(t *testing.T) {
		t.Setenv("GIT_CONFIG_PARAMETERS", "'core.ignorecase'='yes'")
		adv2{mutate: mutate}.run(t).wantSameOrLeft(t)
	})
	t.Run("include", func(t *testing.T) {
		inc := filepath.Join(t.TempDir(), "inc")
		os.WriteFile(inc, []byte("[core]\n\tignoreCase = on\n"), 0o644)
		adv2{setup: func(t *testing.T, dir string) { setConfig(t, dir, "include.path", inc) }, mutate: mutate}.run(t).wantSameOrLeft(t)
	})
	t.Run("includeIf", func(t *testing.T) {
		inc := filepath.Join(t.TempDir(), "inc")
		os.WriteFile(inc, []byte("[core]\n\tignoreCase = 1\n"), 0o644)
		adv2{setup: func(t *testing.T, dir string) { setConfig(t, dir, "includeIf.gitdir:**/.git/**.path", inc) }, mutate: mutate}.run(t).wantSameOrLeft(t)
	})
}

// TestStagingAdv2OddBooleans: core.fileMode, core.symlinks, core.ignoreCase in the forms git reads (yes, 1, on, True, No, OFF, 0).
func TestStagingAdv2OddBooleans(t *testing.T) {
	t.Parallel()
	for _, v := range [][3]string{{"yes", "On", "No"}, {"1", "TRUE", "0"}, {"True", "yes", "OFF"}} {
		adv2{
			base: treeBase(),
			setup: func(t *testing.T, dir string) {
				setConfig(t, dir, "core.fileMode", v[0])
				setConfig(t, dir, "core.symlinks", v[1])
				setConfig(t, dir, "core.ignoreCase", v[2])
			},
			mutate: func(t *testing.T, s *Slot) {
				treeMutations(t, s)
				os.Symlink("README.md", filepath.Join(s.Dir, "link"))
				os.Chmod(filepath.Join(s.Dir, "calc.go"), 0o755)
			},
		}.run(t).wantSame(t)
	}
}

// TestStagingAdv2EmptyBooleans: settings given empty ("core.fileMode =", which git reads as false) or without "=" (true): left or git's.
func TestStagingAdv2EmptyBooleans(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"[core]\n\tfileMode =\n", "[core]\n\tfileMode\n", "[core]\n\tsymlinks =\n", "[core]\n\tignoreCase\n", "[core]\n\tfileMode = 2\n"} {
		adv2{
			setup: func(t *testing.T, dir string) {
				f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(text)
				f.Close()
			},
			mutate: func(t *testing.T, s *Slot) {
				os.Symlink("README.md", filepath.Join(s.Dir, "link"))
				os.Chmod(filepath.Join(s.Dir, "calc.go"), 0o755)
				put(s.Dir, "CALC.go", "x\n")
			},
		}.run(t).wantSameOrLeft(t)
	}
}

// TestStagingAdv2ExcludesFileForms: core.excludesFile absolute, "~/", and relative (to the top of the working tree for git).
func TestStagingAdv2ExcludesFileForms(t *testing.T) {
	t.Parallel()
	home := os.Getenv("HOME")
	os.WriteFile(filepath.Join(home, "adv2-ignore"), []byte("*.home\n"), 0o644)
	abs := filepath.Join(t.TempDir(), "ignore")
	os.WriteFile(abs, []byte("*.abs\n"), 0o644)
	mutate := func(t *testing.T, s *Slot) {
		put(s.Dir, "rel-ignore", "*.rel\nrel-ignore\n")
		for _, n := range []string{"a.home", "a.abs", "a.rel", "sub/b.home", "sub/b.abs", "sub/b.rel"} {
			put(s.Dir, n, "x\n")
		}
	}
	for _, f := range []string{abs, "~/adv2-ignore", "rel-ignore", "./rel-ignore"} {
		res := adv2{setup: func(t *testing.T, dir string) { setConfig(t, dir, "core.excludesFile", f) }, mutate: mutate}.run(t)
		if filepath.IsAbs(f) || strings.HasPrefix(f, "~/") {
			res.wantSame(t)
		} else {
			res.wantSameOrLeft(t)
		}
	}
}

// --- Divergences: a relative XDG_CONFIG_HOME or HOME (failing) ---

// TestStagingAdv2RelativeXDGConfigHome: XDG_CONFIG_HOME relative: git reads $XDG_CONFIG_HOME/git/ignore and attributes from the top of the working tree, stageTree from its own folder.
func TestStagingAdv2RelativeXDGConfigHome(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "xdg-rel")
	adv2{
		mutate: func(t *testing.T, s *Slot) {
			put(s.Dir, "xdg-rel/git/ignore", "xdg-rel/\n*.secret\n")
			put(s.Dir, "xdg-rel/git/attributes", "*.txt text\n")
			put(s.Dir, "key.secret", "s\n")
			put(s.Dir, "crlf.txt", "one\r\ntwo\r\n")
		},
	}.run(t).wantLeft(t)
}

// TestStagingAdv2RelativeHome: HOME relative, core.excludesFile "~/ignore": git reads it from the top of the working tree, stageTree from its own folder.
func TestStagingAdv2RelativeHome(t *testing.T) {
	adv2{
		setup: func(t *testing.T, dir string) {
			setConfig(t, dir, "core.excludesFile", "~/ignore")
			t.Setenv("HOME", "home-rel")
		},
		mutate: func(t *testing.T, s *Slot) {
			put(s.Dir, "home-rel/ignore", "home-rel/\n*.secret\n")
			put(s.Dir, "key.secret", "s\n")
		},
	}.run(t).wantLeft(t)
}

// --- Stat data (matching git) ---

// TestStagingAdv2RacilyClean: same-size edits right after the reset (the index git's, then the orchestrator's), times put back.
func TestStagingAdv2RacilyClean(t *testing.T) {
	t.Parallel()
	for _, again := range []bool{false, true} {
		adv2{
			again: again,
			mutate: func(t *testing.T, s *Slot) {
				sameSizeKeepTime(t, s, "README.md", "CALC\n")
				sameSizeKeepTime(t, s, "vendor/dep/dep.go", "package dap\n")
			},
		}.run(t).wantSame(t)
	}
}

// TestStagingAdv2StatTricks: with settled entries: a file replaced by a new one of the same size and times (another inode, maybe the
// same number again), an empty file filled, a file emptied, a file made unreadable (chmod 000), executable bits with core.fileMode unset.
func TestStagingAdv2StatTricks(t *testing.T) {
	t.Parallel()
	adv2{
		base:   map[string]string{"empty": "", "e/empty2": "", "locked": "secret\n", "x/run": "#!/bin/sh\n"},
		settle: true,
		setup:  func(t *testing.T, dir string) { gitT(t, dir, "config", "--unset", "core.fileMode") },
		mutate: func(t *testing.T, s *Slot) {
			p := filepath.Join(s.Dir, "README.md")
			fi, _ := os.Stat(p)
			os.Remove(p)
			os.WriteFile(p, []byte("CALC\n"), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
			q := filepath.Join(s.Dir, "empty")
			fi, _ = os.Stat(q)
			os.WriteFile(q, []byte("now full\n"), 0o644)
			os.Chtimes(q, fi.ModTime(), fi.ModTime())
			os.WriteFile(filepath.Join(s.Dir, "calc_test.go"), nil, 0o644)
			os.Chmod(filepath.Join(s.Dir, "locked"), 0)
			os.Chmod(filepath.Join(s.Dir, "x/run"), 0o711)
			os.Chmod(filepath.Join(s.Dir, "e"), 0)
		},
	}.run(t).wantSameOrLeft(t)
}

// --- Random (matching git) ---

// TestStagingAdv2CacheTreeFuzz: random moves between folders that keep each folder's count of files, swaps of same-size
// contents (times put back), folders made files and files made folders, new sub-folders, removals, links left out, in one
// settled slot reset between rounds (so most entries and folders stay valid in the index).
func TestStagingAdv2CacheTreeFuzz(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seedAdv()))
	dir, r := newGitRepo(t)
	names := []string{"a", "a-b", "a.b", "a0", "b", "ab", "a b", "z"}
	for i := 0; i < 120; i++ {
		p := names[rng.Intn(len(names))]
		for d := rng.Intn(4); d > 0; d-- {
			p += "/" + names[rng.Intn(len(names))]
		}
		writeOver(dir, p, fmt.Sprintf("file %03d\n", i))
	}
	gitT(t, dir, "add", "-A", "-f")
	gitT(t, dir, "commit", "-q", "-m", "fuzz base")
	head, _ := r.Head(ctx)
	s := resetSlot(t, r, "job-1", head)
	time.Sleep(racyWindow + 100*time.Millisecond)
	put(s.Dir, "calc_test.go", "package calc // changed\n")
	if err := s.Reset(ctx, head); err != nil {
		t.Fatal(err)
	}
	var tracked []string
	for _, p := range strings.Split(gitT(t, dir, "ls-files", "-z"), "\x00") {
		if p != "" {
			tracked = append(tracked, p)
		}
	}
	for round := 0; round < 12; round++ {
		var leave []string
		for k := 1 + rng.Intn(4); k > 0; k-- {
			a := tracked[rng.Intn(len(tracked))]
			b := tracked[rng.Intn(len(tracked))]
			pa, pb := filepath.Join(s.Dir, a), filepath.Join(s.Dir, b)
			switch rng.Intn(7) {
			case 0: // swap two files between folders: each folder keeps its count
				ta, ea := os.ReadFile(pa)
				tb, eb := os.ReadFile(pb)
				if ea == nil && eb == nil && len(ta) == len(tb) {
					fa, _ := os.Stat(pa)
					fb, _ := os.Stat(pb)
					os.WriteFile(pa, tb, 0o644)
					os.WriteFile(pb, ta, 0o644)
					os.Chtimes(pa, fa.ModTime(), fa.ModTime())
					os.Chtimes(pb, fb.ModTime(), fb.ModTime())
				}
			case 1: // move a file into b's folder, and one of b's folder out to a's
				if path := filepath.Dir(pb); path != filepath.Dir(pa) {
					os.Rename(pa, filepath.Join(path, "moved-"+filepath.Base(pa)))
					os.Rename(pb, filepath.Join(filepath.Dir(pa), "moved-"+filepath.Base(pb)))
				}
			case 2: // the folder of a made a file of its name
				if d := filepath.Dir(pa); d != s.Dir {
					os.RemoveAll(d)
					os.WriteFile(d, []byte("was a folder\n"), 0o644)
				}
			case 3: // a made a folder holding one file
				os.Remove(pa)
				writeOver(s.Dir, a+"/inner", "inner\n")
			case 4: // a new file in a new deep folder beside a
				writeOver(s.Dir, filepath.Dir(a)+"/new/er/"+names[rng.Intn(len(names))], "new\n")
			case 5:
				os.Chmod(pa, 0o755)
			default: // a link left out, in a's folder
				l := filepath.Join(filepath.Dir(a), "node_modules")
				if os.Symlink(t.TempDir(), filepath.Join(s.Dir, l)) == nil {
					leave = append(leave, filepath.ToSlash(l))
				}
			}
		}
		tree, left, err := s.stageTree(ctx, s.index, leave)
		if err != nil {
			t.Fatal(err)
		}
		tmp := s.index + ".adv2"
		copyFile(s.index, tmp)
		env := s.env(tmp)
		_, gerr := r.git(ctx, s.Dir, env, "add", "-A", "--ignore-errors", "--", ".")
		if gerr == nil && len(leave) > 0 {
			_, gerr = r.git(ctx, s.Dir, env, append([]string{"update-index", "--force-remove", "--"}, leave...)...)
		}
		var gitTree string
		if gerr == nil {
			out, err := r.git(ctx, s.Dir, env, "write-tree")
			gerr, gitTree = err, strings.TrimSpace(out)
		}
		os.Remove(tmp)
		switch {
		case left != "":
			t.Logf("round %d: left to git: %s", round, left)
		case gerr != nil:
			t.Errorf("round %d: staged %s, git refuses: %v", round, tree, gerr)
		case tree != gitTree:
			out, _ := r.git(ctx, s.Dir, nil, "diff-tree", "-r", gitTree, tree)
			t.Errorf("round %d: staged %s, git's %s:\n%s", round, tree, gitTree, out)
		}
		if err := s.Reset(ctx, head); err != nil {
			t.Fatal(err)
		}
	}
}
