package gate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/internal/python3"
	"github.com/orchestrator/orchestrator/testrun"
)

//go:embed pynone.py
var pyNonePy string

// pyNoneAttrRE reads the attribute of an AttributeError on None: "'NoneType' object has no
// attribute 'named'".
var pyNoneAttrRE = lazyre.New(`AttributeError: 'NoneType' object has no attribute '(\w+)'`)

// pyNoneFromCode reports whether the None a test's own line read an attribute of came from
// the code under test (SPEC §7.2): the name read on that line was last assigned, before it,
// from a call of a module of the project that is not a test file. `r = parse.parse(…)` then
// `r.named` at the base, where parse returns None for what it cannot parse yet, fails on the
// implementation's answer: a RED for the right reason, not a test that fails before it
// calls the implementation. The file is read as the candidate committed it (Contents),
// never as the run left it in the checkout, and parsed by Python's own ast, never imported.
func pyNoneFromCode(ctx context.Context, in Input, globs []string, t testrun.Test, file string, line int) (string, bool) {
	m := pyNoneAttrRE().FindStringSubmatch(t.Output)
	if m == nil || in.Contents == nil {
		return "", false
	}
	_, src, err := in.Contents(file)
	if err != nil || src == nil {
		return "", false
	}
	python, err := python3.Path()
	if err != nil {
		return "", false
	}
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", pyNonePy, strconv.Itoa(line), m[1])
	cmd.Stdin = bytes.NewReader(src)
	out, err := cmd.Output()
	var modules []string
	if err != nil || json.Unmarshal(out, &modules) != nil {
		return "", false
	}
	for _, mod := range modules {
		if f := projectModule(in.Contents, mod); f != "" && !testrun.IsTestFile(f, globs) && path.Base(f) != "conftest.py" {
			return fmt.Sprintf("%s (module %s)", f, mod), true
		}
	}
	return "", false
}

// projectModule returns the file of a module of the project as the candidate has it ("" when
// the module is not the project's: the standard library's, an installed package's).
func projectModule(contents Contents, module string) string {
	rel := strings.ReplaceAll(module, ".", "/")
	for _, base := range []string{"", "src"} {
		for _, f := range []string{rel + ".py", rel + "/__init__.py"} {
			p := path.Join(base, f)
			if _, after, err := contents(p); err == nil && after != nil {
				return p
			}
		}
	}
	return ""
}
