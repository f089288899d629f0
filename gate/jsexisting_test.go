package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/orchestrator/orchestrator/testrun"
)

// A JavaScript test that a change rewrote is judged by its run, by the title vitest and
// jest report: allowed when it fails at the base (it states new behaviour), refused when it
// still passes there or did not run. A title that names two tests in the file is never
// taken for the one that failed.
func TestJSChangedTestJudgedByItsRun(t *testing.T) {
	const file = "test/url.test.ts"
	before := "describe('withBase', () => {\n  it('joins', () => {\n    expect(withBase('/a', '/b')).toBe('/b/a')\n  })\n  it('gone', () => {})\n})\n" +
		"describe('a', () => { test('twice', () => { expect(f()).toBe(1) }) })\ndescribe('b', () => { test('twice', () => { expect(f()).toBe(2) }) })\n"
	after := "describe('withBase', () => {\n  it('joins', () => {\n    expect(withBase('/admin-x', '/admin')).toBe('/admin/admin-x')\n  })\n})\n" +
		"describe('a', () => { test('twice', () => { expect(f()).toBe(1) }) })\ndescribe('b', () => { test('twice', () => { expect(true).toBe(true) }) })\n"
	// The red rules read a changed JavaScript file this way.
	v := &Verdict{}
	in := Input{Contents: func(string) ([]byte, []byte, error) { return []byte(before), []byte(after), nil }}
	read, err := v.checkExisting(context.Background(), in, []string{file})
	if err != nil || len(read.changed) != 1 || read.changed[0].Name != "joins" {
		t.Fatalf("checkExisting: changed %v, lost %q, err %v; want joins changed", read.changed, read.lost, err)
	}
	lost, changed := existingUnits(file, []byte(before), []byte(after))
	if len(changed) != 1 || changed[0].Name != "joins" {
		t.Fatalf("changed = %v, want joins alone (twice names two tests)", changed)
	}
	if got := strings.Join(lost, "; "); !strings.Contains(got, "gone deleted") || !strings.Contains(got, "twice#2 changed") {
		t.Errorf("lost = %q, want gone deleted and twice#2 changed", lost)
	}
	for _, tt := range []struct {
		name   string
		status testrun.Status
		id     string
		file   string
		pass   bool
	}{
		{"fails at the base", testrun.Failed, file + " > withBase > joins", file, true},
		{"fails, the runner's file relative to a project folder", testrun.Failed, "url.test.ts > withBase > joins", "url.test.ts", true},
		{"still passes at the base", testrun.Passed, file + " > withBase > joins", file, false},
		{"another file's test of that title fails", testrun.Failed, "test/other.test.ts > withBase > joins", "test/other.test.ts", false},
		{"a longer title that ends alike fails", testrun.Failed, file + " > withBase > rejoins", file, false},
		{"no file reported", testrun.Failed, "withBase > joins", "", false},
	} {
		res := &testrun.Result{Tests: []testrun.Test{{ID: tt.id, File: tt.file, Status: tt.status}}}
		v := &Verdict{}
		got := v.checkChanged(Input{}, res, changed)
		if (got == nil) != tt.pass {
			t.Errorf("%s: refused %v, want pass %v", tt.name, got != nil, tt.pass)
		}
		if tt.pass && (len(v.ChangedTests) != 1 || v.ChangedTests[0] != file+":joins") {
			t.Errorf("%s: ChangedTests = %q", tt.name, v.ChangedTests)
		}
	}
}
