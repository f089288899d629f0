package gate

import (
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/testrun"
)

// TestRustChangedTestJudgedByItsRun: a Rust test a test writer changed is judged like Go's
// and Python's: failing at the base (it states new behaviour) it lands and is named;
// passing there it is a scope_violation; a deleted one is lost whatever the run says.
func TestRustChangedTestJudgedByItsRun(t *testing.T) {
	before := "#[test]\nfn test_with_sysroot() {\n    assert!(probe(\"core\"));\n}\n\n#[test]\nfn test_gone() {}\n"
	after := "#[test]\nfn test_with_sysroot() {\n    assert!(probe(\"autocfg\"));\n}\n"
	lost, changed := existingUnits("tests/rustflags.rs", []byte(before), []byte(after))
	if len(changed) != 1 || changed[0].Name != "test_with_sysroot" {
		t.Fatalf("changed = %v, want test_with_sysroot", changed)
	}
	if len(lost) != 1 || !strings.Contains(lost[0], "test_gone deleted") {
		t.Errorf("lost = %q, want test_gone deleted", lost)
	}
	for _, tt := range []struct {
		status testrun.Status
		id     string
		pass   bool
	}{
		{testrun.Failed, "test_with_sysroot", true},
		{testrun.Failed, "tests::test_with_sysroot", true},
		{testrun.Passed, "test_with_sysroot", false},
		{testrun.Failed, "test_with_sysroot_too", false}, // another test: this one did not run
	} {
		res := &testrun.Result{Tests: []testrun.Test{{ID: tt.id, File: "tests/rustflags.rs", Status: tt.status}}}
		v := &Verdict{}
		got := v.checkChanged(Input{}, res, changed)
		if (got == nil) != tt.pass {
			t.Errorf("%s %s: refused %v, want pass %v", tt.id, tt.status, got != nil, tt.pass)
		}
		if tt.pass && (len(v.ChangedTests) != 1 || v.ChangedTests[0] != "tests/rustflags.rs:test_with_sysroot") {
			t.Errorf("%s: ChangedTests = %q", tt.id, v.ChangedTests)
		}
	}
}
