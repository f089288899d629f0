package gate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/sandbox"
	"github.com/orchestrator/orchestrator/testrun"
)

// A JailSpec says what the sandbox of the gate's commands hides and shows (SPEC §7.6): it
// is made once when the orchestrator starts, from the pinned environment.
type JailSpec struct {
	// Env is the pinned environment (PinnedEnv).
	Env []string
	// Hide are the folders no command running candidate code may see: the person's tree,
	// the repository's git folder, the orchestrator's state. The home folder is always
	// hidden.
	Hide []string
	// Readable are more paths to show read-only: folders linked into checkouts from the
	// person's tree (node_modules), config sandbox_readable.
	Readable []string
	// Cache is the gate's own folder for the runners' build caches: writable in the
	// sandbox, never an agent's.
	Cache string
	// Network shares the host's network (config gate_network: host).
	Network bool
}

// A Jail is the sandbox profile of the gate's commands, less the checkout they run in.
type Jail struct {
	profile sandbox.Profile
	cache   string // the runners' build caches (JailSpec.Cache)
	// testExec is the program that starts go test's test binaries where the caches are
	// out of reach (testexec.go), "" where a sandbox does not nest: then every command
	// gets a private cache.
	testExec string
	noNest   error // why a sandbox does not nest
	// canary is planted by every run of the jail (runTests): see Canary.
	canary testrun.Canary
	// Env is the environment the gate's commands get inside: the pinned one cleared of
	// secrets, with the caches and the Python settings of SPEC §7.6. Give it as Input.Env.
	Env []string
}

// NewJail makes the gate's sandbox from spec.
func NewJail(spec JailSpec) (*Jail, error) {
	home, _ := lookupEnv(spec.Env, "HOME")
	goCache := filepath.Join(spec.Cache, "go-build")
	if err := os.MkdirAll(goCache, 0o700); err != nil {
		return nil, err
	}
	env := JailEnv(spec.Env)
	gov := goEnv(spec.Env)
	env = setEnv(env, "GOCACHE", goCache)
	for _, k := range []string{"GOMODCACHE", "GOPATH"} {
		if v := gov[k]; v != "" {
			env = setEnv(env, k, v)
		}
	}
	flags, _ := lookupEnv(env, "GOFLAGS")
	// The checkout's .git names a folder the sandbox hides: Go must not look for version
	// control information there (SPEC §7.6: never the repository's .git).
	env = setEnv(env, "GOFLAGS", strings.TrimSpace(flags+" -buildvcs=false"))
	if !spec.Network {
		env = setEnv(env, "GOPROXY", "off") // fail at once rather than wait for a network there is not
	}
	// Python's settings are testrun's, which Run applies to every command by its runner,
	// in the sandbox or not; these are the ones every runner's gets, for a command that
	// reads Env otherwise.
	env = testrun.PythonEnv(env, "")
	env = setEnv(env, "TMPDIR", "/tmp")
	slices.Sort(env)

	hide := slices.Clone(spec.Hide)
	if home != "" {
		hide = append(hide, home)
	}
	if cfg, err := os.UserConfigDir(); err == nil {
		hide = append(hide, cfg) // the orchestrator's key lives there
	}
	var ro []string
	for _, k := range []string{"GOROOT", "GOMODCACHE"} {
		if v := gov[k]; v != "" {
			ro = append(ro, v)
		}
	}
	ro = append(ro, toolchains(spec.Env, home)...)
	ro = append(ro, spec.Readable...)
	exe, err := testExec(spec.Cache)
	if err != nil {
		return nil, fmt.Errorf("the gate's test program: %w", err)
	}
	ro = append(ro, filepath.Dir(exe))
	var over [][2]string
	if home != "" && sandbox.Hidden(hide, home) {
		// The home folder is empty inside: Go's telemetry setting goes where Go reads it
		// ($HOME/.config, since the jail's environment has no XDG_CONFIG_HOME). A home
		// that is not hidden (HOME=/, or a folder that does not exist) is the host's,
		// read-only: nothing can be put there.
		mode, err := telemetryOff(spec.Cache)
		if err != nil {
			return nil, fmt.Errorf("the gate's Go telemetry setting: %w", err)
		}
		over = append(over, [2]string{mode, filepath.Join(home, ".config", "go", "telemetry", "mode")})
	}
	j := &Jail{Env: env, cache: spec.Cache, canary: jailCanary(spec.Cache, time.Now()), profile: sandbox.Profile{
		Hide: hide, ReadOnly: dedupe(ro), Writable: []string{spec.Cache}, Over: over, Network: spec.Network,
	}}
	if j.noNest = nests(j.profile, exe); j.noNest == nil {
		j.testExec = exe
		flags, _ := lookupEnv(j.Env, "GOFLAGS")
		j.Env = setEnv(j.Env, "GOFLAGS", strings.TrimSpace(flags+" -exec="+exe))
		slices.Sort(j.Env)
	}
	return j, nil
}

