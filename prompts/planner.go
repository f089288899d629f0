package prompts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// PlannerTemplate is the file name of the planner's template (SPEC §17), embedded and
// overridable in .orchestrator/prompts/ like the others. The planner is not a task's role:
// it has no task record, so it is not among [Roles].
const PlannerTemplate = "planner.md"

// PlannerInput is everything the planner's prompt is built from: the requirements, the test
// IDs still to map, the queue as it is, where to write, and on a retry the findings of the
// check that rejected the last output. Render adds nothing else.
type PlannerInput struct {
	PRDPath string // the requirements file, as the person named it
	PRD     string // its text, whole: a cut requirement would be a dropped requirement
	// PlanPath is the test plan file; Categories hold its test IDs that no TEST task of
	// the queue maps yet, in plan order; Mapped counts those that one does.
	PlanPath   string
	Categories []PlannerCategory
	Mapped     int
	QueuePath  string   // the task queue the tasks go to
	Existing   []string // the IDs of the tasks it holds
	PlanFile   string   // the scratch file the planner writes (ORCHESTRATOR_PLAN_FILE)
	Findings   string   // validate's findings on the last output, verbatim; "" on the first round
}

// A PlannerCategory is one category of the test plan, with the tests to map.
type PlannerCategory struct {
	Name  string
	Tests []PlannerTest
}

// A PlannerTest is one test of the plan: its ID, name and priority.
type PlannerTest struct{ ID, Name, Priority string }

// RenderPlanner returns the planner's prompt: [PlannerTemplate] from overrideDir when it is
// there, else the embedded one, executed on in. The same input gives the same bytes; the
// prompt of a retry is the first one with the section of findings added.
func RenderPlanner(in PlannerInput, overrideDir string) (string, error) {
	for _, s := range []string{in.PRDPath, in.PlanPath, in.QueuePath, in.PlanFile} {
		if strings.ContainsAny(s, "\r\n") {
			return "", fmt.Errorf("planner prompt: path %q has a line break", s)
		}
	}
	text, src, err := plannerTemplate(overrideDir)
	if err != nil {
		return "", err
	}
	t, err := template.New(PlannerTemplate).Funcs(funcs).Funcs(template.FuncMap{"join": strings.Join}).Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", src, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, in); err != nil {
		return "", fmt.Errorf("render %s: %w", src, err)
	}
	return b.String(), nil
}

// plannerTemplate returns the planner's template text and where it came from.
func plannerTemplate(overrideDir string) (string, string, error) {
	if overrideDir != "" {
		p := filepath.Join(overrideDir, PlannerTemplate)
		b, err := os.ReadFile(p)
		switch {
		case err == nil:
			return string(b), p, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", "", fmt.Errorf("read prompt override: %w", err)
		}
	}
	b, err := embedded.ReadFile("templates/" + PlannerTemplate)
	return string(b), "embedded " + PlannerTemplate, err
}
