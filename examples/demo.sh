#!/usr/bin/env bash
# The demo behind `make demo`: copy the calc example to a temp folder and let replayed agents
# build it test-first through `orchestrator watch --once`. No model and no network are used.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/calc" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/orchestrator-demo.XXXXXX")
cp -R "$src/." "$work/"
cd "$work"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "demo project: $work"
# Verified work lands as commits on the branch the project is on.
git init -q -b main
"$bin" init >/dev/null
git add -A
git -c user.name=demo -c user.email=demo@example.com commit -qm "calc: the project before the orchestrator"
"$bin" validate && echo "validate: the queue is well-formed, TDD-ordered and covers the plan"
"$bin" next

say "orchestrator watch --once  (the replayed implementer's first attempt claims done with a bug)"
"$bin" watch --once

say "why TASK-001's first claim was rejected (.orchestrator/runs/TASK-001/1/gate.log)"
cat .orchestrator/runs/TASK-001/1/gate.log

say "the issue it raised, resolved by the retry (.orchestrator/issue_queue.md)"
sed -n '/^### ISSUE-/,$p' .orchestrator/issue_queue.md | grep -v '^$' | head -24

say "orchestrator status"
"$bin" status

say "what landed: one commit per verified task (git log)"
git log --format='%h %s%n%w(0,8,8)%b' main
