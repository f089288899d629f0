package gate

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// goEnvKeep are the settings of the user's Go environment file (`go env -w`) that the gate
// keeps: where modules come from and where caches live. None of them changes which tests
// run, how they are built or what they report. The others (GOFLAGS, GOEXPERIMENT, CGO_*,
// GOTOOLCHAIN, CC, …) are dropped: an agent that runs `go env -w GOFLAGS=-overlay=…` writes
// that file, and a file an agent can write does not decide how the gate builds tests.
var goEnvKeep = []string{
	"GOPROXY", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE",
	"GOVCS", "GOAUTH", "GOMODCACHE", "GOCACHE", "GOPATH",
}

// PinnedEnv returns the environment the gate's test commands run with (SPEC §7.6), made
// once when the orchestrator starts from base, its own environment then (os.Environ()).
// The process environment of the orchestrator is out of an agent's reach, but the files the
// runners read their settings from are not, so:
//
//   - Go reads no environment file (GOENV=off); the settings of the user's file that say
//     where modules come from (goEnvKeep) are read now, at start, and passed as variables.
//     What `go env -w` writes later, by anyone, has no effect on the gate.
//   - GOTOOLCHAIN is local unless the person set it: a toolchain line an agent writes in
//     go.mod does not choose the compiler.
//   - PYTHONSTARTUP is dropped: it names a file to run, and tests have no use for it.
//
// Every other variable (GOFLAGS, PYTEST_ADDOPTS, NODE_OPTIONS, RUSTFLAGS, …) is kept as the
// person set it when the orchestrator started: that is the pinning. GOWORK is decided per
// checkout by EnvFor.
func PinnedEnv(base []string) []string {
	env := slices.Clone(base)
	set := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	if file := goEnvFile(base); file != "" {
		for k, v := range readGoEnv(file) {
			if slices.Contains(goEnvKeep, k) && !set[k] {
				env = append(env, k+"="+v)
				set[k] = true
			}
		}
	}
	env = setEnv(env, "GOENV", "off")
	if !set["GOTOOLCHAIN"] {
		env = setEnv(env, "GOTOOLCHAIN", "local")
	}
	env = dropEnv(env, "PYTHONSTARTUP")
	slices.Sort(env)
	return env
}

// EnvFor returns the pinned environment for a test run in root, the gate's checkout (or a
// folder in it). The Go workspace is the checkout's own go.work when git has one there
// (then it is part of the harness, which only a TEST task may change), else none
// (GOWORK=off): a go.work above the checkout, in a folder an agent could write, is never
// used. A GOWORK the person set is kept. env nil stands for the orchestrator's own.
func EnvFor(env []string, root string) []string {
	if env == nil {
		return nil
	}
	if v, ok := lookupEnv(env, "GOWORK"); ok && v != "" {
		return env
	}
	work := "off"
	for dir := root; dir != ""; {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			work = filepath.Join(dir, "go.work")
			break
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			break // the top of the checkout
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return setEnv(slices.Clone(env), "GOWORK", work)
}

// goEnvFile returns the Go environment file that base names (GOENV), or the default one in
// the user's configuration folder; "" when there is none.
func goEnvFile(base []string) string {
	if v, ok := lookupEnv(base, "GOENV"); ok {
		if v == "off" || v == "" {
			return ""
		}
		return v
	}
	dir := ""
	if v, ok := lookupEnv(base, "XDG_CONFIG_HOME"); ok && v != "" {
		dir = v
	} else if v, ok := lookupEnv(base, "HOME"); ok && v != "" {
		dir = filepath.Join(v, ".config")
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "go", "env")
}

// readGoEnv reads a Go environment file: KEY=VALUE lines.
func readGoEnv(file string) map[string]string {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// setEnv sets key to value in env, replacing every earlier setting of it.
func setEnv(env []string, key, value string) []string {
	return append(dropEnv(env, key), key+"="+value)
}

func dropEnv(env []string, key string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
}
