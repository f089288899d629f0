#!/usr/bin/env bash
# record.sh re-records the runner outputs in this folder: each failure twice, in two fresh
# temp folders (so paths, timings, addresses and goroutine numbers differ), plus failures of
# other kinds. It needs go, python3-pytest (Debian: /usr/bin/python3 -m pytest), node with
# vitest and jest (npm; JSDEPS names a folder whose node_modules has them) and cargo.
#
#   JSDEPS=/tmp/rec/js ./record.sh
#
# Each file is the combined stdout and stderr of one run, as a gate log holds it.
set -u
out=$(cd "$(dirname "$0")" && pwd)
JSDEPS=${JSDEPS:?set JSDEPS to a folder whose node_modules has vitest and jest}
PYTEST="/usr/bin/python3 -m pytest"

run() { # run NAME DIR CMD...: run CMD in DIR, save its output as NAME.txt
	local name=$1 dir=$2
	shift 2
	(cd "$dir" && "$@") >"$out/$name.txt" 2>&1
	echo "$name: exit $?"
}

# --- go test -----------------------------------------------------------------------------
gomod() { # gomod DIR: a module with a slow, failing config loader test and a panicking one
	mkdir -p "$1/calc"
	cat >"$1/go.mod" <<'G'
module example.com/calc

go 1.22
G
	cat >"$1/calc/calc.go" <<'G'
package calc

import (
	"os"
	"strings"
	"time"
)

// Entries counts the non-empty lines of a config file, slowly.
func Entries(path string) (int, error) {
	time.Sleep(3 * time.Millisecond)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n - 1, nil // the bug
}

type cache struct{ m map[string]*int }

// Put stores v under k.
func Put(k string, v int) { var c cache; c.m[k] = &v }
G
	cat >"$1/calc/calc_test.go" <<'G'
package calc

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestEntries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "app.conf")
	os.WriteFile(p, []byte("a=1\nb=2\n# c\nd=4\ne=5\n"), 0o644)
	start := time.Now()
	n, err := Entries(p)
	if err != nil || n != 4 {
		t.Errorf("Entries(%s) = %d, %v after %v; want 4", p, n, err, time.Since(start))
	}
}

func TestPut(t *testing.T) { Put("k", 1) }

// TestBusy starts goroutines, so that the goroutine numbers of later tests move.
func TestBusy(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(time.Millisecond) }()
	}
	wg.Wait()
}
G
}
for r in 1 2; do
	d=$(mktemp -d)
	gomod "$d"
	run "go-entries-run$r" "$d" go test ./...
	if [ $r = 1 ]; then
		run "go-panic-run$r" "$d" go test -run 'TestPut' ./...
	else
		run "go-panic-run$r" "$d" go test -run 'TestBusy|TestPut' ./...
	fi
	# The same assertion failure in verbose mode, where the message comes before --- FAIL.
	[ $r = 1 ] && run "go-entries-verbose" "$d" go test -v -run 'TestEntries|TestBusy' ./...
done
# Another wrong value from the same test: a different failure.
d=$(mktemp -d)
gomod "$d"
sed -i 's/return n - 1, nil/return n + 1, nil/' "$d/calc/calc.go"
run go-entries-plus "$d" go test -run TestEntries ./...
# A build failure: the test calls a function that does not exist yet.
d=$(mktemp -d)
gomod "$d"
printf 'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal("no")\n\t}\n}\n' >"$d/calc/add_test.go"
run go-undefined "$d" go test ./...

# --- pytest ------------------------------------------------------------------------------
pyproj() {
	cat >"$1/cfg.py" <<'P'
def entries(path):
    with open(path) as f:
        return len([l for l in f if l.strip() and not l.startswith("#")]) - 1
P
	cat >"$1/test_cfg.py" <<'P'
from cfg import entries


def test_entries(tmp_path):
    p = tmp_path / "app.conf"
    p.write_text("a=1\nb=2\n# c\nd=4\ne=5\n")
    n = entries(p)
    assert n == 4, f"read {p}: got {n} entries"
P
}
for r in 1 2; do
	d=$(mktemp -d)
	pyproj "$d"
	run "pytest-entries-run$r" "$d" $PYTEST -p no:cacheprovider
done
d=$(mktemp -d)
pyproj "$d"
printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n' >"$d/test_calc.py"
run pytest-import "$d" $PYTEST -p no:cacheprovider test_calc.py

# --- vitest and jest ---------------------------------------------------------------------
jsproj() {
	ln -s "$JSDEPS/node_modules" "$1/node_modules"
	printf '{"type":"module"}\n' >"$1/package.json"
	printf 'export function sum(a, b) {\n  return a + b + 1\n}\n' >"$1/sum.js"
	printf "import { describe, expect, it } from 'vitest'\nimport { sum } from './sum.js'\n\ndescribe('sum', () => {\n  it('adds', () => {\n    expect(sum(2, 2)).toBe(4)\n  })\n})\n" >"$1/sum.test.js"
}
for r in 1 2; do
	d=$(mktemp -d)
	jsproj "$d"
	if [ $r = 1 ]; then
		run "vitest-sum-run$r" "$d" env NO_COLOR=1 ./node_modules/.bin/vitest run
	else
		# The second run in colour, as a terminal would see it.
		run "vitest-sum-run$r" "$d" env FORCE_COLOR=1 ./node_modules/.bin/vitest run
	fi
done
d=$(mktemp -d)
jsproj "$d"
sed -i 's#./sum.js#./missing.js#' "$d/sum.test.js"
run vitest-missing "$d" ./node_modules/.bin/vitest run

jestproj() {
	ln -s "$JSDEPS/node_modules" "$1/node_modules"
	printf '{}\n' >"$1/package.json"
	printf 'module.exports = function sum(a, b) {\n  return a + b + 1\n}\n' >"$1/sum.js"
	printf "const sum = require('./sum')\n\ndescribe('sum', () => {\n  test('adds', () => {\n    expect(sum(2, 2)).toBe(4)\n  })\n})\n" >"$1/sum.test.js"
}
for r in 1 2; do
	d=$(mktemp -d)
	jestproj "$d"
	run "jest-sum-run$r" "$d" ./node_modules/.bin/jest
done
d=$(mktemp -d)
jestproj "$d"
sed -i 's/a + b + 1/a + b - 1/' "$d/sum.js"
run jest-sum-minus "$d" ./node_modules/.bin/jest
d=$(mktemp -d)
jestproj "$d"
sed -i 's#./sum#./missing#' "$d/sum.test.js"
run jest-missing "$d" ./node_modules/.bin/jest

# --- cargo test --------------------------------------------------------------------------
cargoproj() {
	mkdir -p "$1/src"
	printf '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n' >"$1/Cargo.toml"
	cat >"$1/src/lib.rs" <<'R'
pub fn sum(a: i32, b: i32) -> i32 {
    a + b + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(sum(2, 2), 4);
    }
}
R
}
for r in 1 2; do
	d=$(mktemp -d)
	cargoproj "$d"
	run "cargo-sum-run$r" "$d" cargo test --offline -q
done
d=$(mktemp -d)
cargoproj "$d"
sed -i 's/a + b + 1/a + b - 1/' "$d/src/lib.rs"
run cargo-sum-minus "$d" cargo test --offline -q
d=$(mktemp -d)
cargoproj "$d"
sed -i 's/assert_eq!(sum(2, 2), 4)/assert_eq!(add(2, 2), 4)/' "$d/src/lib.rs"
run cargo-undefined "$d" cargo test --offline -q
