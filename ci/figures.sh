#!/usr/bin/env bash
# Prints the figures that drift with every build, for the tree you have, so
# that no document has to carry them typed in: the release binary's size, the
# number of crates it is built from, the size of target/, the static binaries'
# sizes and the macOS binaries' (if dist/build.sh has built them) and, with
# --clean-build, the wall and CPU time of a release build from scratch (in a
# scratch target dir; a few minutes).
#
#   bash ci/figures.sh                # builds target/release/tuls if needed
#   bash ci/figures.sh --clean-build  # also times a release build from scratch
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir=$(cargo metadata --locked --format-version 1 --no-deps \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')

cargo build --locked --release --bin tuls --quiet
bin="$target_dir/release/tuls"
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB (%d bytes)", b / 1048576, b }'; }
echo "release binary (target/release/tuls, strip = true): $(mib "$(stat -c %s "$bin")")"

# Every package the binary is built from (normal and build dependencies, this
# host's target, tuls itself included), counted once each.
crates=$(cargo tree --locked --edges normal,build --prefix none --format '{p}' \
  | sed 's/ (.*//; s/ (\*)$//' | sort -u | wc -l)
echo "crates compiled for the release binary (cargo tree, host target, tuls included): $crates"
echo "target/ on disk ($target_dir): $(du -sh "$target_dir" 2>/dev/null | cut -f1)"

for f in dist/out/tuls-*; do
  case "$f" in
    *-linux-musl) [ -f "$f" ] && echo "static binary $f: $(mib "$(stat -c %s "$f")")" ;;
    *-apple-darwin) [ -f "$f" ] && echo "macOS binary $f (for the MCP Bundle): $(mib "$(stat -c %s "$f")")" ;;
  esac
done

if [ "${1:-}" = "--clean-build" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  echo "timing: cargo build --release --bin tuls in an empty target dir ($(nproc) cores)..."
  TIMEFORMAT='release build from scratch: %0R s wall, %0U s user + %0S s system CPU'
  time CARGO_TARGET_DIR="$scratch" cargo build --locked --release --bin tuls --quiet
  echo "its target/ on disk: $(du -sh "$scratch" | cut -f1)"
fi
