#!/usr/bin/env bash
# The demo behind `make demo-tdd`: copy the promo example to a temp folder and run the TDD
# cycle of its requirement STE-001 with replayed agents. The implementer of AC-STE.2 breaks
# AC-STE.1 on its first attempt, and the refactor breaks the suite; no model and no network
# are used.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/promo" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/orchestrator-tdd-demo.XXXXXX")
cp -R "$src/." "$work/"
cd "$work"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "demo project: $work"
git init -q -b main
git add -A
git -c user.name=demo -c user.email=demo@example.com commit -qm "shop: the project before the orchestrator"

say "orchestrator tdd STE-001"
"$bin" tdd STE-001 || echo "exit code $?"

say "the cycle in the task queue (.orchestrator/task_queue.md, abridged)"
grep -E '^(## |### |\| (Status|Depends On|AC|Commit) )' .orchestrator/task_queue.md

say "what the implementer of AC-STE.2 was shown (.orchestrator/runs/TASK-STE-001-AC2/1/prompt.md, abridged)"
sed -n '/^## Task/,/^## Finishing/p' .orchestrator/runs/TASK-STE-001-AC2/1/prompt.md

say "why its first attempt was rejected (.orchestrator/runs/TASK-STE-001-AC2/1/gate.log)"
cat .orchestrator/runs/TASK-STE-001-AC2/1/gate.log

say "orchestrator tdd STE-001 again: the cycle is done, nothing is added"
"$bin" tdd STE-001 --json | tail -1

say "what landed (git log)"
git log --format='%h %s' main
