package gate

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/seal"
	"github.com/orchestrator/orchestrator/testrun"
)

// An Impact is where the GREEN and VERIFY gates keep, and find again, the test results of
// Go packages by the inputs they were tested with (SPEC §7.3): a folder of the
// orchestrator's state that no sandbox shows, and the key that seals each record. With
// one, a gate whose test command is a plain go test runs only the packages whose inputs
// no sealed record holds; the others' tests count as they were then. A record of a
// failure is used only where it decides nothing (failureDecidesNothing): a failure that
// chance made would otherwise be refused again and again.
type Impact struct {
	// Dir holds one record per package and input key: <key>.json.
	Dir string
	// Key seals the records; a record whose seal fails is never used.
	Key *seal.Key
	// Commit is the commit the gate judges: the records it writes name it.
	Commit string
	// Repo is the repository the gate judges in (its folder): the records it writes name
	// it, and a record of another (a clone's) says so where it is reused.
	Repo string
}

// A pkgRecord is the sealed result of one Go package's tests under one input key.
type pkgRecord struct {
	Package string    `json:"package"`
	Input   string    `json:"input"`
	Commit  string    `json:"commit"`
	Repo    string    `json:"repo,omitempty"`
	Command string    `json:"command"`
	Created time.Time `json:"created"`
	// Failed says that the package failed: a test failed, or its tests did not build.
	Failed bool           `json:"failed,omitempty"`
	Tests  []recordedTest `json:"tests"`
}

// A recordedTest is one test of a pkgRecord.
type recordedTest struct {
	ID     string         `json:"id"`
	Status testrun.Status `json:"status"`
}

// A listedPkg is one entry of go list -deps -test -json.
type listedPkg struct {
	ImportPath   string
	Dir          string
	Standard     bool
	DepOnly      bool
	ForTest      string
	Deps         []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	TestGoFiles  []string
	XTestGoFiles []string
	Incomplete   bool
	Error        *struct{ Err string }
	DepsErrors   []struct{ Err string }
	Module       *struct {
		Path    string
		Version string
		Main    bool
		Dir     string
		Replace *struct {
			Path    string
			Version string
		}
	}
}

// A testedPkg is a package the command tests, with its input key.
type testedPkg struct {
	path, dir string // import path; folder relative to the command's folder
	key       string
	noTests   bool
}

// An impactPlan is what a gate's run of a plain go test reuses and runs.
type impactPlan struct {
	g      *testrun.GoTest
	module string
	pkgs   []testedPkg
	reused map[string]*pkgRecord // by import path
	run    []testedPkg
}

// listFields are the fields of go list's JSON the plan reads.
const listFields = "ImportPath,Dir,Standard,DepOnly,ForTest,Deps,Imports,TestImports,XTestImports,TestGoFiles,XTestGoFiles,Incomplete,Error,DepsErrors,Module"

// planImpact reads what command's run can reuse: the input key of each package the
// command tests (impactKeys), and the sealed records under those keys, a pass's, or with
// failures a failure's that decides nothing. It returns nil and why when the keys cannot
// be known, or when a record's seal fails: then everything runs.
func (in Input) planImpact(ctx context.Context, command string, failures bool) (*impactPlan, string) {
	plan, why := in.impactKeys(ctx, command)
	if plan == nil {
		return nil, why
	}
	plan.reused = map[string]*pkgRecord{}
	for _, p := range plan.pkgs {
		rec, err := in.Impact.read(p)
		var edited *seal.EditedError
		switch {
		case errors.As(err, &edited):
			return nil, fmt.Sprintf("%v; no record of earlier runs is used", err)
		case err != nil, rec.Failed && !(failures && in.failureDecidesNothing(p, rec, plan.module)):
			plan.run = append(plan.run, p)
		default:
			plan.reused[p.path] = rec
		}
	}
	return plan, ""
}

