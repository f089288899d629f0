package watch_test

// Issue 25's "An agent that writes another task's marker changes nothing" (SPEC §15.2 item
// 2: each agent's marker is the only marker it can write): two tasks at once, one agent
// forging the other's done marker while the other still works.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// forgerAgent waits until TASK-002's agent works, then writes TASK-002.done where it can
// think of: its own marker folder (the one it sees), the person's marker folder
// (.orchestrator/complete) and the private marker folder TASK-002's agent has in the
// orchestrator's state, beside its own. It prints each path and whether its write
// succeeded (in the sandbox the last two succeed too, in the empty throwaway folders that
// stand for the hidden ones), then tells TASK-002's agent and claims its own task done
// with honest work. With forge off it only does its work.
func forgerAgent(side string, forge bool) []string {
	sh := `ROOT="${ORCHESTRATOR_ATTEMPT_DIR%/.git/orchestrator/runs/*}"
until [ -f "$SIDE/b-started" ]; do sleep 0.02; done
forge() { if mkdir -p "$(dirname "$1")" 2>/dev/null && echo done > "$1" 2>/dev/null; then echo "FORGED: $1"; else echo "REFUSED: $1"; fi; }
`
	if forge {
		sh += `forge "$ORCHESTRATOR_MARKER_DIR/TASK-002.done"
forge "$ROOT/.orchestrator/complete/TASK-002.done"
forge "${ORCHESTRATOR_ATTEMPT_DIR%/TASK-001/*}/TASK-002/1/markers/TASK-002.done"
`
	}
	sh += `touch "$SIDE/a-forged"
`
	sh = strings.ReplaceAll(sh, "$SIDE", side)
	return append(scriptAgent(sh), "TESTAGENT_WRITE=a.txt=A's work")
}

// workerAgent is TASK-002's agent: it writes its work (which passes its gate), says where
// its marker folder is, and works on until the test tells it to go; then it ends with its
// own claim: done when claim is set, else none (it exits 1 without a marker).
func workerAgent(side string, claim bool) []string {
	end := "exit 1"
	if claim {
		end = "exit 0"
	}
	sh := strings.ReplaceAll(`echo "MY-MARKERS: $ORCHESTRATOR_MARKER_DIR"
touch "$SIDE/b-started"
until [ -f "$SIDE/go" ]; do sleep 0.02; done
echo "B-END"
`, "$SIDE", side) + end + "\n"
	return append(scriptAgent(sh), "TESTAGENT_WRITE=b.txt=B's work")
}

