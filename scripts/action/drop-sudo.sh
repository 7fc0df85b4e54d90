#!/usr/bin/env bash
# The action's `drop-sudo: true` step: takes the runner user's passwordless sudo away for the
# rest of the job, before opentiger (and the agent it starts) runs. GitHub's hosted Linux images
# grant it in a rule file of /etc/sudoers.d naming the user (`runner`); every such file is
# removed, with sudo, one last time. The Docker socket, whose group the hosted user is in and
# which is root by another name (`docker run -v /:/host`), is closed to everyone but root.
# Afterwards `sudo -n true` must fail, else the step fails: a job that asked for the drop never
# runs an agent with root at hand.
#
# What it costs: nothing after this step in the job can use sudo or Docker (no `apt-get
# install`, no `docker run`); put such steps before it.
#
# Environment (tests point these elsewhere): SUDOERS_DIR (default /etc/sudoers.d),
# DOCKER_SOCKET (default /var/run/docker.sock).
set -euo pipefail

sudoers_dir=${SUDOERS_DIR:-/etc/sudoers.d}
docker_socket=${DOCKER_SOCKET:-/var/run/docker.sock}
user=$(id -un)

if [ "$(id -u)" = 0 ]; then
  echo "::error::drop-sudo: this job runs as root, so there is no sudo to take away. Run it as an unprivileged user (GitHub's hosted runners do) or leave drop-sudo off"
  exit 1
fi
if ! sudo -n true 2>/dev/null; then
  echo "drop-sudo: $user has no passwordless sudo here: nothing to drop"
  exit 0
fi
if sudo -n test -e "$docker_socket"; then
  sudo -n chmod 600 "$docker_socket"
fi
removed=()
for file in "$sudoers_dir"/*; do
  sudo -n test -f "$file" || continue
  if sudo -n grep -qE "^[[:space:]]*${user}[[:space:]]" "$file"; then
    sudo -n rm -f "$file"
    removed+=("$file")
  fi
done
# A cached credential would let the next `sudo` through without asking.
sudo -k 2>/dev/null || true
if sudo -n true 2>/dev/null; then
  echo "::error::drop-sudo: $user still has passwordless sudo after its rules in $sudoers_dir were removed (${removed[*]:-none found}): find the rule that grants it (\`sudo -l\`) and remove it in an earlier step"
  exit 1
fi
echo "drop-sudo: passwordless sudo taken from $user (removed: ${removed[*]:-none}); nothing after this step in the job can use sudo or Docker"