// impactKeys lists the packages command tests with go list, run as the gate runs its
// commands, and computes their input keys (keys), reading no record. It returns nil and
// why when the keys cannot be known (not a plain go test, go list failed, a package whose
// source the key cannot cover).
func (in Input) impactKeys(ctx context.Context, command string) (*impactPlan, string) {
	g, ok := testrun.PlainGoTest(command)
	if !ok {
		return nil, "the command is not a plain go test over package patterns"
	}
	// No VCS stamping: listing needs none, and a folder above the checkout with a .git that
	// git cannot read would fail the listing ("error obtaining VCS status").
	args := append(append([]string{"list", "-deps", "-test", "-json=" + listFields}, g.BuildFlags...), "-buildvcs=false")
	out, err := in.goCommand(ctx, append(args, g.Patterns...)...)
	if err != nil {
		return nil, fmt.Sprintf("go list: %v", err)
	}
	var listed []listedPkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Sprintf("go list: %v", err)
		}
		if p.Error != nil || len(p.DepsErrors) > 0 || p.Incomplete {
			return nil, fmt.Sprintf("go list: package %s is incomplete", p.ImportPath)
		}
		listed = append(listed, p)
	}
	return in.keys(g, listed)
}

// failureDecidesNothing reports whether the record of package p's failure can stand for a
// run of it in a GREEN gate: every test of the baseline in p that the record does not have
// passing is owed to another TEST task, and p holds none of the RED tests the task must
// make pass. Then the package's result, whatever it is, fails nothing: a run would only
// spend the time. A failure that decides anything runs again, so that a failure that
// chance made is never kept.
func (in Input) failureDecidesNothing(p testedPkg, rec *pkgRecord, module string) bool {
	if in.Owed == nil {
		return false
	}
	passed := map[string]bool{}
	for _, t := range rec.Tests {
		passed[t.ID] = t.Status == testrun.Passed
	}
	inPkg := func(id string) bool {
		pkg, _, ok := testrun.SplitGoID(id, module)
		return ok && pkg == p.path
	}
	for _, id := range in.Baseline {
		if inPkg(id) && !passed[id] && !in.Owed(id) {
			return false
		}
	}
	for _, m := range in.Deps {
		for _, id := range m.FailingTests {
			if inPkg(id) {
				return false
			}
		}
		for _, f := range m.TestFiles {
			if path.Dir(filepath.ToSlash(f)) == p.dir {
				return false
			}
		}
	}
	return true
}