// TestAgentWritesOtherMarker: at --jobs 2, TASK-001's agent writes TASK-002's done marker
// while TASK-002's agent works: in the marker folder it sees, in the person's marker
// folder, and in the private marker folder TASK-002's agent writes (the path its marker
// would have). TASK-002's work passes its gate; only its claim is missing, since its agent
// ends without one once TASK-001 landed. In the sandbox TASK-002 is decided by its own
// agent alone: not completed (no claim), nothing of it landed, no TASK-002 marker anywhere
// but what its own agent wrote. TASK-001 still lands its honest work.
//
// Without the sandbox (the control) the forged marker in the shared folder completes
// TASK-002 — the cheat is real where the sandbox does not stop it. The honest twin, in
// the sandbox: TASK-001 forges nothing and TASK-002 claims done; both land.
func TestAgentWritesOtherMarker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		sandbox, forge  bool
		claim           bool // TASK-002's agent claims done
		wantB           string
		wantBLandedWork bool
	}{
		{"forger in the sandbox", true, true, false, "", false},
		{"forger without the sandbox", false, true, false, "completed", true},
		{"honest twin", true, false, true, "completed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			side := t.TempDir()
			r := newRepo(t, []task{
				{id: "TASK-001", category: "backend", agent: "forger", testCommand: "test -f a.txt"},
				{id: "TASK-002", category: "backend", agent: "worker", testCommand: "test -f b.txt"},
			}, map[string][]string{
				"forger": forgerAgent(side, tc.forge),
				"worker": workerAgent(side, tc.claim),
			}, "")
			if tc.sandbox {
				r.sandboxed(side)
			}
			r.commitAll()

			c := r.cmd("watch", "--once", "--jobs", "2")
			var out strings.Builder
			c.Stdout, c.Stderr = &out, &out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			// Right after the forgery, while TASK-002's agent still works: in the sandbox
			// no TASK-002 marker is in the person's marker folder nor in the private one
			// of TASK-002's agent (the loop would forward one from there at once).
			r.waitFor("the forger never wrote", func() bool {
				_, err := os.Stat(filepath.Join(side, "a-forged"))
				return err == nil
			})
			if tc.sandbox && tc.forge {
				for _, p := range []string{
					filepath.Join(r.root, ".orchestrator", "complete", "TASK-002.done"),
					filepath.Join(r.root, ".git", "orchestrator", "runs", "TASK-002", "1", "markers", "TASK-002.done"),
				} {
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("the forged marker reached %s", p)
					}
				}
				if _, err := os.Stat(filepath.Join(r.root, ".git", "orchestrator", "runs", "TASK-002", "1", "markers")); err != nil {
					t.Errorf("TASK-002's agent has no private marker folder while it works: %v", err)
				}
			}
			// TASK-002's agent works on until TASK-001 has landed, and then ends.
			r.waitStatus("TASK-001", "completed")
			writeFile(t, filepath.Join(side, "go"), "")
			_ = waitCmd(t, c, time.Minute)

			st := r.statuses()
			if st["TASK-001"] != "completed" || r.read("a.txt") != "A's work" {
				t.Errorf("TASK-001 is %q, want completed with its work landed%s\n%s", st["TASK-001"], evidence(r, "TASK-001", 1), out.String())
			}
			if got := st["TASK-002"]; (got == "completed") != (tc.wantB == "completed") {
				t.Errorf("TASK-002 is %q, want %s%s\n%s", got, orWord(tc.wantB, "anything but completed"), evidence(r, "TASK-002", 1), out.String())
			}
			_, err := os.Stat(filepath.Join(r.root, "b.txt"))
			if landed := err == nil; landed != tc.wantBLandedWork {
				t.Errorf("TASK-002's work in the person's tree: %v, want %v", landed, tc.wantBLandedWork)
			}
			forger := r.read(filepath.Join(".orchestrator", "runs", "TASK-001", "1", "agent.log"))
			worker := r.read(filepath.Join(".orchestrator", "runs", "TASK-002", "1", "agent.log"))
			if !strings.Contains(forger, "FORGED: ") && tc.forge {
				t.Errorf("the forger wrote no marker at all: it does not forge\n%s", forger)
			}
			if !tc.forge || !tc.sandbox {
				return
			}
			// The forger aimed at the right places: the person's marker folder and the
			// private one TASK-002's agent was given.
			_, mine, _ := strings.Cut(worker, "MY-MARKERS: ")
			mine, _, _ = strings.Cut(mine, "\n")
			for _, p := range []string{filepath.Join(r.root, ".orchestrator", "complete", "TASK-002.done"), filepath.Join(mine, "TASK-002.done")} {
				if !strings.Contains(forger, ": "+p+"\n") {
					t.Errorf("the forger did not aim at %s:\n%s", p, forger)
				}
			}
			if !strings.Contains(worker, "B-END") {
				t.Errorf("TASK-002's agent was stopped before it ended by itself:\n%s", worker)
			}
			if commits := r.git("log", "--format=%s", "main"); strings.Contains(commits, "TASK-002") {
				t.Errorf("TASK-002 landed:\n%s", commits)
			}
			res := evidence(r, "TASK-002", 1)
			if strings.Contains(res, `"outcome": "verified"`) || strings.Contains(res, `"outcome": "landed"`) {
				t.Errorf("TASK-002's attempt was verified:\n%s", res)
			}
			t.Logf("the forger's writes:\n%s\nTASK-002's attempt: %s", grepLines(forger, "FORGED: ", "REFUSED: "), grepLines(res, `"outcome"`, `"reason"`))
		})
	}
}

func orWord(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// grepLines returns the lines of text that hold one of subs.
func grepLines(text string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
