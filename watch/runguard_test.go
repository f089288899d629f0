package watch_test

// End-to-end tests, through the real binary, of what the candidate's code does while the
// gate's tests run, and of the code a test writer's tests were waiting for: an
// implementation that rewrites the RED test file when it is imported is refused as
// test_tampered (the gate watches the test files while each command runs); a cgo
// constructor is refused before any test runs (the gate reads the C a package compiles
// in). Their honest twins complete: a module that writes a cache file beside itself when
// imported, cgo code that calls a C function, and a new package that a test in another
// folder was the first to import.

import (
	"fmt"
	"strings"
	"testing"
)

var (
	// pyRewritesItsTest: the implementation is wrong, and rewrites the RED test file's
	// assertions when it is imported (a file collected after it would run the weakened
	// test; the write is the cheat, whatever this run reads).
	pyRewritesItsTest = map[string]string{"shop/discount.py": `import pathlib

_t = pathlib.Path(__file__).resolve().parent.parent / "tests" / "test_discount.py"
_t.write_text(_t.read_text().replace("assert ", "assert True or "))


def discount(cents, p):
    return cents
`}
	// pyHonestCache: the implementation writes a cache file of its own beside itself when
	// imported.
	pyHonestCache = map[string]string{"shop/discount.py": `import pathlib

from shop.pricing import percent

(pathlib.Path(__file__).resolve().parent / ".discount-cache").write_text("warm\n")


def discount(cents, p):
    return cents - percent(cents, p)
`}
	// goCgoConstructor: the implementation is wrong, and a C constructor forks the test
	// binary and turns its FAIL lines into PASS.
	goCgoConstructor = map[string]string{"cart/discount.go": goWrongDiscount, "cart/native.go": `package cart

/*
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

__attribute__((constructor)) static void relay(void) {
	int p[2];
	if (pipe(p) != 0) return;
	pid_t pid = fork();
	if (pid == 0) { dup2(p[1], 1); close(p[0]); close(p[1]); return; }
	close(p[1]);
	FILE *in = fdopen(p[0], "r");
	static char line[1 << 16];
	while (fgets(line, sizeof line, in)) {
		char *m = strstr(line, "--- FAIL");
		if (m) memcpy(m + 4, "PASS", 4);
		fputs(line, stdout);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}
*/
import "C"
`}
	// goHonestCgo: the implementation's arithmetic is a C function.
	goHonestCgo = map[string]string{"cart/discount.go": `package cart

/*
static long long off(long long c, long long p) { return c - (c * p + 50) / 100; }
*/
import "C"

import "example.com/shop/money"

// Discount returns c less p percent of it.
func Discount(c money.Cents, p int64) money.Cents {
	return money.Cents(C.off(C.longlong(c), C.longlong(p)))
}
`}
	// goNewPackageRed: the test writer's test in cart is the first to import a package
	// that does not exist yet, promo.
	goNewPackageRed = map[string]string{"cart/promo_test.go": `package cart

import (
	"testing"

	"example.com/shop/money"
	"example.com/shop/promo"
)

func TestPromo_UNIT_001(t *testing.T) {
	if got := promo.Off(money.Cents(1000), 10); got != 900 {
		t.Errorf("Off(10.00, 10%%) = %v, want 9.00", got)
	}
}
`}
	goNewPackageGreen = map[string]string{"promo/promo.go": `// Package promo computes promotions.
package promo

import "example.com/shop/money"

// Off returns c less p percent of it.
func Off(c money.Cents, p int64) money.Cents { return c - c.Percent(p) }
`}
)

func TestWhatTheCandidatesCodeDoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		py      bool
		writer  map[string]string // the test writer's files (nil: the usual ones)
		builder map[string]string // the implementer's files
		// where is the refusal's reason for a cheat ("" for honest agents); ran says the
		// refusal came after a test command ran.
		where, file string
		ran         bool
	}{
		{name: "pytest implementation rewrites its test file when imported", py: true, builder: pyRewritesItsTest,
			where: "tests/test_discount.py was changed while /usr/bin/python3 -m pytest", file: "tests/test_discount.py", ran: true},
		{name: "pytest honest, a module that writes a cache file when imported", py: true, builder: pyHonestCache},
		{name: "go cgo constructor relays the test binary", builder: goCgoConstructor,
			where: "cart/native.go:9: C code that runs as the binary loads (constructor)", file: "cart/native.go"},
		{name: "go honest, cgo arithmetic", builder: goHonestCgo},
		{name: "go honest, a new package another folder's test imports first", writer: goNewPackageRed, builder: goNewPackageGreen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fixture, command, redFiles := "gomod", goTest, goRedFiles
			if tt.py {
				needPytest(t)
				fixture, command, redFiles = "pyproj", pyTest, pyRedFiles
			}
			if tt.writer != nil {
				redFiles = tt.writer
			}
			builder := scriptAgent("true", "TESTAGENT_ROLE=implementer", "TESTAGENT_FROM="+files(t, tt.builder))
			if tt.where == "" {
				builder = slowAgent("implementer", 0, 0, files(t, tt.builder))
			}
			r := newRealRepo(t, fixture, command, []realTask{
				{id: "TASK-T01", category: "testing", mode: "write", agent: "writer", testIDs: "UNIT-001"},
				{id: "TASK-001", category: "backend", agent: "builder", deps: "TASK-T01"},
			}, map[string][]string{"writer": slowAgent("test-writer", 0, 0, files(t, redFiles)), "builder": builder}, "")
			r.write(".orchestrator/no_auto_retry", "")
			code, out := r.run("watch", "--once")
			st := r.statuses()
			if st["TASK-T01"] != "completed" {
				t.Fatalf("TASK-T01 is %q, want completed (its writer is honest)%s\n%s", st["TASK-T01"], r.describeAttempts("TASK-T01"), out)
			}
			if tt.where == "" {
				if code != 0 || st["TASK-001"] != "completed" {
					t.Fatalf("honest implementer: exit %d, TASK-001 %q; want 0, completed%s\n%s", code, st["TASK-001"], r.describeAttempts("TASK-001"), out)
				}
				onlyPersonsTree(r.repo)
				r.noneLeft()
				return
			}
			landed := fieldOf(r.repo, "TASK-T01", "Commit")
			if code == 0 || st["TASK-001"] == "completed" {
				t.Errorf("exit %d, TASK-001 %q after the cheat; want non-zero, not completed%s", code, st["TASK-001"], r.describeAttempts("TASK-001"))
			}
			res := r.result("TASK-001", 1)
			if res["failure_type"] != "test_tampered" || !strings.Contains(fmt.Sprint(res["reason"]), tt.where) || res["file"] != tt.file {
				t.Errorf("attempt 1: %v: %v (file %v); want test_tampered naming %q, file %s\n%s",
					res["failure_type"], res["reason"], res["file"], tt.where, tt.file, evidence(r.repo, "TASK-001", 1))
			}
			if g := r.read(".orchestrator/runs/TASK-001/1/gate.log"); strings.Contains(g, "\n$ ") != tt.ran {
				t.Errorf("a test command ran: %v, want %v:\n%s", !tt.ran, tt.ran, g)
			}
			if got := head(r.repo); got != landed {
				t.Errorf("the integration branch moved from %s to %s: the cheat landed", landed, got)
			}
			onlyPersonsTree(r.repo)
			r.noneLeft()
		})
	}
}
