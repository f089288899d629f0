package agents

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The loop looks through every process of the machine after each agent (withEnvSince), and
// on this kind of machine opening a file under /proc costs several times what reading it
// does. So a look through every process keeps the stat file of each process it met open,
// and the next look reads it again with one pread instead of an open, a read and a close.
//
// An open stat file stays its process's: once the process is gone (reaped), a read of it
// fails with ESRCH, even after its PID has been given to another process. A read that
// succeeds therefore proves that the PID still names the process the file was opened for,
// and what it reads is that process's stat line as it is now.
type statFiles struct {
	mu   sync.Mutex
	open map[int]statFile
	scan uint64 // the look under way, counted from 1
	max  int    // how many files may be kept (keptStatFiles)
}

type statFile struct {
	fd   int
	scan uint64 // the last look that met its PID under /proc
}

// keptStatFiles bounds the stat files kept open: 4,096, and no more than an eighth of the
// files the orchestrator may have open, so that a machine of many processes (or an agent
// that starts thousands) never leaves the loop short of files to write. The rest are read
// as readStat does.
func keptStatFiles() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return int(min(4096, lim.Cur/8))
}

var procStats = statFiles{open: map[int]statFile{}, max: keptStatFiles()}

// scanProcs calls f with the PID and stat of every process under /proc, in no particular
// order. f runs while the kept stat files are locked: it must not call scanProcs.
func scanProcs(f func(pid int, st procStat)) error {
	d, err := os.Open("/proc")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	c := &procStats
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scan++
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if st, err := c.read(pid); err == nil {
			f(pid, st)
		}
	}
	// A process this look did not meet is gone: its file is closed.
	for pid, sf := range c.open {
		if sf.scan != c.scan {
			unix.Close(sf.fd)
			delete(c.open, pid)
		}
	}
	return nil
}

// read returns the stat of process pid through its kept file, opening and keeping one if
// there is none, or none that still reads (its process is gone).
func (c *statFiles) read(pid int) (procStat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	if sf, ok := c.open[pid]; ok {
		var buf [4096]byte
		n, err := unix.Pread(sf.fd, buf[:], 0)
		if err == nil && n > 0 {
			sf.scan = c.scan
			c.open[pid] = sf
			return parseStat(path, buf[:n])
		}
		unix.Close(sf.fd)
		delete(c.open, pid)
	}
	fd, st, err := openStat(path)
	if err != nil {
		return st, err
	}
	if len(c.open) >= c.max {
		unix.Close(fd)
		return st, nil
	}
	c.open[pid] = statFile{fd: fd, scan: c.scan}
	return st, nil
}

// openStat opens the stat file at path and reads it (parseStat), and returns it open; on an
// error it is closed.
func openStat(path string) (fd int, st procStat, err error) {
	var buf [4096]byte
	// One open and one read: os.ReadFile's file (a stat, a second read, the poller) costs
	// more than the reading. The line is short: 52 numbers and a command name of 15 bytes.
	fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, procStat{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		unix.Close(fd)
		return -1, procStat{}, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if st, err = parseStat(path, buf[:n]); err != nil {
		unix.Close(fd)
		return -1, procStat{}, err
	}
	return fd, st, nil
}

// parseStat reads the fields we need of a stat line b, read from path: state (field 3),
// parent (field 4), process group (field 5) and start time (field 22), without making a
// string of each of its 52 fields.
func parseStat(path string, b []byte) (procStat, error) {
	// The command name (field 2) is in parentheses and may hold spaces and parentheses
	// itself; the fields after the last ")" are plain numbers but for the state.
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return procStat{}, fmt.Errorf("%s: malformed", path)
	}
	var st procStat
	field := 0 // of the fields after the name: 0 is the state
	for rest := b[i+1:]; field <= 19; field++ {
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\n') {
			rest = rest[1:]
		}
		end := 0
		for end < len(rest) && rest[end] != ' ' && rest[end] != '\n' {
			end++
		}
		if end == 0 {
			return procStat{}, fmt.Errorf("%s: malformed", path)
		}
		f := rest[:end]
		rest = rest[end:]
		if field == 0 {
			st.state = f[0]
			continue
		}
		if field != 1 && field != 2 && field != 19 {
			continue
		}
		n, ok := atou(f)
		if !ok {
			return procStat{}, fmt.Errorf("%s: field %d is not a number: %q", path, field+3, f)
		}
		switch field {
		case 1:
			st.ppid = int(n)
		case 2:
			st.pgrp = int(n)
		case 19:
			st.start = n
		}
	}
	return st, nil
}

// atou reads the decimal number f, which fits in 63 bits.
func atou(f []byte) (uint64, bool) {
	if len(f) == 0 || len(f) > 18 {
		return 0, false
	}
	var n uint64
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
