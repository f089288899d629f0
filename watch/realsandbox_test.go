package watch_test

// Real projects still pass with the gate in its sandbox (issue 23): a Go module of several
// packages whose tests read testdata/, a pytest project whose configuration in
// pyproject.toml names the plugins it needs, and a vitest project, each with an honest
// TEST→BUILD pair, agents and gate sandboxed.

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSandboxedRealProjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, fixture, command string
		setup                  map[string]string // committed before the run
		remove                 []string
		red, green             map[string]string
	}{
		{
			name: "go packages and testdata", fixture: "gomod", command: goTest,
			setup: map[string]string{"cart/testdata/discounts.txt": "1000 10 900\n2000 25 1500\n"},
			red: map[string]string{"cart/discount_test.go": `package cart

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"example.com/shop/money"
)

func TestDiscount_UNIT_001(t *testing.T) {
	b, err := os.ReadFile("testdata/discounts.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c, p, want int64
		if _, err := fmt.Sscan(line, &c, &p, &want); err != nil {
			t.Fatal(err)
		}
		if got := Discount(money.Cents(c), p); got != money.Cents(want) {
			t.Errorf("Discount(%d, %d%%) = %d, want %d", c, p, got, want)
		}
	}
}
`},
			green: goGreenFiles,
		},
		{
			name: "pytest with plugins in pyproject.toml", fixture: "pyproj", command: pyTest,
			remove: []string{"pytest.ini"},
			setup: map[string]string{"pyproject.toml": `[project]
name = "shop"
version = "0.1.0"

[tool.pytest.ini_options]
required_plugins = ["pytest-timeout"]
addopts = "--strict-markers"
timeout = 120
testpaths = ["tests"]
`},
			red: map[string]string{"tests/test_discount.py": `import pytest

from shop.discount import discount


@pytest.mark.timeout(30)
def test_unit_001_discount():
    assert discount(1000, 10) == 900
`},
			green: pyGreenFiles,
		},
		{
			name: "vitest", fixture: "tsproj", command: "npx vitest run",
			red: tsRedFiles,
			green: map[string]string{"src/discount.ts": `import { percent } from './money'

export function discount(cents: number, p: number): number {
  return cents - percent(cents, p)
}
`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			switch tt.fixture {
			case "pyproj":
				needPytest(t)
			case "tsproj":
				needVitest(t)
			}
			red, green := files(t, tt.red), files(t, tt.green)
			r := newRealRepo(t, tt.fixture, tt.command, redGreenVerify()[:2], map[string][]string{
				"writer":  slowAgent("test-writer", time.Second, 0, red),
				"builder": slowAgent("implementer", time.Second, 0, green),
			}, "retries: {max_retries: 2}\n")
			for rel, text := range tt.setup {
				r.write(rel, text)
			}
			for _, rel := range tt.remove {
				if err := os.Remove(filepath.Join(r.root, rel)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fixture == "tsproj" {
				linkTSModules(t, r.root)
			}
			r.commitAll()
			r.sandboxed(red, green, filepath.Dir(r.starts))
			code, out := r.run("watch", "--once")
			st := r.statuses()
			if code != 0 || st["TASK-T01"] != "completed" || st["TASK-001"] != "completed" {
				t.Fatalf("exit %d, TASK-T01 %q, TASK-001 %q; want 0, both completed%s%s\n%s", code, st["TASK-T01"], st["TASK-001"],
					r.describeAttempts("TASK-T01"), r.describeAttempts("TASK-001"), out)
			}
			if n := len(r.attemptDirs("TASK-001")); n != 1 {
				t.Errorf("TASK-001 took %d attempts, want 1%s", n, r.describeAttempts("TASK-001"))
			}
		})
	}
}

// tsRedFiles is the TEST task's new vitest test of the tsproj fixture: it fails at the base,
// which has no src/discount.ts.
var tsRedFiles = map[string]string{"src/discount.test.ts": `import { describe, expect, it } from 'vitest'
import { discount } from './discount'

describe('discount', () => {
  it('unit 001 takes the share off', () => {
    expect(discount(1000, 10)).toBe(900)
  })
})
`}

// linkTSModules links the runner tests' installed node_modules (vitest) into a tsproj
// repository at root, where its .gitignore keeps it out of every commit.
func linkTSModules(t *testing.T, root string) {
	t.Helper()
	nm, err := filepath.Abs(filepath.Join("..", "testrun", "testdata", "projects", "ts", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(nm, filepath.Join(root, "node_modules")); err != nil {
		t.Fatal(err)
	}
}

// needVitest skips the test where the vitest of the runner tests' fixture is not installed
// (testrun/testdata/install-deps.sh installs it), and fails it under CI=true.
func needVitest(t *testing.T) {
	t.Helper()
	bin := filepath.Join("..", "testrun", "testdata", "projects", "ts", "node_modules", ".bin", "vitest")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("vitest is required under CI=true: %v (run make test-deps)", err)
		}
		t.Skipf("vitest not installed: %v", err)
	}
}
