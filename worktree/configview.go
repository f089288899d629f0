package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/internal/ownproc"
)

// A configView is the configuration git reads in one folder: its entries and the files
// they come from. It is kept while none of those files, nor any other place git reads
// configuration from, has changed since it was read: filtersOff needs it before nearly
// every git command of the orchestrator, and reading it with a git of its own doubled
// their number. A file's stamp holds its inode, size, modification and change times: a
// write, a rename over it or a touch changes it, and the change time cannot be set back.
type configView struct {
	// stamp is the stamp of files taken before the view was read: "" when the read found
	// a file that was not stamped (an include seen for the first time), so that the next
	// use reads it again.
	stamp   string
	files   []string
	entries []configEntry
}

// A configEntry is one setting, with the file it came from ("" for one given on git's
// command line).
type configEntry struct {
	key, value, file string
}

// configViews holds the views by folder and git folder; git commands run from several
// goroutines (the merge queue's gates).
var configViews = struct {
	sync.Mutex
	m map[string]*configView
}{m: map[string]*configView{}}

// readConfig returns the configuration git reads in dir with env, from the view kept for
// them when nothing it came from has changed, else read afresh (one git command).
func readConfig(ctx context.Context, dir string, env []string) ([]configEntry, error) {
	gitDir := envValue(env, "GIT_DIR")
	key := dir + "\x00" + gitDir
	configViews.Lock()
	v := configViews.m[key]
	configViews.Unlock()
	places := configPlaces(dir, gitDir, env)
	if v != nil {
		places = union(places, v.files)
		if v.stamp != "" && v.stamp == stampOf(places) {
			return v.entries, nil
		}
	}
	before := stampOf(places)
	entries, err := listConfig(ctx, dir, env)
	if err != nil {
		return nil, err
	}
	files := places
	for _, e := range entries {
		if e.file == "" {
			continue
		}
		files = union(files, []string{e.file})
		if filepath.Base(e.file) == "config" {
			files = union(files, []string{filepath.Join(filepath.Dir(e.file), "config.worktree")})
		}
	}
	nv := &configView{stamp: before, files: files, entries: entries}
	if len(files) != len(places) {
		nv.stamp = "" // files not stamped before the read: read again next time, stamped
	}
	configViews.Lock()
	configViews.m[key] = nv
	configViews.Unlock()
	return entries, nil
}

