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
"$bin" status

say "orchestrator watch --once  (the replayed implementer's first attempt claims done with a bug)"
set +e
"$bin" watch --once
code=$?
set -e
echo "exit code: $code"

say "why TASK-001 was rejected (.orchestrator/runs/TASK-001/1/gate.log)"
cat .orchestrator/runs/TASK-001/1/gate.log

say "a person sends TASK-001 back: orchestrator set TASK-001 Status=pending"
"$bin" set TASK-001 Status=pending

say "orchestrator watch --once  (second attempt)"
"$bin" watch --once

say "orchestrator status"
"$bin" status
if "$bin" coverage >/dev/null 2>&1; then
	say "orchestrator coverage"
	"$bin" coverage
fi
