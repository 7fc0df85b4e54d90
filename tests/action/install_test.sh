#!/usr/bin/env bash
# Tests of scripts/action/install.sh against a fake release: a local HTTP server (started by
# tests/action.rs) serves the folder this script fills, laid out like GitHub's release downloads
# (`OWNER/NAME/releases/download/TAG/ASSET`). `gh` and `cargo` are fakes that record their
# arguments, so nothing here reaches GitHub or builds anything.
#
# Usage: tests/action/install_test.sh SERVED_DIR BASE_URL   (run by tests/action.rs)
# Prints one line per case and `N passed, N failed`; exits 1 when a case failed.
# shellcheck disable=SC2016 # expected texts hold literal backticks
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
install_sh="$(cd "$here/../.." && pwd)/scripts/action/install.sh"
served=${1:?usage: $0 SERVED_DIR BASE_URL}
base_url=${2:?usage: $0 SERVED_DIR BASE_URL}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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
finish_case() {
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

# --- the fakes -------------------------------------------------------------------------------
# The released program: a script, so it runs here whatever this machine is.
mkdir -p "$work/program"
printf '#!/bin/sh\necho "opentiger 9.9.9"\n' >"$work/program/opentiger"
chmod +x "$work/program/opentiger"
# A binary for another architecture: bytes this machine cannot execute.
mkdir -p "$work/foreign"
printf '\177ELF\002\001\001\000not-for-this-machine' >"$work/foreign/opentiger"
chmod +x "$work/foreign/opentiger"

# gh: records its arguments, exits $FAKE_GH_EXIT. cargo: records its arguments and "builds"
# the program into --root.
mkdir -p "$work/tools"
cat >"$work/tools/gh" <<'EOF'
#!/usr/bin/env bash
if [[ " $* " == *" --help "* ]]; then exit "${FAKE_GH_HELP_EXIT:-0}"; fi
printf '%s\n' "$@" >"$FAKE_GH_ARGV"
if [[ ${FAKE_GH_EXIT:-0} != 0 ]]; then echo "no attestations found for the subject" >&2; fi
exit "${FAKE_GH_EXIT:-0}"
EOF
cat >"$work/tools/cargo" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$@" >"$FAKE_CARGO_ARGV"
while (($#)); do
  if [[ $1 == --root ]]; then root=$2; fi
  shift
done
mkdir -p "$root/bin"
printf '#!/bin/sh\necho "opentiger built"\n' >"$root/bin/opentiger"
chmod +x "$root/bin/opentiger"
EOF
chmod +x "$work/tools/gh" "$work/tools/cargo"
export FAKE_GH_ARGV="$work/gh-argv" FAKE_CARGO_ARGV="$work/cargo-argv"

# A PATH with only what install.sh needs (no gh, no cargo), for the cases without them.
mkdir -p "$work/bare"
for tool in bash sh env curl tar gzip sha256sum shasum awk mkdir mktemp cat cut rm mv tr sed \
  dirname find sort uname head grep; do
  if found=$(command -v "$tool"); then ln -sf "$found" "$work/bare/$tool"; fi
done

# release TAG ASSET_FOLDER... : publishes a release whose assets hold the program (or, for a
# folder named `target=DIR`, that folder's opentiger for that target), with its SHA256SUMS.
release() {
  local tag=$1
  shift
  local dir="$served/acme/opentiger/releases/download/$tag"
  mkdir -p "$dir"
  local spec target from
  for spec in "$@"; do
    target=${spec%%=*}
    from=$work/program
    if [[ $spec == *=* ]]; then from=${spec#*=}; fi
    tar -czf "$dir/opentiger-$target.tar.gz" -C "$from" opentiger
  done
  (cd "$dir" && sha256sum opentiger-*.tar.gz >SHA256SUMS)
}
all_targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin
  aarch64-apple-darwin)

# run_install MODE: install.sh MODE with the case's environment; stdout and stderr to
# $work/stdout, outputs to $work/output, the job summary to $work/summary, exit code in $rc.
run_install() {
  : >"$work/output"
  : >"$work/summary"
  rm -f "$FAKE_GH_ARGV" "$FAKE_CARGO_ARGV"
  set +e
  GITHUB_OUTPUT="$work/output" GITHUB_STEP_SUMMARY="$work/summary" GITHUB_PATH="$work/path" \
    GITHUB_SERVER_URL=$base_url ACTION_REPOSITORY=acme/opentiger RUNNER_TEMP="$work" \
    RELEASE_CACHE="$work/releases" INSTALL_ROOT="$work/root" \
    CARGO_TARGET_DIR="$work/target" RUNNER_OS=${OS:-Linux} RUNNER_ARCH=${ARCH:-X64} \
    PATH=${CASE_PATH:-$work/tools:$PATH} bash "$install_sh" "$1" >"$work/stdout" 2>&1
  rc=$?
  set -e
}
output_of() { sed -n "s/^$1=//p" "$work/output"; }

kept="$work/releases/v1.0.0/x86_64-unknown-linux-musl/opentiger"

# --- a good asset ------------------------------------------------------------------------------
release v1.0.0 "${all_targets[@]}"
export VERSION=v1.0.0
unset OS ARCH CASE_PATH FAKE_GH_EXIT
run_install download
check "exit 0 (got $rc)" test "$rc" = 0
check "found" has_line "$work/output" "found=true"
check "the binary, kept by version" has_line "$work/output" "bin=$kept"
check "it runs" test "$("$kept" --version)" = "opentiger 9.9.9"
check "checked against SHA256SUMS" has_text "$work/stdout" "opentiger-x86_64-unknown-linux-musl.tar.gz matches SHA256SUMS"
check "gh verified the attestation" test "$(sed -n '1p;2p;4p;5p' "$FAKE_GH_ARGV" 2>/dev/null | tr '\n' ' ')" = \
  "attestation verify --repo acme/opentiger "
check "of the downloaded asset" grep -q '/opentiger-x86_64-unknown-linux-musl.tar.gz$' "$FAKE_GH_ARGV"
check "and says so" has_text "$work/stdout" "gh attestation verify: built by acme/opentiger"
check "no fallback note" test ! -s "$work/summary"
# The same version again, with the release gone from the server: the cache answers.
rm -rf "$served/acme/opentiger/releases/download/v1.0.0"
run_install download
check "cached: exit 0 (got $rc)" test "$rc" = 0
check "cached: from the cache" has_text "$work/stdout" "from the cache"
check "cached: same binary" has_line "$work/output" "bin=$kept"
check "cached: nothing downloaded, nothing verified again" test ! -e "$FAKE_GH_ARGV"
finish_case "good asset: downloaded, checked, attested, kept by version"

# --- expose: on PATH; install-only stops before the tick -------------------------------------
: >"$work/path"
BIN=$kept INSTALL_ONLY=true run_install expose
check "exit 0 (got $rc)" test "$rc" = 0
check "on PATH" has_line "$work/path" "$(dirname "$kept")"
check "no tick" has_line "$work/output" "tick=false"
check "bin output" has_line "$work/output" "bin=$kept"
BIN=$kept INSTALL_ONLY=false run_install expose
check "a tick otherwise" has_line "$work/output" "tick=true"
BIN=$kept INSTALL_ONLY=maybe run_install expose
check "a bad install-only fails (got $rc)" test "$rc" = 1
check "naming the input" has_text "$work/stdout" 'input install-only: `maybe` is not true or false'
finish_case "expose"

# --- no gh on the runner: the checksum alone --------------------------------------------------
release v1.0.3 "${all_targets[@]}"
export VERSION=v1.0.3
CASE_PATH="$work/bare" run_install download
check "exit 0 (got $rc)" test "$rc" = 0
check "found" has_line "$work/output" "found=true"
check "says provenance was not checked" has_text "$work/stdout" "gh is not installed, so the build provenance is not checked"
finish_case "good asset without gh"

# --- a gh too old for attestations: the checksum alone, said so ----------------------------------
rm -rf "$work/releases/v1.0.3"
FAKE_GH_HELP_EXIT=1 run_install download
check "exit 0 (got $rc)" test "$rc" = 0
check "found" has_line "$work/output" "found=true"
check "says why provenance was not checked" has_text "$work/stdout" 'this gh has no `attestation` command'
check "verify not called" test ! -e "$FAKE_GH_ARGV"
finish_case "good asset with an old gh"

# --- gh rejects the attestation: an error -------------------------------------------------------
release v1.0.4 "${all_targets[@]}"
export VERSION=v1.0.4
FAKE_GH_EXIT=1 run_install download
check "exit 1 (got $rc)" test "$rc" = 1
check "an error annotation" has_text "$work/stdout" "::error title=opentiger action::gh attestation verify rejected opentiger-x86_64-unknown-linux-musl.tar.gz of release v1.0.4"
check "gh's reason shown" has_text "$work/stdout" "gh: no attestations found"
check "not found, not a fallback" lacks_text "$work/output" "found="
check "nothing kept" test ! -e "$work/releases/v1.0.4"
finish_case "attestation rejected"

# --- a bad checksum: an error, never a build ---------------------------------------------------
release v1.0.1 "${all_targets[@]}"
sed -i '/x86_64-unknown-linux-musl/s/^[0-9a-f]\{8\}/00000000/' \
  "$served/acme/opentiger/releases/download/v1.0.1/SHA256SUMS"
export VERSION=v1.0.1
run_install download
check "exit 1 (got $rc)" test "$rc" = 1
check "an error naming the asset" has_text "$work/stdout" "::error title=opentiger action::opentiger-x86_64-unknown-linux-musl.tar.gz of release v1.0.1 does not match its SHA256SUMS (expected 00000000"
check "and that nothing is built instead" has_text "$work/stdout" "nothing is built instead"
check "no found output: the build steps do not run" lacks_text "$work/output" "found="
check "no binary" lacks_text "$work/output" "bin="
check "nothing kept" test ! -e "$work/releases/v1.0.1"
check "gh not even asked" test ! -e "$FAKE_GH_ARGV"
finish_case "bad checksum"

# --- SHA256SUMS missing from the release: an error ---------------------------------------------
release v1.0.5 "${all_targets[@]}"
rm "$served/acme/opentiger/releases/download/v1.0.5/SHA256SUMS"
export VERSION=v1.0.5
run_install download
check "exit 1 (got $rc)" test "$rc" = 1
check "an error" has_text "$work/stdout" "release v1.0.5 has opentiger-x86_64-unknown-linux-musl.tar.gz but no SHA256SUMS"
check "no fallback" lacks_text "$work/output" "found="
finish_case "no SHA256SUMS"

# --- a missing asset: the one case that builds, and says so with its cost ----------------------
release v1.0.2 aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin
export VERSION=v1.0.2
run_install download
check "exit 0 (got $rc)" test "$rc" = 0
check "not found" has_line "$work/output" "found=false"
check "the reason" has_line "$work/output" "reason=release v1.0.2 of acme/opentiger has no opentiger-x86_64-unknown-linux-musl.tar.gz"
check "in the log" has_text "$work/stdout" "the release has no opentiger-x86_64-unknown-linux-musl.tar.gz"
reason=$(output_of reason)
key=$(output_of bin-key)
REASON=$reason CACHE_KEY=$key run_install build
check "build: exit 0 (got $rc)" test "$rc" = 0
check "build: cargo install of the tag" test "$(tr '\n' ' ' <"$FAKE_CARGO_ARGV" 2>/dev/null)" = \
  "install --locked --force --root $work/root --git $base_url/acme/opentiger --tag v1.0.2 opentiger "
check "build: the binary" has_line "$work/output" "bin=$work/root/bin/opentiger"
check "build: the log says why and what it cost" grep -q "^opentiger: built from source in [0-9]*s (release v1.0.2 of acme/opentiger has no opentiger-x86_64-unknown-linux-musl.tar.gz)$" "$work/stdout"
check "build: so does the job summary" grep -q "^- opentiger: built from source in [0-9]*s (release v1.0.2 of acme/opentiger has no opentiger-x86_64-unknown-linux-musl.tar.gz)$" "$work/summary"
# The next tick restores that build from the cache, and still says it is a source build.
REASON=$reason CACHE_KEY=$key run_install build
check "rebuild: from the cache" has_text "$work/stdout" "restored from the cache"
check "rebuild: cargo not run" test ! -e "$FAKE_CARGO_ARGV"
check "rebuild: the summary says so" has_text "$work/summary" "built from source (release v1.0.2 of acme/opentiger has no opentiger-x86_64-unknown-linux-musl.tar.gz): the build was restored from the cache"
finish_case "missing asset: built from the tag, with the reason and the time in log and summary"

# --- the wrong architecture --------------------------------------------------------------------
# A runner opentiger has no binaries for: an error naming it, before any download.
export VERSION=v1.0.3
ARCH=ARM run_install download
check "32-bit ARM: exit 1 (got $rc)" test "$rc" = 1
check "32-bit ARM: named" has_text "$work/stdout" "::error title=opentiger action::opentiger runs on Linux and macOS runners, x64 or ARM64, only (this one: Linux ARM)"
check "32-bit ARM: no fallback" lacks_text "$work/output" "found="
OS=Windows run_install download
check "Windows: exit 1 (got $rc)" test "$rc" = 1
# An ARM64 runner gets the aarch64 asset, a macOS one the darwin asset.
ARCH=ARM64 run_install download
check "ARM64: the aarch64 musl asset" has_line "$work/output" "bin=$work/releases/v1.0.3/aarch64-unknown-linux-musl/opentiger"
OS=macOS ARCH=ARM64 run_install download
check "macOS ARM64: the aarch64 darwin asset" has_line "$work/output" "bin=$work/releases/v1.0.3/aarch64-apple-darwin/opentiger"
# An asset of this runner's name whose binary is for another machine: an error, not a build.
release v1.0.6 "x86_64-unknown-linux-musl=$work/foreign" aarch64-unknown-linux-musl
export VERSION=v1.0.6
run_install download
check "foreign binary: exit 1 (got $rc)" test "$rc" = 1
check "foreign binary: named" has_text "$work/stdout" "::error title=opentiger action::the opentiger of opentiger-x86_64-unknown-linux-musl.tar.gz (release v1.0.6) does not run on this Linux X64 runner"
check "foreign binary: no fallback" lacks_text "$work/output" "found="
check "foreign binary: nothing kept" test ! -e "$work/releases/v1.0.6"
finish_case "wrong architecture"

# --- the server cannot be reached: an error, not a build ---------------------------------------
export VERSION=v1.0.3
rm -rf "$work/releases"
base_url_saved=$base_url
base_url=http://127.0.0.1:9
run_install download
base_url=$base_url_saved
check "exit 1 (got $rc)" test "$rc" = 1
check "could not download" has_text "$work/stdout" "::error title=opentiger action::could not download http://127.0.0.1:9/acme/opentiger/releases/download/v1.0.3/"
check "no fallback" lacks_text "$work/output" "found="
finish_case "unreachable release server"

# --- no version: the key is the action's own sources, every crate of the workspace included ----
unset VERSION
source_tree="$work/action"
mkdir -p "$source_tree/src" "$source_tree/crates/engine/src" "$source_tree/templates"
printf '[workspace]\n' >"$source_tree/Cargo.toml"
: >"$source_tree/Cargo.lock"
echo 'fn main() {}' >"$source_tree/src/main.rs"
echo 'pub fn rule() {}' >"$source_tree/crates/engine/src/lib.rs"
ACTION_PATH=$source_tree run_install download
first=$(output_of build-key)
check "source: no version, nothing to download" has_line "$work/output" "found=false"
ACTION_PATH=$source_tree run_install download
check "source: the same sources, the same key" test "$(output_of build-key)" = "$first"
echo 'pub fn rule() { let _ = 1; }' >"$source_tree/crates/engine/src/lib.rs"
ACTION_PATH=$source_tree run_install download
check "source: a change in a crate, another key" test "$(output_of build-key)" != "$first"
finish_case "the build key of an action built from source"

echo "$passed passed, $failed failed"
((failed == 0))
