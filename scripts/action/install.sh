#!/usr/bin/env bash
# Installs the `opentiger` binary for the GitHub Action (action.yml), in steps around the
# Actions cache:
#
#   install.sh download   with VERSION set: the release asset `opentiger-<target>.tar.gz` of this
#                         runner, checked against the SHA256SUMS of the same release (and by
#                         `gh attestation verify` when gh is installed), kept by version in
#                         RELEASE_CACHE; always prints the cache keys of a source build
#   install.sh build      only when no asset exists (or without VERSION): `cargo install
#                         --locked` of the action's own source (ACTION_PATH), or of the
#                         repository at tag VERSION; skipped when the cache restored a binary
#                         built from the same source. Says in the log and the job summary why it
#                         built and what that cost.
#   install.sh expose     puts the installed binary on PATH for the job's later steps, and says
#                         whether the action runs a tick (INSTALL_ONLY=false) or stops there
#
# An asset whose checksum does not match, a release with no SHA256SUMS, an attestation gh
# rejects or a binary that does not run here are errors, never a reason to build instead.
#
# Environment: VERSION, ACTION_PATH, ACTION_REPOSITORY (owner/name; empty for a local action),
# GITHUB_SERVER_URL, RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
# GITHUB_PATH, INSTALL_ROOT (default ~/.cargo/opentiger), RELEASE_CACHE (default
# ~/.cargo/opentiger-releases), CARGO_TARGET_DIR (default ~/.cargo/opentiger-target), CACHE_KEY
# and REASON (build), BIN and INSTALL_ONLY (expose).
# Writes `bin=<path of the binary>` (and for download: found, reason, bin-key, build-key,
# build-prefix; for expose: tick) to GITHUB_OUTPUT.
set -euo pipefail

outputs=${GITHUB_OUTPUT:-/dev/null}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
root=${INSTALL_ROOT:-$HOME/.cargo/opentiger}
releases=${RELEASE_CACHE:-$HOME/.cargo/opentiger-releases}
version=${VERSION:-}
action_path=${ACTION_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}
repository=${ACTION_REPOSITORY:-}
server=${GITHUB_SERVER_URL:-https://github.com}

output() { printf '%s=%s\n' "$1" "$2" >>"$outputs"; }
fail() {
  printf '::error title=opentiger action::%s\n' "$1"
  exit 1
}

# The Rust target of this runner, as release assets are named (Linux ones are static musl
# binaries, so they run on any image).
target() {
  case "${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}" in
    Linux-X64 | Linux-x86_64) echo x86_64-unknown-linux-musl ;;
    Linux-ARM64 | Linux-aarch64 | Linux-arm64) echo aarch64-unknown-linux-musl ;;
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
    { find Cargo.toml Cargo.lock src crates templates -type f -print0 2>/dev/null || true; } |
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

# fetch URL FILE: 0 when fetched; 4 when the server has no such file (404); 1 otherwise, with
# the reason on stderr. Transient failures are retried by curl.
fetch() {
  local code
  if ! code=$(curl --silent --show-error --location --retry 2 --output "$2" \
    --write-out '%{http_code}' "$1"); then
    return 1
  fi
  case $code in
    200) return 0 ;;
    404) return 4 ;;
    *)
      echo "HTTP $code" >&2
      return 1
      ;;
  esac
}

