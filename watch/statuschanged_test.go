package watch_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkStatusChanged checks what `orchestrator status` says of the existing tests that the
// landing of the TEST task id changed (SPEC §7.2, issue 24): the table's CHANGED TESTS
// column and status --json's changed_tests name trailer, the landing's
// Orchestrator-Changed-Tests trailer ("" for none: then the column is not there at all).
//
// Then the cheats on the record status reads it from, the task's RED hand-off: its
// readable copy under .orchestrator/runs rewritten to name nothing changes nothing (status
// reads the sealed record in the orchestrator's state); the sealed record itself rewritten
// is not evidence: status names no changed test from it and warns that the state was
// edited.
func checkStatusChanged(t *testing.T, r *realRepo, id, trailer string) {
	t.Helper()
	want := strings.Split(trailer, ", ")
	if trailer == "" {
		want = nil
	}
	check := func(when string, want []string) {
		t.Helper()
		code, out := r.run("status")
		if code != 0 {
			t.Fatalf("%s: status: exit %d\n%s", when, code, out)
		}
		header, _, _ := strings.Cut(out, "\n")
		if hasCol := strings.Contains(header, "CHANGED TESTS"); hasCol != (want != nil) {
			t.Errorf("%s: status's header %q: want the CHANGED TESTS column %v\n%s", when, header, want != nil, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, id+" ") && want != nil && !strings.HasSuffix(line, "  "+strings.Join(want, ", ")) {
				t.Errorf("%s: status's row of %s does not end in the changed tests %q:\n%s", when, id, want, out)
			}
		}
		code, out = r.run("status", "--json")
		if code != 0 {
			t.Fatalf("%s: status --json: exit %d\n%s", when, code, out)
		}
		var rep struct {
			Tasks []struct {
				ID           string   `json:"id"`
				ChangedTests []string `json:"changed_tests"`
			} `json:"tasks"`
			EditedState []string `json:"edited_state"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: status --json: %v\n%s", when, err, out)
		}
		for _, tk := range rep.Tasks {
			if tk.ID == id && strings.Join(tk.ChangedTests, ", ") != strings.Join(want, ", ") {
				t.Errorf("%s: status --json: %s's changed_tests = %q, want %q", when, id, tk.ChangedTests, want)
			}
		}
	}
	check("after the landing", want)
	if trailer == "" {
		return
	}
	rewrite := func(path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.ReplaceAll(string(b), trailer[:strings.Index(trailer, ":")], "elsewhere_test.go")
		if edited == string(b) {
			t.Fatalf("%s does not name %s", path, trailer)
		}
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(filepath.Join(r.root, ".orchestrator", "runs", id, "1", "handoff-red.json"))
	check("its readable copy rewritten", want)
	rewrite(filepath.Join(r.root, ".git", "orchestrator", "runs", id, "1", "handoff-red.json"))
	check("its sealed record rewritten", nil)
	if _, out := r.run("status"); !strings.Contains(out, "warning: orchestrator state was edited outside the orchestrator") || !strings.Contains(out, "handoff-red.json") {
		t.Errorf("status does not warn of the rewritten RED hand-off:\n%s", out)
	}
}
