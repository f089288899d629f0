#!/usr/bin/env bash
# `make test`: every package, in two go test runs side by side. The slow real-program suites
# (watch, agents: the orchestrator's binary run end to end with real git, go test, pytest,
# bubblewrap, claude and codex) run without the race detector, because the code they test
# runs in the binaries they build, not in the test process; every other package runs with
# it. `make test-race` runs them all under the race detector, with those binaries race-built
# too (internal/racebuild), which is slower (see docs/development.md).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
slow=(./watch ./agents)
mapfile -t rest < <($GO list ./... | grep -v -e '/watch$' -e '/agents$')
$GO test -count=1 -timeout 60m -parallel "${PARALLEL:-4}" "${slow[@]}" &
slowpid=$!
$GO test -race -count=1 -timeout 60m "${rest[@]}"
restcode=$?
wait "$slowpid"
slowcode=$?
[ "$restcode" -eq 0 ] && [ "$slowcode" -eq 0 ]
