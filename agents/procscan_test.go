package agents

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseStat: the fields the scans need, after a command name that holds spaces and
// parentheses, as the kernel writes it; a line cut short or with a field that is not a
// number is an error, not a process of PID 0.
func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	for _, c := range []struct {
		line string
		want procStat
		bad  bool
	}{
		{line: "123 (sleep) S 1 123 123 0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 4411" + tail, want: procStat{'S', 1, 123, 4411}},
		{line: "77 (a) b) (c ) Z 70 71 71 0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 98765432101" + tail, want: procStat{'Z', 70, 71, 98765432101}},
		{line: "9 (x) R 8 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", want: procStat{'R', 8, 9, 5}},
		{line: "9 (x) R 8 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0", bad: true},
		{line: "9 (x) R 8 x9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", bad: true},
		{line: "9 x R 8 9 9", bad: true},
		{line: "", bad: true},
	} {
		got, err := parseStat("stat", []byte(c.line))
		if c.bad {
			if err == nil {
				t.Errorf("%q: parsed as %+v, want an error", c.line, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %+v, %v; want %+v", c.line, got, err, c.want)
		}
	}
	// And as the kernel writes our own.
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStat("/proc/self/stat", b)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if err != nil || st.ppid != os.Getppid() || strconv.FormatUint(st.start, 10) != f[19] {
		t.Fatalf("/proc/self/stat %q: got %+v, %v", b, st, err)
	}
}

// TestScanKnowsAReusedPID: the look through every process keeps each stat file open
// between looks and reads it again in place (procscan.go). When a process that one look
// met is gone and a later process has its PID, the next look must see the later process
// (its start time, its environment), not the one its kept file was opened for; and the
// file of a process that is gone is closed. The PID is given to the later process by
// setting the kernel's last PID (root only).
func TestScanKnowsAReusedPID(t *testing.T) {
	first := exec.Command("sleep", "600")
	first.Env = []string{"PROCSCAN_TEST=first"}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pid := first.Process.Pid
	firstStat, err := readStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if got := withEnvSince("PROCSCAN_TEST", "first", 0); len(got) != 1 || got[0].pid != pid {
		t.Fatalf("first look: %+v, want PID %d", got, pid)
	}
	procStats.mu.Lock()
	_, kept := procStats.open[pid]
	procStats.mu.Unlock()
	if !kept {
		t.Fatalf("the look kept no stat file of PID %d", pid)
	}
	first.Process.Kill()
	first.Wait()

	var second *exec.Cmd
	for try := 0; second == nil; try++ {
		if try == 500 {
			t.Fatalf("PID %d was not given again in %d tries", pid, try)
		}
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("setting the last PID (needs root): %v", err)
			}
			t.Skipf("setting the last PID (needs root): %v", err)
		}
		c := exec.Command("sleep", "600")
		c.Env = []string{"PROCSCAN_TEST=second"}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		st, err := readStat(c.Process.Pid)
		if c.Process.Pid == pid && err == nil && st.start != firstStat.start {
			second = c
			break
		}
		// Another process got the PID first, or the two started in one clock tick.
		c.Process.Kill()
		c.Wait()
	}
	defer func() {
		second.Process.Kill()
		second.Wait()
	}()
	secondStat, err := readStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	got := withEnvSince("PROCSCAN_TEST", "second", secondStat.start)
	if len(got) != 1 || got[0].pid != pid || got[0].stat.start != secondStat.start {
		t.Fatalf("the look after PID %d was given again: %+v, want the second process (start %d; the first started at %d)",
			pid, got, secondStat.start, firstStat.start)
	}
	if got := withEnvSince("PROCSCAN_TEST", "first", 0); len(got) != 0 {
		t.Fatalf("the first process is gone, but a look finds %+v", got)
	}

	// A process that is gone, its PID not given again: its file is closed at the next look.
	third := exec.Command("sleep", "600")
	if err := third.Start(); err != nil {
		t.Fatal(err)
	}
	tp := third.Process.Pid
	withEnvSince("PROCSCAN_TEST", "none", 0)
	procStats.mu.Lock()
	_, kept = procStats.open[tp]
	procStats.mu.Unlock()
	if !kept {
		t.Fatalf("the look kept no stat file of PID %d", tp)
	}
	thirdStat, err := readStat(tp)
	if err != nil {
		t.Fatal(err)
	}
	third.Process.Kill()
	third.Wait()
	withEnvSince("PROCSCAN_TEST", "none", 0)
	procStats.mu.Lock()
	defer procStats.mu.Unlock()
	if sf, kept := procStats.open[tp]; kept {
		// Only if another process has the PID now (a busy machine), and then its file.
		var buf [4096]byte
		n, err := unix.Pread(sf.fd, buf[:], 0)
		if err != nil {
			t.Fatalf("the stat file kept for PID %d, whose process is gone, does not read: %v", tp, err)
		}
		if st, err := parseStat("kept", buf[:n]); err != nil || st.start == thirdStat.start {
			t.Fatalf("the stat file of PID %d, whose process is gone, is still kept: %+v, %v", tp, st, err)
		}
	}
}

// TestScanKeepsFewFilesWhenFewMayBeOpen: no more stat files are kept than the bound set
// from the limit of open files, and the processes past it are still looked at, read as
// readStat does.
func TestScanKeepsFewFilesWhenFewMayBeOpen(t *testing.T) {
	if procStats.max < 1 || procStats.max > 4096 {
		t.Fatalf("the bound is %d", procStats.max)
	}
	procStats.mu.Lock()
	for pid, sf := range procStats.open {
		unix.Close(sf.fd)
		delete(procStats.open, pid)
	}
	was := procStats.max
	procStats.max = 2
	procStats.mu.Unlock()
	defer func() {
		procStats.mu.Lock()
		procStats.max = was
		procStats.mu.Unlock()
	}()
	for range 2 {
		seen := map[int]bool{}
		if err := scanProcs(func(pid int, st procStat) { seen[pid] = true }); err != nil {
			t.Fatal(err)
		}
		if !seen[os.Getpid()] || !seen[1] || len(seen) < 3 {
			t.Fatalf("the look met %d processes (itself: %v, PID 1: %v)", len(seen), seen[os.Getpid()], seen[1])
		}
		procStats.mu.Lock()
		kept := len(procStats.open)
		procStats.mu.Unlock()
		if kept > 2 {
			t.Fatalf("%d stat files kept, bound 2", kept)
		}
	}
}

// BenchmarkProcScan: a look through every process for an attempt's variable, as the loop
// makes after each agent, with the stat files kept open between looks, against the same
// look that opens each stat file (the anchor, as every look did before).
//
//	go test ./agents -run '^$' -bench ProcScan
func BenchmarkProcScan(b *testing.B) {
	// As after an agent: the processes that started before this one are not its.
	self, err := readStat(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			withEnvSince("PROCSCAN_BENCH", "x", self.start)
		}
	})
	b.Run("opened", func(b *testing.B) {
		for b.Loop() {
			d, err := os.Open("/proc")
			if err != nil {
				b.Fatal(err)
			}
			names, _ := d.Readdirnames(-1)
			d.Close()
			for _, name := range names {
				if pid, err := strconv.Atoi(name); err == nil {
					if st, err := readStat(pid); err == nil && st.start >= self.start && running(pid, st) {
						environ(pid)
					}
				}
			}
		}
	})
}
