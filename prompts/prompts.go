package prompts

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/orchestrator/orchestrator/queue"
)

//go:embed templates/*.md templates/common.tmpl
var embedded embed.FS

// commonFile holds the blocks the role templates share.
const commonFile = "common.tmpl"

// roles lists the role names in the order of the loop, with their template files.
var roles = []struct{ name, file string }{
	{"test-writer", "test-writer.md"},
	{"verifier", "test-verifier.md"},
	{"implementer", "implementer.md"},
	{"refactorer", "refactorer.md"},
	{"qa", "qa.md"},
	{"reviewer", "reviewer.md"},
	{"judge", "judge.md"},
}

// Roles returns the role names, as they appear in a tdd-result block's role line, in the
// order of the loop.
func Roles() []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = r.name
	}
	return out
}

// TemplateName returns the file name of role's template ("verifier" → "test-verifier.md"),
// which is also the name of its override in .orchestrator/prompts/, or "" for an unknown role.
func TemplateName(role string) string {
	for _, r := range roles {
		if r.name == role {
			return r.file
		}
	}
	return ""
}

// RoleFor returns the role that runs a task of the given kind (SPEC §3.4): "TEST" →
// "test-writer", "VERIFY" → "verifier", "BUILD" → "implementer", "QA" → "qa". The kind is
// matched case-insensitively, as [queue.TaskKind.String] spells it; an unknown kind gives "".
func RoleFor(kind string) string {
	switch strings.ToUpper(strings.TrimSpace(kind)) {
	case "TEST":
		return "test-writer"
	case "VERIFY":
		return "verifier"
	case "BUILD":
		return "implementer"
	case "QA":
		return "qa"
	}
	return ""
}

// A Field is one field of the task record, as written in its field table.
type Field struct{ Name, Value string }

// A File is an included file: its repo-relative path, as the caller gave it, and its content.
type File struct {
	Path    string
	Content string
}

// Input is everything a prompt may be built from (SPEC §10.2). The caller chooses what goes
// in; Render adds nothing else.
type Input struct {
	Role   string  // a name from [Roles], e.g. "implementer"
	TaskID string  // the record's ID; it names the completion marker
	Title  string  // the record heading's text after the ID
	Fields []Field // the record's fields, in file order
	Body   string  // the record's prose: its text other than the heading and field tables

	// Allowlist holds the repo-relative, slash-separated paths that may be included: the
	// previous phase's hand-off manifest. Include names the files to include, in the order
	// they are to appear; each must be on Allowlist exactly as written there.
	Allowlist []string
	Include   []string
	Root      string // the repository root that included files are read from

	LastGateOutput string // raw output of the last failed gate, "" if none
	TestCommand    string
	Attempt        int // 1 for the first attempt; 0 or less leaves the attempt out

	// Excerpts are parts of allowlisted files that the caller cut out (the tests of one
	// acceptance criterion, SPEC §9): each one's Path must be on Allowlist like an
	// included file's. They follow the included files.
	Excerpts []Excerpt
	// RedOutput is the raw output of the tests at RED that the prompt is about ("" if none).
	RedOutput string
	// Evidence is what a reviewer or a judge examines (SPEC §11.2): the change, its tests,
	// their results, the pre-checks, the reviewer's notes; each part shown fenced under its
	// title.
	Evidence []Evidence
	// Feedback is the judge's reasons for rejecting the previous attempt, given to the next
	// implementer only under retry_feedback: review ("" otherwise).
	Feedback string
}

// An Evidence is one titled part of what a reviewer or a judge examines.
type Evidence struct {
	Title, Content string
}

// An Excerpt is a part of a file: Name says which (e.g. the tests it holds).
type Excerpt struct {
	Path, Name, Content string
}

// Data is what a template sees: the task and the included files, and nothing else.
type Data struct {
	Role           string
	TaskID         string
	Title          string
	Fields         []Field
	Body           string
	Files          []File
	LastGateOutput string
	TestCommand    string
	Attempt        int
	RedOutput      string
	Evidence       []Evidence
	Feedback       string
}

// A NotAllowedError reports a file that a prompt may not include: one that is not on the
// allowlist, or whose path leaves the repository root.
type NotAllowedError struct {
	Path   string // the path as the caller gave it
	Reason string // why it was refused, e.g. "not on the allowlist"
}

func (e *NotAllowedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("include %q: not allowed", e.Path)
	}
	return fmt.Sprintf("include %q: %s", e.Path, e.Reason)
}

