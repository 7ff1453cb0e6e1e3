#!/bin/sh
# How the MCP Bundle starts tuls.
#
# Which binary: the manifest's platform_overrides give TULS_BUNDLE_OS, the
# host's operating system ("darwin" or "linux", the platforms the bundle lists);
# a manifest has no key for the CPU, so `uname -m` picks the binary within it:
# server/<os>/tuls-<cpu>. A platform the bundle holds no binary for stops here
# with a message that says so, before anything runs.
#
# Arguments: $1 is the Read-only switch ("true" or "false", as the host
# substitutes a boolean), the rest are the folders the user picked. A
# manifest's args cannot add a flag conditionally, so this maps the switch onto
# the selector: Read-only is `--allow filesystem.read`. `--` keeps a folder
# whose name starts with '-' a folder.
set -eu
here=$(dirname "$0")
os="${TULS_BUNDLE_OS:-}"
unset TULS_BUNDLE_OS
cpu=$(uname -m)
held=$(cd "$here" && for f in */tuls-*; do if [ -f "$f" ]; then printf ' %s %s,' "${f%%/*}" "${f#*/tuls-}"; fi; done)
held=${held%,}
none() {
    echo "tuls bundle: this bundle holds no tuls binary for $1; it holds:${held:- nothing}." >&2
    echo "tuls bundle: build tuls from source instead (cargo install --locked --path . in a clone of tuls) and start that binary from your client's configuration." >&2
    exit 2
}
case "$os" in
    darwin | linux) ;;
    *) none "this operating system ($(uname -s); the host did not name darwin or linux)" ;;
esac
bin="$here/$os/tuls-$cpu"
[ -f "$bin" ] || none "$os on $cpu"
[ -x "$bin" ] || { echo "tuls bundle: $bin is not executable (the bundle was unpacked without file modes?)" >&2; exit 2; }
case "${1:-}" in
    true) shift; exec "$bin" filesystem --allow filesystem.read -- "$@" ;;
    false) shift; exec "$bin" filesystem -- "$@" ;;
    *) echo "tuls bundle: the first argument must be the Read-only switch, true or false (got '${1:-}')" >&2; exit 2 ;;
esac