// keys computes the input key of every package g tests (SPEC §7.3): the Go files of its
// folder, with the folders below it that hold no package; the same of every package of
// the checkout its test binary imports, directly or not; the module and version of every
// other package it imports; every other file of the checkout (test data and golden files
// wherever they are, go.mod and go.sum among them: hashTrees); the Go toolchain; the
// command; and the environment the gate gives the run.
func (in Input) keys(g *testrun.GoTest, listed []listedPkg) (*impactPlan, string) {
	checkout := cmp.Or(in.Checkout, in.Root)
	byPath := map[string]*listedPkg{}
	var modDir, module, goroot string
	for i := range listed {
		p := &listed[i]
		path, _, _ := strings.Cut(p.ImportPath, " ")
		if byPath[path] == nil || p.ForTest == "" {
			byPath[path] = p
		}
		if p.Module != nil && p.Module.Main {
			if modDir != "" && modDir != p.Module.Dir {
				return nil, "the command tests packages of more than one module"
			}
			modDir, module = p.Module.Dir, p.Module.Path
		}
		if p.ImportPath == "runtime" && p.Standard {
			goroot = filepath.Dir(filepath.Dir(p.Dir))
		}
	}
	if modDir == "" || !within(checkout, modDir) {
		return nil, "the command's module is not in the gate's checkout"
	}
	// Every file of the module belongs to the package whose folder holds it, nearest
	// first, or to no package (common).
	owners := map[string]bool{}
	for _, p := range listed {
		if !p.Standard && p.Dir != "" && within(modDir, p.Dir) {
			owners[p.Dir] = true
		}
	}
	trees, common, goAll, err := hashTrees(checkout, modDir, owners, queue.Layout{Root: in.Root}.Dir())
	if err != nil {
		return nil, fmt.Sprintf("hash the module's files: %v", err)
	}
	if goroot == "" {
		// A test binary imports testing, and so the runtime: go list names no runtime only
		// where no package has a test file (nor imports anything).
		return nil, "no package has test files"
	}
	toolchain, err := goVersion(goroot)
	if err != nil {
		return nil, err.Error()
	}
	global := sha256.New()
	fmt.Fprintf(global, "orchestrator impact v1\x00%s\x00%s\x00%s\x00", toolchain, g.Command, common)
	env := in.testEnv()
	slices.Sort(env)
	for _, kv := range env {
		fmt.Fprintf(global, "%s\x00", kv)
	}
	plan := &impactPlan{g: g, module: module}
	for _, p := range listed {
		if p.DepOnly || p.ForTest != "" || p.Standard {
			continue
		}
		if base, ok := strings.CutSuffix(p.ImportPath, ".test"); ok && byPath[base] != nil && !byPath[base].DepOnly {
			continue // the test binary's main package
		}
		if p.Module == nil || !p.Module.Main || !within(in.Root, p.Dir) {
			return nil, fmt.Sprintf("package %s is not one of the module's in the command's folder", p.ImportPath)
		}
		deps := p.Deps
		if main := byPath[p.ImportPath+".test"]; main != nil {
			deps = main.Deps
		}
		h := sha256.New()
		h.Write(global.Sum(nil))
		fmt.Fprintf(h, "%s\x00%s\x00", p.ImportPath, trees[p.Dir])
		if readsOthers(&p, byPath, deps, modDir) {
			fmt.Fprintf(h, "every Go file %s\x00", goAll)
		}
		var lines []string
		for _, d := range deps {
			path, _, _ := strings.Cut(d, " ")
			dp := byPath[path]
			switch {
			case dp == nil:
				return nil, fmt.Sprintf("go list did not describe %s, which %s imports", path, p.ImportPath)
			case dp.Standard:
				continue // the toolchain's
			case dp.Dir != "" && within(modDir, dp.Dir):
				lines = append(lines, path+" "+trees[dp.Dir])
			case dp.Module != nil && dp.Module.Replace != nil && dp.Module.Replace.Version != "":
				lines = append(lines, path+" "+dp.Module.Replace.Path+"@"+dp.Module.Replace.Version)
			case dp.Module != nil && dp.Module.Replace == nil && dp.Module.Version != "":
				lines = append(lines, path+" "+dp.Module.Path+"@"+dp.Module.Version) // go.sum pins it
			default:
				return nil, fmt.Sprintf("package %s, which %s imports, comes from outside the checkout with no version", path, p.ImportPath)
			}
		}
		slices.Sort(lines)
		for _, l := range slices.Compact(lines) {
			fmt.Fprintf(h, "%s\x00", l)
		}
		rel, _ := filepath.Rel(in.Root, p.Dir)
		plan.pkgs = append(plan.pkgs, testedPkg{
			path: p.ImportPath, dir: filepath.ToSlash(rel), key: hex.EncodeToString(h.Sum(nil)),
			noTests: len(p.TestGoFiles)+len(p.XTestGoFiles) == 0,
		})
	}
	if len(plan.pkgs) == 0 {
		return nil, "the command tests no package"
	}
	return plan, ""
}

