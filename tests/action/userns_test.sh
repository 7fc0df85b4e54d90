#!/usr/bin/env bash
# Tests of the action's userns step (scripts/action/userns.sh) without root: `sudo` and `sysctl`
# are fakes on PATH writing a fake /proc/sys (SYSCTL_DIR). The fake sudo runs its command while
# `$SUDO_OK` is present, and refuses (as `sudo -n` does) otherwise.
#
# Usage: tests/action/userns_test.sh   (run by tests/action.rs)
# Prints one line per case and `N passed, N failed`; exits 1 when a case failed.
# shellcheck disable=SC2016 # each check is a string evaluated in its case
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
userns="$(cd "$here/../.." && pwd)/scripts/action/userns.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/sudo" <<'FAKE'
#!/usr/bin/env bash
[ "${1:-}" = -n ] && shift
[ -e "$SUDO_OK" ] || { echo "sudo: a password is required" >&2; exit 1; }
exec "$@"
FAKE
cat >"$work/bin/sysctl" <<'FAKE'
#!/usr/bin/env bash
while [ "${1:-}" = -q ] || [ "${1:-}" = -w ]; do shift; done
name=${1%%=*}
echo "${1#*=}" >"$SYSCTL_DIR/${name//.//}"
FAKE
chmod +x "$work/bin/sudo" "$work/bin/sysctl"

passed=0
failed=0
run_case() { # run_case NAME EXPECTED_TEXT CHECK...
  local name=$1 text=$2
  shift 2
  local problems=()
  local code=0
  PATH="$work/bin:$PATH" SYSCTL_DIR="$case_dir/sys" SUDO_OK="$case_dir/sudo-ok" \
    bash "$userns" >"$case_dir/out" 2>&1 || code=$?
  [ "$code" = 0 ] || problems+=("exit $code, expected 0")
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
new_case() { # new_case NAME: a fake /proc/sys/kernel
  case_dir="$work/$1"
  mkdir -p "$case_dir/sys/kernel"
}

new_case ubuntu
echo 1 >"$case_dir/sys/kernel/apparmor_restrict_unprivileged_userns"
touch "$case_dir/sudo-ok"
run_case "Ubuntu 24.04's AppArmor restriction is lifted with sudo" \
  "set kernel.apparmor_restrict_unprivileged_userns=0" \
  '[ "$(cat "$case_dir/sys/kernel/apparmor_restrict_unprivileged_userns")" = 0 ]'

new_case debian
echo 0 >"$case_dir/sys/kernel/unprivileged_userns_clone"
touch "$case_dir/sudo-ok"
run_case "Debian's switch is turned on with sudo" \
  "set kernel.unprivileged_userns_clone=1" \
  '[ "$(cat "$case_dir/sys/kernel/unprivileged_userns_clone")" = 1 ]'

new_case allowed
echo 0 >"$case_dir/sys/kernel/apparmor_restrict_unprivileged_userns"
run_case "nothing to do where they are allowed" "are allowed here"

new_case no-sudo
echo 1 >"$case_dir/sys/kernel/apparmor_restrict_unprivileged_userns"
run_case "without sudo it warns and says what stays open" "UDP and DNS open" \
  '[ "$(cat "$case_dir/sys/kernel/apparmor_restrict_unprivileged_userns")" = 1 ]'

echo "$passed passed, $failed failed"
((failed == 0))
