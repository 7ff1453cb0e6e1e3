#!/usr/bin/env bash
# Runs a ```sh block under the README's "## Quick start" verbatim, read from
# the README itself: block 1 (default) is the quick start, block 2 the static
# binary. Only the placeholder directory /path/to/project is replaced, by a
# scratch directory. As a new user's shell would, but without touching this
# machine's own install:
#   - HOME is a scratch directory (so `~/.local/bin` and `~/.cargo/bin` are
#     scratch too; CARGO_HOME and RUSTUP_HOME keep the real toolchain);
#   - for block 1, CARGO_INSTALL_ROOT is $HOME/.cargo; $HOME/.cargo/bin and
#     $HOME/.local/bin come first on PATH, so a `tuls` command runs the binary
#     the block itself installed (checked), never one from elsewhere;
#   - `cargo install --path .` builds in this checkout's target/ (cargo's
#     default for --path), so later CI steps reuse the build.
# Standard input is closed, so the server must start, print its startup lines
# and exit 0 at end of input.
# Usage: bash ci/quickstart.sh [BLOCK]   (from anywhere; runs in the repo)
set -euo pipefail
cd "$(dirname "$0")/.."
want="${1:-1}"
block=$(awk -v want="$want" '
  /^## Quick start/ { inside = 1; next }
  inside && /^## / { exit }
  inside && /^```sh$/ { n++; if (n == want) { grab = 1; next } }
  grab && /^```$/ { exit }
  grab { print }
' README.md)
[ -n "$block" ] || { echo "quickstart: no sh block $want under '## Quick start'" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
project="$scratch/project"
mkdir -p "$project" "$scratch/home"   # a fresh home: no ~/.local/bin yet
echo "hello" > "$project/hello.txt"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
# cargo-zigbuild keeps its zig wrappers under the cache dir; a scratch cache
# would give them new paths on every run, and cargo would rebuild every crate
# of the static build (the C compiler's path is part of its fingerprint).
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}"
# A pyenv-managed python (for block 2's pip) finds its root by HOME too.
if [ -z "${PYENV_ROOT:-}" ] && [ -d "$HOME/.pyenv" ]; then export PYENV_ROOT="$HOME/.pyenv"; fi
# The toolchain (cargo, rustup's proxies) stays on PATH after the scratch bins.
export PATH="$scratch/home/.cargo/bin:$scratch/home/.local/bin:$CARGO_HOME/bin:$PATH"
export HOME="$scratch/home"
# Block 1's `cargo install --path .` installs tuls into the scratch home. Block
# 2's tools (zig and cargo-zigbuild, from PyPI) go into the real python, as
# .ci/run's other steps expect them.
[ "$want" != 1 ] || export CARGO_INSTALL_ROOT="$HOME/.cargo"
n=0
while IFS= read -r line; do
  cmd=${line%%#*}                     # drop a trailing comment
  cmd=$(echo "$cmd" | sed 's/[[:space:]]*$//')
  [ -n "$cmd" ] || continue
  cmd=${cmd//\/path\/to\/project/$project}
  n=$((n + 1))
  echo "quickstart: \$ $cmd"
  if [[ "$cmd" == tuls\ * ]]; then
    # The `tuls` a user gets is the one the block installed.
    where=$(command -v tuls || true)
    case "$where" in
      "$HOME"/*) echo "quickstart: tuls is $where" ;;
      *) echo "quickstart: 'tuls' is not on PATH from this block (found: '${where}')" >&2; exit 1 ;;
    esac
  fi
  log=$(mktemp)
  if ! bash -c "$cmd" </dev/null >"$log.out" 2>"$log"; then
    echo "quickstart: FAILED: $cmd" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  if [[ "$cmd" == *" filesystem "* ]]; then
    # The server must have started on the directory and printed its startup lines.
    grep -q "^tuls: roots: $project" "$log" || { echo "quickstart: no 'tuls: roots:' line" >&2; cat "$log" >&2; exit 1; }
    grep -q "^tuls: tools: " "$log" || { echo "quickstart: no 'tuls: tools:' line" >&2; cat "$log" >&2; exit 1; }
    [ ! -s "$log.out" ] || { echo "quickstart: the server wrote to stdout with no client" >&2; exit 1; }
  fi
  rm -f "$log" "$log.out"
done <<<"$block"
[ "$n" -ge 1 ] || { echo "quickstart: no commands found" >&2; exit 1; }
if [ "$want" = 2 ]; then
  # The static binary block ends with the binary on PATH as `tuls`: it must serve.
  [ -x "$HOME/.local/bin/tuls" ] || { echo "quickstart: no ~/.local/bin/tuls after the static binary block" >&2; exit 1; }
  # grep -q may close the pipe before tuls writes its next startup line; tuls
  # must not mind (a host may close stderr too), so pipefail holds either way.
  "$HOME/.local/bin/tuls" filesystem "$project" </dev/null 2>&1 | grep -q "^tuls: roots: $project" \
    || { echo "quickstart: the installed static binary did not start" >&2; exit 1; }
fi
echo "quickstart: $n command(s) of block $want ran as written"
