package prompts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repo writes files (path → content) under a new temporary root and returns the root.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// input returns a minimal valid input for role.
func input(role string) Input {
	return Input{
		Role: role, TaskID: "TASK-001", Title: "Add two numbers",
		Fields:      []Field{{"Status", "in_progress"}, {"Category", "backend"}},
		Body:        "**Objective:** add.\n",
		TestCommand: "go test ./...",
		Attempt:     1,
	}
}

func TestRoleFor(t *testing.T) {
	tests := []struct{ kind, role, template string }{
		{"TEST", "test-writer", "test-writer.md"},
		{"VERIFY", "verifier", "test-verifier.md"},
		{"BUILD", "implementer", "implementer.md"},
		{"QA", "qa", "qa.md"},
		{"build", "implementer", "implementer.md"},
		{"DEPLOY", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			role := RoleFor(tt.kind)
			if role != tt.role {
				t.Errorf("RoleFor(%q) = %q, want %q", tt.kind, role, tt.role)
			}
			if got := TemplateName(role); got != tt.template {
				t.Errorf("TemplateName(%q) = %q, want %q", role, got, tt.template)
			}
		})
	}
}

func TestTemplateName(t *testing.T) {
	want := map[string]string{
		"test-writer": "test-writer.md",
		"verifier":    "test-verifier.md",
		"implementer": "implementer.md",
		"refactorer":  "refactorer.md",
		"qa":          "qa.md",
		"reviewer":    "reviewer.md",
		"judge":       "judge.md",
	}
	if len(Roles()) != len(want) {
		t.Errorf("Roles() = %v, want the %d roles of SPEC §10.3", Roles(), len(want))
	}
	for _, r := range Roles() {
		if TemplateName(r) != want[r] {
			t.Errorf("TemplateName(%q) = %q, want %q", r, TemplateName(r), want[r])
		}
	}
	for _, bad := range []string{"", "test-verifier", "Implementer", "planner"} {
		if got := TemplateName(bad); got != "" {
			t.Errorf("TemplateName(%q) = %q, want \"\"", bad, got)
		}
	}
}

// TestEveryRoleRenders checks that each role's prompt names the role, the task, both
// markers and the whole tdd-result contract, including the stuck states.
func TestEveryRoleRenders(t *testing.T) {
	for _, role := range Roles() {
		t.Run(role, func(t *testing.T) {
			got, err := Render(input(role), "")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"## Task TASK-001: Add two numbers\n",
				"| Category | backend |\n",
				"**Objective:** add.\n",
				"```sh\ngo test ./...\n```\n",
				"This is attempt 1.",
				"`$ORCHESTRATOR_MARKER_DIR/TASK-001.done`",
				"`$ORCHESTRATOR_MARKER_DIR/TASK-001.failed`",
				"\n```tdd-result\nrole: " + role + "\nstatus: ok\nfiles:\n",
				"state: issue", "state: dependency", "message:",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("prompt lacks %q", want)
				}
			}
			block := resultBlock(t, got)
			for _, key := range []string{"role", "status", "files", "command", "output_excerpt"} {
				if !strings.Contains(block, "\n"+key+":") && !strings.HasPrefix(block, key+":") {
					t.Errorf("example result block lacks required key %q:\n%s", key, block)
				}
			}
			if strings.Count(got, "```tdd-result") != 1 {
				t.Errorf("prompt shows %d tdd-result blocks, want 1", strings.Count(got, "```tdd-result"))
			}
			if strings.Contains(got, "## Output of the last failed check") {
				t.Error("failure section without gate output")
			}
			if !strings.HasSuffix(got, "\n") || strings.HasSuffix(got, "\n\n") {
				t.Error("prompt does not end with exactly one newline")
			}
		})
	}
}

// resultBlock returns the body of the example tdd-result block in prompt.
func resultBlock(t *testing.T, prompt string) string {
	t.Helper()
	_, rest, ok := strings.Cut(prompt, "```tdd-result\n")
	if !ok {
		t.Fatal("no tdd-result block")
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("tdd-result block not closed")
	}
	return block
}

// TestTemplatesAreShort keeps each role template to about a page.
func TestTemplatesAreShort(t *testing.T) {
	for _, role := range Roles() {
		b, err := embedded.ReadFile("templates/" + TemplateName(role))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > 60 {
			t.Errorf("%s has %d lines; keep a template to a page", TemplateName(role), n)
		}
	}
}

