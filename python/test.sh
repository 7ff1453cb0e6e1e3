#!/usr/bin/env bash
# Installs the wheel from python/build.sh into a fresh venv with no package
# index, checks it provides `tuls` and `tuls-mcp`, and drives
# `tuls-mcp filesystem DIR` with the official MCP Python SDK client
# (ci/py-client/check.py, run by a Python that has `mcp` installed: PYTHON,
# default python3). If uv is installed, also `uvx --offline --from WHEEL tuls-mcp`.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
whl="$(ls python/dist/tuls_mcp-*.whl | head -n 1)"
echo "wheel: $whl"
"$py" -m zipfile -l "$whl"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$whl"
for exe in tuls tuls-mcp; do
    [ -x "$tmp/venv/bin/$exe" ] || { echo "not ok - the wheel installed no $exe" >&2; exit 1; }
    echo "$exe: $("$tmp/venv/bin/$exe" --version): $(file -b "$tmp/venv/bin/$exe")"
done
"$py" ci/py-client/check.py "$tmp/venv/bin/tuls-mcp"
if command -v uvx >/dev/null; then
    echo "--- uvx --offline --from $whl tuls-mcp"
    UV_CACHE_DIR="$tmp/uv-cache" "$py" ci/py-client/check.py uvx --offline --from "$PWD/$whl" tuls-mcp
fi