// Profile returns the sandbox of one command: checkout (the gate's checkout, or a scratch
// one) writable but for its .git file, the command starting in dir, with env (Env, as
// EnvFor made it for dir). The .git file stays as the orchestrator wrote it: the next
// reset of the checkout writes it again, and a symbolic link left in its place would
// have the orchestrator write through it, over its own state (the baseline) or anything
// else the link names.
func (j *Jail) Profile(checkout, dir string, env []string) *sandbox.Profile {
	p := j.profile.With(nil, []string{checkout})
	p.Fixed = append(slices.Clone(p.Fixed), filepath.Join(checkout, ".git"))
	p.Dir, p.Env = dir, env
	return &p
}

// Canary is the canary the gate's runs in the jail plant (SPEC §7.6), kept in the gate's
// cache folder for a day (jailCanary) rather than drawn once per run: a package's canary
// file is then the same from run to run, and from one orchestrator run to the next, while
// the tests beside it are, so Go's build cache keeps its compiled test package and vet's
// findings, and a gate (a start's baseline among them) compiles only what changed. Its
// names stay out of every reach they must stay out of: agents see neither the gate's
// checkouts, gate.log, nor the cache, and test binaries run where the cache is an empty
// folder (testexec.go). Without a jail, an agent could read a previous run's gate.log,
// and every run draws a canary of its own.
func (j *Jail) Canary() testrun.Canary { return j.canary }

// Readable returns the paths the jail shows read-only although they are in a hidden
// folder: the toolchains of the home folder, Go's root and module cache, the shared folders
// and config sandbox_readable. An agent's sandbox shows the same.
func (j *Jail) Readable() []string { return slices.Clone(j.profile.ReadOnly) }

// CacheDir is the folder of the runners' build caches of the gate's commands:
// $ORCHESTRATOR_GATE_CACHE, else the user's cache folder (the temporary folder without
// one), never an agent's cache.
func CacheDir() string { return userCache("ORCHESTRATOR_GATE_CACHE", "gate") }

// ImpactDir is the folder of the sealed results of Go packages by their inputs (Impact):
// $ORCHESTRATOR_IMPACT, else the user's cache folder (the temporary folder without one).
// It is the user's, not a repository's: the clones and worktrees of a project, and every
// package of the same inputs, share their results. A record holds only for the inputs of
// its key and only under the user's seal, so a record copied, forged or left by another
// key is never used (Impact.read).
func ImpactDir() string { return userCache("ORCHESTRATOR_IMPACT", "impact") }

// userCache is the folder the variable env names, else the folder name of the
// orchestrator's in the user's cache folder (the temporary folder without one).
func userCache(env, name string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "orchestrator", name)
}

// Describe says in one line, for gate.log, what a command in the jail may reach.
func (j *Jail) Describe(checkout string) string {
	net := "no network"
	if j.profile.Network {
		net = "the host's network"
	}
	caches := "test binaries run where they are an empty folder"
	if j.testExec == "" {
		caches = fmt.Sprintf("private to each command, since a sandbox does not nest here (%v)", j.noNest)
	}
	return fmt.Sprintf("bubblewrap, %s, writable only %s, %s and a private /tmp; hidden: %s; %d environment variables; the runners' build caches: %s",
		net, checkout, strings.Join(j.profile.Writable, ", "), strings.Join(sandboxOuter(j.profile.Hide), ", "), len(j.Env), caches)
}

// keepEnv are the variables, by name or prefix (ending in "_" or a letter run), that a
// command running candidate code gets from the pinned environment: the locale, the path,
// and what the runners read. Everything else (cloud keys, tokens, SSH_AUTH_SOCK, the
// person's editor) is cleared.
var keepEnv = []string{
	"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "SHELL", "CI", "NO_COLOR",
	"SOURCE_DATE_EPOCH", "VIRTUAL_ENV", "JAVA_HOME", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS",
	"LC_", "GO", "CGO_", "PYTHON", "PYTEST_", "NODE_", "NPM_CONFIG_", "CARGO_", "RUST", "PYENV_",
}

