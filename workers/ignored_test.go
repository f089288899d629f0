package workers

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestIgnoredFilesRefused: the job's own worker (its proof holds) sends a candidate that
// adds files its own .gitignore files ignore, which a worker's `git add -A` never takes and
// a local agent's candidate never holds (SPEC §7.1): a file the root .gitignore ignores, a
// folder a .gitignore added in the same candidate ignores. Each is refused, on the base,
// with no ref set and the files named. The honest twins are accepted: a plain new file, a
// file the candidate's .gitignore no longer ignores (git add takes it), and an edit of a
// file the base tracks although a pattern matches it (tracked files stay tracked).
func TestIgnoredFilesRefused(t *testing.T) {
	srv := serve(t)
	repo, _ := newRepo(t, map[string]string{"README.md": "hello\n"})
	// The base tracks a file its .gitignore (*.tmp) matches, added by force.
	writeAll(t, repo, map[string]string{"kept.tmp": "tracked\n"})
	git(t, repo, "add", "-f", "kept.tmp")
	git(t, repo, "commit", "-q", "-m", "a tracked file a pattern matches")
	base := git(t, repo, "rev-parse", "HEAD")
	d, ev := dispatch(t, srv, repo, 5*time.Second)
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(WorkerUser, testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	results, err := js.ObjectStore(context.Background(), resultsBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		name    string
		files   map[string]string
		ignored string // the files named in the refusal; "" for an honest candidate
	}{
		{"a new file", map[string]string{"work.txt": "work\n"}, ""},
		{"a file the root .gitignore ignores", map[string]string{"work.txt": "work\n", "cache.tmp": "forged\n"}, "cache.tmp"},
		{"a folder its own new .gitignore ignores", map[string]string{"pkg/.gitignore": "gen/\n", "pkg/gen/out.go": "package gen\n"}, "pkg/gen/out.go"},
		{"a file its .gitignore no longer ignores", map[string]string{".gitignore": "", "now.tmp": "kept\n"}, ""},
		{"an edit of a tracked file a pattern matches", map[string]string{"kept.tmp": "edited\n"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			a := AttemptID{fmt.Sprintf("TASK-%03d", i+1), 1}
			if err := d.Submit(ctx, scriptJob(t, a.Task, a.N, base)); err != nil {
				t.Fatal(err)
			}
			// The worker's tree, written by force: what git add -A would have left out.
			clone := filepath.Join(t.TempDir(), "clone")
			git(t, repo, "clone", "-q", repo, clone)
			writeAll(t, clone, tt.files)
			for name := range tt.files {
				git(t, clone, "add", "-f", name)
			}
			git(t, clone, "commit", "-q", "-m", "work")
			cand := git(t, clone, "rev-parse", "HEAD")
			w := wireOutcome{Attempt: a, Worker: "w1", Base: base, Candidate: cand, Delivery: 1}
			put := func(name string, write func(io.Writer) error) (string, string) {
				info, err := putObject(ctx, results, jetstream.ObjectMeta{Name: a.key() + "/" + name}, write)
				if err != nil {
					t.Fatal(err)
				}
				return info.Name, info.Digest
			}
			w.Bundle, w.BundleDigest = put("candidate.bundle", func(wr io.Writer) error { return gitRepo{dir: clone}.writeBundle(ctx, wr, cand, base) })
			w.LogObject, w.LogDigest = put("agent.log", func(wr io.Writer) error { return nil })
			w.StdoutObject, w.StdoutDigest = put("stdout", func(wr io.Writer) error { return nil })
			w.sign(jobSecret(testKey, a))
			publishAs(t, srv, w)
			o := next(t, d)
			if tt.ignored == "" {
				if o.Refused != "" || o.Candidate != cand {
					t.Fatalf("outcome %+v, want candidate %s accepted", o, cand)
				}
				if got := git(t, repo, "rev-parse", a.Ref()); got != cand {
					t.Errorf("attempt ref %s, want %s", got, cand)
				}
				return
			}
			if o.Refused == "" || o.Candidate != base {
				t.Fatalf("outcome %+v, want one refused, on the base", o)
			}
			select {
			case err := <-ev.refused:
				if !strings.Contains(err.Error(), ".gitignore ignores") || !strings.Contains(err.Error(), tt.ignored) {
					t.Errorf("refused with %v, want the ignored %s named", err, tt.ignored)
				}
			default:
				t.Error("the refusal was not reported")
			}
			if ref := git(t, repo, "for-each-ref", "refs/orchestrator/attempts/"+a.Task); ref != "" {
				t.Errorf("a ref was set: %s", ref)
			}
		})
	}
}
