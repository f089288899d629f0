package workers

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkTransfer measures what one attempt costs in transport, both ways, through the
// real embedded server: the authority bundles the base and puts it in the object store,
// the worker fetches and unbundles it, makes a candidate of one changed file, bundles
// candidate ^base and puts it, and the authority fetches and unbundles that. "first" is a
// worker with an empty cache and a base never bundled (the whole history travels);
// "incremental" a later base, one file changed, to a worker that has the previous one.
// The bytes of each bundle are reported per attempt.
//
//	go test ./workers -run '^$' -bench Transfer -benchtime 5x
func BenchmarkTransfer(b *testing.B) {
	for _, files := range []int{10, 10000} {
		for _, mode := range []string{"first", "incremental"} {
			b.Run(fmt.Sprintf("files=%d/%s", files, mode), func(b *testing.B) {
				benchTransfer(b, files, mode == "first")
			})
		}
	}
}

func benchTransfer(b *testing.B, files int, first bool) {
	ctx := context.Background()
	srv := serve(b)
	content := map[string]string{}
	for i := range files {
		content[fmt.Sprintf("src/d%02d/f%05d.go", i%100, i)] = fmt.Sprintf("package d\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", i, i, i, i*31)
	}
	repo, base := newRepo(b, content)
	d, _ := dispatch(b, srv, repo, 0)
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(WorkerUser, testToken))
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	w := &Worker{Name: "bench", CacheDir: b.TempDir()}
	if _, err := w.attach(ctx, nc); err != nil {
		b.Fatal(err)
	}
	newCache := func() {
		w.CacheDir = b.TempDir()
		if err := w.prepareCache(ctx); err != nil {
			b.Fatal(err)
		}
	}
	newCache()
	if !first {
		if err := d.bundleBase(ctx, base); err != nil {
			b.Fatal(err)
		}
		if err := w.ensureBase(ctx, base); err != nil {
			b.Fatal(err)
		}
	}
	var baseBytes, candBytes int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if first {
			d.anchor, d.sinceAnchor = "", 0
			_ = d.bases.Delete(ctx, base)
			newCache()
		} else {
			base = commitFiles(b, repo, map[string]string{"src/d00/f00000.go": fmt.Sprintf("package d\n\n// changed %d\n", i)})
		}
		before := w.fetched.Load()
		b.StartTimer()

		if err := d.bundleBase(ctx, base); err != nil {
			b.Fatal(err)
		}
		if err := w.ensureBase(ctx, base); err != nil {
			b.Fatal(err)
		}
		candidate := agentCommit(b, w.repo, base, i)
		info, err := putObject(ctx, w.results, jetstream.ObjectMeta{Name: fmt.Sprintf("bench/%s/%d", candidate, i)}, func(wr io.Writer) error {
			return w.repo.writeBundle(ctx, wr, candidate, base)
		})
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "candidate.bundle")
		if err := getObject(ctx, d.results, info.Name, info.Digest, path); err != nil {
			b.Fatal(err)
		}
		if tip, err := d.git.unbundle(ctx, path); err != nil || tip != candidate {
			b.Fatalf("unbundle: %s, %v", tip, err)
		}

		b.StopTimer()
		baseBytes += w.fetched.Load() - before
		candBytes += int64(info.Size)
		b.StartTimer()
	}
	b.ReportMetric(float64(baseBytes)/float64(b.N), "base-B/op")
	b.ReportMetric(float64(candBytes)/float64(b.N), "candidate-B/op")
}

// agentCommit makes, in the worker's repository, the commit an agent's change of one file
// would be: base with a new file.
func agentCommit(b *testing.B, g gitRepo, base string, i int) string {
	b.Helper()
	ctx := context.Background()
	index := filepath.Join(b.TempDir(), "index")
	gi := g
	gi.env = []string{"GIT_INDEX_FILE=" + index, "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a"}
	must := func(out string, err error) string {
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	must(gi.run(ctx, nil, "read-tree", base))
	blob := must(gi.run(ctx, strings.NewReader(fmt.Sprintf("package d\n\n// new work %d\n", i)), "hash-object", "-w", "--stdin"))
	must(gi.run(ctx, nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+",src/new.go"))
	tree := must(gi.run(ctx, nil, "write-tree"))
	os.Remove(index)
	return must(gi.run(ctx, strings.NewReader("work\n"), "commit-tree", tree, "-p", base, "-F", "-"))
}
