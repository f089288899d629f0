package gate

import (
	"fmt"
	"path"
	"strings"

	"github.com/orchestrator/orchestrator/testrun"
)

// checkExisting refuses a test writer's change to a test that was already there (SPEC §7.2):
// a test deleted, changed or skipped, in any of the test files it changed, is a
// scope_violation. A test writer may add tests and test support; an existing test file may
// only gain tests. Without Contents (no base to compare with) it checks nothing.
func (v *Verdict) checkExisting(in Input, files []string) (*Verdict, error) {
	if in.Contents == nil {
		return nil, nil
	}
	var found []string
	for _, f := range files {
		before, after, err := in.Contents(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		if lines := existingTests(f, before, after); len(lines) > 0 {
			if v.File == "" {
				v.File = f
			}
			found = append(found, lines...)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	return v.fail(TypeScope, "scope_violation: a test writer may add tests, not change, skip or delete the tests already there: %s", strings.Join(found, "; ")), nil
}

// raisedInTest refuses a RED whose failing test fails by a panic or an exception raised in
// test code (a test file, conftest.py), not by an assertion or in the code under test: the
// test is broken, and it says nothing of the implementation (SPEC §7.2). It reads the
// failures of the agent's tests (mine) only.
func (v *Verdict) raisedInTest(in Input, res *testrun.Result, mine []testrun.Test) *Verdict {
	globs := in.Globs
	if globs == nil {
		globs = testrun.DefaultGlobs
	}
	for _, t := range mine {
		file, line, kind, ok := testrun.Origin(res.Runner, t, in.Root)
		if !ok || !(testrun.IsTestFile(file, globs) || path.Base(file) == "conftest.py") {
			continue
		}
		v.FailingTest, v.File = t.ID, file
		return v.fail(TypeBrokenTest, "false RED: %s fails by a %s raised in the test's own code (%s:%d), not by an assertion or in the code under test", t.ID, kind, file, line)
	}
	return nil
}
