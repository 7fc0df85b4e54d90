#!/usr/bin/env bash
# Installs the `opentiger` binary for the GitHub Action (action.yml), in two steps around the
# Actions cache:
#
#   install.sh download   a release asset when VERSION is set and the release has one for this
#                         runner; always prints the cache keys of a source build
#   install.sh build      `cargo install --locked` of the action's own source (ACTION_PATH), or
#                         of the repository at tag VERSION when VERSION is set; skipped when the
#                         cache restored a binary built from the same source
#
# Environment: VERSION, ACTION_PATH, ACTION_REPOSITORY (owner/name; empty for a local action),
# GITHUB_SERVER_URL, RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP, GITHUB_OUTPUT, INSTALL_ROOT (default
# ~/.cargo/opentiger), CARGO_TARGET_DIR (default ~/.cargo/opentiger-target), CACHE_KEY (build).
# Writes `bin=<path of the binary>` (and for download: found, bin-key, build-key, build-prefix)
# to GITHUB_OUTPUT.
set -euo pipefail

outputs=${GITHUB_OUTPUT:-/dev/null}
root=${INSTALL_ROOT:-$HOME/.cargo/opentiger}
version=${VERSION:-}
action_path=${ACTION_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}
repository=${ACTION_REPOSITORY:-}
server=${GITHUB_SERVER_URL:-https://github.com}

output() { printf '%s=%s\n' "$1" "$2" >>"$outputs"; }
fail() {
  printf '::error title=opentiger action::%s\n' "$1"
  exit 1
}

# The Rust target of this runner, as release assets are named.
target() {
  case "${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}" in
    Linux-X64 | Linux-x86_64) echo x86_64-unknown-linux-gnu ;;
    Linux-ARM64 | Linux-aarch64) echo aarch64-unknown-linux-gnu ;;
    macOS-X64 | Darwin-x86_64) echo x86_64-apple-darwin ;;
    macOS-ARM64 | Darwin-arm64) echo aarch64-apple-darwin ;;
    *) echo unsupported ;;
  esac
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi
}

# What the binary is built from: the tag, or a hash of the action's own sources (an action is
# downloaded without its git history, so there is no commit to name).
source_id() {
  if [[ -n $version ]]; then
    printf 'tag-%s' "$version"
    return
  fi
  (
    cd "$action_path"
    { find Cargo.toml Cargo.lock src templates -type f -print0 2>/dev/null || true; } |
      LC_ALL=C sort -z |
      while IFS= read -r -d '' file; do
        printf '%s\0' "$file"
        cat "$file"
      done | sha256 | cut -c1-20
  )
}

check_binary() {
  "$1" --version >/dev/null 2>&1
}

download() {
  local t
  t=$(target)
  local prefix="opentiger-${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}"
  local id
  id=$(source_id)
  output bin-key "$prefix-bin-$id"
  output build-key "$prefix-build-$id"
  output build-prefix "$prefix-build-"
  if [[ $t == unsupported ]]; then
    fail "opentiger runs on Linux and macOS runners only (this one: ${RUNNER_OS:-?} ${RUNNER_ARCH:-?})"
  fi
  if [[ -z $version || -z $repository ]]; then
    output found false
    return
  fi
  local dir="${RUNNER_TEMP:-/tmp}/opentiger-release"
  local url="$server/$repository/releases/download/$version/opentiger-$t.tar.gz"
  mkdir -p "$dir"
  if curl --fail --silent --show-error --location --retry 2 --output "$dir/opentiger.tar.gz" "$url" &&
    tar -xzf "$dir/opentiger.tar.gz" -C "$dir" opentiger &&
    check_binary "$dir/opentiger"; then
    echo "opentiger $version: downloaded $url"
    output found true
    output bin "$dir/opentiger"
  else
    echo "opentiger $version: no release asset at $url; building from source instead"
    output found false
  fi
}

build() {
  local key=${CACHE_KEY:-}
  local binary="$root/bin/opentiger"
  if [[ -n $key && -f "$root/.source" && $(cat "$root/.source") == "$key" ]] && check_binary "$binary"; then
    echo "opentiger: restored from the cache ($key)"
    output bin "$binary"
    return
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    fail "cargo is missing: add a Rust toolchain step (e.g. dtolnay/rust-toolchain@stable) before this action, or set \`version\` to a release that has binaries"
  fi
  local source=(--path "$action_path")
  if [[ -n $version && -n $repository ]]; then
    source=(--git "$server/$repository" --tag "$version" opentiger)
  fi
  echo "::group::cargo install ${source[*]}"
  CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cargo/opentiger-target} \
    cargo install --locked --force --root "$root" "${source[@]}"
  echo "::endgroup::"
  check_binary "$binary" || fail "the built $binary does not run"
  if [[ -n $key ]]; then printf '%s' "$key" >"$root/.source"; fi
  output bin "$binary"
}

case "${1:-}" in
  download) download ;;
  build) build ;;
  *)
    echo "usage: $0 download|build" >&2
    exit 2
    ;;
esac