// Render returns the prompt for in: the role's template, from overrideDir when a file named
// [TemplateName](in.Role) is there and embedded otherwise, executed on in's task and files.
// Every file in in.Include is checked before anything is read; one that is not on
// in.Allowlist, or that leaves in.Root, is refused with a [*NotAllowedError] and no prompt.
// No value goes in longer than [MaxValue] bytes: a longer one is cut, with a note
// "[... N bytes cut]" in its place (the last gate output keeps its end, the others their
// beginning). The result depends on nothing but in, the files and the template, so the same
// input gives the same bytes. overrideDir may be "", for the embedded templates only.
func Render(in Input, overrideDir string) (string, error) {
	name := TemplateName(in.Role)
	if name == "" {
		return "", fmt.Errorf("unknown role %q (want one of %s)", in.Role, strings.Join(Roles(), ", "))
	}
	if !queue.ValidID(in.TaskID) {
		return "", fmt.Errorf("task ID %q is not a record ID", in.TaskID)
	}
	if strings.ContainsAny(in.Title, "\r\n") {
		return "", fmt.Errorf("%s: title has a line break", in.TaskID)
	}
	for _, f := range in.Fields {
		if strings.ContainsAny(f.Name+f.Value, "\r\n") {
			return "", fmt.Errorf("%s: field %q has a line break", in.TaskID, f.Name)
		}
	}
	files, err := readFiles(in)
	if err != nil {
		return "", err
	}
	excerpts, err := excerptFiles(in)
	if err != nil {
		return "", err
	}
	files = append(files, excerpts...)
	in = bound(in)
	t, src, err := load(name, overrideDir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = t.Execute(&b, Data{
		Role:           in.Role,
		TaskID:         in.TaskID,
		Title:          in.Title,
		Fields:         in.Fields,
		Body:           in.Body,
		Files:          files,
		LastGateOutput: in.LastGateOutput,
		TestCommand:    in.TestCommand,
		Attempt:        in.Attempt,
		RedOutput:      in.RedOutput,
		Evidence:       in.Evidence,
		Feedback:       in.Feedback,
	})
	if err != nil {
		return "", fmt.Errorf("render %s: %w", src, err)
	}
	return b.String(), nil
}

// load parses the common blocks and then the role's template, so that an override may
// redefine a common block. It returns the template and where it came from, for errors.
func load(name, overrideDir string) (*template.Template, string, error) {
	common, err := embedded.ReadFile("templates/" + commonFile)
	if err != nil {
		return nil, "", err // the embedded tree is fixed at build time
	}
	src := "embedded " + name
	text, err := embedded.ReadFile("templates/" + name)
	if err != nil {
		return nil, "", err
	}
	if overrideDir != "" {
		p := filepath.Join(overrideDir, name)
		b, err := os.ReadFile(p)
		switch {
		case err == nil:
			src, text = p, b
		case !errors.Is(err, fs.ErrNotExist):
			return nil, "", fmt.Errorf("read prompt override: %w", err)
		}
	}
	t := template.New(name).Funcs(funcs)
	if _, err := t.New(commonFile).Parse(string(common)); err != nil {
		return nil, "", fmt.Errorf("parse embedded %s: %w", commonFile, err)
	}
	if _, err := t.Parse(string(text)); err != nil {
		return nil, "", fmt.Errorf("parse %s: %w", src, err)
	}
	return t, src, nil
}

// funcs are the helpers templates may call.
var funcs = template.FuncMap{
	"fenced": fenced,
	"cell":   queue.EscapeCell,
	"body":   trimBody,
}

// fenced returns s as a fenced code block with the given info string, verbatim: the fence is
// longer than any run of backticks in s, so nothing in s can close it, and a final newline is
// added only when s lacks one. The result ends with the closing fence, without a newline.
func fenced(info, s string) string {
	longest := queue.LongestBacktickRun(s)
	fence := strings.Repeat("`", max(3, longest+1))
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return fence + info + "\n" + s + fence
}

// trimBody drops the blank lines before a record's prose and the white space after it, and
// keeps everything in between as written.
func trimBody(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for s != "" {
		line, rest, found := strings.Cut(s, "\n")
		if strings.TrimSpace(line) != "" || !found {
			break
		}
		s = rest
	}
	return s
}

// excerptFiles checks that every excerpt comes from a file on the allowlist, and returns
// them as files named "path (name)".
func excerptFiles(in Input) ([]File, error) {
	if len(in.Excerpts) == 0 {
		return nil, nil
	}
	allowed := make(map[string]bool, len(in.Allowlist))
	for _, p := range in.Allowlist {
		allowed[p] = true
	}
	out := make([]File, 0, len(in.Excerpts))
	for _, e := range in.Excerpts {
		if err := checkPath(e.Path, allowed); err != nil {
			return nil, err
		}
		name := e.Path
		if e.Name != "" {
			name += " (" + e.Name + ")"
		}
		out = append(out, File{Path: name, Content: head(e.Content, "\n")})
	}
	return out, nil
}