func TestOverride(t *testing.T) {
	dir := t.TempDir()
	override := "Custom {{.Role}} prompt for {{.TaskID}} ({{.Title}}).\n{{template \"finish\" .}}\n"
	if err := os.WriteFile(filepath.Join(dir, "test-verifier.md"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err := Render(input("verifier"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "Custom verifier prompt for TASK-001 (Add two numbers).\nWhen you have finished") {
		t.Errorf("override not used:\n%s", got)
	}
	if strings.Contains(got, "You are the test verifier") {
		t.Error("embedded template text in an overridden prompt")
	}

	// Other roles keep their embedded template.
	embedded, err := Render(input("implementer"), "")
	if err != nil {
		t.Fatal(err)
	}
	withDir, err := Render(input("implementer"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if withDir != embedded {
		t.Error("a role without an override file did not get the embedded template")
	}
}

// TestOverrideRedefinesBlock checks that an override may replace a shared block.
func TestOverrideRedefinesBlock(t *testing.T) {
	dir := t.TempDir()
	override := `{{define "finish"}}Write the marker and stop.{{end}}{{template "context" .}}` + "\n\n" + `{{template "finish" .}}`
	if err := os.WriteFile(filepath.Join(dir, "qa.md"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Render(input("qa"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "## Task TASK-001") || !strings.HasSuffix(got, "\n\nWrite the marker and stop.") {
		t.Errorf("override with its own finish block:\n%s", got)
	}
}

func TestBrokenOverride(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "judge.md")
	if err := os.WriteFile(path, []byte("{{.TaskID"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Render(input("judge"), dir)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("broken override: err = %v, want an error naming %s", err, path)
	}

	if err := os.WriteFile(path, []byte("{{.NoSuchField}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Render(input("judge"), dir)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("override using an unknown field: err = %v, want an error naming %s", err, path)
	}
}

// TestNotOnAllowlist is the refusal SPEC §10.2 requires to be tested: an implementation file
// that exists in the repository but is not on the allowlist never reaches the prompt.
func TestNotOnAllowlist(t *testing.T) {
	root := repo(t, map[string]string{
		"calc/calc_test.go": "package calc // the failing test\n",
		"calc/calc.go":      "package calc // SECRET IMPLEMENTATION\n",
	})
	in := input("test-writer")
	in.Root = root
	in.Allowlist = []string{"calc/calc_test.go"}
	in.Include = []string{"calc/calc_test.go", "calc/calc.go"}

	got, err := Render(in, "")
	var na *NotAllowedError
	if !errors.As(err, &na) {
		t.Fatalf("err = %v, want a *NotAllowedError", err)
	}
	if na.Path != "calc/calc.go" {
		t.Errorf("NotAllowedError.Path = %q, want calc/calc.go", na.Path)
	}
	if !strings.Contains(err.Error(), `"calc/calc.go"`) || !strings.Contains(err.Error(), "allowlist") {
		t.Errorf("error %q does not name the path and the allowlist", err)
	}
	if got != "" {
		t.Errorf("a refused render returned a prompt:\n%s", got)
	}

	// The same file passes once it is on the allowlist: the refusal came from the list.
	in.Allowlist = append(in.Allowlist, "calc/calc.go")
	got, err = Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "SECRET IMPLEMENTATION") {
		t.Error("allowed file missing from the prompt")
	}
}

// TestAllowlistIsExact checks that an include matches an allowlist entry only as written.
func TestAllowlistIsExact(t *testing.T) {
	root := repo(t, map[string]string{"a/x_test.go": "package a\n"})
	for _, inc := range []string{"./a/x_test.go", "a//x_test.go", "A/x_test.go", "a"} {
		in := input("implementer")
		in.Root = root
		in.Allowlist = []string{"a/x_test.go"}
		in.Include = []string{inc}
		_, err := Render(in, "")
		var na *NotAllowedError
		if !errors.As(err, &na) || na.Path != inc {
			t.Errorf("include %q: err = %v, want *NotAllowedError for it", inc, err)
		}
	}
}

func TestPathEscapes(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OUTSIDE SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := repo(t, map[string]string{"inside.txt": "inside\n", "dir/file.txt": "in dir\n"})
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	link(filepath.Join(outside, "secret.txt"), "abs-link.txt")
	link(filepath.Join("..", filepath.Base(outside), "secret.txt"), "rel-link.txt")
	link(outside, "outdir")
	link("inside.txt", "ok-link.txt")
	link("dir", "ok-dir")

	refused := []string{
		filepath.Join(outside, "secret.txt"), // absolute
		"/etc/passwd",
		"../" + filepath.Base(outside) + "/secret.txt",
		"dir/../../" + filepath.Base(outside) + "/secret.txt",
		"..",
		"abs-link.txt",
		"rel-link.txt",
		"outdir/secret.txt",
		"",
	}
	for _, p := range refused {
		t.Run("refuse "+p, func(t *testing.T) {
			in := input("implementer")
			in.Root = root
			in.Allowlist = []string{p} // on the allowlist, and refused all the same
			in.Include = []string{p}
			got, err := Render(in, "")
			var na *NotAllowedError
			if !errors.As(err, &na) || na.Path != p {
				t.Fatalf("err = %v, want *NotAllowedError for %q", err, p)
			}
			if !strings.Contains(err.Error(), `"`+p+`"`) {
				t.Errorf("error %q does not name the path", err)
			}
			if strings.Contains(got, "OUTSIDE SECRET") {
				t.Error("content from outside the root in the prompt")
			}
		})
	}

	// Symlinks that stay inside the root are followed.
	in := input("implementer")
	in.Root = root
	in.Allowlist = []string{"ok-link.txt", "ok-dir/file.txt"}
	in.Include = in.Allowlist
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "### ok-link.txt\n\n```\ninside\n```") || !strings.Contains(got, "### ok-dir/file.txt\n\n```\nin dir\n```") {
		t.Errorf("symlinks inside the root not followed:\n%s", got)
	}
}

// TestRootSymlink checks that a root reached through a symlink works, and that its resolved
// location, not the link's parent, bounds the includes.
func TestRootSymlink(t *testing.T) {
	realDir := repo(t, map[string]string{"a.txt": "A\n"})
	linkRoot := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(realDir, linkRoot); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	in := input("implementer")
	in.Root = linkRoot
	in.Allowlist = []string{"a.txt"}
	in.Include = []string{"a.txt"}
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "```\nA\n```") {
		t.Errorf("file under a symlinked root missing:\n%s", got)
	}
}

func TestIncludeErrors(t *testing.T) {
	root := repo(t, map[string]string{"bin.dat": "\xff\xfe\x00", "dir/x.txt": "x\n"})
	tests := []struct {
		name, path, root, want string
	}{
		{"missing file", "nope.txt", root, "nope.txt"},
		{"directory", "dir", root, "not a regular file"},
		{"binary", "bin.dat", root, "not UTF-8"},
		{"no root", "dir/x.txt", "", "no repository root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input("implementer")
			in.Root = tt.root
			in.Allowlist = []string{tt.path}
			in.Include = []string{tt.path}
			_, err := Render(in, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			var na *NotAllowedError
			if errors.As(err, &na) {
				t.Errorf("err = %v is a refusal; want a read error", err)
			}
		})
	}
}

// TestOnlyIncludedFiles checks isolation from the other side: files of the root that are not
// included, and allowlisted files that are not included, stay out of the prompt.
func TestOnlyIncludedFiles(t *testing.T) {
	root := repo(t, map[string]string{
		"calc/calc_test.go":    "TEST CONTENT\n",
		"calc/calc.go":         "IMPLEMENTATION CONTENT\n",
		"specs/frs/FR-CALC.md": "OTHER ACS\n",
	})
	in := input("implementer")
	in.Root = root
	in.Allowlist = []string{"calc/calc_test.go", "specs/frs/FR-CALC.md"}
	in.Include = []string{"calc/calc_test.go"}
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "TEST CONTENT") {
		t.Error("included file missing")
	}
	for _, leak := range []string{"IMPLEMENTATION CONTENT", "OTHER ACS", "FR-CALC.md", root} {
		if strings.Contains(got, leak) {
			t.Errorf("prompt holds %q, which it was not given", leak)
		}
	}
}

func TestIncludeOrderKept(t *testing.T) {
	root := repo(t, map[string]string{"b.txt": "B\n", "a.txt": "A\n", "c.txt": "C\n"})
	in := input("refactorer")
	in.Root = root
	in.Allowlist = []string{"a.txt", "b.txt", "c.txt"}
	in.Include = []string{"c.txt", "a.txt", "b.txt"}
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	c, a, b := strings.Index(got, "### c.txt"), strings.Index(got, "### a.txt"), strings.Index(got, "### b.txt")
	if c < 0 || a < 0 || b < 0 || !(c < a && a < b) {
		t.Errorf("files not in the given order c, a, b: at %d, %d, %d", c, a, b)
	}
	f1, f2 := strings.Index(got, "| Status |"), strings.Index(got, "| Category |")
	if !(f1 >= 0 && f1 < f2) {
		t.Error("fields not in the given order")
	}
}

func TestLastGateOutputVerbatim(t *testing.T) {
	outputs := map[string]string{
		"plain":            "--- FAIL: TestAdd (0.00s)\n    calc_test.go:7: got 6, want 5\nFAIL\n",
		"no final newline": "./calc.go:3:2: undefined: Sum",
		"fences inside":    "```\nnot a fence end\n````\n  ``` indented\n",
		"ansi and spaces":  "\x1b[31mFAIL\x1b[0m   \t\n\n\n  trailing   \n",
		"crlf":             "line one\r\nline two\r\n",
		"leading blanks":   "\n\n   indented first line\n",
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			in := input("implementer")
			in.LastGateOutput = out
			in.Attempt = 2
			got, err := Render(in, "")
			if err != nil {
				t.Fatal(err)
			}
			_, section, ok := strings.Cut(got, "## Output of the last failed check\n")
			if !ok {
				t.Fatal("no failure section")
			}
			// The block opens with a fence longer than any backtick run in the output, holds
			// the output byte for byte, and closes with the same fence.
			_, section, _ = strings.Cut(section, "\n\n")
			fence, rest, _ := strings.Cut(section, "\n")
			if strings.Trim(fence, "`") != "" || len(fence) < 3 {
				t.Fatalf("block does not open with a bare fence: %q", fence)
			}
			body := out
			if !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			if !strings.HasPrefix(rest, body+fence+"\n") {
				t.Errorf("gate output not verbatim in its block:\ngot  %q\nwant %q", rest[:min(len(rest), len(body)+len(fence)+1)], body+fence+"\n")
			}
			if strings.Contains(body, fence) {
				t.Errorf("fence %q occurs in the output and could close the block early", fence)
			}
		})
	}
}

func TestNoGateOutputNoFailureSection(t *testing.T) {
	in := input("implementer")
	in.Attempt = 3
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Output of the last failed check", "did not pass the orchestrator's check"} {
		if strings.Contains(got, s) {
			t.Errorf("prompt without gate output holds %q", s)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, tc := range goldenCases {
		in := tc.in
		in.Root = goldenRoot
		first, err := Render(in, "")
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			again, err := Render(in, "")
			if err != nil {
				t.Fatal(err)
			}
			if again != first {
				t.Fatalf("%s: two renders of the same input differ", tc.name)
			}
		}
	}
}

func TestRenderConcurrent(t *testing.T) {
	in := goldenCases[0].in
	in.Root = goldenRoot
	want, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := Render(in, "")
			if err == nil && got != want {
				err = errors.New("concurrent render differs")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Input)
		want string
	}{
		{"unknown role", func(in *Input) { in.Role = "planner" }, `unknown role "planner"`},
		{"template name as role", func(in *Input) { in.Role = "test-verifier" }, "unknown role"},
		{"empty task ID", func(in *Input) { in.TaskID = "" }, "not a record ID"},
		{"task ID with a path", func(in *Input) { in.TaskID = "TASK-1/../x" }, "not a record ID"},
		{"title with newline", func(in *Input) { in.Title = "a\nb" }, "title"},
		{"field with newline", func(in *Input) { in.Fields = []Field{{"Notes", "a\nb"}} }, `field "Notes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input("implementer")
			tt.edit(&in)
			got, err := Render(in, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			if got != "" {
				t.Error("prompt returned with an error")
			}
		})
	}
}

func TestRecordRendering(t *testing.T) {
	in := input("implementer")
	in.Title = ""
	in.Attempt = 0
	in.TestCommand = ""
	in.Fields = []Field{{"Notes", `a | b`}, {"Empty", ""}}
	in.Body = "\n\n  \n**Objective:** keep `this`.\n\n- AC-1: one\n\n\n"
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Task TASK-001\n\n| Field | Value |\n",
		"| Notes | a \\| b |\n| Empty |  |\n\n**Objective:** keep `this`.\n\n- AC-1: one\n\n## Test command\n",
		"No test command was given",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "This is attempt") {
		t.Error("attempt 0 shown")
	}
}

func TestFenced(t *testing.T) {
	tests := []struct{ info, in, want string }{
		{"", "", "```\n```"},
		{"sh", "go test", "```sh\ngo test\n```"},
		{"", "a\n", "```\na\n```"},
		{"", "x ``` y", "````\nx ``` y\n````"},
		{"", "`````", "``````\n`````\n``````"},
	}
	for _, tt := range tests {
		if got := fenced(tt.info, tt.in); got != tt.want {
			t.Errorf("fenced(%q, %q) = %q, want %q", tt.info, tt.in, got, tt.want)
		}
	}
}
