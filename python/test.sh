#!/usr/bin/env bash
# Installs the wheel from python/build.sh into a fresh venv with no package
# index, checks it provides `tuls` and `tuls-mcp`, and drives
# `tuls-mcp filesystem DIR` with the official MCP Python SDK client
# (ci/py-client/check.py, run by PYTHON, default python3, if it has `mcp`;
# otherwise the pinned SDK is installed into a venv of its own). If uv is installed, also `uvx --offline --from WHEEL tuls-mcp`.
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
# The client needs the MCP Python SDK: use PYTHON's if it has it, else install
# the pinned one (ci/py-client/requirements.txt) into a venv of its own.
client="$py"
if ! "$py" -c 'import mcp' 2>/dev/null; then
    echo "--- $py has no MCP Python SDK; installing ci/py-client/requirements.txt into a client venv"
    "$py" -m venv "$tmp/client"
    if ! "$tmp/client/bin/pip" install --quiet --disable-pip-version-check -r ci/py-client/requirements.txt; then
        echo "python/test.sh: cannot install the MCP Python SDK (no network?). Install it yourself," >&2
        echo "  pip install -r ci/py-client/requirements.txt, or set PYTHON to a python that has it." >&2
        exit 1
    fi
    client="$tmp/client/bin/python"
fi
"$client" ci/py-client/check.py "$tmp/venv/bin/tuls-mcp"
if command -v uvx >/dev/null; then
    echo "--- uvx --offline --from $whl tuls-mcp"
    UV_CACHE_DIR="$tmp/uv-cache" "$client" ci/py-client/check.py uvx --offline --from "$PWD/$whl" tuls-mcp
fi
