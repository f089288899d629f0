package queue

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParallelParseAgrees checks the two-halves path of the fast scanner on files large
// enough to be split: a generated queue with awkward blocks mixed in, including one where the
// middle of the file falls inside a code fence (so that the split heading is not a heading
// and the first half must scan on). Each must parse as goldmark reads it.
func TestParallelParseAgrees(t *testing.T) {
	base := string(genQueue(t, 1500))
	awkward := "\n<!-- a comment\n### TASK-99001\n-->\n\n- a list\n  - nested\n| not | a table |\n\n```\n### TASK-99002\n| Field | Value |\n```\n\n"
	tests := map[string]string{
		"generated": base,
		"mixed":     strings.ReplaceAll(base, "**Acceptance Criteria:**", awkward+"**Acceptance Criteria:**"),
	}
	// A fence opened before the middle and closed after it: the headings between are code.
	mid := len(base) / 2
	open := strings.LastIndex(base[:mid], "\n### ")
	tests["fence across the middle"] = base[:open] + "\n\n```text\n" + base[open:mid+20000] + "\n```\n" + base[mid+20000:]
	src, err := os.ReadFile(filepath.Join(corpusDir, "prompts", "testing_agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests["corpus repeated"] = strings.Repeat(string(src), 20)
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			if len(src) < parallelMin {
				t.Fatalf("input of %d bytes is too small to be split", len(src))
			}
			d, b := newDoc("q.md", []byte(src), Tasks, nil)
			fast := scanFast([]byte(src), b)
			b.finish()
			g, _ := parseGoldmark("q.md", []byte(src), Tasks)
			if !fast {
				// The fast path gave up: Parse must then be goldmark's reading.
				p, _ := Parse("q.md", []byte(src), Tasks)
				if p.Fast {
					t.Fatal("Parse says the fast path read a file the fast path gave up on")
				}
				if diff := compareDocs(p, g); diff != "" {
					t.Fatalf("Parse and goldmark disagree: %s", diff)
				}
				return
			}
			if diff := compareDocs(d, g); diff != "" {
				t.Fatalf("parallel fast path and goldmark disagree: %s", diff)
			}
			if name == "fence across the middle" && bytes.Count([]byte(src), []byte("\n### TASK-")) == len(d.Records) {
				t.Errorf("headings inside the fence were read as records")
			}
		})
	}
}
