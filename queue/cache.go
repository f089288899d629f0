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
	// preloading holds a channel for each file a Preload parses now, closed when it is
	// done.
	preloading map[fileKind]chan struct{}
	// parses counts the whole parses parseCached and Preload made, and waits the reads
	// that waited for a Preload, for the tests.
	parses, waits int
}

// Tests set this to hold a Preload before it reads the file.
var preloadHold func()

type fileKind struct {
	path string
	kind Kind
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
	// A Preload of the file under way most likely parses these very bytes: wait for it
	// rather than parse them a second time beside it.
	if waitPreload(path, kind) {
		if d := findParsed(path, kind); d != nil && bytes.Equal(d.Src, src) {
			return d, nil
		}
	}
	if ids != nil {
		return ParseOnly(path, src, kind, ids...)
	}
	return parseAndKeep(path, src, kind)
}

// parseAndKeep parses src, read from path, and keeps the Doc if it parsed.
func parseAndKeep(path string, src []byte, kind Kind) (*Doc, error) {
	d, err := Parse(path, src, kind)
	parsed.Lock()
	parsed.parses++
	parsed.Unlock()
	if err == nil {
		parsedDoc{path, kind, d}.keep()
	}
	return d, err
}

// Preload reads and parses the queue file at path beside the caller, and keeps its Doc for
// the next read of the same bytes; a read that comes while it runs waits for it rather than
// parse the file a second time. The loop preloads the task queue after each of its own
// writes, so that the next attempt's first read of the queue, on the path from its agent's
// marker to its status, finds it parsed. A file that does not parse is left to the read
// that meets it.
func Preload(path string) {
	key := fileKind{path, KindOf(path)}
	parsed.Lock()
	if _, busy := parsed.preloading[key]; busy {
		parsed.Unlock()
		return
	}
	if parsed.preloading == nil {
		parsed.preloading = map[fileKind]chan struct{}{}
	}
	done := make(chan struct{})
	parsed.preloading[key] = done
	parsed.Unlock()
	hold := preloadHold
	go func() {
		defer func() {
			parsed.Lock()
			delete(parsed.preloading, key)
			parsed.Unlock()
			close(done)
		}()
		if hold != nil {
			hold()
		}
		src, err := ReadFile(path)
		if err != nil {
			return
		}
		if d := findParsed(path, key.kind); d != nil && bytes.Equal(d.Src, src) {
			return
		}
		_, _ = parseAndKeep(path, src, key.kind)
	}()
}

// waitPreload waits for the Preload of the file under way, if there is one, and reports
// whether there was.
func waitPreload(path string, kind Kind) bool {
	parsed.Lock()
	done, ok := parsed.preloading[fileKind{path, kind}]
	if ok {
		parsed.waits++
	}
	parsed.Unlock()
	if ok {
		<-done
	}
	return ok
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
