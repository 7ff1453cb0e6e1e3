#!/usr/bin/env bash
# Builds the tuls-mcp wheel with maturin: the static musl binary (zig as the
# C compiler and linker, from the `ziglang` PyPI package), installed as `tuls`
# and `tuls-mcp`, tagged manylinux2014 + musllinux_1_2 (it needs no libc).
#
#   python/build.sh                       # x86_64, `--profile dist`
#   TULS_PROFILE=release python/build.sh  # the faster release profile (CI)
#   TULS_TARGET=aarch64-unknown-linux-musl python/build.sh
#
# Needs `pip install maturin ziglang`. Writes python/dist/*.whl.
set -euo pipefail
cd "$(dirname "$0")"
profile="${TULS_PROFILE:-dist}"
target="${TULS_TARGET:-x86_64-unknown-linux-musl}"
rm -rf dist
maturin build --locked --profile "$profile" --target "$target" --zig \
    --compatibility manylinux2014 musllinux_1_2 --out dist
ls -l dist
