package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchRepo makes a repository of n files in folders of 100, committed on main.
func benchRepo(b *testing.B, n int) (string, *Repo) {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%03d.go", i%100))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package pkg%03d\n\n// File %d.\nconst C%d = %d\n", i/100, i, i, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		// No automatic gc: after the commit of 10,000 loose objects git would pack them in
		// the background, during the timed loop and into the folder's removal.
		cmd := exec.Command("git", append([]string{"-c", "gc.auto=0"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	r, err := Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	return dir, r
}

// BenchmarkAttempt times the orchestrator's own git work for one attempt, test runs and
// the agent excluded: the attempt's worktree reset to the integration head (reused from
// the attempt before), the candidate commit, its change list and patch, the files it left
// under .orchestrator/, the gate's pristine checkout of it and the check of its bytes, and
// the landing with the person's tree following and the audit of the landings: the git work
// of watch's launch, makeCandidate, gateDir, land and record, in that order. The agent's
// work is two files written. Issue 12's targets: at most 300 ms on 10,000 files, 50 ms on
// the demo (a handful of files). Metric git-procs is the git processes one more attempt
// starts (issue 26: about eight), counted by a git on PATH that counts its calls.
//
//	go test ./worktree -run '^$' -bench BenchmarkAttempt -benchtime 20x
func BenchmarkAttempt(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			ctx := context.Background()
			_, r := benchRepo(b, n)
			defer r.Close()
			job, err := r.Slot(ctx, "job-1")
			if err != nil {
				b.Fatal(err)
			}
			gate, err := r.Slot(ctx, "gate")
			if err != nil {
				b.Fatal(err)
			}
			// The first use of each slot checks every file out; later attempts reuse it.
			head, _ := r.Head(ctx)
			if err := job.Reset(ctx, head); err != nil {
				b.Fatal(err)
			}
			if err := gate.Reset(ctx, head); err != nil {
				b.Fatal(err)
			}
			r.EditedLandings(ctx)
			attempt := func(i int, timed bool) {
				head, err := r.Head(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := job.Reset(ctx, head); err != nil {
					b.Fatal(err)
				}
				if timed {
					b.StopTimer()
				}
				// The agent's work.
				write := func(rel, text string) {
					if err := os.WriteFile(filepath.Join(job.Dir, rel), []byte(text), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				write("pkg000/file000.go", fmt.Sprintf("package pkg000\n\n// Edited %d.\nconst C0 = %d\n", i, i))
				write(fmt.Sprintf("pkg000/new%d.go", i), "package pkg000\n")
				if timed {
					b.StartTimer()
				}
				cand, err := job.Commit(ctx, head, fmt.Sprintf("refs/orchestrator/attempts/TASK-%d/1", i), "candidate\n")
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := r.DiffPatch(ctx, head, cand); err != nil {
					b.Fatal(err)
				}
				if _, err := job.Untracked(ctx, cand, ".orchestrator"); err != nil {
					b.Fatal(err)
				}
				if err := gate.Reset(ctx, cand); err != nil {
					b.Fatal(err)
				}
				if err := gate.CheckCheckout(ctx, cand); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Land(ctx, cand, fmt.Sprintf("TASK-%d\n\nOrchestrator-Task: TASK-%d\n", i, i)); err != nil {
					b.Fatal(err)
				}
				r.EditedLandings(ctx)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				attempt(i, true)
			}
			b.StopTimer()
			b.ReportMetric(float64(countGit(b, func() { attempt(b.N, false) })), "git-procs")
		})
	}
}

// countGit returns how many git processes f starts: a git on PATH that notes each call
// before it runs the real one.
func countGit(b *testing.B, f func()) int {
	b.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	calls := filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", calls, real)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	path := os.Getenv("PATH")
	os.Setenv("PATH", dir+string(filepath.ListSeparator)+path)
	defer os.Setenv("PATH", path)
	f()
	out, _ := os.ReadFile(calls)
	return bytes.Count(out, []byte("\n"))
}

// BenchmarkSlotFirstUse times a slot's first checkout (git worktree add), which reuse
// saves on every later attempt.
func BenchmarkSlotFirstUse(b *testing.B) {
	ctx := context.Background()
	_, r := benchRepo(b, 10000)
	head, _ := r.Head(ctx)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := r.Slot(ctx, fmt.Sprintf("job-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Reset(ctx, head); err != nil {
			b.Fatal(err)
		}
	}
}
