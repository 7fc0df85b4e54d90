#!/usr/bin/env bash
# Rebuilds examples/sample/state.sqlite: four planned tasks, one cancelled, so that
# `opentiger --repo examples/sample tick --dry-run` has something to explain.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${OPENTIGER:-opentiger}
rm -f "$here/state.sqlite"
export OPENTIGER_NOW=2026-11-21T12:00:00Z
"$bin" --repo "$here" task add --from "$here/plan.json" >/dev/null
bench=$("$bin" --repo "$here" task list | awk '/Benchmark/ {print $1}')
"$bin" --repo "$here" task cancel "$bench" --reason "not needed for the first release" >/dev/null
"$bin" --repo "$here" task add --title "Publish a release" --goal "a tag exists" --depends-on "$bench" --priority 1 >/dev/null
