#!/usr/bin/env bash
# The action's step before drop-sudo (issue 37): opentiger runs each agent and check in a network
# namespace of its own, which needs unprivileged user namespaces. Ubuntu 24.04 (GitHub's hosted
# `ubuntu-24.04`/`ubuntu-latest`) restricts them through AppArmor
# (`kernel.apparmor_restrict_unprivileged_userns = 1`); Debian's older kernels through
# `kernel.unprivileged_userns_clone = 0`. Where one of them holds and passwordless sudo is still
# at hand, the step lifts it with `sudo sysctl` (on a hosted runner the machine is discarded after
# the job). Where sudo is not at hand it warns: agents then fall back to Landlock's TCP rules, which
# leave UDP and DNS open (`opentiger doctor` and the tick's output say so).
#
# Environment (tests point it elsewhere): SYSCTL_DIR (default /proc/sys).
set -euo pipefail

sysctl_dir=${SYSCTL_DIR:-/proc/sys}
# name, value that restricts, value that allows
settings=(
  "kernel.apparmor_restrict_unprivileged_userns 1 0"
  "kernel.unprivileged_userns_clone 0 1"
)

lifted=()
for setting in "${settings[@]}"; do
  read -r name restricts allows <<<"$setting"
  file="$sysctl_dir/${name//.//}"
  [ -r "$file" ] || continue
  [ "$(cat "$file")" = "$restricts" ] || continue
  if ! sudo -n true 2>/dev/null; then
    echo "::warning::unprivileged user namespaces are restricted here ($name = $restricts) and there is no passwordless sudo to lift it: opentiger's agents fall back to Landlock's TCP rules, which leave UDP and DNS open. Lift it in an earlier step: sudo sysctl -w $name=$allows"
    exit 0
  fi
  sudo -n sysctl -q -w "$name=$allows"
  lifted+=("$name=$allows")
done

if ((${#lifted[@]} == 0)); then
  echo "userns: unprivileged user namespaces are allowed here: agents run in network namespaces of their own"
else
  echo "userns: set ${lifted[*]}: agents run in network namespaces of their own"
fi
