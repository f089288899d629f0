#!/usr/bin/env bash
# Runs the slow real-program suites (the watch and agents packages), as `make test` runs
# them, with a load generator beside them: BUSY processes that spin on the CPU (three per core by default, so that with
# the suite's own work the machine carries about four times the load of the suite alone).
# The suites wait on events, never on fixed sleeps; their deadlines are scaled by
# ORCHESTRATOR_TEST_TIMESCALE (24 here, 6 in `make test`), so a busy machine makes them
# slower, never wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${BUSY:-$(($(nproc) * 3))}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$n"); do
	(while :; do :; done) &
	pids+=($!)
done

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./watch ./agents)
ORCHESTRATOR_TEST_TIMESCALE=${ORCHESTRATOR_TEST_TIMESCALE:-24} \
	${GO:-go} test -count=1 -timeout 180m -parallel "${PARALLEL:-4}" "${pkgs[@]}"
