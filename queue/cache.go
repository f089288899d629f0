package queue

import (
	"bytes"
	"slices"
	"sync"
)

// parsed keeps the Docs last parsed whole of a few queue files, the most recently used
// first (a run's task queue and issue queue, mostly): the loop reads the same bytes
// several times an attempt (its gate's input, its landing's look at the task's status, the
// write that records its decision, with the issue queue read between them), and a Doc is
// never changed once it is built. A Doc is found again only for the same path, kind and
// bytes, so a file anyone changed meanwhile is parsed afresh.
var parsed struct {
	sync.Mutex
	docs []parsedDoc
}

type parsedDoc struct {
	path string
	kind Kind
	doc  *Doc
}

// maxParsed bounds the files parsed keeps: a run reads two queues.
const maxParsed = 4

// parseCached is Parse, or ParseOnly when ids is not nil, of src read from path: the Doc
// parsed whole last time from the same path, kind and bytes when there is one (a whole
// Doc serves ParseOnly too). It keeps a whole Doc that parsed without error for the next
// call.
func parseCached(path string, src []byte, kind Kind, ids []string) (*Doc, error) {
	if d := findParsed(path, kind); d != nil && bytes.Equal(d.Src, src) {
		return d, nil
	}
	if ids != nil {
		return ParseOnly(path, src, kind, ids...)
	}
	d, err := Parse(path, src, kind)
	if err == nil {
		parsedDoc{path, kind, d}.keep()
	}
	return d, err
}

// findParsed returns the Doc kept for path and kind, and makes it the most recently used.
func findParsed(path string, kind Kind) *Doc {
	parsed.Lock()
	defer parsed.Unlock()
	i := slices.IndexFunc(parsed.docs, func(q parsedDoc) bool { return q.path == path && q.kind == kind })
	if i < 0 {
		return nil
	}
	q := parsed.docs[i]
	parsed.docs = slices.Insert(slices.Delete(parsed.docs, i, i+1), 0, q)
	return q.doc
}

// keep keeps p first, in place of the Doc of its file, dropping the least recently used
// beyond maxParsed.
func (p parsedDoc) keep() {
	parsed.Lock()
	defer parsed.Unlock()
	parsed.docs = slices.DeleteFunc(parsed.docs, func(q parsedDoc) bool { return q.path == p.path && q.kind == p.kind })
	parsed.docs = slices.Insert(parsed.docs, 0, p)
	if len(parsed.docs) > maxParsed {
		parsed.docs = parsed.docs[:maxParsed]
	}
}