// listConfig reads every setting git sees in dir, with its origin.
func listConfig(ctx context.Context, dir string, env []string) ([]configEntry, error) {
	cmd := exec.CommandContext(ctx, "git", append(slices.Clone(safe), "config", "-z", "--list", "--show-origin")...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := ownproc.Run(cmd); err != nil {
		return nil, &Error{Args: []string{"config", "--list", "--show-origin"}, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	fields := strings.Split(out.String(), "\x00")
	var entries []configEntry
	for i := 0; i+1 < len(fields); i += 2 {
		origin, kv := fields[i], fields[i+1]
		k, val, _ := strings.Cut(kv, "\n")
		e := configEntry{key: strings.ToLower(k), value: val}
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			e.file = f
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// configPlaces are the files git may read configuration from in dir, whether they exist or
// not: the system's and the person's, and the repository's that the environment names.
// The repository's own are added from the origins of what was read (readConfig).
func configPlaces(dir, gitDir string, env []string) []string {
	get := func(name string) string {
		if v := envValue(env, name); v != "" {
			return v
		}
		return os.Getenv(name)
	}
	var places []string
	if s := get("GIT_CONFIG_SYSTEM"); s != "" {
		places = append(places, s)
	} else {
		places = append(places, "/etc/gitconfig", "/usr/local/etc/gitconfig")
	}
	home := get("HOME")
	if g := get("GIT_CONFIG_GLOBAL"); g != "" {
		places = append(places, g)
	} else if home != "" {
		places = append(places, filepath.Join(home, ".gitconfig"))
	}
	if x := get("XDG_CONFIG_HOME"); x != "" {
		places = append(places, filepath.Join(x, "git", "config"))
	} else if home != "" {
		places = append(places, filepath.Join(home, ".config", "git", "config"))
	}
	if gitDir != "" {
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(dir, gitDir)
		}
		places = append(places, filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree"))
		if common, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
			c := strings.TrimSpace(string(common))
			if !filepath.IsAbs(c) {
				c = filepath.Join(gitDir, c)
			}
			places = append(places, filepath.Join(c, "config"))
		}
	}
	return places
}

// stampOf stamps files: for each, its inode, size, mode, modification and change times,
// through a symbolic link and of the link itself, or that it is missing.
func stampOf(files []string) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f)
		for _, stat := range []func(string) (os.FileInfo, error){os.Lstat, os.Stat} {
			fi, err := stat(f)
			if err != nil {
				b.WriteString("|-")
				continue
			}
			stamp, _, ok := fileStamp(fi)
			if !ok {
				return "" // no stamp: never reused
			}
			b.WriteString("|" + stamp)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// fileStamp returns the stamp of the file fi describes (device, inode, size, mode,
// modification and change times) and its change time; ok is false when the system gives
// neither.
func fileStamp(fi os.FileInfo) (stamp string, changed time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", time.Time{}, false
	}
	stamp = fmt.Sprintf("%d:%d:%d:%o:%d.%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mode, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	return stamp, time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
}

// envValue returns the value of name in env, or "".
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// union returns a with the items of b it lacks appended.
func union(a, b []string) []string {
	out := a
	for _, s := range b {
		if !slices.Contains(out, s) {
			if len(out) == len(a) {
				out = slices.Clone(a)
			}
			out = append(out, s)
		}
	}
	return out
}

// plainSettings reads the configuration cfg for the orchestrator's own checkout and
// staging of a slot, which do what git does with its default settings: it returns the
// last value of each setting, or why a setting leaves the work to git. A setting that
// changes how files are named, read or compared (core.fileMode, core.symlinks,
// core.ignoreCase, core.trustCtime, core.checkStat, a sparse checkout, a split index)
// leaves it to git unless it has its default value, as does a boolean of git's core that
// git cannot read (git would refuse to run), a value that reads as true or false only by
// its form (a key given without "="), or any of unset.
func plainSettings(cfg []configEntry, unset ...string) (last map[string]string, left string) {
	last = map[string]string{}
	for _, e := range cfg {
		last[e.key] = e.value
	}
	want := map[string]string{
		"core.filemode": "true", "core.symlinks": "true", "core.trustctime": "true",
		"core.ignorecase": "false", "core.precomposeunicode": "false", "core.sparsecheckout": "false",
		"core.splitindex": "false", "core.ignorestat": "false",
		// Any value git reads.
		"core.protectntfs": "", "core.protecthfs": "", "core.quotepath": "", "core.bare": "",
		"core.warnambiguousrefs": "", "core.preloadindex": "", "core.fsyncobjectfiles": "",
		"core.prefersymlinkrefs": "", "core.commitgraph": "", "core.multipackindex": "",
		"core.sparsecheckoutcone": "",
	}
	for key, w := range want {
		v, set := last[key]
		if !set {
			continue
		}
		if got := gitBool(v); got == "" || w != "" && got != w {
			return nil, key + " = " + v
		}
	}
	if v, set := last["core.checkstat"]; set && v != "default" {
		return nil, "core.checkStat = " + v
	}
	for _, key := range append([]string{"core.attributesfile", "core.worktree", "extensions.refstorage"}, unset...) {
		if _, set := last[key]; set {
			return nil, key + " is set"
		}
	}
	return last, ""
}

// configHome returns the folder of the person's git configuration ($XDG_CONFIG_HOME, else
// $HOME/.config; "" for neither) and $HOME, or why they leave the work to git: a relative
// one, which git takes from the folder it runs in.
func configHome() (config, home, left string) {
	config, home = os.Getenv("XDG_CONFIG_HOME"), os.Getenv("HOME")
	for _, d := range []string{config, home} {
		if d != "" && !filepath.IsAbs(d) {
			return "", "", "a relative XDG_CONFIG_HOME or HOME: " + d
		}
	}
	if config == "" && home != "" {
		config = filepath.Join(home, ".config")
	}
	return config, home, ""
}

// gitBool returns "true" or "false" for a boolean setting's value as git reads it, "" for
// one it does not read as either (or that needs the setting's form, such as a key given
// without "=").
func gitBool(v string) string {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return "true"
	case "false", "no", "off", "0":
		return "false"
	}
	return ""
}
