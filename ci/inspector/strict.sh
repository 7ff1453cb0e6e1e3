#!/usr/bin/env bash
# Lists tuls's tools through the MCP Inspector CLI pinned in
# ci/inspector/package.json (2.12, whose --strict mode reports schema
# portability problems: `type` arrays, non-standard formats, null defaults)
# and fails on any warning or error it prints. Inspector 2.x declares Node
# 22.19 or later but its CLI runs on Node 20 (checked by this step).
# Usage: bash ci/inspector/strict.sh /path/to/tuls   (after npm install in ci/inspector)
set -euo pipefail
tuls="${1:?usage: strict.sh /path/to/tuls}"
cd "$(dirname "$0")"
[ -x node_modules/.bin/mcp-inspector ] || { echo "run npm install in ci/inspector first" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
err=$(mktemp)
set +e
node_modules/.bin/mcp-inspector --cli "$tuls" filesystem "$dir" --method tools/list --strict >"$dir.out" 2>"$err"
status=$?
set -e
report=$(grep -v '^tuls: ' "$err" || true)
echo "$report"
n=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log((r.tools||[]).length)' "$dir.out")
rm -f "$dir.out" "$err"
[ "$status" = 0 ] || { echo "strict.sh: the Inspector exited $status" >&2; exit 1; }
[ "$n" -ge 14 ] || { echo "strict.sh: tools/list gave $n tools" >&2; exit 1; }
if grep -qiE 'warning|error' <<<"$report" && ! grep -qE '(^|[^0-9])0 errors, 0 warnings' <<<"$report"; then
    echo "strict.sh: the Inspector reported schema problems" >&2
    exit 1
fi
echo "strict.sh: $n tools, no schema-portability warning"
