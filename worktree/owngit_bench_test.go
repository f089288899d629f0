package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchestrator/orchestrator/agents"
)

// BenchmarkAgentGit weighs what least privilege (SPEC §15.2) adds to the git work of an
// attempt, at 10 files and at 10,000, in one run:
//
//   - slot: today's reuse of a slot at the base (Slot, then Reset after the agent before
//     edited a file and added one), as watch's holdSlot does;
//   - slot+own: the slot, then the agent's own git folder (agents.OwnGit: alternates to the
//     repository's objects, HEAD, and an index of the base copied from the slot's, as watch
//     makes it) and the private folder of the agent program's state seeded with its login
//     (agents.SeedConfig, Claude Code's three files), both removed once the agent ended, as
//     agents.Start's sandbox does;
//   - slot+own-built: the same with the index built from the base and refreshed against
//     the slot (OwnGit without Index), for comparison.
//
// All three are timed in every iteration, one after the other, so that the machine's load
// weighs on them alike; the metrics are the mean of each and the ratios to the slot alone
// (ns/op is the sum of the three and says nothing).
// Package worktree imports agents here only in its tests: agents does not import
// worktree, so there is no cycle.
//
//	go test ./worktree -run '^$' -bench BenchmarkAgentGit -benchtime 20x
func BenchmarkAgentGit(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			ctx := context.Background()
			_, r := benchRepo(b, n)
			head, err := r.Head(ctx)
			if err != nil {
				b.Fatal(err)
			}
			s, err := r.Slot(ctx, "job-1")
			if err != nil {
				b.Fatal(err)
			}
			// The first use checks every file out; later attempts reuse the slot.
			if err := s.Reset(ctx, head); err != nil {
				b.Fatal(err)
			}
			home := fakeLogin(b)
			runs := b.TempDir()
			var slot, own, built time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// The agent before's work, which the reset undoes.
				if err := os.WriteFile(filepath.Join(s.Dir, "pkg000", "file000.go"), fmt.Appendf(nil, "package pkg000\n\n// Edited %d.\n", i), 0o644); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(s.Dir, "pkg000", "new.go"), []byte("package pkg000\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()

				t0 := time.Now()
				s, err := r.Slot(ctx, "job-1")
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Reset(ctx, head); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				// The own git folder as watch makes it, from the slot's index, then as it
				// was first made, from the base alone (read-tree, refresh).
				ownGit(b, r, s, head, home, filepath.Join(runs, fmt.Sprint(i, "a")), s.Index())
				t2 := time.Now()
				ownGit(b, r, s, head, home, filepath.Join(runs, fmt.Sprint(i, "b")), "")
				t3 := time.Now()
				slot += t1.Sub(t0)
				own += t2.Sub(t1)
				built += t3.Sub(t2)
			}
			b.StopTimer()
			if b.N > 0 && slot > 0 {
				per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
				b.ReportMetric(per(slot), "slot-ns/op")
				b.ReportMetric(per(slot+own), "slot+own-ns/op")
				b.ReportMetric(float64(slot+own)/float64(slot), "ratio")
				b.ReportMetric(per(slot+built), "slot+own-built-ns/op")
				b.ReportMetric(float64(slot+built)/float64(slot), "ratio-built")
			}
		})
	}
}

// ownGit makes, in the run folder run, what an agent's sandbox adds to its slot s: its
// own git folder at head (from index, or from head alone when index is "") and the private
// folder of its program's state seeded from home; then removes both, as the sandbox does
// once the agent has ended.
func ownGit(b *testing.B, r *Repo, s *Slot, head, home, run, index string) {
	if err := os.Mkdir(run, 0o755); err != nil {
		b.Fatal(err)
	}
	g := &agents.OwnGit{Dir: filepath.Join(run, "agent-git"), Objects: filepath.Join(r.Common, "objects"), Base: head, Index: index}
	if err := g.Make(s.Dir); err != nil {
		b.Fatal(err)
	}
	state := filepath.Join(run, "agent-state")
	if _, _, err := agents.SeedConfig(agents.Claude, []string{"HOME=" + home}, state); err != nil {
		b.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(state); err != nil {
		b.Fatal(err)
	}
}

// fakeLogin makes a home folder that holds what Claude Code logs in with (its credentials,
// settings and global .claude.json, a few kilobytes each, as a person's are), and returns
// it.
func fakeLogin(b *testing.B) string {
	b.Helper()
	home := b.TempDir()
	pad := strings.Repeat("x", 4096)
	for name, text := range map[string]string{
		".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"` + pad + `"}}`,
		".claude/settings.json":     `{"model":"opus","note":"` + pad + `"}`,
		".claude.json":              `{"projects":{},"note":"` + pad + `"}`,
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return home
}
