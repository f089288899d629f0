#!/bin/sh
# install-agents.sh installs the real agent programs that the adapter tests run, Claude Code
# and the Codex CLI, from npm into a cache folder, at pinned versions, when they are missing.
# It is idempotent and quick when they are there. It prints where they are.
#
# The folder is $ORCHESTRATOR_AGENT_CACHE, else $XDG_CACHE_HOME/orchestrator-test/npm, else
# ~/.cache/orchestrator-test/npm; the programs are in its node_modules/.bin. The tests look
# there (and then on PATH) and skip when they are missing, except with CI=true, where they
# fail.
set -eu

CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.169.0

cache=${ORCHESTRATOR_AGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orchestrator-test/npm}
bin=$cache/node_modules/.bin

# installed PACKAGE VERSION: whether node_modules holds PACKAGE at VERSION.
installed() {
	pj=$cache/node_modules/$1/package.json
	[ -f "$pj" ] && grep -q "\"version\": *\"$2\"" "$pj"
}

# runs PROGRAM: whether PROGRAM --version works. A fresh HOME keeps the check from touching
# the user's configuration.
runs() {
	home=$(mktemp -d)
	ok=0
	HOME=$home "$bin/$1" --version >/dev/null 2>&1 || ok=1
	rm -rf "$home"
	return $ok
}

if installed @anthropic-ai/claude-code $CLAUDE_VERSION && installed @openai/codex $CODEX_VERSION &&
	runs claude && runs codex; then
	echo "install-agents: claude $CLAUDE_VERSION and codex $CODEX_VERSION are in $bin"
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "install-agents: npm not found; the real-agent tests will skip (or fail with CI=true)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 0
fi

echo "install-agents: installing @anthropic-ai/claude-code@$CLAUDE_VERSION and @openai/codex@$CODEX_VERSION into $cache"
mkdir -p "$cache"
# Both packages bring their native program as an optional dependency for the platform.
npm install --prefix "$cache" --no-audit --no-fund --no-save --loglevel=error \
	"@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION"

# Claude Code's postinstall copies the native program over bin/claude.exe; an npm that does
# not run install scripts leaves a placeholder. Run it then.
if ! runs claude; then
	(cd "$cache/node_modules/@anthropic-ai/claude-code" && node install.cjs)
fi
for p in claude codex; do
	if ! runs $p; then
		echo "install-agents: $bin/$p does not run" >&2
		exit 1
	fi
done
echo "install-agents: claude $CLAUDE_VERSION and codex $CODEX_VERSION are in $bin"