// hashTrees hashes the files of the checkout at root: a Go file of the module at modDir
// goes to the nearest folder of owners that holds it (it is an input of that package's
// build); every other file (test data, golden files, embedded files, go.mod and go.sum,
// the files of a nested module or outside the module) to the common hash, which is an
// input of every package: a test may read any file of the checkout (../testdata/x,
// another package's golden file), and which one it reads is known only to its run. .git
// (a folder, or a worktree's file, which names a folder of its own in each checkout) and
// state, the project's orchestrator folder, are left out. A symbolic link is hashed as
// the path it names; one that leads out of the checkout is an error, since what it names
// is no file of the checkout.
func hashTrees(root, modDir string, owners map[string]bool, state string) (trees map[string]string, common, goAll string, err error) {
	lines := map[string][]string{}
	var nested []string // the folders of other modules inside modDir
	all := sha256.New() // the module's Go files, every package's
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// The orchestrator's own folder is no input: no candidate may change it (SPEC
			// §7.1), and its task queue, whose Status cells land with each task's work,
			// would make every landing a change of every package.
			if p != root && (d.Name() == ".git" || p == state) {
				return filepath.SkipDir
			}
			if p != modDir && within(modDir, p) && fileExists(filepath.Join(p, "go.mod")) {
				nested = append(nested, p)
			}
			return nil
		}
		if d.Name() == ".git" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		var sum string
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if to := target; !filepath.IsAbs(to) {
				to = filepath.Join(filepath.Dir(p), to)
				if !within(root, filepath.Clean(to)) {
					return fmt.Errorf("%s is a symbolic link out of the checkout (%s)", filepath.ToSlash(rel), target)
				}
			} else {
				return fmt.Errorf("%s is a symbolic link out of the checkout (%s)", filepath.ToSlash(rel), target)
			}
			sum = "link " + target
		} else {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			sum = hex.EncodeToString(s[:])
		}
		owner := ""
		if strings.HasSuffix(p, ".go") && within(modDir, p) && !slices.ContainsFunc(nested, func(n string) bool { return within(n, p) }) {
			for dir := filepath.Dir(p); within(modDir, dir); dir = filepath.Dir(dir) {
				if owners[dir] {
					owner = dir
					break
				}
				if dir == modDir {
					break
				}
			}
		}
		line := fmt.Sprintf("%s %s %s\n", filepath.ToSlash(rel), d.Type(), sum)
		lines[owner] = append(lines[owner], line)
		if owner != "" {
			io.WriteString(all, line) // WalkDir's order is the files' lexical order
		}
		return nil
	})
	if err != nil {
		return nil, "", "", err
	}
	out := map[string]string{}
	for owner, ls := range lines {
		slices.Sort(ls)
		h := sha256.New()
		for _, l := range ls {
			io.WriteString(h, l)
		}
		out[owner] = hex.EncodeToString(h.Sum(nil))
	}
	common = out[""]
	delete(out, "")
	for dir := range owners {
		if out[dir] == "" {
			out[dir] = "empty"
		}
	}
	return out, common, hex.EncodeToString(all.Sum(nil)), nil
}

// buildsOthers are the packages through which a test builds, runs or reads the sources of
// Go packages it does not import: `go run ../cmd/shop`, a parse of ../money/money.go.
var buildsOthers = []string{"os/exec", "go/parser", "go/build", "go/importer", "golang.org/x/tools/go/packages", "golang.org/x/tools/go/loader"}

// readsOthers reports whether the tests of package p may depend on Go files of packages
// they do not import: p, or a package of the module its test binary imports, imports one
// of buildsOthers, or p's test files name a Go file ("x.go", "*.go"). Then every Go file of
// the module goes into p's key.
func readsOthers(p *listedPkg, byPath map[string]*listedPkg, deps []string, modDir string) bool {
	direct := func(q *listedPkg) bool {
		for _, imp := range slices.Concat(q.Imports, q.TestImports, q.XTestImports) {
			if slices.Contains(buildsOthers, imp) {
				return true
			}
		}
		return false
	}
	if direct(p) {
		return true
	}
	for _, d := range deps {
		path, _, _ := strings.Cut(d, " ")
		if q := byPath[path]; q != nil && !q.Standard && q.Dir != "" && within(modDir, q.Dir) && direct(q) {
			return true
		}
	}
	for _, f := range slices.Concat(p.TestGoFiles, p.XTestGoFiles) {
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil || bytes.Contains(b, []byte(`.go"`)) || bytes.Contains(b, []byte(`.go`+"`")) {
			return true
		}
	}
	return false
}

