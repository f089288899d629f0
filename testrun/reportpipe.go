package testrun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// A reportPipe is where a JavaScript runner writes its JSON report (vitest's outputFile,
// jest's --outputFile): a named pipe the orchestrator reads as the run goes, not a file
// that stays writable after the runner wrote it (SPEC §7.6). The runner opens it once,
// writes its report and closes it; anything that opens it again and writes (an exit hook
// of the tests' code that rewrites the report) is a second writer, and the report is not
// evidence.
type reportPipe struct {
	path   string
	mu     sync.Mutex
	writes [][]byte // each writer's bytes, in order
	done   chan struct{}
	stop   chan struct{}
}

// newReportPipe makes the named pipe at path and starts reading it.
func newReportPipe(path string) (*reportPipe, error) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("report pipe: %w", err)
	}
	p := &reportPipe{path: path, done: make(chan struct{}), stop: make(chan struct{})}
	go p.read()
	return p, nil
}

// read takes each writer's bytes in turn: an open for reading waits for the next writer,
// and a read to the end takes what that writer wrote until it closed.
func (p *reportPipe) read() {
	defer close(p.done)
	for {
		f, err := os.OpenFile(p.path, os.O_RDONLY, 0)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		select {
		case <-p.stop:
			if len(b) > 0 {
				p.add(b)
			}
			return
		default:
		}
		if len(b) > 0 {
			p.add(b)
		}
	}
}

func (p *reportPipe) add(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, b)
}

// finish ends the reading, once the command and everything it started are gone, and
// returns the report and whether it is not the runner's alone: more than one writer wrote,
// or a writer still held the pipe open after the run.
func (p *reportPipe) finish() (report []byte, notAlone bool) {
	close(p.stop)
	// The reader may wait in its open for a writer that will not come: be that writer,
	// until it has seen the stop.
	deadline := time.After(10 * time.Second)
	for ended := false; !ended; {
		if f, err := os.OpenFile(p.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		select {
		case <-p.done:
			ended = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return nil, true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.writes) == 0 {
		return nil, false
	}
	return bytes.Clone(p.writes[0]), len(p.writes) > 1
}
