#!/bin/sh
# Installs what the testrun tests need beyond Go and cargo, when it is missing, so that they
# run instead of skipping (on CI, CI=true, they fail instead of skipping):
#   - pytest, from Debian (python3-pytest), which the tests run as /usr/bin/python3 -m pytest;
#   - bubblewrap, from Debian, the agents' sandbox;
#   - vitest, from npm, in testdata/projects/ts/node_modules (npm ci, from package-lock.json).
# Idempotent, and quick when everything is there. `make test-deps` runs it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	else
		sudo "$@"
	fi
}

missing=""
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing="$missing python3-pytest"
# pytest-timeout: a plugin that a project names in its configuration (the gate loads it by name).
/usr/bin/python3 -c "import pytest_timeout" >/dev/null 2>&1 || missing="$missing python3-pytest-timeout"
# bubblewrap: the agents' sandbox (SPEC §15.2), and the one Codex runs its commands in.
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing (Debian)"
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
fi

if [ ! -x "$here/projects/ts/node_modules/.bin/vitest" ]; then
	echo "install-deps: installing vitest (npm ci in testrun/testdata/projects/ts)"
	(cd "$here/projects/ts" && npm ci --no-audit --no-fund)
fi