// goVersion names the Go toolchain of goroot: its VERSION file and its folder.
func goVersion(goroot string) (string, error) {
	b, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("the Go toolchain's version: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return goroot + " " + line, nil
}

func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// testEnv is the environment the gate's test commands get in Root (runOptions).
func (in Input) testEnv() []string {
	if in.Jail != nil {
		return slices.Clone(EnvFor(in.Jail.Env, in.Root))
	}
	env := EnvFor(in.Env, in.Root)
	if env == nil {
		env = os.Environ()
	}
	return slices.Clone(env)
}

// goCommand runs the go command with args in Root as the gate runs its test commands: in
// the gate's sandbox when it has one, with the same environment, and returns its
// standard output.
func (in Input) goCommand(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	argv := append([]string{"go"}, args...)
	env := in.testEnv()
	if in.Jail != nil {
		argv = in.Jail.Profile(cmp.Or(in.Checkout, in.Root), in.Root, env).Wrap(argv)
		env = os.Environ() // bwrap's own; the command gets the profile's
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = in.Root, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("%w: %s", err, msg)
	}
	return stdout.Bytes(), nil
}

// recordPath is where the record of package p under its key lives.
func (im *Impact) recordPath(p testedPkg) string {
	return filepath.Join(im.Dir, p.key+".json")
}

// read returns the sealed record of package p under its key: fs.ErrNotExist when there is
// none, an *seal.EditedError when the file there is not one the orchestrator sealed for
// that package and key.
func (im *Impact) read(p testedPkg) (*pkgRecord, error) {
	path := im.recordPath(p)
	doc, err := im.Key.ReadJSON(seal.KindImpact, path)
	if err != nil {
		return nil, err
	}
	var rec pkgRecord
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, seal.Edited(path, seal.ErrBroken)
	}
	if rec.Package != p.path || rec.Input != p.key {
		return nil, seal.Edited(path, seal.ErrBroken) // sealed, but another's: copied here
	}
	im.used(path)
	return &rec, nil
}

// The records are the user's, shared by every project (ImpactDir): a record unused for
// impactUnused is removed, in a look over the folder at most once per impactTrimEvery,
// after a gate sealed its results, as Go trims its build cache.
const (
	impactUnused    = 30 * 24 * time.Hour
	impactTrimEvery = 24 * time.Hour
)

// used marks the record at path as used now, at most once a day (its modification time,
// which trim reads).
func (im *Impact) used(path string) {
	now := time.Now()
	if fi, err := os.Stat(path); err == nil && now.Sub(fi.ModTime()) > impactTrimEvery {
		os.Chtimes(path, now, now)
	}
}

// trim removes the records of im.Dir that no gate used for impactUnused, unless the folder
// was trimmed less than impactTrimEvery ago (the time of its file "trimmed").
func (im *Impact) trim(now time.Time) {
	mark := filepath.Join(im.Dir, "trimmed")
	if fi, err := os.Stat(mark); err == nil && now.Sub(fi.ModTime()) < impactTrimEvery {
		return
	}
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		return
	}
	os.Chtimes(mark, now, now)
	entries, err := os.ReadDir(im.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > impactUnused {
			os.Remove(filepath.Join(im.Dir, e.Name()))
		}
	}
}

