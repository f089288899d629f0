package testrun

import (
	"compress/gzip"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// A recording is a real run of a runner, kept in testdata/outputs by TestRecord.
type recording struct {
	runner  Runner
	command string
	root    string
	exit    int
	version string
	output  []byte
	reports [][]byte
}

// loadRecording reads testdata/outputs/<name>.txtar (or .txtar.gz).
func loadRecording(t testing.TB, path string) *recording {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(data)
	meta := parseMeta(string(ar.Comment))
	rec := &recording{runner: Runner(meta["runner"]), command: meta["command"], root: meta["root"], version: meta["version"]}
	if rec.exit, err = strconv.Atoi(meta["exit"]); err != nil {
		t.Fatalf("%s: exit: %v", path, err)
	}
	for _, f := range ar.Files {
		if f.Name == "output" {
			rec.output = f.Data
		} else {
			rec.reports = append(rec.reports, f.Data)
		}
	}
	return rec
}

// parse parses the recording as Run would have.
func (rec *recording) parse() *Result {
	inv := instrument(rec.command, rec.runner, os.TempDir(), nil)
	f := newFeeder(inv, rec.root)
	_, _ = f.Write(rec.output)
	res := &Result{Runner: rec.runner, Command: rec.command, ExitCode: rec.exit}
	f.finish(res, rec.reports)
	res.Class, res.Reason = Classify(res, nil)
	return res
}
