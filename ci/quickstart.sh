#!/usr/bin/env bash
# Runs the README's quick start verbatim: every command line of the first
# ```sh block under "## Quick start", read from the README itself, with only
# the placeholder directory replaced by a scratch directory. Standard input is
# closed, so the server must start, print its startup lines and exit 0 at end
# of input. Usage: bash ci/quickstart.sh   (from anywhere; runs in the repo)
set -euo pipefail
cd "$(dirname "$0")/.."
block=$(awk '
  /^## Quick start/ { inside = 1; next }
  inside && /^## / { exit }
  inside && /^```sh$/ { grab = 1; next }
  grab && /^```$/ { exit }
  grab { print }
' README.md)
[ -n "$block" ] || { echo "quickstart: no sh block under '## Quick start'" >&2; exit 1; }
project=$(mktemp -d)
trap 'rm -rf "$project"' EXIT
echo "hello" > "$project/hello.txt"
n=0
while IFS= read -r line; do
  cmd=${line%%#*}                     # drop a trailing comment
  cmd=$(echo "$cmd" | sed 's/[[:space:]]*$//')
  [ -n "$cmd" ] || continue
  cmd=${cmd//\/path\/to\/project/$project}
  n=$((n + 1))
  echo "quickstart: \$ $cmd"
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
echo "quickstart: $n command(s) ran as written"
