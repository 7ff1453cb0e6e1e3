#!/usr/bin/env bash
# Builds the tuls-mcp wheel around the static musl binary dist/build.sh has
# built (dist/out/tuls-<target>), without compiling anything again
# (python/wheel.py). The wheel installs the binary as `tuls` and `tuls-mcp`,
# tagged manylinux2014 + musllinux_1_2 (it needs no libc).
#
#   dist/build.sh && python/build.sh                       # x86_64
#   TULS_TARGET=aarch64-unknown-linux-musl python/build.sh  # after dist/build.sh built it
#
# Needs Python 3.11 or later (tomllib) and nothing else. Writes python/dist/*.whl.
# (python/pyproject.toml still lets maturin build a wheel from source:
# `cd python && maturin build --release --zig --target ...`.)
set -euo pipefail
cd "$(dirname "$0")/.."
target="${TULS_TARGET:-x86_64-unknown-linux-musl}"
bin="dist/out/tuls-$target"
[ -f "$bin" ] || { echo "python/build.sh: $bin not found: run dist/build.sh first (TULS_TARGETS=$target)" >&2; exit 1; }
rm -rf python/dist
python3 python/wheel.py "$bin" python/dist
ls -l python/dist
