package spotcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/orchestrator/orchestrator/seal"
)

// The spot check's records (SPEC §15.2 item 4). What a spot check decided is evidence:
// `status` shows a QA task's last decision, and a reviewer is told what the last mutation
// of a BUILD task's landed change found. Both live in the orchestrator's state, under qa/,
// sealed with the person's key like every other record the orchestrator reads back: a
// decision turned from FAIL to PASS, or a mutation result whose survivors were taken out,
// by anything but the orchestrator fails its seal, and is not evidence. A sealed record
// copied to another task's name is not evidence either. The report under
// .orchestrator/reports/ is the readable copy, for people, and is never read back.

// A Decision is a QA task's last spot-check decision, as recorded.
type Decision struct {
	Task     string `json:"task"`
	Decision string `json:"decision"`
	Commit   string `json:"commit"`
	At       string `json:"at"`
}

// DecisionPath returns where the last spot-check decision of a QA task is recorded.
func DecisionPath(state, task string) string {
	return filepath.Join(state, "qa", task+".spotcheck.json")
}

// MutationPath returns where the last mutation result of a BUILD task is recorded.
func MutationPath(state, task string) string {
	return filepath.Join(state, "qa", task+".json")
}

// writeRecord writes v as a JSON record of kind at path, sealed with key, replacing the
// file whole.
func writeRecord(key *seal.Key, kind, path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if b, err = key.SealJSON(kind, b); err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readRecord reads the record of kind at path into v, checking its seal with key and that
// it is task's. A record whose seal is missing or does not match, or that names another
// task, is an *seal.EditedError naming path; a missing file is fs.ErrNotExist.
func readRecord(key *seal.Key, kind, path, task string, v any, taskOf func() string) error {
	doc, err := key.ReadJSON(kind, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(doc, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if got := taskOf(); got != task {
		// Sealed, but another task's: copied here.
		return &seal.EditedError{Record: path, Err: fmt.Errorf("%w: it is the record of %s, not of %s", seal.ErrBroken, got, task)}
	}
	return nil
}

// ReadDecision returns the last spot-check decision of a QA task, nil when none was
// recorded. A record that is not evidence is an *seal.EditedError naming its file and what
// is wrong with it.
func ReadDecision(key *seal.Key, state, task string) (*Decision, error) {
	var d Decision
	err := readRecord(key, seal.KindSpot, DecisionPath(state, task), task, &d, func() string { return d.Task })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// ReadMutation returns the last mutation result of a BUILD task's landed change, nil when
// no spot check mutated it. A record that is not evidence is an *seal.EditedError naming
// its file and what is wrong with it.
func ReadMutation(key *seal.Key, state, task string) (*MutationResult, error) {
	var m MutationResult
	err := readRecord(key, seal.KindMutation, MutationPath(state, task), task, &m, func() string { return m.Task })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// EditedRecords checks every spot-check record of the orchestrator's state with key and
// returns those that are not evidence, each an *seal.EditedError naming its file.
func EditedRecords(key *seal.Key, state string, audit *seal.Audit) []error {
	entries, _ := os.ReadDir(filepath.Join(state, "qa"))
	var out []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		err := audit.Check(filepath.Join(state, "qa", name), func() (err error) {
			if task, ok := strings.CutSuffix(name, ".spotcheck.json"); ok {
				_, err = ReadDecision(key, state, task)
			} else {
				_, err = ReadMutation(key, state, strings.TrimSuffix(name, ".json"))
			}
			return err
		})
		var ee *seal.EditedError
		if errors.As(err, &ee) {
			out = append(out, ee)
		}
	}
	return out
}
