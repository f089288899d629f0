package watch

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/config"
	"github.com/orchestrator/orchestrator/gate"
	"github.com/orchestrator/orchestrator/prompts"
	"github.com/orchestrator/orchestrator/queue"
	"github.com/orchestrator/orchestrator/worktree"
)

// A place is where a prompt's files come from: root, the tree the agent will work in, and
// runs, the attempt records of the orchestrator's state.
type place struct {
	root, runs string
	// feedback gives the judge's reasons for rejecting the previous attempt to the next
	// implementer (config retry_feedback: review).
	feedback bool
}

// placeOf is the place of `orchestrator prompt`: the person's tree, and the repository's
// attempt records (the readable copies outside a git repository).
func placeOf(l queue.Layout) place {
	if repo, err := worktree.Open(context.Background(), l.Root); err == nil {
		return place{root: l.Root, runs: stateRuns(repo)}
	}
	return place{root: l.Root, runs: l.Runs()}
}

// renderPrompt is shared with `orchestrator prompt ID`, which prints exactly this.
func renderPrompt(l queue.Layout, at place, tasks *queue.Doc, t queue.Task, testCmd string, attempt int) (string, error) {
	if text, ok, err := cyclePrompt(l, at, tasks, t, testCmd, attempt); ok {
		return text, err
	}
	rec := t.Record
	in := prompts.Input{
		Role:           prompts.RoleFor(t.Kind.String()),
		TaskID:         t.ID,
		Title:          tasks.TitleText(rec),
		Body:           strings.TrimSpace(tasks.ProseText(rec)),
		Root:           at.root,
		TestCommand:    testCmd,
		Attempt:        attempt,
		LastGateOutput: lastGateOutput(at.runs, t.ID, attempt),
	}
	if at.feedback {
		in.Feedback = reviewFeedback(at.runs, t.ID, attempt)
	}
	for _, f := range tasks.Fields(rec) {
		in.Fields = append(in.Fields, prompts.Field{Name: tasks.Name(f), Value: tasks.Value(f)})
	}
	in.Allowlist = allowlist(at, tasks, t)
	in.Include = in.Allowlist
	return prompts.Render(in, filepath.Join(l.Dir(), "prompts"))
}

// PromptFor renders the prompt task id would get if it started now.
func PromptFor(l queue.Layout, cfg *config.Config, id string) (string, error) {
	info, err := PromptInfoFor(l, cfg, id)
	if err != nil {
		return "", err
	}
	return info.Prompt, nil
}

// allowlist returns the files a task's prompt may include: its own Test File, and for a
// task that builds on TEST tasks, the test files those wrote: the test_files of their RED
// hand-offs, and their Test File fields. Only files that exist are listed. Implementation
// files are never on a test writer's list.
func allowlist(at place, tasks *queue.Doc, t queue.Task) []string {
	var list []string
	seen := map[string]bool{}
	add := func(paths []string) {
		for _, p := range paths {
			p = filepath.ToSlash(filepath.Clean(p))
			if seen[p] || strings.HasPrefix(p, "../") || filepath.IsAbs(p) {
				continue
			}
			if fi, err := os.Stat(filepath.Join(at.root, p)); err == nil && fi.Mode().IsRegular() {
				seen[p] = true
				list = append(list, p)
			}
		}
	}
	add(queue.List(tasks.Get(t.Record, "Test File")))
	if t.Kind != queue.KindTest {
		deps := depTests(tasks, t)
		add(redTestFiles(at.runs, deps))
		for _, dep := range deps {
			rec, _ := tasks.Record(dep)
			add(queue.List(tasks.Get(rec, "Test File")))
		}
	}
	sort.Strings(list)
	return list
}

// lastGateOutput returns the raw output of the failed gate of the attempt before attempt,
// if that one failed at its gate.
func lastGateOutput(runs, id string, attempt int) string {
	n := attempt - 1
	if n < 1 {
		return ""
	}
	dir := filepath.Join(runs, id, strconv.Itoa(n))
	res, ok := readResult(dir)
	if !ok || res.Outcome != "failed" || res.Gate == nil || res.Gate.Pass {
		// A change the judge failed passed its tests: there is no failed check to show.
		return ""
	}
	log, err := os.ReadFile(filepath.Join(dir, "gate.log"))
	if err != nil {
		return ""
	}
	return gate.LastOutput(string(log))
}

// depTests returns the TEST tasks t depends on, directly or through other tasks (SPEC
// §7.3: every RED test of them must pass), in the order they are first reached.
func depTests(tasks *queue.Doc, t queue.Task) []string {
	var out []string
	seen := map[string]bool{t.ID: true}
	var walk func(deps []string)
	walk = func(deps []string) {
		for _, dep := range deps {
			if seen[dep] {
				continue
			}
			seen[dep] = true
			rec, ok := tasks.Record(dep)
			if !ok {
				continue
			}
			d := tasks.Task(rec)
			if d.Kind == queue.KindTest {
				out = append(out, dep)
			}
			walk(d.Deps)
		}
	}
	walk(t.Deps)
	return out
}
