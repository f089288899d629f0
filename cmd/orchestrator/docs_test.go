package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/orchestrator/orchestrator/templates"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// repoRoot is the repository's root, seen from this package's folder.
const repoRoot = "../.."

var (
	// specCitation matches a citation of the product specification, which is not in the
	// repository: "SPEC §7.2", "(§8.4)".
	specCitation = regexp.MustCompile(`SPEC|§`)
	// docsPath matches a page of docs/ named in a help text or a file init writes.
	docsPath = regexp.MustCompile(`docs/[A-Za-z0-9_-]+\.md`)
	// mdLink matches the target of a markdown link: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// citationProblems returns what a text shown to users cites that a person cannot read: a
// section of the specification, or a page of docs/ that root does not have.
func citationProblems(text, root string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if specCitation.MatchString(line) {
			out = append(out, "cites the specification, which is not in the repository: "+strings.TrimSpace(line))
		}
	}
	for _, p := range docsPath.FindAllString(text, -1) {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			out = append(out, p+" does not exist")
		}
	}
	return out
}

// helpTexts returns the prose of the help of every command of the tree under c, by
// command path: its Short and Long, and each flag's usage; and its examples apart, since
// an example's paths are the person's (docs/requirements.md), not pages of docs/.
func helpTexts(c *cobra.Command) (prose, examples map[string]string) {
	prose, examples = make(map[string]string), make(map[string]string)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		var b strings.Builder
		b.WriteString(c.Short + "\n" + c.Long + "\n")
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { b.WriteString(f.Usage + "\n") })
		}
		prose[c.CommandPath()] = b.String()
		examples[c.CommandPath()] = c.Example
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
	return prose, examples
}

// TestCitationProblems is the check below turned on texts that cheat: a help text that
// sends the reader to a section of the specification, or to a page docs/ does not have, is
// named; its honest twin, which names a page that exists, is not.
func TestCitationProblems(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"honest: a page that exists", "Run the baseline (docs/gate.md): the passing tests.", nil},
		{"a section of the spec", "Print the failure signature of an error (SPEC §8.1)", []string{"cites the specification, which is not in the repository: Print the failure signature of an error (SPEC §8.1)"}},
		{"a bare section sign", "the same failure a third time still halts it (§8.4)", []string{"cites the specification, which is not in the repository: the same failure a third time still halts it (§8.4)"}},
		{"a page docs/ does not have", "see docs/nosuch.md", []string{"docs/nosuch.md does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := citationProblems(tt.text, repoRoot); !slices.Equal(got, tt.want) {
				t.Errorf("citationProblems(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestHelpCitesWhatTheRepositoryHas checks every help text of every command: none cites
// the specification, and every page of docs/ its prose names exists.
func TestHelpCitesWhatTheRepositoryHas(t *testing.T) {
	prose, examples := helpTexts(newRootCommand(&globalOptions{}))
	if len(prose) < 15 {
		t.Fatalf("found the help of %d commands, want every command's", len(prose))
	}
	for path, text := range prose {
		for _, p := range citationProblems(text, repoRoot) {
			t.Errorf("orchestrator help of %q: %s", path, p)
		}
		if specCitation.MatchString(examples[path]) {
			t.Errorf("orchestrator help of %q: an example cites the specification: %s", path, examples[path])
		}
	}
}

// TestInitFilesCiteWhatTheRepositoryHas checks the files init writes into a person's
// repository the same way: their comments are read by people too.
func TestInitFilesCiteWhatTheRepositoryHas(t *testing.T) {
	err := fs.WalkDir(templates.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(templates.Files(), path)
		if err != nil {
			return err
		}
		for _, p := range citationProblems(string(data), repoRoot) {
			t.Errorf("templates/files/%s: %s", path, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocsLinks checks the README and every page of docs/: no citation of the
// specification, and every relative link reaches a file of the repository and, with a
// #fragment, a heading of that file.
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	if len(pages) < 5 {
		t.Fatalf("found %d pages, want the README and docs/", len(pages))
	}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, page)
		for _, p := range linkProblems(string(data), filepath.Dir(page)) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// TestLinkProblems is the link check turned on pages that cheat: a link to a file the
// repository does not have, to a heading its page does not have, and a citation of the
// specification, each beside an honest link.
func TestLinkProblems(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gate.md"), []byte("# The gate\n\n## The baseline\n\n```\n## Not a heading\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, page string
		want       []string
	}{
		{"honest", "See [the baseline](gate.md#the-baseline), [here](#the-top) and [a site](https://example.com/x.md).\n\n# The top\n", nil},
		{"a missing file", "See [cost](cost.md).\n", []string{"link cost.md: no such file"}},
		{"a missing heading", "See [it](gate.md#the-seal).\n", []string{"link gate.md#the-seal: gate.md has no heading the-seal"}},
		{"a heading in a code block", "See [it](gate.md#not-a-heading).\n", []string{"link gate.md#not-a-heading: gate.md has no heading not-a-heading"}},
		{"the spec", "It halts (SPEC §8.4).\n", []string{"cites the specification, which is not in the repository: It halts (SPEC §8.4)."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := linkProblems(tt.page, dir); !slices.Equal(got, tt.want) {
				t.Errorf("linkProblems = %q, want %q", got, tt.want)
			}
		})
	}
}

// linkProblems returns the citations of the specification in page and its relative links
// that reach no file under dir, or no heading of their file.
func linkProblems(page, dir string) []string {
	var out []string
	for _, line := range strings.Split(page, "\n") {
		if specCitation.MatchString(line) {
			out = append(out, "cites the specification, which is not in the repository: "+strings.TrimSpace(line))
		}
	}
	for _, m := range mdLink.FindAllStringSubmatch(page, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		text := page
		if file != "" {
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				out = append(out, "link "+target+": no such file")
				continue
			}
			text = string(data)
		}
		if frag != "" && !slices.Contains(headingSlugs(text), frag) {
			name := file
			if name == "" {
				name = "this page"
			}
			out = append(out, "link "+target+": "+name+" has no heading "+frag)
		}
	}
	return out
}

// headingSlugs returns the anchors GitHub makes of the headings of a markdown text: lower
// case, punctuation dropped, spaces as hyphens. Lines inside code fences are not headings.
func headingSlugs(text string) []string {
	var slugs []string
	fence := "" // the opening fence of the code block the line is in
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimLeft(line, " ")
		if run := fenceRun(t); run != "" {
			switch {
			case fence == "":
				fence = run
			case strings.HasPrefix(run, fence) && strings.TrimSpace(t) == run:
				fence = ""
			}
			continue
		}
		if fence != "" || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(title, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slugs = append(slugs, b.String())
	}
	return slugs
}

// fenceRun returns the run of backticks or tildes a code fence line begins with (three or
// more), or "".
func fenceRun(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}
