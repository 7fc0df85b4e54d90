#!/usr/bin/env bash
# Tests of the action's drop-sudo step (scripts/action/drop-sudo.sh) without root: `sudo` and
# `id` are fakes on PATH. The fake sudo grants whatever it is asked while a file of the fake
# sudoers folder holds a NOPASSWD rule, and refuses (as `sudo -n` does) otherwise.
#
# Usage: tests/action/drop_sudo_test.sh   (run by tests/action.rs)
# Prints one line per case and `N passed, N failed`; exits 1 when a case failed.
# shellcheck disable=SC2016 # each check is a string evaluated in its case
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
drop_sudo="$(cd "$here/../.." && pwd)/scripts/action/drop-sudo.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/sudo" <<'FAKE'
#!/usr/bin/env bash
while [ "${1:-}" = -n ] || [ "${1:-}" = -k ]; do
  [ "$1" = -k ] && exit 0
  shift
done
grep -qs NOPASSWD "$SUDOERS_DIR"/* || { echo "sudo: a password is required" >&2; exit 1; }
exec "$@"
FAKE
cat >"$work/bin/id" <<'FAKE'
#!/usr/bin/env bash
case "$1" in
  -u) echo "${FAKE_UID:-1001}" ;;
  -un) echo runner ;;
  *) exit 2 ;;
esac
FAKE
chmod +x "$work/bin/sudo" "$work/bin/id"

passed=0
failed=0
run_case() { # run_case NAME EXPECTED_EXIT EXPECTED_TEXT CHECK...: a fresh folder per case
  local name=$1 expected=$2 text=$3
  shift 3
  local problems=()
  local code=0
  PATH="$work/bin:$PATH" SUDOERS_DIR="$case_dir/sudoers.d" DOCKER_SOCKET="$case_dir/docker.sock" \
    bash "$drop_sudo" >"$case_dir/out" 2>&1 || code=$?
  [ "$code" = "$expected" ] || problems+=("exit $code, expected $expected")
  grep -qF -- "$text" "$case_dir/out" || problems+=("no \"$text\" in the output")
  local check
  for check in "$@"; do
    eval "$check" || problems+=("$check")
  done
  if ((${#problems[@]} == 0)); then
    echo "ok   $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    printf '     - %s\n' "${problems[@]}"
    sed 's/^/     | /' "$case_dir/out"
    failed=$((failed + 1))
  fi
}
new_case() { # new_case NAME: an empty sudoers folder and a stand-in Docker socket
  case_dir="$work/$1"
  mkdir -p "$case_dir/sudoers.d"
  touch "$case_dir/docker.sock"
  chmod 666 "$case_dir/docker.sock"
}

new_case hosted
echo 'runner ALL=(ALL) NOPASSWD:ALL' >"$case_dir/sudoers.d/runner"
echo 'Defaults env_keep += "HOME"' >"$case_dir/sudoers.d/env"
run_case "the hosted rule is removed and sudo is gone" 0 "passwordless sudo taken from runner" \
  '[ ! -e "$case_dir/sudoers.d/runner" ]' \
  '[ -e "$case_dir/sudoers.d/env" ]' \
  '[ "$(stat -c %a "$case_dir/docker.sock")" = 600 ]'

new_case nothing
echo 'Defaults env_keep += "HOME"' >"$case_dir/sudoers.d/env"
run_case "without passwordless sudo there is nothing to drop" 0 "nothing to drop" \
  '[ -e "$case_dir/sudoers.d/env" ]'

new_case elsewhere
echo 'runner ALL=(ALL) NOPASSWD:ALL' >"$case_dir/sudoers.d/runner"
echo '%adm ALL=(ALL) NOPASSWD:ALL' >"$case_dir/sudoers.d/group"
run_case "a rule the step cannot find fails the step" 1 "still has passwordless sudo"

new_case root
echo 'runner ALL=(ALL) NOPASSWD:ALL' >"$case_dir/sudoers.d/runner"
FAKE_UID=0 run_case "a job running as root is refused" 1 "runs as root" \
  '[ -e "$case_dir/sudoers.d/runner" ]'

echo "$passed passed, $failed failed"
((failed == 0))
