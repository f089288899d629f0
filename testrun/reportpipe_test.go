package testrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reportCheat is the start of a test module that finds vitest's JSON report on the runner's
// command line and forges a report there with every test passing: forge(when) is the cheat,
// run as the module loads.
const reportCheat = `import { test, expect } from 'vitest'
import { readFileSync, writeFileSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { add } from './calc'

// The runner is this process or one it descends from (other runs may go on beside it).
function reportPath(): string | undefined {
  for (let pid = String(process.pid); pid !== '0' && pid !== '1'; ) {
    try {
      const args = readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\0')
      const a = args.find((x) => x.startsWith('--outputFile.json='))
      if (a) return a.slice('--outputFile.json='.length)
      pid = readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ')[1].split(' ')[1]
    } catch {
      return undefined
    }
  }
}

const forged = JSON.stringify({ testResults: [{ name: process.cwd() + '/src/sub.test.ts', assertionResults: [
  { title: 'subtracts', ancestorTitles: [], status: 'passed', failureMessages: [] },
], forged: true }] })

// A process of its own waits for the runner's report and writes over it at once, before
// the runner has exited.
const after = ` + "`" + `const fs = require('fs'); const [p, f] = process.argv.slice(1); const t0 = Date.now();
(function loop() {
  try {
    const st = fs.statSync(p)
    if (st.isFile() && st.size > 0 && !fs.readFileSync(p, 'utf8').includes('"forged"')) { fs.writeFileSync(p, f); return }
  } catch {}
  if (Date.now() - t0 < 20000) setTimeout(loop, 2)
})()` + "`" + `

const p = reportPath()
if (p && WHEN === 'after') spawn('node', ['-e', after, p, forged], { detached: true, stdio: 'ignore' }).unref()
if (p && WHEN === 'before') writeFileSync(p, forged)

test('subtracts', () => {
  expect(add(2, -3)).toBe(5)
})
`

// TestReportPipeRewritten: vitest writes its JSON report to a pipe the orchestrator reads as
// the run goes (SPEC §7.6), not to a file that stays writable. A test module that starts a
// process which waits for the runner's report and writes a forged one over it (every test
// passing) before the runner exits forged the result while reports were files; now its
// write comes too late to be read as the report or is a second writer. One that writes its
// report before the runner's is a second writer: the result is forged. The honest twin reads
// the runner's report as it was.
func TestReportPipeRewritten(t *testing.T) {
	t.Parallel()
	needTool(t, "vitest", haveVitest())
	for _, when := range []string{"honest", "after", "before"} {
		t.Run(when, func(t *testing.T) {
			t.Parallel()
			dir := copyProject(t, "ts")
			body := "import { test, expect } from 'vitest'\nimport { add } from './calc'\n\ntest('subtracts', () => {\n  expect(add(2, -3)).toBe(5)\n})\n"
			if when != "honest" {
				body = strings.Replace(reportCheat, "WHEN", "'"+when+"'", 2)
			}
			if err := os.WriteFile(filepath.Join(dir, "src", "sub.test.ts"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := Run(ctx, dir, "npx vitest run", 2*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			failed := strings.Join(res.Failed(), ", ")
			switch when {
			case "honest":
				if res.Forged != nil || !strings.Contains(failed, "src/sub.test.ts > subtracts") {
					t.Fatalf("honest run: forged %v, failed %s\n%s", res.Forged, failed, res.Output)
				}
			case "after":
				if res.Forged == nil && !strings.Contains(failed, "src/sub.test.ts > subtracts") {
					t.Fatalf("the report written over the runner's was taken: failed %s\n%s", failed, res.Output)
				}
			case "before":
				if res.Forged == nil || !strings.Contains(res.Forged.What, "more than the runner") {
					t.Fatalf("a second writer of the report was not noticed: forged %v, failed %s\n%s", res.Forged, failed, res.Output)
				}
			}
		})
	}
}