// write seals and writes the record of a package's run.
func (im *Impact) write(p testedPkg, rec *pkgRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if b, err = im.Key.SealJSON(seal.KindImpact, b); err != nil {
		return err
	}
	if err := os.MkdirAll(im.Dir, 0o700); err != nil {
		return err
	}
	path := im.recordPath(p)
	tmp, err := os.CreateTemp(im.Dir, ".record-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// runSuite runs a GREEN or VERIFY gate's test command (SPEC §7.3). With in.Impact and a
// plain go test, the packages whose input key a sealed record holds are not run (with
// failures, GREEN's, also those whose recorded failure decides nothing): their tests
// count as they were then, "reused: same inputs as <commit>" in gate.log; the others run,
// with canaries only where they run, and the result of each of them is recorded for later
// gates. The result holds both, as one run of the whole command would. Anything unclear
// runs the whole command, as without an Impact.
func (v *Verdict) runSuite(ctx context.Context, in Input, command string, failures bool) (*testrun.Result, error) {
	if in.Impact == nil || in.Impact.Key == nil || in.Impact.Dir == "" {
		return v.run(ctx, in, command)
	}
	if len(v.Runs) > 0 && in.Restore != nil {
		// The keys are of the candidate's bytes, not of what an earlier command left.
		if err := in.Restore(); err != nil {
			return nil, fmt.Errorf("restore the checkout before %s: %w", command, err)
		}
		v.Log.WriteString("checkout: restored to the candidate's commit\n")
	}
	plan, why := in.planImpact(ctx, command, failures)
	if plan == nil {
		fmt.Fprintf(&v.Log, "impact: %s: the whole command runs\n", why)
		return v.run(ctx, in, command)
	}
	for _, p := range plan.pkgs {
		rec := plan.reused[p.path]
		if rec == nil {
			continue
		}
		n := map[testrun.Status]int{}
		for _, t := range rec.Tests {
			n[t.Status]++
		}
		from := "an earlier run"
		if rec.Commit != "" {
			from = rec.Commit[:min(12, len(rec.Commit))]
		}
		if rec.Repo != "" && rec.Repo != in.Impact.Repo {
			from += " in " + rec.Repo
		}
		if rec.Failed {
			how := fmt.Sprintf("%d passed, %d failed", n[testrun.Passed], n[testrun.Failed])
			if len(rec.Tests) == 0 {
				how = "before any of its tests ran"
			}
			fmt.Fprintf(&v.Log, "reused: same inputs as %s: package %s failed: %s; each test of the baseline in it that did not pass is owed to another task\n", from, p.path, how)
			continue
		}
		fmt.Fprintf(&v.Log, "reused: same inputs as %s: package %s, %d passed, %d skipped\n", from, p.path, n[testrun.Passed], len(rec.Tests)-n[testrun.Passed])
	}
	if len(plan.run) == 0 {
		fmt.Fprintf(&v.Log, "impact: all %d packages of %s have a sealed record of the same inputs: nothing runs\n", len(plan.pkgs), command)
		return plan.merged(command, nil), nil
	}
	run := plan.runs(command)
	if len(plan.reused) > 0 {
		names := make([]string, len(plan.run))
		for i, p := range plan.run {
			names[i] = p.path
		}
		fmt.Fprintf(&v.Log, "impact: %d of %d packages run, the others' inputs are unchanged: %s\n", len(plan.run), len(plan.pkgs), strings.Join(names, ", "))
	} else {
		// (The folder is the user's, shared by every project: no count of what it holds.)
		fmt.Fprintf(&v.Log, "impact: no package has a sealed pass of the same inputs: all %d run\n", len(plan.pkgs))
	}
	res, err := v.run(ctx, in, run)
	if err != nil {
		return nil, err
	}
	v.record(in, plan, res)
	if len(plan.reused) == 0 {
		return res, nil
	}
	return plan.merged(command, res), nil
}

// runs is the plan's go test of the packages that run: whole, the whole command, when
// nothing is reused, "" when everything is.
func (p *impactPlan) runs(whole string) string {
	switch {
	case len(p.run) == 0:
		return ""
	case len(p.reused) == 0:
		return whole
	}
	dirs := make([]string, len(p.run))
	for i, t := range p.run {
		dirs[i] = t.dir
	}
	return p.g.Only(dirs)
}

// merged returns res, the run of the plan's packages that ran (nil when none did), with
// the reused packages' tests and statuses added: the result one run of command would
// have, classified again.
func (p *impactPlan) merged(command string, res *testrun.Result) *testrun.Result {
	m := testrun.Result{Runner: testrun.Go}
	if res != nil {
		m = *res
	}
	m.Command = command
	m.Tests = slices.Clone(m.Tests)
	for _, t := range p.pkgs {
		if rec := p.reused[t.path]; rec != nil {
			for _, rt := range rec.Tests {
				m.Tests = append(m.Tests, testrun.Test{ID: rt.ID, Status: rt.Status})
			}
		}
	}
	pkgs := map[string]testrun.Status{}
	for k, s := range m.Packages {
		pkgs[k] = s
	}
	m.Packages = pkgs
	p.reusedStatus(m.Packages)
	m.Class, m.Reason = testrun.Classify(&m, nil)
	return &m
}

// record seals the results of the packages of the plan that ran, and says in gate.log
// how many it sealed (seal).
func (v *Verdict) record(in Input, plan *impactPlan, res *testrun.Result) {
	n, err := in.Impact.seal(plan, res)
	if err != nil {
		fmt.Fprintf(&v.Log, "impact: could not record: %v\n", err)
	}
	fmt.Fprintf(&v.Log, "impact: recorded the result of %d of the %d packages that ran, sealed\n", n, len(plan.run))
}

// seal writes the sealed record of each package of plan.run from res, the run that ran
// them: a package that ended as passed (canaries counted out) or had no test files, and
// none of whose tests failed, as a pass; one that failed, as a failure. A run that timed
// out records nothing, nor does a package that did neither (all its tests skipped). It
// returns how many it wrote, and the errors of those it could not.
func (im *Impact) seal(plan *impactPlan, res *testrun.Result) (int, error) {
	if res.TimedOut {
		return 0, nil
	}
	byPkg := map[string][]recordedTest{}
	failed := map[string]bool{}
	for _, t := range res.Tests {
		pkg, _, ok := testrun.SplitGoID(t.ID, plan.module)
		if !ok {
			continue
		}
		byPkg[pkg] = append(byPkg[pkg], recordedTest{ID: t.ID, Status: t.Status})
		failed[pkg] = failed[pkg] || t.Status == testrun.Failed
	}
	n := 0
	var errs []error
	for _, p := range plan.run {
		st := res.Packages[p.path]
		fail := failed[p.path] || st == testrun.Failed
		if !fail && !(st == testrun.Passed || st == testrun.Skipped && p.noTests) {
			continue
		}
		rec := &pkgRecord{
			Package: p.path, Input: p.key, Commit: im.Commit, Repo: im.Repo, Command: plan.g.Command,
			Created: time.Now().UTC().Truncate(time.Second), Failed: fail, Tests: byPkg[p.path],
		}
		if rec.Tests == nil {
			rec.Tests = []recordedTest{}
		}
		if err := im.write(p, rec); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.path, err))
			continue
		}
		n++
	}
	if n > 0 {
		im.trim(time.Now())
	}
	return n, errors.Join(errs...)
}

// reusedStatus sets the status of each reused package in pkgs: failed or passed, as its
// record has it.
func (p *impactPlan) reusedStatus(pkgs map[string]testrun.Status) {
	for path, rec := range p.reused {
		pkgs[path] = testrun.Passed
		if rec.Failed {
			pkgs[path] = testrun.Failed
		}
	}
}

// describe says in a line what the plan reuses.
func (p *impactPlan) describe() string {
	switch {
	case len(p.reused) == 0:
		return "no package has a sealed pass of the same inputs"
	case len(p.run) == 0 && len(p.pkgs) == 1:
		return "its one package has a sealed pass of the same inputs: nothing runs"
	case len(p.run) == 0:
		return fmt.Sprintf("all %d packages have a sealed pass of the same inputs: nothing runs", len(p.pkgs))
	}
	return fmt.Sprintf("%d of %d packages have a sealed pass of the same inputs", len(p.reused), len(p.pkgs))
}
