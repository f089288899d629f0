package agents

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/markers"
	"github.com/orchestrator/orchestrator/queue"
)

// ReplayMain is the replay agent: a scripted agent with no model, for demos and tests of
// the whole loop. The orchestrator binary runs it as its hidden subcommand
// `orchestrator __replay --from DIR`, with the prompt on standard input (read and ignored)
// and the usual ORCHESTRATOR_* variables. It applies the recording of the task's attempt
// (the layout is in the package documentation) and returns the exit code: 0, the recorded
// one, 1 when the recording cannot be applied, 2 for bad usage. Messages go to standard
// error, which is the attempt's agent.log.
func ReplayMain(args []string, stdin io.Reader, stdout io.Writer) int {
	flags := flag.NewFlagSet(ReplaySubcommand, flag.ContinueOnError)
	flags.SetOutput(os.Stderr)
	from := flags.String("from", DefaultReplayDir, "folder of recordings, relative to ORCHESTRATOR_ROOT")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "replay: unexpected arguments %q\n", flags.Args())
		return 2
	}
	if stdin != nil {
		// Read the whole prompt, so that the orchestrator's write of it never fails.
		io.Copy(io.Discard, stdin)
	}
	code, err := replay(*from, stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		return 1
	}
	return code
}

func replay(from string, stdout io.Writer) (int, error) {
	id := os.Getenv("ORCHESTRATOR_TASK_ID")
	if !queue.ValidID(id) {
		return 0, fmt.Errorf("ORCHESTRATOR_TASK_ID %q is not a task ID", id)
	}
	root := os.Getenv("ORCHESTRATOR_ROOT")
	if root == "" {
		var err error
		if root, err = os.Getwd(); err != nil {
			return 0, err
		}
	}
	attempt := 1
	if dir := os.Getenv("ORCHESTRATOR_ATTEMPT_DIR"); dir != "" {
		n, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("ORCHESTRATOR_ATTEMPT_DIR %s: the folder's name is not an attempt number", dir)
		}
		attempt = n
	}
	markerDir := os.Getenv("ORCHESTRATOR_MARKER_DIR")
	if markerDir == "" {
		markerDir = queue.Layout{Root: root}.Markers()
	}
	if !filepath.IsAbs(from) {
		from = filepath.Join(root, from)
	}
	rec, err := findRecording(filepath.Join(from, id), attempt)
	if err != nil {
		return 0, err
	}

	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if err := copyFiles(r, filepath.Join(rec, "files")); err != nil {
		return 0, err
	}
	if err := deleteFiles(r, filepath.Join(rec, "delete")); err != nil {
		return 0, err
	}
	if b, err := os.ReadFile(filepath.Join(rec, "result.md")); err == nil {
		if _, err := stdout.Write(b); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	// The marker comes last: once it exists, the orchestrator may end us.
	if b, err := os.ReadFile(filepath.Join(rec, "marker")); err == nil {
		word := strings.TrimSpace(string(b))
		if word != string(markers.Done) && word != string(markers.Failed) {
			return 0, fmt.Errorf("%s: want done or failed, got %q", filepath.Join(rec, "marker"), clip(word, 40))
		}
		if err := markers.Write(markerDir, id, markers.Kind(word), []byte(word+"\n")); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if b, err := os.ReadFile(filepath.Join(rec, "exit")); err == nil {
		code, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || code < 0 || code > 255 {
			return 0, fmt.Errorf("%s: want an exit code 0-255, got %q", filepath.Join(rec, "exit"), clip(string(b), 40))
		}
		return code, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return 0, nil
}

// findRecording returns taskDir/<attempt>, or else the recorded attempt with the highest
// number below it.
func findRecording(taskDir string, attempt int) (string, error) {
	entries, err := os.ReadDir(taskDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	best := 0
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 1 || n > attempt || !e.IsDir() || strconv.Itoa(n) != e.Name() {
			continue
		}
		best = max(best, n)
	}
	if best == 0 {
		return "", fmt.Errorf("no recording for attempt %d or an earlier one in %s", attempt, taskDir)
	}
	return filepath.Join(taskDir, strconv.Itoa(best)), nil
}

// copyFiles copies every file under src to the same relative path in r, creating folders.
// r is an os.Root: no path in the recording can write outside the repository, even through
// a symbolic link in it.
func copyFiles(r *os.Root, src string) error {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if rel == "." {
				return nil
			}
			return r.MkdirAll(rel, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := r.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
				return err
			}
			return r.WriteFile(rel, b, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: only files and folders can be replayed", path)
		}
	})
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(src); errors.Is(statErr, fs.ErrNotExist) {
			return nil // no files/ folder: nothing to copy
		}
	}
	return err
}

// deleteFiles removes from r every path listed in the file list, one a line, relative to
// the repository root; blank lines and lines starting with # are skipped.
func deleteFiles(r *os.Root, list string) error {
	b, err := os.ReadFile(list)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		p = filepath.Clean(filepath.FromSlash(p))
		if p == "." {
			return fmt.Errorf("%s: refusing to delete the repository root", list)
		}
		if err := r.RemoveAll(p); err != nil {
			return fmt.Errorf("%s: %w", list, err)
		}
	}
	return nil
}
