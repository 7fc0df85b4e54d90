#!/usr/bin/env bash
# Draws docs/img/*.svg again from what a github-mode tick writes to the local GitHub stand-in
# (the progress comment, the dashboard issue, a pull request's body, a check run): the test
# tests/docs_pictures.rs with OPENTIGER_WRITE_PICTURES set writes them; without it, it checks
# the committed ones are up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
OPENTIGER_WRITE_PICTURES=1 cargo test --quiet --test suite docs_pictures::
ls -l docs/img/*.svg