// secretWords mark a variable as a secret even where its prefix is kept (CARGO_REGISTRY_TOKEN,
// NPM_CONFIG__AUTH, GOAUTH).
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "_KEY", "APIKEY", "PRIVATE"}

// SecretName reports whether a variable's name marks it as a secret (secretWords):
// GOPRIVATE, a list of module paths, is none.
func SecretName(name string) bool {
	upper := strings.ToUpper(name)
	return name != "GOPRIVATE" && slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(upper, w) })
}

// JailEnv returns env without the variables a command running candidate code must not see
// (keepEnv, secretWords). GOPRIVATE and GONOSUMDB name module paths, not secrets, and stay.
func JailEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if keptName(name) {
			out = append(out, kv)
		}
	}
	return out
}

func keptName(name string) bool {
	if SecretName(name) {
		return false
	}
	for _, k := range keepEnv {
		if name == k || (strings.HasSuffix(k, "_") || k == "GO" || k == "PYTHON" || k == "RUST") && strings.HasPrefix(name, k) {
			return true
		}
	}
	return false
}

// Toolchains returns the folders that hold the programs and toolchains of env that the
// hidden home folder would hide: Go's root and module cache, the folders of PATH under the
// home folder, rustup's, cargo's, pyenv's, nvm's. A sandbox that hides the home folder
// shows them read-only.
func Toolchains(env []string) []string {
	home, _ := lookupEnv(env, "HOME")
	gov := goEnv(env)
	var out []string
	for _, k := range []string{"GOROOT", "GOMODCACHE"} {
		if v := gov[k]; v != "" {
			out = append(out, v)
		}
	}
	return dedupe(append(out, toolchains(env, home)...))
}

// goEnv reads GOROOT, GOPATH and GOMODCACHE as the go command sees them with env, so that
// the sandbox shows them even under the hidden home folder; none when go is not installed.
func goEnv(env []string) map[string]string {
	out := map[string]string{}
	path, _ := lookupEnv(env, "PATH")
	goBin := ""
	for _, d := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(d, "go")); err == nil && !fi.IsDir() {
			goBin = filepath.Join(d, "go")
			break
		}
	}
	if goBin == "" {
		return out
	}
	cmd := exec.Command(goBin, "env", "GOROOT", "GOPATH", "GOMODCACHE")
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		return out
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, k := range []string{"GOROOT", "GOPATH", "GOMODCACHE"} {
		if i < len(lines) && lines[i] != "" {
			out[k] = lines[i]
		}
	}
	return out
}

// toolchains returns the folders under home that hold the programs the runners need: the
// folders of PATH under home, with the tool's root where the folder is its bin or shims
// (pyenv's shims run pyenv from its root), and the toolchain folders people keep there
// (rustup's, cargo's, pyenv's, nvm's), as the variables name them or by default.
func toolchains(env []string, home string) []string {
	if home == "" {
		return nil
	}
	under := func(p string) bool { return strings.HasPrefix(filepath.Clean(p), filepath.Clean(home)+"/") }
	var out []string
	path, _ := lookupEnv(env, "PATH")
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) || !under(d) {
			continue
		}
		out = append(out, d)
		switch filepath.Base(d) {
		case "bin", "shims", ".bin":
			if parent := filepath.Dir(d); parent != filepath.Clean(home) {
				out = append(out, parent)
			}
		}
	}
	defaults := map[string]string{"RUSTUP_HOME": ".rustup", "CARGO_HOME": ".cargo", "PYENV_ROOT": ".pyenv", "NVM_DIR": ".nvm"}
	for _, k := range []string{"RUSTUP_HOME", "CARGO_HOME", "PYENV_ROOT", "NVM_DIR", "VIRTUAL_ENV"} {
		d, _ := lookupEnv(env, k)
		if d == "" && defaults[k] != "" {
			d = filepath.Join(home, defaults[k])
		}
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// sandboxOuter returns the hidden folders that exist, without those inside another.
func sandboxOuter(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		inside := false
		for _, o := range dirs {
			if o != d && strings.HasPrefix(d, o+"/") {
				inside = true
			}
		}
		if !inside && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func dedupe(list []string) []string {
	var out []string
	for _, p := range list {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
