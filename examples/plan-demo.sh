#!/usr/bin/env bash
# The demo behind `make demo-plan`: from a requirements file and a test plan to a running
# `watch`. The calc example starts with an empty queue; `orchestrator plan` has a scripted
# planner (examples/planner.sh, no model) break the requirements into tasks, and only its
# output that passes the check is written; then `watch --once` builds the tasks with the
# replayed agents of the example.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/orchestrator-plan-demo.XXXXXX")
cp -R "$here/calc/." "$work/"
cd "$work"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "demo project: $work"
rm .orchestrator/task_queue.md
git init -q -b main
"$bin" init >/dev/null
cat >> .orchestrator/config.yaml <<CONFIG
commands: {test: "go test ./...", build: "go build ./..."}
agents:
  planner: {command: [$here/planner.sh]}
CONFIG
git add -A
git -c user.name=demo -c user.email=demo@example.com commit -qm "calc: requirements and a test plan, no code"

say "orchestrator plan --prd requirements.md --agent planner"
"$bin" plan --prd requirements.md --agent planner

say "orchestrator validate; orchestrator coverage"
"$bin" validate && echo "validate: no findings"
"$bin" coverage

say "orchestrator watch --once"
"$bin" watch --once
