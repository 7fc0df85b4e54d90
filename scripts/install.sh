#!/bin/sh
# Installs the opentiger binary of a release, without a clone or a Rust toolchain:
#
#   curl -fsSL https://raw.githubusercontent.com/opentiger/opentiger/main/scripts/install.sh | sh
#   curl -fsSL .../install.sh | sh -s -- --version v0.1.0 --dir /usr/local/bin
#
# It downloads this machine's release asset (`opentiger-<target>.tar.gz`, a static binary for
# Linux, or macOS, on x86_64 or arm64) and the release's SHA256SUMS, checks the asset against
# it with sha256sum or shasum, and installs `opentiger` into the folder (default
# ~/.local/bin). A checksum that does not match, or a release without one, installs nothing.
#
# Options (or the variables in brackets):
#   --version TAG   the release, e.g. v0.1.0 [OPENTIGER_VERSION; default: the latest]
#   --dir DIR       where `opentiger` goes [OPENTIGER_INSTALL_DIR; default: ~/.local/bin]
# OPENTIGER_RELEASES: where releases are downloaded from (a mirror, or a local copy laid out
# as `<base>/download/<tag>/<asset>` and `<base>/latest/download/<asset>`); default the
# project's GitHub releases.
set -eu

releases=${OPENTIGER_RELEASES:-https://github.com/opentiger/opentiger/releases}
version=${OPENTIGER_VERSION:-latest}
dir=${OPENTIGER_INSTALL_DIR:-${HOME:-}/.local/bin}

say() { printf 'opentiger install: %s\n' "$1"; }
fail() {
  printf 'opentiger install: error: %s\n' "$1" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case $1 in
    --version)
      [ $# -ge 2 ] || fail "--version needs a release tag, e.g. --version v0.1.0"
      version=$2
      shift 2
      ;;
    --dir)
      [ $# -ge 2 ] || fail "--dir needs a folder"
      dir=$2
      shift 2
      ;;
    -h | --help)
      echo "usage: install.sh [--version TAG] [--dir DIR]: the opentiger release binary for this machine, checked against the release's SHA256SUMS, into DIR (default ~/.local/bin)"
      exit 0
      ;;
    *) fail "unknown option \`$1\` (use --version TAG, --dir DIR)" ;;
  esac
done
[ -n "$dir" ] || fail "no install folder: HOME is not set; give --dir DIR"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64 | Linux-amd64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  Darwin-arm64 | Darwin-aarch64) target=aarch64-apple-darwin ;;
  *) fail "no release binary for $(uname -s) $(uname -m): build from source with \`cargo install --locked --path .\` in a clone" ;;
esac

if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  fail "neither sha256sum nor shasum is installed: the download cannot be checked, so nothing is installed"
fi
command -v curl >/dev/null 2>&1 || fail "curl is not installed: install it (it downloads the release)"

case $version in
  latest) base=$releases/latest/download ;;
  *) base=$releases/download/$version ;;
esac
asset=opentiger-$target.tar.gz

work=$(mktemp -d "${TMPDIR:-/tmp}/opentiger-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

say "downloading $asset ($version) from $base"
curl -fsSL --retry 2 -o "$work/$asset" "$base/$asset" ||
  fail "could not download $base/$asset (is $version a release with binaries? \`--version TAG\` picks another)"
curl -fsSL --retry 2 -o "$work/SHA256SUMS" "$base/SHA256SUMS" ||
  fail "release $version has no SHA256SUMS to check $asset against ($base/SHA256SUMS): nothing installed"

expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$work/SHA256SUMS")
[ -n "$expected" ] || fail "the SHA256SUMS of release $version lists no $asset: nothing installed"
actual=$(sha256 "$work/$asset")
if [ "$actual" != "$expected" ]; then
  fail "$asset does not match the release's SHA256SUMS (expected $expected, got $actual): a corrupted or tampered download, nothing installed"
fi
say "$asset matches SHA256SUMS ($actual)"

mkdir "$work/unpacked"
tar -xzf "$work/$asset" -C "$work/unpacked" opentiger ||
  fail "$asset holds no \`opentiger\`: nothing installed"
"$work/unpacked/opentiger" --version >/dev/null 2>&1 ||
  fail "the opentiger of $asset does not run on this $(uname -s) $(uname -m): nothing installed"

mkdir -p "$dir" || fail "cannot create $dir: give another folder with --dir"
# Into the folder under a temporary name, then renamed: a running opentiger is never
# overwritten in place, and a failed copy leaves no half-written binary.
cp "$work/unpacked/opentiger" "$dir/.opentiger.new" || fail "cannot write to $dir: give another folder with --dir"
chmod 755 "$dir/.opentiger.new"
mv -f "$dir/.opentiger.new" "$dir/opentiger"
say "installed $("$dir/opentiger" --version) at $dir/opentiger"
case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *) say "$dir is not on your PATH: add it, e.g. \`export PATH=\"$dir:\$PATH\"\` in your shell's profile" ;;
esac
