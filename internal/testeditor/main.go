// Command testeditor plays a person with a fast editor for the tests of safe writes (SPEC
// §4.3): a real process that keeps a queue file open in a buffer and saves it the way
// editors do, over and over, while orchestrator processes write to it.
//
//	testeditor -file PATH -ids TASK-5,TASK-6 [-field Notes] [-every 10ms] [-poll 1ms] [-for 4s]
//
// Like an editor that reloads a file changed on disk, it looks at the file every -poll and
// reads it into its buffer when it changed. Every -every it saves: it changes one cell of
// the buffer (the field of the next record of -ids in turn, to a new value e1, e2, ...),
// writes the buffer to a temp file in the same folder and renames it over the file. It takes
// no lock and does not look before it renames: a blind save, as most editors make.
//
// Only this process writes those cells, so the file must always hold the last value it saved
// in each of them. A version without one was published by someone who computed it from bytes
// older than our save. When the buffer holds such a version at a save, the save makes the
// loss permanent: the person's edit is gone. It prints
//
//	lost ID: have "X", want "Y"
//
// once for each edit lost, and "stale ID: ..." for each version it read that lacked one of
// its values (a moment's stale version, read again before a save, loses nothing). Every
// version read must also parse as a task queue (a reader never sees a half-written file). At
// the end it prints "final ID VALUE" for each cell and "saves N", and exits 1 if it lost an
// edit, 2 on any other error, 0 otherwise.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/queue"
)

func main() {
	file := flag.String("file", "", "the queue file to edit")
	idList := flag.String("ids", "", "comma-separated records whose cell is edited, in turn")
	field := flag.String("field", "Notes", "the field edited")
	every := flag.Duration("every", 10*time.Millisecond, "time between saves")
	poll := flag.Duration("poll", time.Millisecond, "time between looks at the file")
	total := flag.Duration("for", 4*time.Second, "how long to keep saving")
	flag.Parse()
	if *file == "" || *idList == "" {
		fmt.Fprintln(os.Stderr, "usage: testeditor -file PATH -ids ID,ID [-field F] [-every D] [-poll D] [-for D]")
		os.Exit(2)
	}
	ids := strings.Split(*idList, ",")
	e := &editor{path: *file, field: *field, ids: ids, saved: map[string]string{}, reported: map[string]bool{}}
	lost, err := e.run(*every, *poll, *total)
	for _, id := range ids {
		fmt.Printf("final %s %s\n", id, e.saved[id])
	}
	fmt.Printf("saves %d\n", e.saves)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testeditor:", err)
		os.Exit(2)
	}
	if lost > 0 {
		os.Exit(1)
	}
}

type editor struct {
	path, field string
	ids         []string
	saved       map[string]string // the last value saved in each cell
	saves       int
	reported    map[string]bool // the lost edits reported

	buf  []byte      // the file as last read or saved
	seen os.FileInfo // the file's stat when buf was read or saved
}

// run saves every `every` until total has passed, looking at the file every poll, and
// returns the number of edits lost.
func (e *editor) run(every, poll, total time.Duration) (int, error) {
	lost := 0
	end := time.Now().Add(total)
	next := time.Now()
	for time.Now().Before(end) {
		if err := e.reload(); err != nil {
			return lost, err
		}
		if time.Now().Before(next) {
			time.Sleep(poll)
			continue
		}
		next = time.Now().Add(every)
		missing, err := e.missing(e.buf)
		if err != nil {
			return lost, err
		}
		for _, m := range missing {
			if !e.reported[m] { // a lost edit stays lost until its cell is saved again
				fmt.Println("lost " + m)
				e.reported[m] = true
				lost++
			}
		}
		id := e.ids[e.saves%len(e.ids)]
		value := fmt.Sprintf("e%d", e.saves+1)
		edited, err := setCell(e.buf, id, e.field, value)
		if err != nil {
			return lost, err
		}
		fi, err := save(e.path, edited)
		if err != nil {
			return lost, err
		}
		e.buf, e.seen = edited, fi
		e.saved[id] = value
		e.saves++
	}
	return lost, nil
}

// reload reads the file into the buffer if it changed on disk since the buffer was read.
func (e *editor) reload() error {
	fi, err := os.Stat(e.path)
	if err != nil {
		return err
	}
	if e.seen != nil && os.SameFile(fi, e.seen) && fi.Size() == e.seen.Size() && fi.ModTime().Equal(e.seen.ModTime()) {
		return nil
	}
	src, err := os.ReadFile(e.path)
	if err != nil {
		return err
	}
	missing, err := e.missing(src)
	if err != nil {
		return err
	}
	for _, m := range missing {
		fmt.Println("stale " + m)
	}
	e.buf, e.seen = src, fi
	return nil
}

// missing parses src and describes each of our cells that does not hold our last value.
func (e *editor) missing(src []byte) ([]string, error) {
	d, err := queue.Parse(e.path, src, queue.Tasks)
	if err != nil {
		return nil, fmt.Errorf("read a version that does not parse: %w", err)
	}
	var out []string
	for _, id := range e.ids {
		want, ok := e.saved[id]
		if !ok {
			continue
		}
		r, found := d.Record(id)
		if !found {
			return nil, fmt.Errorf("%s is gone", id)
		}
		if have := d.Get(r, e.field); have != want {
			out = append(out, fmt.Sprintf("%s: have %q, want %q", id, have, want))
		}
	}
	return out, nil
}

// setCell replaces the value cell of the row `| field | ... |` that follows the heading of
// record id, as a person would in an editor: by hand, not with the queue package's writer.
func setCell(src []byte, id, field, value string) ([]byte, error) {
	at := regexp.MustCompile(`(?m)^#{2,4} ` + regexp.QuoteMeta(id) + `\b.*$`).FindIndex(src)
	if at == nil {
		return nil, fmt.Errorf("no heading of %s", id)
	}
	row := regexp.MustCompile(`(?m)^(\|\s*` + regexp.QuoteMeta(field) + `\s*\|)([^\n]*?)(\|\r?)$`)
	loc := row.FindSubmatchIndex(src[at[1]:])
	if loc == nil {
		return nil, fmt.Errorf("%s has no %s row", id, field)
	}
	start, end := at[1]+loc[4], at[1]+loc[5]
	var b bytes.Buffer
	b.Write(src[:start])
	b.WriteString(" " + value + " ")
	b.Write(src[end:])
	return b.Bytes(), nil
}

// save writes data to a temp file beside path and renames it over path. It returns the
// stat of what it saved.
func save(path string, data []byte) (os.FileInfo, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".editor-*")
	if err != nil {
		return nil, err
	}
	_, werr := f.Write(data)
	if err := f.Chmod(0o644); werr == nil {
		werr = err
	}
	fi, err := f.Stat()
	if werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, werr
	}
	return fi, nil
}