# A line of the job summary (and the same in the log).
note() {
  echo "opentiger: $1"
  printf -- '- opentiger: %s\n' "$1" >>"$summary"
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
    fail "opentiger runs on Linux and macOS runners, x64 or ARM64, only (this one: ${RUNNER_OS:-$(uname -s)} ${RUNNER_ARCH:-$(uname -m)})"
  fi
  if [[ -z $version ]]; then
    output found false
    output reason "no \`version\` input: the action builds its own source"
    return
  fi
  if [[ -z $repository ]]; then
    output found false
    output reason "a local action (\`uses: ./\`) has no releases to download $version from"
    return
  fi
  local asset="opentiger-$t.tar.gz"
  local kept="$releases/$version/$t"
  if [[ -f $kept/opentiger ]] && check_binary "$kept/opentiger"; then
    echo "opentiger $version: $asset from the cache (checked when it was downloaded)"
    output found true
    output bin "$kept/opentiger"
    return
  fi
  local base="$server/$repository/releases/download/$version"
  local dir
  dir=$(mktemp -d "${RUNNER_TEMP:-/tmp}/opentiger-release.XXXXXX")
  local got=0
  fetch "$base/$asset" "$dir/$asset" 2>"$dir/error" || got=$?
  if ((got == 4)); then
    echo "opentiger $version: the release has no $asset ($base/$asset: 404)"
    output found false
    output reason "release $version of $repository has no $asset"
    return
  fi
  if ((got != 0)); then
    fail "could not download $base/$asset: $(tr '\n' ' ' <"$dir/error")"
  fi
  got=0
  fetch "$base/SHA256SUMS" "$dir/SHA256SUMS" 2>"$dir/error" || got=$?
  if ((got != 0)); then
    fail "release $version has $asset but no SHA256SUMS to check it against ($base/SHA256SUMS: $(if ((got == 4)); then echo 404; else tr '\n' ' ' <"$dir/error"; fi)): nothing installed"
  fi
  local expected actual
  expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$dir/SHA256SUMS")
  if [[ -z $expected ]]; then
    fail "the SHA256SUMS of release $version lists no $asset: nothing installed"
  fi
  actual=$(sha256 <"$dir/$asset" | cut -d' ' -f1)
  if [[ $actual != "$expected" ]]; then
    fail "$asset of release $version does not match its SHA256SUMS (expected $expected, got $actual): a corrupted or tampered download, so nothing is installed and nothing is built instead"
  fi
  echo "opentiger $version: $asset matches SHA256SUMS ($actual)"
  if command -v gh >/dev/null 2>&1 && ! gh attestation --help >/dev/null 2>&1; then
    echo "opentiger $version: this gh has no \`attestation\` command (gh 2.49 or newer has), so the build provenance is not checked (the checksum is)"
  elif command -v gh >/dev/null 2>&1; then
    if ! gh attestation verify "$dir/$asset" --repo "$repository" >"$dir/attestation" 2>&1; then
      sed 's/^/  gh: /' "$dir/attestation"
      fail "gh attestation verify rejected $asset of release $version (no build provenance from $repository): nothing installed"
    fi
    echo "opentiger $version: gh attestation verify: built by $repository's release workflow"
  else
    echo "opentiger $version: gh is not installed, so the build provenance is not checked (the checksum is)"
  fi
  mkdir -p "$dir/unpacked"
  if ! tar -xzf "$dir/$asset" -C "$dir/unpacked" opentiger; then
    fail "$asset of release $version holds no \`opentiger\`"
  fi
  if ! check_binary "$dir/unpacked/opentiger"; then
    fail "the opentiger of $asset (release $version) does not run on this ${RUNNER_OS:-$(uname -s)} ${RUNNER_ARCH:-$(uname -m)} runner"
  fi
  mkdir -p "$kept"
  mv "$dir/unpacked/opentiger" "$kept/opentiger"
  rm -rf "$dir"
  echo "opentiger $version: installed $base/$asset"
  output found true
  output bin "$kept/opentiger"
}

build() {
  local key=${CACHE_KEY:-}
  local reason=${REASON:-no release asset to download}
  local binary="$root/bin/opentiger"
  if [[ -n $key && -f "$root/.source" && $(cat "$root/.source") == "$key" ]] && check_binary "$binary"; then
    echo "opentiger: restored from the cache ($key)"
    note "built from source ($reason): the build was restored from the cache"
    output bin "$binary"
    return
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    fail "cargo is missing: add a Rust toolchain step (e.g. dtolnay/rust-toolchain@stable) before this action, or set \`version\` to a release that has binaries ($reason)"
  fi
  local source=(--path "$action_path")
  if [[ -n $version && -n $repository ]]; then
    source=(--git "$server/$repository" --tag "$version" opentiger)
  fi
  echo "opentiger: building from source: $reason"
  local started=$SECONDS
  echo "::group::cargo install ${source[*]}"
  CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cargo/opentiger-target} \
    cargo install --locked --force --root "$root" "${source[@]}"
  echo "::endgroup::"
  check_binary "$binary" || fail "the built $binary does not run"
  if [[ -n $key ]]; then printf '%s' "$key" >"$root/.source"; fi
  note "built from source in $((SECONDS - started))s ($reason)"
  output bin "$binary"
}

expose() {
  local only
  only=$(printf '%s' "${INSTALL_ONLY:-false}" | tr '[:upper:]' '[:lower:]')
  case $only in
    '' | false) output tick true ;;
    true) output tick false ;;
    *) fail "input install-only: \`${INSTALL_ONLY}\` is not true or false" ;;
  esac
  local bin=${BIN:-}
  if [[ -z $bin ]] || ! check_binary "$bin"; then
    fail "no runnable opentiger was installed (${bin:-no path})"
  fi
  dirname "$bin" >>"${GITHUB_PATH:-/dev/null}"
  output bin "$bin"
  echo "opentiger: $("$bin" --version) at $bin, on PATH for the next steps"
}

case "${1:-}" in
  download) download ;;
  build) build ;;
  expose) expose ;;
  *)
    echo "usage: $0 download|build|expose" >&2
    exit 2
    ;;
esac
