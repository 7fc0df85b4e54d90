#!/usr/bin/env bash
# One `opentiger tick` for the GitHub Action (action.yml): builds the command line from the
# action's inputs, runs the tick with its log folded into a group, then turns `tick --json` into
# step outputs, annotations for failed runs and a markdown job summary.
#
# Inputs, from the environment (action.yml maps them; all optional):
#   INPUT_CONFIG, INPUT_MODE, INPUT_DRY_RUN (true|false), INPUT_MAX_RUNS, INPUT_FAN_OUT,
#   INPUT_WORKING_DIRECTORY, OPENTIGER_BIN (default: `opentiger` on PATH),
#   OPENTIGER_WORKFLOW_TOKEN (true when the token is the workflow's own GITHUB_TOKEN),
#   GITHUB_OUTPUT, GITHUB_STEP_SUMMARY (the runner's files; /dev/null when unset).
# The GitHub token reaches the tick as GITHUB_TOKEN, set by action.yml; this script never reads
# or prints it.
#
# Exit code: the tick's, except 3 (the state stayed contended; nothing lost, the next tick goes
# on), which is a warning. Failed task runs are annotations, not a failed job.
set -euo pipefail

bin=${OPENTIGER_BIN:-opentiger}
outputs=${GITHUB_OUTPUT:-/dev/null}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}

# Workflow-command escaping (the runner's rules): data escapes % CR LF, properties also : and ,.
escape_data() {
  local s=$1
  s=${s//'%'/'%25'}
  s=${s//$'\r'/'%0D'}
  s=${s//$'\n'/'%0A'}
  printf '%s' "$s"
}
escape_property() {
  local s
  s=$(escape_data "$1")
  s=${s//:/'%3A'}
  s=${s//,/'%2C'}
  printf '%s' "$s"
}
# annotate LEVEL TITLE MESSAGE
annotate() {
  printf '::%s title=%s::%s\n' "$1" "$(escape_property "$2")" "$(escape_data "$3")"
}
output() {
  printf '%s=%s\n' "$1" "$2" >>"$outputs"
}
usage_error() {
  annotate error "opentiger action" "$1"
  output exit-code 2
  exit 2
}

if ! command -v jq >/dev/null 2>&1; then
  annotate error "opentiger action" "jq is missing: install it before this step (GitHub's hosted runners have it)"
  exit 1
fi

# Inputs: checked here so a typo fails with a clear message instead of a strange tick.
dry_run=$(printf '%s' "${INPUT_DRY_RUN:-false}" | tr '[:upper:]' '[:lower:]')
case $dry_run in
  '' | false) dry_run=false ;;
  true) ;;
  *) usage_error "input dry-run: \`${INPUT_DRY_RUN}\` is not true or false" ;;
esac
max_runs=${INPUT_MAX_RUNS:-}
if [[ -n $max_runs && ! $max_runs =~ ^[0-9]+$ ]]; then
  usage_error "input max-runs: \`$max_runs\` is not a whole number"
fi
fan_out=${INPUT_FAN_OUT:-0}
if [[ -z $fan_out ]]; then fan_out=0; fi
if [[ ! $fan_out =~ ^[0-9]+$ ]]; then
  usage_error "input fan-out: \`$fan_out\` is not a whole number"
fi

# In the checkout, so `config` is relative to it as it is for a person running opentiger there.
cd "${INPUT_WORKING_DIRECTORY:-.}"
global=(--repo .)
if [[ -n ${INPUT_CONFIG:-} ]]; then global+=(--config "$INPUT_CONFIG"); fi
if [[ -n ${INPUT_MODE:-} ]]; then global+=(--mode "$INPUT_MODE"); fi
args=("${global[@]}" tick --json)
if [[ $dry_run == true ]]; then args+=(--dry-run); fi
if [[ -n $max_runs ]]; then args+=(--max-runs "$max_runs"); fi
if ((fan_out > 0)); then
  if "$bin" tick --help 2>/dev/null | grep -q -- '--fan-out'; then
    args+=(--fan-out "$fan_out")
  else
    annotate warning "opentiger action" "fan-out: this opentiger has no \`tick --fan-out\`; the tick runs its work itself and the matrix stays empty"
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
json=$work/tick.json
log=$work/tick.log

# The tick's log. Its text may quote agents and issues: workflow commands in it are switched
# off, so nothing it prints can set outputs, masks or annotations. The tick folds each of its
# runs into a group itself (GitHub Actions does not nest groups, so the log as a whole is not
# one): it gets the stop token to resume commands for its own group lines only.
echo "opentiger: $(escape_data "opentiger ${args[*]}")"
stop=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "::stop-commands::$stop"
set +e
# The summary is this script's (the table below, then the dashboard): not the tick's own.
OPENTIGER_ACTIONS_STOP_TOKEN=$stop env -u GITHUB_STEP_SUMMARY "$bin" "${args[@]}" 2>&1 >"$json" |
  tee "$log"
code=${PIPESTATUS[0]}
set -e
echo "::$stop::"
output exit-code "$code"

if ((code != 0)); then
  # The CLI's message: from the `error:` line to the end (it names file, key and fix).
  message=$(sed -n '/^error: /,$p' "$log" | sed '1s/^error: //')
  if [[ -z $message ]]; then message=$(tail -n 5 "$log"); fi
  case $code in
    2) annotate error "opentiger: configuration or usage error" "$message" ;;
    3) annotate warning "opentiger: state contended" "$message" ;;
    *) annotate error "opentiger tick failed (exit $code)" "$message" ;;
  esac
  {
    echo "## opentiger tick: exit $code"
    echo
    echo '```text'
    # shellcheck disable=SC2016 # literal backticks: a fence inside the message must not close ours
    printf '%s\n' "$message" | sed 's/```/`` `/g'
    echo '```'
  } >>"$summary"
  for name in tasks-done prs-opened prs-merged runs claimed spend-usd; do output "$name" 0; done
  output matrix '{"include":[]}'
  if ((code == 3)); then exit 0; fi
  exit "$code"
