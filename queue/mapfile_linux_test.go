package queue

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestMapFileHoldsWriters checks that a writer that truncates a mapped file waits until the
// mapping is released, so the mapped bytes stay readable and unchanged until then.
func TestMapFileHoldsWriters(t *testing.T) {
	if b, _ := os.ReadFile("/proc/sys/fs/leases-enable"); string(b) == "0\n" {
		t.Skip("file leases are disabled on this machine (fs.leases-enable = 0)")
	}
	path, want := bigQueue(t)
	src, release, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err == nil {
			_, err = f.WriteString("# emptied\n")
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("a writer truncated the file while it was mapped (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if !bytes.Equal(src, want) {
		t.Fatal("the mapped bytes changed while the writer waited")
	}
	release()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer still waits after release")
	}
	if got, _ := os.ReadFile(path); string(got) != "# emptied\n" {
		t.Fatalf("after release the file is %q", got)
	}
}

// TestMapFileReadsWhenLeaseRefused checks that a file open for writing elsewhere, which
// cannot be leased, is read instead.
func TestMapFileReadsWhenLeaseRefused(t *testing.T) {
	path, want := bigQueue(t)
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	src, release, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if !bytes.Equal(src, want) {
		t.Fatal("MapFile read different bytes")
	}
	// A copy, not a mapping: writing through w does not change it.
	if _, err := w.WriteAt([]byte("XXXX"), 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, want) {
		t.Fatal("MapFile's bytes follow the file: it mapped a file open for writing")
	}
}
