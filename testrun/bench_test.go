package testrun

import (
	"testing"
)

// TestParseLargeGoJSON checks the large recording: 1,000 tests in 10 packages, 30 failing.
func TestParseLargeGoJSON(t *testing.T) {
	rec := loadRecording(t, "testdata/outputs/go_large.txtar.gz")
	res := rec.parse()
	if len(res.Tests) != 1000 || len(res.Failed()) != 30 || res.Class != ClassAssertionFailure {
		t.Errorf("%d tests, %d failed, class %s", len(res.Tests), len(res.Failed()), res.Class)
	}
	for _, tt := range res.Tests {
		if tt.Status == Failed && tt.Output == "" {
			t.Errorf("%s: no output", tt.ID)
		}
	}
}

// BenchmarkParseGoJSON parses a real go test -json output of 1,000 tests in 10 packages
// (testdata/outputs/go_large.txtar.gz). Compare: go test ./testrun -run '^$' -bench
// ParseGoJSON -benchmem.
func BenchmarkParseGoJSON(b *testing.B) {
	rec := loadRecording(b, "testdata/outputs/go_large.txtar.gz")
	b.SetBytes(int64(len(rec.output)))
	b.ReportAllocs()
	for b.Loop() {
		res := Parse(Go, rec.root, rec.exit, rec.output, nil)
		if len(res.Tests) != 1000 {
			b.Fatalf("%d tests", len(res.Tests))
		}
	}
}

// FuzzParse checks that no output makes a parser panic, whatever the runner.
func FuzzParse(f *testing.F) {
	f.Add(byte(0), []byte(`{"Action":"run","Package":"p","Test":"TestA"}`+"\n"+`{"Action":"fail","Package":"p","Test":"TestA/b"}`), []byte(nil))
	f.Add(byte(1), []byte("____ ERROR collecting a.py ____\nE   ImportError: x\n"), []byte(`<testsuite><testcase classname="a" name="b"><failure message="m">x</failure></testcase></testsuite>`))
	f.Add(byte(2), []byte("x"), []byte(`{"testResults":[{"name":"/r/a.test.ts","message":"Error: x","assertionResults":[]}]}`))
	f.Add(byte(4), []byte("test a ... FAILED\n---- a stdout ----\nboom\nfailures:\nerror[E0425]: x\n --> a.rs:1:2\n"), []byte(nil))
	runners := []Runner{Go, Pytest, Vitest, Jest, Cargo, Exit}
	f.Fuzz(func(t *testing.T, which byte, output, report []byte) {
		r := runners[int(which)%len(runners)]
		res := Parse(r, "/r", 1, output, [][]byte{report})
		_ = res.Passed()
		if len(res.Output) > maxOutput+100 {
			t.Fatalf("output of %d bytes", len(res.Output))
		}
	})
}
