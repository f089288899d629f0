package queue

import (
	"bytes"
	"sync"
)

// lastParsed is the last queue file Load, LoadOnly or Update parsed whole: the loop reads
// the same bytes several times an attempt (its gate's input, its landing's look at the
// task's status, the write that records its decision), and a Doc is never changed once it
// is built. It is found again only for the same path, kind and bytes, so a file anyone
// changed meanwhile is parsed afresh.
var lastParsed struct {
	sync.Mutex
	path string
	kind Kind
	doc  *Doc
}

// parseCached is Parse, or ParseOnly when ids is not nil, of src read from path: the Doc
// of the last file parsed whole when it is the same file with the same bytes (a whole Doc
// serves ParseOnly too). It keeps a whole Doc that parsed without error for the next call.
func parseCached(path string, src []byte, kind Kind, ids []string) (*Doc, error) {
	c := &lastParsed
	c.Lock()
	if d := c.doc; d != nil && c.path == path && c.kind == kind && bytes.Equal(d.Src, src) {
		c.Unlock()
		return d, nil
	}
	c.Unlock()
	if ids != nil {
		return ParseOnly(path, src, kind, ids...)
	}
	d, err := Parse(path, src, kind)
	if err == nil {
		c.Lock()
		c.path, c.kind, c.doc = path, kind, d
		c.Unlock()
	}
	return d, err
}
