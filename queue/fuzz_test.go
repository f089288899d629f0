package queue

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds adds the corpus files, the golden inputs and a small generated queue.
func fuzzSeeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(corpusDir, "*", "*.md"))
	more, _ := filepath.Glob("testdata/golden/*/input.md")
	for _, p := range append(paths, more...) {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add(genQueue(f, 3))
	for _, s := range []string{
		"### TASK-1\n| Field | Value |\n|---|---|\n| Status | pending |\n",
		"- a\n| Field | Value |\n|---|---|\n",
		"## TASK-1\n\n```\n### TASK-2\n```\n| Field | Value |\n|--|--|\n| a | b \\| c |",
		"<!-- x\n### TASK-3\n-->\n### TASK-4\r\n\r\n|Field|Value|\r\n|-|-|\r\n|Status|done|\r\n",
		"1. x\n   2. y\nlazy\n# h\n    code\n\n* * *\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzParse checks that parsing never panics and that every error names a line.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := Parse("q.md", src, Tasks)
		if errs, ok := err.(ParseErrors); ok {
			for _, e := range errs {
				if e.Line < 1 {
					t.Fatalf("error without a line: %v", e)
				}
			}
		}
	})
}

// FuzzFastAgreesWithGoldmark checks that whenever the line scanner reads a file itself, it
// finds the same headings, tables, cells, records and fields as goldmark.
func FuzzFastAgreesWithGoldmark(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		d, b := newDoc("q.md", src, Tasks, nil)
		if !scanFast(src, b) {
			return
		}
		b.finish()
		g, _ := parseGoldmark("q.md", src, Tasks)
		if diff := compareDocs(d, g); diff != "" {
			t.Fatalf("fast path and goldmark disagree on %q:\n%s", src, diff)
		}
	})
}

// FuzzFallbackAgreesWithGoldmark checks the goldmark fallback of Parse, which finds tables in
// goldmark's paragraphs itself, against goldmark with its table extension, on every input.
func FuzzFallbackAgreesWithGoldmark(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		d, b := newDoc("q.md", src, Tasks, nil)
		b.presize(src)
		scanGoldmark(src, b)
		b.finish()
		g, _ := parseGoldmark("q.md", src, Tasks)
		if diff := compareDocs(d, g); diff != "" {
			t.Fatalf("fallback and goldmark's table extension disagree on %q:\n%s", src, diff)
		}
	})
}
