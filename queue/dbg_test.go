package queue

import (
	"os"
	"testing"
)

func TestDbg(t *testing.T) {
	src, _ := os.ReadFile(os.Getenv("DBG"))
	d, b := newDoc("q.md", src, Tasks)
	ok := scanFast(src, b)
	b.finish()
	g, _ := parseGoldmark("q.md", src, Tasks)
	t.Logf("fast=%v\nfast: %+v\n%+v\ngm: %+v\n%+v", ok, d.Headings, d.Tables, g.Headings, g.Tables)
}