fi

if ! jq -e 'type == "object"' "$json" >/dev/null 2>&1; then
  annotate error "opentiger tick" "the tick printed no JSON summary (see its log above)"
  exit 1
fi

# Text from tasks and agents goes into markdown: no table breaks, no HTML, no code fences.
md='def md: gsub("[|]"; "\\|") | gsub("<"; "&lt;") | gsub("`"; "'"'"'");'

if [[ $dry_run == true ]]; then
  # `tick --dry-run --json` prints the plan: every decision with its rule and reason.
  for name in tasks-done prs-opened prs-merged runs claimed; do output "$name" 0; done
  output spend-usd 0
  output matrix '{"include":[]}'
  jq -r "$md"'
    "## opentiger tick (dry run): \(.decisions | length) decision(s)\n",
    (.decisions[] | "- `\(.rule)` \(.task_id // "-"): \(.action.type) — \(.reason | md)"),
    ""' "$json" >>"$summary"
  exit 0
fi

number() { jq -r "$1 // 0" "$json"; }
output tasks-done "$(number .tasks_done)"
output prs-opened "$(number .prs_opened)"
output prs-merged "$(number .merged)"
output runs "$(number .runs)"
# Fan-out claims: runs the work jobs of the matrix start, not this tick.
output claimed "$(number .claimed)"
output spend-usd "$(jq -r '(.spend_usd // 0) * 10000 | round / 10000' "$json")"
output matrix "$(jq -c '.matrix // {"include": []}' "$json")"

# One annotation per failed run: an error when a person must act, a warning when it is retried.
while IFS=$'\t' read -r level title message; do
  annotate "$level" "$title" "$message"
done < <(jq -r '
  (.failures // [])[]
  | [ (if (.task_state | contains("awaiting_human")) then "error" else "warning" end),
      "opentiger task \(.task_id): \(.title)",
      "\(.failure_code // "failed"): \(.message) (task is now \(.task_state))\((.output_tail // []) | if length > 0 then " — last output: " + join(" / ") else "" end)" ]
  | map(gsub("[\t\n\r]"; " ")) | @tsv' "$json")

published=$(jq -r '(.prs_opened // 0) + (.prs_updated // 0)' "$json")
token_note=""
if [[ ${OPENTIGER_WORKFLOW_TOKEN:-} == true ]] && ((published > 0)); then
  token_note="PRs opened or pushed with the workflow's GITHUB_TOKEN do not trigger workflows, so CI will not run on them: pass a GitHub App token as \`token\` (README: Run it from GitHub Actions)."
  annotate warning "opentiger: CI will not run on these PRs" "$token_note"
fi

{
  jq -r "$md"'
    "## opentiger tick `\(.tick_id)`\n",
    "| runs | reviews | rounds | tasks done | PRs opened | PRs updated | merged | spend | GitHub requests |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    "| \(.runs // 0) | \(.reviews // 0) | \(.rounds // 0) | \(.tasks_done // 0) | \(.prs_opened // 0) | \(.prs_updated // 0) | \(.merged // 0) | $\((.spend_usd // 0) * 100 | round / 100) | \(.github_requests // 0) |",
    "",
    (if ((.failures // []) | length) > 0 then
      "### Failed runs\n",
      ((.failures // [])[] | "- `\(.task_id)` \(.title | md): \(.failure_code // "failed") — \(.message | md) → `\(.task_state)`",
        (if ((.output_tail // []) | length) > 0 then
          "  ```text", ((.output_tail // [])[] | "  " + gsub("`"; "'"'"'")), "  ```"
        else empty end)),
      ""
    else empty end),
    (if ((.lines // []) | length) > 0 then
      "<details><summary>\(.decisions // 0) decision(s), \((.lines // []) | length) line(s) of the tick report</summary>\n",
      "```text",
      ((.lines // [])[] | gsub("`"; "'"'"'")),
      "```",
      "</details>",
      ""
    else
      "Nothing to do this tick.\n"
    end)' "$json"
  if [[ -n $token_note ]]; then
    printf '> [!WARNING]\n> %s\n\n' "$token_note"
  fi
  # The dashboard: what waits on a person, what each task waits for, PRs, spend. Visibility
  # only: without it the summary above still stands.
  if board=$(env -u GITHUB_STEP_SUMMARY "$bin" "${global[@]}" status --markdown 2>/dev/null); then
    printf '%s\n' "$board" | grep -v '^<!-- opentiger:dashboard -->$' || true
  fi
} >>"$summary"
