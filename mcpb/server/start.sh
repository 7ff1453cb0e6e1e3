#!/bin/sh
# How the MCP Bundle starts tuls: $1 is the Read-only switch ("true" or
# "false", as the host substitutes a boolean), the rest are the folders the
# user picked. A manifest's args cannot add a flag conditionally, so this maps
# the switch onto the selector: Read-only is `--allow filesystem.read`. `--`
# keeps a folder whose name starts with '-' a folder.
set -eu
here=$(dirname "$0")
case "${1:-}" in
    true) shift; exec "$here/tuls" filesystem --allow filesystem.read -- "$@" ;;
    false) shift; exec "$here/tuls" filesystem -- "$@" ;;
    *) echo "tuls bundle: the first argument must be the Read-only switch, true or false (got '${1:-}')" >&2; exit 2 ;;
esac
