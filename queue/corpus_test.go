package queue

import (
	"os"
	"path/filepath"
	"testing"
)

const corpusDir = "../../shared/corpus/claudestrator"

func TestCorpusParses(t *testing.T) {
	var files []string
	err := filepath.WalkDir(corpusDir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && filepath.Ext(p) == ".md" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Skipf("corpus not available: %v", err)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse(p, src, KindOf(p))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			g, err := parseGoldmark(p, src, KindOf(p))
			if err != nil {
				t.Fatalf("goldmark parse: %v", err)
			}
			if diff := compareDocs(d, g); diff != "" {
				t.Errorf("fast path (used=%v) and goldmark disagree: %s", d.Fast, diff)
			}
			t.Logf("fast=%v records=%d headings=%d tables=%d", d.Fast, len(d.Records), len(d.Headings), len(d.Tables))
		})
	}
}
