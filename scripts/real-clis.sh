#!/bin/sh
# Installs the real agent CLIs at the versions the adapters are checked against, for the opt-in
# tests `tests/real_agent_clis.rs` and `tests/real_agent_sessions.rs` (see README, "Agent CLIs").
#
#   scripts/real-clis.sh [PREFIX]
#
# PREFIX defaults to $OPENTIGER_REAL_CLI_PREFIX, else ~/.cache/opentiger/real-clis. npm packages go
# to PREFIX/npm (programs in PREFIX/npm/node_modules/.bin), aider to a venv in PREFIX/venv
# (PREFIX/venv/bin). A prefix that already holds these versions is left as it is. Needs node
# with npm, and python3 with venv; about 600 MB; nothing is written outside PREFIX.
set -eu

CLAUDE=2.1.197
CODEX=0.169.0
OPENCODE=1.18.33
AIDER=0.86.2

prefix=${1:-${OPENTIGER_REAL_CLI_PREFIX:-$HOME/.cache/opentiger/real-clis}}
mkdir -p "$prefix"
npm_dir=$prefix/npm
venv=$prefix/venv

installed() { # package version-file
	[ -f "$npm_dir/node_modules/$1/package.json" ] &&
		grep -q "\"version\": \"$2\"" "$npm_dir/node_modules/$1/package.json"
}

if ! installed @anthropic-ai/claude-code "$CLAUDE" || ! installed @openai/codex "$CODEX" ||
	! installed opencode-ai "$OPENCODE"; then
	npm install --prefix "$npm_dir" --no-audit --no-fund \
		"@anthropic-ai/claude-code@$CLAUDE" "@openai/codex@$CODEX" "opencode-ai@$OPENCODE" >&2
fi

if ! "$venv/bin/aider" --version 2>/dev/null | grep -qx "aider $AIDER"; then
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q "aider-chat==$AIDER" >&2
fi

# What the tests put first on the agents' PATH.
echo "$npm_dir/node_modules/.bin"
echo "$venv/bin"
