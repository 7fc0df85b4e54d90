#!/usr/bin/env bash
# Tests of the GitHub Action's scripts (scripts/action/*.sh) without GitHub: the runner's files
# (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY) are temp files, `opentiger` is either a fake that prints
# canned `tick --json` output and exits as told, or the real binary on a local-git repository.
#
# Usage: tests/action/tick_test.sh /path/to/opentiger   (run by tests/action.rs)
# Prints one line per case and `N passed, N failed`; exits 1 when a case failed.
# shellcheck disable=SC2016 # expected texts hold literal backticks and dollars
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tick_sh="$root/scripts/action/tick.sh"
install_sh="$root/scripts/action/install.sh"
real_bin=${1:?usage: $0 /path/to/opentiger}
real_bin="$(cd "$(dirname "$real_bin")" && pwd)/$(basename "$real_bin")"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GITHUB_OUTPUT="$work/runner-output" GITHUB_STEP_SUMMARY="$work/runner-summary"

passed=0
failed=0
problems=()
check() { # check DESCRIPTION COMMAND...: records a problem when the command fails
  local what=$1
  shift
  if ! "$@"; then problems+=("$what"); fi
}
has_line() { grep -qxF -- "$2" "$1"; }
has_text() { grep -qF -- "$2" "$1"; }
lacks_text() { ! grep -qF -- "$2" "$1"; }
finish_case() { # finish_case NAME: prints the case's verdict and what went wrong
  if ((${#problems[@]} == 0)); then
    echo "ok   $1"
    passed=$((passed + 1))
  else
    echo "FAIL $1"
    printf '     - %s\n' "${problems[@]}"
    for f in stdout output summary; do
      echo "     --- $f:"
      sed 's/^/     | /' "$work/$f"
    done
    failed=$((failed + 1))
  fi
  problems=()
}

# Runs tick.sh with the environment set by the case; stdout to $work/stdout, exit code in $rc.
run_tick() {
  : >"$GITHUB_OUTPUT"
  : >"$GITHUB_STEP_SUMMARY"
  rm -f "$work/argv"
  set +e
  bash "$tick_sh" >"$work/stdout" 2>&1
  rc=$?
  set -e
  cp "$GITHUB_OUTPUT" "$work/output"
  cp "$GITHUB_STEP_SUMMARY" "$work/summary"
}

# The fake opentiger: records its arguments, answers `tick --help` (with --fan-out when
# FAKE_FAN_OUT=1), prints $FAKE_STDERR to stderr and $FAKE_JSON to stdout, exits $FAKE_EXIT.
mkdir -p "$work/fake"
cat >"$work/fake/opentiger" <<'EOF'
#!/usr/bin/env bash
if [[ " $* " == *" --help "* ]]; then
  echo "Usage: opentiger tick [OPTIONS]"
  if [[ ${FAKE_FAN_OUT:-0} == 1 ]]; then echo "      --fan-out <N>"; fi
  exit 0
fi
# `status --markdown` (the dashboard after the table): none from the fake.
if [[ " $* " == *" status "* ]]; then exit 1; fi
printf '%s\n' "$@" >"$FAKE_ARGV"
printf '%s\n' "${OPENTIGER_ACTIONS_STOP_TOKEN:-}" >"$FAKE_ARGV.token"
if [[ -n ${FAKE_STDERR:-} ]]; then printf '%s\n' "$FAKE_STDERR" >&2; fi
if [[ -n ${FAKE_JSON:-} ]]; then printf '%s\n' "$FAKE_JSON"; fi
exit "${FAKE_EXIT:-0}"
EOF
chmod +x "$work/fake/opentiger"
export FAKE_ARGV="$work/argv"
secret="ghs_doNotPrintThisToken0123456789"

fake() { # fake JSON EXIT STDERR: the next run_tick uses the fake
  export OPENTIGER_BIN="$work/fake/opentiger" FAKE_JSON=$1 FAKE_EXIT=$2 FAKE_STDERR=${3:-}
}
reset_inputs() {
  unset INPUT_CONFIG INPUT_MODE INPUT_DRY_RUN INPUT_MAX_RUNS INPUT_FAN_OUT \
    INPUT_WORKING_DIRECTORY OPENTIGER_WORKFLOW_TOKEN FAKE_FAN_OUT
  export GITHUB_TOKEN=$secret
}

# --- a tick with runs, failures, a merge and a matrix --------------------------------------
reset_inputs
fake '{"tick_id": "t1", "decisions": 3, "runs": 2, "reviews": 1, "stray_outcomes": 0,
  "lines": ["[dispatch.claim] claim `x`", "a | b <c>"], "github_requests": 7, "tasks_done": 1,
  "prs_opened": 1, "prs_updated": 0, "merged": 1, "spend_usd": 0.123456, "rounds": 3,
  "failures": [
    {"task_id": "abc", "title": "Fix, the: parser", "failure_code": "verification_failed",
     "message": "cargo test failed\twith a tab", "task_state": "queued",
     "output_tail": ["compiling", "error: `the cause`"]},
    {"task_id": "def", "title": "Stuck | <b>", "failure_code": null, "message": "gave up",
     "task_state": "blocked(awaiting_human)"}],
  "claimed": 1, "matrix": {"include": [{"run": "r1"}]}}' 0
export INPUT_FAN_OUT=2 FAKE_FAN_OUT=1 INPUT_MAX_RUNS=3 OPENTIGER_WORKFLOW_TOKEN=true
run_tick
check "exit 0 (got $rc)" test "$rc" = 0
for pair in tasks-done=1 prs-opened=1 prs-merged=1 runs=2 claimed=1 spend-usd=0.1235 exit-code=0 \
  'matrix={"include":[{"run":"r1"}]}'; do
  check "output $pair" has_line "$work/output" "$pair"
done
check "argv: tick --json" has_text "$work/argv" "--json"
check "argv: --max-runs 3" grep -qx -- 3 "$work/argv"
check "argv: --fan-out" has_line "$work/argv" "--fan-out"
check "command logged" has_text "$work/stdout" "opentiger: opentiger --repo . tick --json --max-runs 3 --fan-out 2"
check "no fold around the whole log (the tick folds its runs)" lacks_text "$work/stdout" "::group::"
check "a retried failure is a warning" has_line "$work/stdout" \
  "::warning title=opentiger task abc%3A Fix%2C the%3A parser::verification_failed: cargo test failed with a tab (task is now queued) — last output: compiling / error: \`the cause\`"
check "a failure waiting on a person is an error" has_line "$work/stdout" \
  "::error title=opentiger task def%3A Stuck | <b>::failed: gave up (task is now blocked(awaiting_human))"
check "the GITHUB_TOKEN trap is a warning when PRs were opened" has_text "$work/stdout" \
  "::warning title=opentiger%3A CI will not run on these PRs::"
check "summary heading" has_line "$work/summary" '## opentiger tick `t1`'
check "summary figures" has_line "$work/summary" '| 2 | 1 | 3 | 1 | 1 | 0 | 1 | $0.12 | 7 |'
check "summary failures, escaped" has_text "$work/summary" '- `def` Stuck \| &lt;b>: failed — gave up → `blocked(awaiting_human)`'
check "summary failure output, fenced" has_line "$work/summary" "  error: 'the cause'"
check "summary report lines, fenced" has_line "$work/summary" "[dispatch.claim] claim 'x'"
check "summary token note" has_text "$work/summary" "> [!WARNING]"
for f in stdout output summary; do
  check "the token is not in $f" lacks_text "$work/$f" "$secret"
done
finish_case "fake tick: outputs, annotations, summary"

# --- fan-out asked of an opentiger without it -------------------------------------------------
reset_inputs
fake '{"tick_id": "t2", "decisions": 0, "runs": 0, "lines": []}' 0
export INPUT_FAN_OUT=4
run_tick
check "exit 0" test "$rc" = 0
check "warned" has_text "$work/stdout" "::warning title=opentiger action::fan-out: this opentiger has no"
check "no --fan-out passed" lacks_text "$work/argv" "--fan-out"
check "empty matrix" has_line "$work/output" 'matrix={"include":[]}'
check "older JSON without the new figures reads as 0" has_line "$work/output" "tasks-done=0"
check "no claims without fan-out" has_line "$work/output" "claimed=0"
check "a quiet tick says so" has_text "$work/summary" "Nothing to do this tick."
finish_case "fan-out without --fan-out support"

# --- configuration error: exit 2 fails the step, with the CLI's message --------------------
reset_inputs
fake '' 2 $'error: .opentiger.yml:3: `mode`: `gihtub` is not an accepted value\n  fix: did you mean `github`?'
export INPUT_CONFIG=.opentiger.yml INPUT_MODE=github
run_tick
check "exit 2 (got $rc)" test "$rc" = 2
check "argv: --config" has_line "$work/argv" "--config"
check "error annotation with file, key and fix" has_line "$work/stdout" \
  '::error title=opentiger%3A configuration or usage error::.opentiger.yml:3: `mode`: `gihtub` is not an accepted value%0A  fix: did you mean `github`?'
check "exit-code output" has_line "$work/output" "exit-code=2"
check "summary says exit 2" has_text "$work/summary" "## opentiger tick: exit 2"
finish_case "configuration error"

# --- tick error: exit 1 fails the step ------------------------------------------------------
reset_inputs
fake '' 1 'error: state refs/heads/opentiger/state on origin: git push failed'
run_tick
check "exit 1 (got $rc)" test "$rc" = 1
check "error annotation" has_text "$work/stdout" "::error title=opentiger tick failed (exit 1)::state refs/heads/opentiger/state"
finish_case "tick error"

# --- state contended: exit 3 is a warning, the job goes on ----------------------------------
reset_inputs
fake '' 3 'error: could not save the state after 12 attempts'
run_tick
check "exit 0 (got $rc)" test "$rc" = 0
check "warning annotation" has_text "$work/stdout" "::warning title=opentiger%3A state contended::could not save"
check "exit-code output" has_line "$work/output" "exit-code=3"
finish_case "state contended"

# --- the tick's own output cannot issue workflow commands -----------------------------------
reset_inputs
fake '{"tick_id": "t3", "runs": 0, "lines": []}' 0 $'::set-output name=runs::999\n::error::injected'
run_tick
stop=$(sed -n 's/^::stop-commands::\(.*\)$/\1/p' "$work/stdout")
check "commands stopped" test -n "$stop"
check "stopped before the injected line, resumed after" awk -v stop="$stop" '
  $0 == "::stop-commands::" stop { on = 1; next }
  $0 == "::" stop "::" { if (on && seen) ok = 1; on = 0; next }
  $0 == "::error::injected" { seen = on }
  END { exit ok ? 0 : 1 }' "$work/stdout"
check "runs output from the JSON only" has_line "$work/output" "runs=0"
check "the tick gets the stop token for its folds" has_line "$work/argv.token" "$stop"
finish_case "workflow commands in the tick's output are inert"

# --- bad inputs fail before the tick runs ----------------------------------------------------
reset_inputs
fake '{}' 0
export INPUT_DRY_RUN=maybe
run_tick
check "exit 2 (got $rc)" test "$rc" = 2
check "names the input" has_text "$work/stdout" "input dry-run: \`maybe\` is not true or false"
check "the tick did not run" test ! -e "$work/argv"
export INPUT_DRY_RUN=false INPUT_MAX_RUNS=-1
run_tick
check "max-runs checked (got $rc)" test "$rc" = 2
finish_case "input validation"

# --- the real binary: a local-git repository with the scripted agent -------------------------
reset_inputs
repo="$work/repo"
mkdir -p "$repo"
(
  cd "$repo"
  git init -q -b main
  cat >.opentiger.yml <<'YAML'
mode: local-git
agents:
  default:
    executor: scripted
    script: agent.json
  worker:
    count: 2
limits:
  max_runs_per_tick: 2
YAML
  cat >agent.json <<'JSON'
{"tasks": [
  {"match": "Add hello", "attempts": [{"write": {"hello.txt": "hello\n"}, "summary": "wrote hello", "cost_usd": 0.25}]},
  {"match": "Break", "attempts": [{"fail": "the agent gave up"}]}]}
JSON
  printf '.opentiger/\n' >.gitignore
  git add -A
  git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -q -m init
  "$real_bin" task add --title "Add hello" --goal "hello.txt says hello" >/dev/null
  "$real_bin" task add --title "Break things" --goal "fails" >/dev/null
)
export OPENTIGER_BIN=$real_bin INPUT_WORKING_DIRECTORY=$repo
unset FAKE_JSON FAKE_EXIT FAKE_STDERR
export INPUT_DRY_RUN=true
run_tick
check "dry run exit 0 (got $rc)" test "$rc" = 0
check "dry run summary" has_text "$work/summary" "## opentiger tick (dry run): "
check "dry run lists claims" has_text "$work/summary" '`dispatch.claim`'
check "dry run runs nothing" has_line "$work/output" "runs=0"
export INPUT_DRY_RUN=false
run_tick
check "first tick exit 0 (got $rc)" test "$rc" = 0
check "two runs" has_line "$work/output" "runs=2"
check "spend from the agent's report" has_line "$work/output" "spend-usd=0.25"
# Nothing outside to wait for: the tick's next round reviews and merges the change, and the
# one after runs the second task (two 30-minute runs do not fit in one round of 50 minutes).
check "the judge merged one" has_line "$work/output" "prs-merged=1"
check "one task done" has_line "$work/output" "tasks-done=1"
check "the failed run is a warning" has_text "$work/stdout" '::warning title=opentiger task '
check "its title" has_text "$work/stdout" "Break things::"
check "summary figures" has_line "$work/summary" '| 2 | 1 | 3 | 1 | 0 | 0 | 1 | $0.25 | 0 |'
check "summary shows the rounds" has_text "$work/summary" "[round 2] "
check "summary dashboard" has_line "$work/summary" "# opentiger dashboard"
check "dashboard lists the retried task" has_text "$work/summary" "**Break things**"
check "one summary, not the tick's own too" test "$(grep -c '^## opentiger tick' "$work/summary")" = 1
check "merged on main" test "$(git -C "$repo" show main:hello.txt)" = hello
run_tick
check "second tick exit 0 (got $rc)" test "$rc" = 0
check "nothing more merged" has_line "$work/output" "prs-merged=0"
finish_case "real opentiger on a local-git repository"

# --- install.sh: cache keys, a cached binary, no cargo ---------------------------------------
unset VERSION ACTION_REPOSITORY
: >"$GITHUB_OUTPUT"
bash "$install_sh" download >"$work/stdout" 2>&1
cp "$GITHUB_OUTPUT" "$work/output"
: >"$work/summary"
check "no version: build" has_line "$work/output" "found=false"
check "bin key from the source" grep -q '^bin-key=opentiger-.*-bin-[0-9a-f]\{20\}$' "$work/output"
key=$(sed -n 's/^bin-key=//p' "$work/output")
mkdir -p "$work/root/bin"
cp "$work/fake/opentiger" "$work/root/bin/opentiger"
printf '%s' "$key" >"$work/root/.source"
: >"$GITHUB_OUTPUT"
INSTALL_ROOT="$work/root" CACHE_KEY=$key PATH=/usr/bin:/bin bash "$install_sh" build >"$work/stdout" 2>&1
cp "$GITHUB_OUTPUT" "$work/output"
check "a cached build is used" has_text "$work/stdout" "restored from the cache"
check "its path is the output" has_line "$work/output" "bin=$work/root/bin/opentiger"
set +e
INSTALL_ROOT="$work/root" CACHE_KEY=other PATH=/usr/bin:/bin bash "$install_sh" build >"$work/stdout" 2>&1
rc=$?
set -e
check "a stale cache needs cargo (got $rc)" test "$rc" = 1
check "which it names" has_text "$work/stdout" "::error title=opentiger action::cargo is missing"
finish_case "install.sh"

echo "$passed passed, $failed failed"
((failed == 0))
